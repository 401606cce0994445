/* The memory-store API's memories over a handle's store (see memstore.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "core/memstore.h"
#include "util/sha256.h"

/* A change whose memory moved or changed between the lookup of its id and
 * the change (no precondition of the caller's) is looked up again, a few
 * times: each retry means another writer made progress. */
#define RETRIES 8

void mt_memstore_memory_dispose(mt_memstore_memory *mem)
{
    if (!mem)
        return;
    free(mem->path);
    free(mem->content);
    memset(mem, 0, sizeof(*mem));
}

void mt_memstore_memories_free(mt_memstore_memory *mems, size_t count)
{
    size_t i;

    for (i = 0; mems && i < count; i++)
        mt_memstore_memory_dispose(&mems[i]);
    free(mems);
}

void mt_memstore_conflict_dispose(mt_memstore_conflict *c)
{
    if (!c)
        return;
    free(c->path);
    memset(c, 0, sizeof(*c));
}

int mt_memstore_tenant(char **out, const char *tenant, const char *store_id)
{
    const char *t = tenant && *tenant ? tenant : "default";
    size_t n = strlen(t) + strlen(store_id) + 2;

    if (!(*out = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    snprintf(*out, n, "%s%c%s", t, MT_MEMSTORE_TENANT_SEP, store_id);
    return 0;
}

/* An API path ("/notes/a.md") as a store path ("notes/a.md"), by memtool's
 * own rules (names, reserved names) on top of the API's. */
static int store_path(char **rel, const char *path)
{
    size_t n = strlen(path);
    char *full = malloc(sizeof("/memories") + n);
    int rc;

    if (!full)
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(full, "/memories", sizeof("/memories") - 1);
    memcpy(full + sizeof("/memories") - 1, path, n + 1);
    rc = mt_memory_rel(rel, full);
    free(full);
    if (rc == MT_EINVAL)
        return mt_error_set(
            MT_EINVAL,
            "path %.200s is not one memtool can keep (a name over 255 bytes, or one "
            "beginning with .memtool or .mt-tmp)",
            path);
    return rc;
}

static char *api_path(const char *rel, int dir)
{
    size_t n = strlen(rel);
    char *p = malloc(n + 3);

    if (!p)
        return NULL;
    p[0] = '/';
    memcpy(p + 1, rel, n);
    if (dir && n)
        p[++n] = '/';
    p[n + 1] = '\0';
    return p;
}

/* Who a change is recorded as: the caller's actor when given (a server
 * shares one handle between requests of many keys), else the handle's. */
static _Thread_local const char *change_actor;

static void store_op(mt_store_op *op, mt_memory *m)
{
    mt_memory_op(op, m);
    if (change_actor)
        op->actor = change_actor;
}

void mt_memstore_actor(const char *actor)
{
    change_actor = actor;
}

static int catch_up(mt_memory *m, const char *rel)
{
    mt_store_op op;

    if (!m->store->catch_up)
        return 0;
    store_op(&op, m);
    return m->store->catch_up(m->store, &op, rel);
}

static int history_check(const mt_memory *m)
{
    if (m->store->version < 5 || !m->store->versions || !m->store->memory_id || !m->opts.history)
        return mt_error_set(MT_ENOSYS, "the memory-store API needs a store with history on");
    return 0;
}

/* The newest version of memory id, and its first version's time. */
static int newest(mt_version *out, int64_t *created_at, mt_memory *m, const char *id)
{
    mt_log_query q = {0};
    mt_version *v = NULL;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    q.memory_id = id;
    /* One query holds the newest and, for a memory of fewer versions than
     * a page (nearly all), the oldest too. */
    q.limit = created_at ? 100 : 1;
    if ((rc = m->store->versions(m->store, &v, &n, &q)) < 0)
        return rc;
    if (n == 0 || v[0].operation == MT_VERSION_DELETED || !v[0].path) {
        mt_versions_free(v, n);
        return mt_error_set(MT_ENOTFOUND, "no memory %s", id);
    }
    if (created_at)
        *created_at = v[n - 1].created_at;
    q.before_id = v[n - 1].id;
    *out = v[0];
    memset(&v[0], 0, sizeof(v[0]));
    mt_versions_free(v, n);
    if (!created_at || n < q.limit)
        return 0;
    /* The oldest version kept: page back further. */
    for (;;) {
        if ((rc = m->store->versions(m->store, &v, &n, &q)) < 0)
            return rc;
        if (n)
            *created_at = v[n - 1].created_at;
        q.before_id = n ? v[n - 1].id : 0;
        mt_versions_free(v, n);
        if (n < q.limit)
            return 0;
    }
}

/* A memory as the API shows it, from its newest version (history is kept
 * in the same step as every change, so that version is the memory now). */
static int fill(mt_memstore_memory *out, mt_memory *m, const char *id, int content)
{
    mt_version v;
    char *full = NULL;
    int rc, tries;

    memset(out, 0, sizeof(*out));
    for (tries = 0; tries < RETRIES; tries++) {
        if ((rc = newest(&v, &out->created_at, m, id)) < 0)
            return rc;
        snprintf(out->id, sizeof(out->id), "%s", id);
        free(out->path);
        out->path = api_path(v.path, 0);
        snprintf(out->sha256, sizeof(out->sha256), "%s", v.content_sha256);
        out->size = v.content_size;
        out->version = v.id;
        out->updated_at = v.created_at;
        mt_version_dispose(&v);
        if (!out->path) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto fail;
        }
        if (!content)
            return 0;
        free(out->content);
        out->content = NULL;
        if ((rc = mt_memory_request_path(&full, out->path + 1)) < 0)
            goto fail;
        rc = mt_memory_read(&out->content, &out->content_len, m, full);
        free(full);
        if (rc == 0) {
            char sha[65];
            mt_sha256_hex(sha, out->content, out->content_len);
            if (strcmp(sha, out->sha256) == 0)
                return 0;
        } else if (rc != MT_ENOTFOUND && rc != MT_EISDIR) {
            goto fail;
        }
        /* Changed between the version and the read: by memtool (look
         * again), or outside it (a file store edited by hand): catch up. */
        if ((rc = catch_up(m, out->path + 1)) < 0 && rc != MT_ENOTFOUND)
            goto fail;
    }
    rc = mt_error_set(MT_EBUSY, "memory %s kept changing while it was read: try again", id);
fail:
    mt_memstore_memory_dispose(out);
    return rc;
}

int mt_memstore_get(mt_memstore_memory *out, mt_memory *m, const char *id, int content)
{
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = history_check(m)) < 0)
        return rc;
    return fill(out, m, id, content);
}

/* The memory at store path rel: its id (1), none recorded (0), or an error.
 * The store's own record first (one lookup by path: every SQL store keeps
 * it, the file store once its record of ids is exact). Else from history:
 * the versions of every memory once at rel, newest first, where each
 * memory's first is its newest; the memory there now is the one whose
 * newest version puts it there. The first version alone would not do: a
 * memory moved away from rel and changed since would hide the one there. */
static int id_at(char id[24], mt_memory *m, const char *rel)
{
    mt_log_query q = {0};
    mt_version *v = NULL;
    char(*seen)[24] = NULL;
    size_t n = 0, nseen = 0, cap = 0, i, j;
    int rc = m->store->memory_id(m->store, id, rel);

    if (rc != 0)
        return rc == MT_ENOTFOUND || rc == MT_EISDIR ? 0 : rc;
    q.path = rel;
    q.limit = 32;
    for (;;) {
        if ((rc = m->store->versions(m->store, &v, &n, &q)) < 0) {
            rc = rc == MT_ENOTFOUND ? 0 : rc;
            break;
        }
        for (i = 0; i < n && rc == 0; i++) {
            for (j = 0; j < nseen && strcmp(seen[j], v[i].memory_id) != 0; j++)
                ;
            if (j < nseen)
                continue; /* an older version of a memory already judged */
            if (v[i].operation != MT_VERSION_DELETED && v[i].path && strcmp(v[i].path, rel) == 0) {
                snprintf(id, 24, "%s", v[i].memory_id);
                rc = 1;
                break;
            }
            if (nseen == cap) {
                size_t c = cap ? cap * 2 : 8;
                char(*p)[24] = realloc(seen, c * sizeof(*p));
                if (!p) {
                    rc = mt_error_set(MT_ENOMEM, "out of memory");
                    break;
                }
                seen = p;
                cap = c;
            }
            snprintf(seen[nseen++], 24, "%s", v[i].memory_id);
        }
        q.before_id = n ? v[n - 1].id : 0;
        mt_versions_free(v, n);
        if (rc != 0 || n < q.limit)
            break;
    }
    free(seen);
    return rc;
}

/* --- listing --------------------------------------------------------- */

typedef struct {
    char **paths; /* store paths (of the regular files, or the top-level names) */
    size_t n, cap;
} file_list;

static int file_list_add(file_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **p = realloc(l->paths, cap * sizeof(*p));
        if (!p)
            return mt_error_set(MT_ENOMEM, "out of memory");
        l->paths = p;
        l->cap = cap;
    }
    if (!(l->paths[l->n] = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    l->n++;
    return 0;
}

static int collect_cb(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    (void)size;
    return type == MT_NODE_FILE ? file_list_add(payload, path) : 0;
}

static int path_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void file_list_free(file_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
}

/* The list key of store path p below the prefix (plen bytes, "" or "dir/"):
 * the path itself, or at depth the directory it rolls up into ("a/b/"),
 * malloc'd; *rolled says which. */
static char *list_key(const char *p, size_t plen, unsigned depth, int *rolled)
{
    const char *s = p + plen;
    unsigned seg = 1;
    char *key;

    *rolled = 0;
    if (depth) {
        for (; *s; s++) {
            if (*s != '/')
                continue;
            if (seg++ == depth) {
                *rolled = 1;
                break;
            }
        }
    }
    if (!*rolled)
        return strdup(p);
    if ((key = malloc((size_t)(s - p) + 2))) {
        memcpy(key, p, (size_t)(s - p) + 1);
        key[s - p + 1] = '\0';
    }
    return key;
}

int mt_memstore_list(mt_memstore_memory **out, size_t *count, int *more, mt_memory *m,
                     const char *prefix, unsigned depth, const char *after, size_t limit,
                     int content)
{
    file_list files = {0};
    mt_memstore_memory *items = NULL;
    char *rel = NULL, *after_rel = NULL, *key = NULL, *last = NULL;
    size_t plen, i, n = 0;
    char id[24];
    int rc, rolled;

    *out = NULL;
    *count = 0;
    *more = 0;
    if ((rc = history_check(m)) < 0)
        return rc;
    if (strcmp(prefix, "/") == 0) {
        if (!(rel = strdup("")))
            return mt_error_set(MT_ENOMEM, "out of memory");
    } else {
        char *p = strndup(prefix, strlen(prefix) - 1);
        if (!p)
            return mt_error_set(MT_ENOMEM, "out of memory");
        rc = store_path(&rel, p);
        free(p);
        if (rc < 0)
            return rc;
    }
    if (after && *after == '/' && !(after_rel = strdup(after + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = catch_up(m, rel)) < 0 && rc != MT_ENOTFOUND)
        goto done;
    rc = m->store->walk(m->store, rel, collect_cb, &files);
    if (rc == MT_ENOTFOUND || rc == MT_ENOTDIR) {
        rc = 0;
        goto done;
    }
    if (rc < 0)
        goto done;
    if (files.n)
        qsort(files.paths, files.n, sizeof(char *), path_cmp);
    plen = *rel ? strlen(rel) + 1 : 0;
    if (!(items = calloc(limit ? limit : 1, sizeof(*items)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < files.n; i++) {
        if (!(key = list_key(files.paths[i], plen, depth, &rolled))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        /* A roll-up covers a run of paths (they share its prefix): one item. */
        if ((last && strcmp(key, last) == 0) || (after_rel && strcmp(key, after_rel) <= 0)) {
            free(key);
            key = NULL;
            continue;
        }
        if (n == limit) {
            *more = 1;
            break;
        }
        free(last);
        last = key;
        key = NULL;
        if (rolled) {
            items[n].prefix = 1;
            if (!(items[n].path = api_path(last, 0))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory");
                goto done;
            }
            n++;
            continue;
        }
        if ((rc = id_at(id, m, files.paths[i])) < 0)
            goto done;
        if (rc == 0)
            continue; /* not a memory memtool knows of (yet): not listed */
        rc = fill(&items[n], m, id, content);
        if (rc == MT_ENOTFOUND)
            continue; /* deleted since the walk */
        if (rc < 0)
            goto done;
        n++;
    }
    rc = 0;
done:
    free(key);
    free(last);
    free(rel);
    free(after_rel);
    file_list_free(&files);
    if (rc < 0) {
        mt_memstore_memories_free(items, n);
        *more = 0;
        return rc;
    }
    *out = items;
    *count = n;
    return 0;
}

/* --- changes --------------------------------------------------------- */

/* The memory in the way of a new file at rel: a file at one of its
 * directories, the file itself, or the first memory beneath it. */
static int find_conflict(mt_memstore_conflict *c, mt_memory *m, const char *rel,
                         const char *skip_id)
{
    char *p = strdup(rel), *s;
    mt_node_type type;
    uint64_t size;
    file_list files = {0};
    int rc = 0;

    if (!p)
        return mt_error_set(MT_ENOMEM, "out of memory");
    for (s = p; (s = strchr(s, '/')); s++) {
        *s = '\0';
        rc = m->store->stat(m->store, &type, &size, p);
        if (rc == 0 && type == MT_NODE_FILE)
            goto found;
        *s = '/';
    }
    rc = m->store->stat(m->store, &type, &size, p);
    if (rc == 0 && type == MT_NODE_FILE)
        goto found;
    if (rc == 0 && type == MT_NODE_DIR && m->store->walk(m->store, p, collect_cb, &files) == 0) {
        size_t i;
        if (files.n)
            qsort(files.paths, files.n, sizeof(char *), path_cmp);
        for (i = 0; i < files.n; i++) {
            char id[24];
            if (id_at(id, m, files.paths[i]) == 1 && (!skip_id || strcmp(id, skip_id) != 0)) {
                free(p);
                p = files.paths[i];
                files.paths[i] = strdup("");
                goto found;
            }
        }
    }
    rc = 0;
    goto done;
found:
    if (id_at(c->memory_id, m, p) != 1)
        c->memory_id[0] = '\0';
    rc = (c->path = api_path(p, 0)) ? 0 : mt_error_set(MT_ENOMEM, "out of memory");
done:
    file_list_free(&files);
    free(p);
    return rc;
}

static int conflict_error(mt_memstore_conflict *c, mt_memory *m, const char *rel, const char *path,
                          const char *skip_id)
{
    int rc = find_conflict(c, m, rel, skip_id);

    if (rc < 0)
        return rc;
    if (!c->path)
        return mt_error_set(MT_EEXISTS,
                            "path %s overlaps a directory that holds no memory: try again", path);
    return mt_error_set(MT_EEXISTS,
                        "path %s conflicts with memory %s at %s (a path may not be another's "
                        "directory)",
                        path, *c->memory_id ? c->memory_id : "(unknown)", c->path);
}

static int limit_error(const mt_store_op *op, const char *path)
{
    switch (op->refused) {
    case MT_LIMIT_FILE_SIZE:
        return mt_error_set(MT_ELIMIT, "content of %s would be %llu bytes, over the limit of %llu",
                            path, (unsigned long long)op->would, (unsigned long long)op->limit);
    case MT_LIMIT_FILES:
        return mt_error_set(MT_ELIMIT, "the memory store holds %llu memories, its limit",
                            (unsigned long long)op->held);
    default:
        return mt_error_set(MT_ELIMIT,
                            "the change to %s would go over a limit of the store (it holds %llu, "
                            "would hold %llu, limit %llu)",
                            path, (unsigned long long)op->held, (unsigned long long)op->would,
                            (unsigned long long)op->limit);
    }
}

/* The content to write: as given, redacted, or refused (never echoed). */
static int guard(mt_guard *g, mt_memory *m, const char *path, const char *data, size_t len)
{
    int rc = mt_guard_content(g, m, data, len);

    if (rc < 0)
        return rc;
    if (g->rejected) {
        rc = mt_error_set(MT_ESECRET,
                          "content of %s holds a secret (%s, line %zu): memtool does not store "
                          "credentials; remove it (the server's --secrets policy rejects)",
                          path, g->found.shown[0].kind, g->found.shown[0].line);
        mt_guard_dispose(g);
        return rc;
    }
    return 0;
}

static int store_error(int rc, const mt_store_op *op, const char *path)
{
    if (rc == MT_ELIMIT && op->refused != MT_LIMIT_NONE)
        return limit_error(op, path);
    return rc;
}

/* Remove the directory at rel if, and only if, it holds no memory (the
 * store checks under its lock): 0 removed, MT_ECONFLICT not empty. */
static int remove_empty(mt_memory *m, const char *rel)
{
    mt_store_op op;
    int rc;

    store_op(&op, m);
    op.empty_dir = 1;
    rc = m->store->remove(m->store, &op, rel);
    mt_memory_note(m, &op);
    return rc;
}

/* The API has no empty directories: those that a memory's delete or move
 * left empty go, from the deepest up, stopping at one that holds any. */
static void prune_parents(mt_memory *m, const char *rel)
{
    char *p = strdup(rel), *s;

    while (p && (s = strrchr(p, '/'))) {
        *s = '\0';
        if (remove_empty(m, p) != 0)
            break;
    }
    free(p);
}

/* A change refused because a directory holds the path: when no memory lies
 * beneath it, it is one of those a memory tool left (or a race left
 * behind), and goes; 1 when the change should be tried again. */
static int clear_obstacle(mt_memory *m, const mt_memstore_conflict *c, const char *rel)
{
    mt_node_type type;
    uint64_t size;

    if (c->path || m->store->stat(m->store, &type, &size, rel) != 0 || type != MT_NODE_DIR)
        return 0;
    return remove_empty(m, rel) == 0;
}

int mt_memstore_create(mt_memstore_memory *out, mt_memstore_conflict *conflict, mt_memory *m,
                       const char *path, const char *data, size_t len)
{
    mt_store_op op;
    mt_guard g;
    char *rel = NULL, id[24];
    int rc, tries;

    memset(out, 0, sizeof(*out));
    memset(conflict, 0, sizeof(*conflict));
    if ((rc = history_check(m)) < 0 || (rc = store_path(&rel, path)) < 0)
        return rc;
    if ((rc = guard(&g, m, path, data, len)) < 0)
        goto done;
    for (tries = 0;; tries++) {
        store_op(&op, m);
        rc = m->store->create(m->store, &op, rel, g.data ? g.data : data, g.data ? g.len : len);
        mt_memory_note(m, &op);
        if (rc != MT_EEXISTS && rc != MT_ENOTDIR && rc != MT_EISDIR)
            break;
        if ((rc = conflict_error(conflict, m, rel, path, NULL)) < 0 && rc != MT_EEXISTS)
            break;
        if (tries < 2 && clear_obstacle(m, conflict, rel)) {
            mt_memstore_conflict_dispose(conflict);
            continue;
        }
        rc = MT_EEXISTS;
        break;
    }
    mt_guard_dispose(&g);
    if (rc == MT_EEXISTS)
        goto done;
    if (rc < 0) {
        rc = store_error(rc, &op, path);
        goto done;
    }
    if ((rc = id_at(id, m, rel)) < 0)
        goto done;
    if (rc == 0) {
        rc = mt_error_set(MT_EIO, "the store recorded no id for %s", path);
        goto done;
    }
    rc = fill(out, m, id, 0);
done:
    free(rel);
    return rc;
}

typedef struct {
    const char *data;
    size_t len;
} replace_payload;

static int replace_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    const replace_payload *p = payload;

    (void)data;
    (void)len;
    if (!(*out = malloc(p->len ? p->len : 1)))
        return MT_ENOMEM;
    memcpy(*out, p->data, p->len);
    *out_len = p->len;
    return 0;
}

/* The memory as the caller asked for it already (content and path)? */
static int as_asked(const mt_memstore_memory *cur, const char *path, const char *sha)
{
    return (!sha || strcmp(cur->sha256, sha) == 0) && (!path || strcmp(cur->path, path) == 0);
}

/* (Again) the memory `id` is now, and its store path. */
static int resolve(mt_memstore_memory *cur, char **rel, mt_memory *m, const char *id)
{
    int rc;

    mt_memstore_memory_dispose(cur);
    free(*rel);
    *rel = NULL;
    if ((rc = fill(cur, m, id, 0)) < 0)
        return rc;
    return store_path(rel, cur->path);
}

int mt_memstore_update(mt_memstore_memory *out, mt_memstore_conflict *conflict, mt_memory *m,
                       const char *id, const char *path, const char *data, size_t len,
                       const char *expect_sha256)
{
    mt_memstore_memory cur = {0};
    mt_store_op op;
    mt_guard g = {0};
    char *rel = NULL, *new_rel = NULL, sha[65];
    const char *wdata = data;
    size_t wlen = len;
    int rc, tries, rewrite;

    memset(out, 0, sizeof(*out));
    memset(conflict, 0, sizeof(*conflict));
    if ((rc = history_check(m)) < 0)
        return rc;
    if (path && (rc = store_path(&new_rel, path)) < 0)
        return rc;
    if (data) {
        if ((rc = guard(&g, m, path ? path : id, data, len)) < 0)
            goto done;
        if (g.data) {
            wdata = g.data;
            wlen = g.len;
        }
        mt_sha256_hex(sha, wdata, wlen);
    }
    for (tries = 0; tries < RETRIES; tries++) {

        if ((rc = resolve(&cur, &rel, m, id)) < 0)
            goto done;
        if (as_asked(&cur, path, data ? sha : NULL)) {
            /* Nothing to change: a retried request, or a no-op. */
            if (expect_sha256 && !data && !path && strcmp(cur.sha256, expect_sha256) != 0) {
                rc = mt_error_set(MT_ECONFLICT, "memory %s has other content than expected", id);
                goto done;
            }
            *out = cur;
            memset(&cur, 0, sizeof(cur));
            rc = 0;
            goto done;
        }
        if (expect_sha256 && strcmp(cur.sha256, expect_sha256) != 0) {
            rc = mt_error_set(MT_ECONFLICT,
                              "memory %s has other content than the precondition's SHA-256: "
                              "retrieve it and try again",
                              id);
            goto done;
        }
        /* The content we looked at, whoever gave the precondition: a memory
         * that changed or moved since is looked up again. A new path and new
         * content are one step, one version, as the API has every change
         * (a store older than version 7 takes the move first, the step a
         * taken path refuses, then the content). */
        rewrite = data && strcmp(cur.sha256, sha) != 0;
        if (path && strcmp(cur.path, path) != 0) {
            store_op(&op, m);
            op.expect_sha256 = cur.sha256;
            if (rewrite && m->store->version >= 7) {
                op.rename_content = 1;
                op.rename_data = wdata;
                op.rename_len = wlen;
                rewrite = 0;
            }
            rc = m->store->rename(m->store, &op, rel, new_rel);
            mt_memory_note(m, &op);
            if (rc == MT_ECONFLICT || (rc == MT_ENOTFOUND && op.culprit == 0)) {
                catch_up(m, rel); /* changed outside memtool, maybe */
                continue;
            }
            if (rc == MT_EEXISTS || rc == MT_ENOTDIR || rc == MT_EISDIR ||
                (rc == MT_ENOTFOUND && op.culprit == 1)) {
                rc = conflict_error(conflict, m, new_rel, path, id);
                if (rc == MT_EEXISTS && clear_obstacle(m, conflict, new_rel)) {
                    mt_memstore_conflict_dispose(conflict);
                    continue;
                }
                if (rc == 0)
                    rc = MT_EEXISTS;
                goto done;
            }
            if (rc < 0) {
                rc = store_error(rc, &op, path);
                goto done;
            }
            prune_parents(m, rel);
        }
        if (rewrite) {
            replace_payload p = {wdata, wlen};
            store_op(&op, m);
            op.expect_sha256 = cur.sha256;
            rc = m->store->edit(m->store, &op, new_rel ? new_rel : rel, replace_cb, &p);
            mt_memory_note(m, &op);
            if (rc == MT_ECONFLICT || rc == MT_ENOTFOUND || rc == MT_EISDIR) {
                catch_up(m, new_rel ? new_rel : rel);
                continue;
            }
            if (rc < 0) {
                rc = store_error(rc, &op, cur.path);
                goto done;
            }
        }
        rc = fill(out, m, id, 0);
        goto done;
    }
    rc = mt_error_set(MT_EBUSY, "memory %s kept changing: try again", id);
done:
    mt_guard_dispose(&g);
    mt_memstore_memory_dispose(&cur);
    free(rel);
    free(new_rel);
    return rc;
}

int mt_memstore_delete(mt_memory *m, const char *id, const char *expect_sha256)
{
    mt_memstore_memory cur = {0};
    mt_store_op op;
    char *rel = NULL;
    int rc, tries;

    if ((rc = history_check(m)) < 0)
        return rc;
    for (tries = 0; tries < RETRIES; tries++) {
        if ((rc = resolve(&cur, &rel, m, id)) < 0)
            goto done;
        if (expect_sha256 && strcmp(cur.sha256, expect_sha256) != 0) {
            rc = mt_error_set(MT_ECONFLICT,
                              "memory %s has other content than expected_content_sha256: nothing "
                              "was deleted",
                              id);
            goto done;
        }
        store_op(&op, m);
        op.expect_sha256 = cur.sha256;
        rc = m->store->remove(m->store, &op, rel);
        mt_memory_note(m, &op);
        if (rc == MT_ECONFLICT || rc == MT_ENOTFOUND || rc == MT_EISDIR) {
            catch_up(m, rel);
            continue;
        }
        if (rc == 0)
            prune_parents(m, rel);
        goto done;
    }
    rc = mt_error_set(MT_EBUSY, "memory %s kept changing: try again", id);
done:
    mt_memstore_memory_dispose(&cur);
    free(rel);
    return rc;
}

int mt_memstore_replace(mt_memory *m, const char *path, const char *data, size_t len,
                        const char *expect_sha256)
{
    replace_payload p = {data, len};
    mt_store_op op;
    char *rel = NULL;
    int rc;

    if ((rc = store_path(&rel, path)) < 0)
        return rc;
    store_op(&op, m);
    op.expect_sha256 = expect_sha256;
    rc = m->store->edit(m->store, &op, rel, replace_cb, &p);
    mt_memory_note(m, &op);
    free(rel);
    return store_error(rc, &op, path);
}

int mt_memstore_remove(mt_memory *m, const char *path, const char *expect_sha256)
{
    mt_store_op op;
    char *rel = NULL;
    int rc;

    if ((rc = store_path(&rel, path)) < 0)
        return rc;
    store_op(&op, m);
    op.expect_sha256 = expect_sha256;
    rc = m->store->remove(m->store, &op, rel);
    mt_memory_note(m, &op);
    free(rel);
    return rc;
}

/* The store's top-level names (a walk visits each directory before what
 * it holds). */
static int top_cb(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    (void)type;
    (void)size;
    return *path && !strchr(path, '/') ? file_list_add(payload, path) : 0;
}

int mt_memstore_redact_all(mt_memory *m, const char *path)
{
    mt_log_query q = {0};
    mt_version *v = NULL;
    mt_store_op op;
    char *rel = NULL;
    size_t n, i;
    int64_t last = 0;
    int rc, scrub;

    if ((rc = history_check(m)) < 0)
        return rc;
    if (path && (rc = store_path(&rel, path)) < 0)
        return rc;
    q.path = rel;
    q.limit = 100;
    for (;;) {
        if ((rc = m->store->versions(m->store, &v, &n, &q)) < 0)
            break;
        for (i = 0; i < n && rc == 0; i++) {
            if (v[i].redacted)
                continue;
            store_op(&op, m);
            op.scrub_later = 1;
            /* MT_EINVAL: a memory written meanwhile, whose content is current. */
            if ((rc = m->store->redact(m->store, &op, v[i].id)) == 0)
                last = v[i].id;
            else if (rc == MT_EINVAL)
                rc = 0;
        }
        q.before_id = n ? v[n - 1].id : 0;
        mt_versions_free(v, n);
        if (rc < 0 || n < q.limit)
            break;
    }
    /* The run's scrub, failed or not: the last version redacted, redacted
     * again (nothing more to erase, so never refused) without scrub_later. */
    if (last) {
        store_op(&op, m);
        if ((scrub = m->store->redact(m->store, &op, last)) < 0 && rc == 0)
            rc = scrub;
    }
    free(rel);
    return rc;
}

int mt_memstore_purge(mt_memory *m)
{
    file_list t = {0};
    mt_store_op op;
    size_t i;
    int rc;

    if ((rc = history_check(m)) < 0)
        return rc;
    if (!m->store->walk)
        return mt_error_set(MT_ENOSYS, "this store cannot be walked, so it cannot be purged");
    if ((rc = m->store->walk(m->store, "", top_cb, &t)) < 0 && rc != MT_ENOTFOUND)
        goto done;
    rc = 0;
    for (i = 0; i < t.n && rc == 0; i++) {
        store_op(&op, m);
        rc = m->store->remove(m->store, &op, t.paths[i]);
        mt_memory_note(m, &op);
        if (rc == MT_ENOTFOUND)
            rc = 0;
    }
    if (rc == 0)
        rc = mt_memstore_redact_all(m, NULL);
done:
    file_list_free(&t);
    return rc;
}

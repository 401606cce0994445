/* A scan of a store's memories and history for secrets (secrets_scan.h). */
#include "core/secrets_scan.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "guard/secrets.h"
#include "core/memory.h"
#include "util/sha256.h"

#define LOG_PAGE 100

typedef struct {
    char **paths; /* store paths of the files beneath the scan's path */
    size_t n, cap;
} file_list;

static int collect(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    file_list *l = payload;
    char **grown;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        if (!(grown = realloc(l->paths, cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory");
        l->paths = grown;
        l->cap = cap;
    }
    if (!(l->paths[l->n] = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    l->n++;
    return 0;
}

static int add_finding(mt_secrets_report *r, const char *path, int64_t version,
                       const mt_secret_hit *h)
{
    mt_secrets_finding *grown;

    if (!(grown = realloc(r->findings, (r->count + 1) * sizeof(*grown))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    r->findings = grown;
    if (!(grown[r->count].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    grown[r->count].version = version;
    grown[r->count].kind = h->kind;
    grown[r->count].line = h->line;
    r->count++;
    return 0;
}

/* Scan one content; *found: how many secrets it holds. */
static int scan_one(mt_secrets_report *r, mt_memory *m, const char *path, int64_t version,
                    const char *data, size_t len, size_t *found)
{
    mt_secrets_cfg cfg = {m->secrets_allow};
    mt_secret_hit *hits = NULL;
    size_t count = 0, i;
    int rc;

    *found = 0;
    if ((rc = mt_secrets_scan(NULL, 0, &count, data, len, &cfg)) < 0 || count == 0)
        return rc;
    if (!(hits = malloc(count * sizeof(*hits))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    if ((rc = mt_secrets_scan(hits, count, &count, data, len, &cfg)) < 0)
        goto done;
    for (i = 0; i < count && rc == 0; i++)
        rc = add_finding(r, path, version, &hits[i]);
    *found = count;
done:
    free(hits);
    return rc;
}

/* The newest version of the memory at path, or 0 (no history, none). */
static int64_t newest_version(mt_memory *m, const char *path)
{
    mt_log_query q;
    mt_version *v = NULL;
    size_t n = 0;
    int64_t id = 0;

    memset(&q, 0, sizeof(q));
    q.path = path;
    q.limit = 1;
    if (mt_memory_log(&v, &n, m, &q) == 0 && n == 1 && v[0].operation != MT_VERSION_DELETED)
        id = v[0].id;
    mt_versions_free(v, n);
    return id;
}

static int note_redacted(mt_secrets_report *r, int64_t id)
{
    int64_t *grown;
    size_t i;

    for (i = 0; i < r->redacted_count; i++)
        if (r->redacted[i] == id)
            return 0;
    if (!(grown = realloc(r->redacted, (r->redacted_count + 1) * sizeof(*grown))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    r->redacted = grown;
    r->redacted[r->redacted_count++] = id;
    return 0;
}

/* Rewrite the memory at path with its secrets redacted, as one edit that
 * holds only if the memory is still what was scanned; then erase from
 * history the version that held them. */
static int fix_current(mt_secrets_report *r, mt_memory *m, const char *path, const char *rel,
                       const char *data, size_t len, size_t secrets)
{
    mt_reply reply = MT_REPLY_INIT;
    mt_guard g;
    char sha[65];
    int64_t before = m->op.history ? newest_version(m, path) : 0, after;
    void *grown;
    int rc;

    if ((rc = mt_guard_redact(&g, m, data, len)) < 0)
        return rc;
    if (!g.data) {
        rc = mt_error_set(MT_ELIMIT,
                          "%s, redacted, would hold %zu bytes, over the max file size limit; "
                          "edit it by hand",
                          path, g.len);
        goto done;
    }
    mt_sha256_hex(sha, data, len);
    reply.expect_sha256 = sha;
    /* A redaction: the secret's words leave the search index with it (in
     * the request, not the handle, which other threads may be using). */
    reply.scrub = 1;
    if ((rc = mt_op_str_replace(&reply, m, (mt_str){path, strlen(path)}, rel, (mt_str){data, len},
                                (mt_str){g.data, g.len})) < 0)
        goto done;
    if (reply.is_error) {
        rc = mt_error_set(MT_ECONFLICT, "%.*s", (int)(reply.text.len < 600 ? reply.text.len : 600),
                          reply.text.ptr);
        goto done;
    }
    after = m->op.history ? newest_version(m, path) : 0;
    if (!(grown = realloc(r->fixed, (r->fixed_count + 1) * sizeof(*r->fixed)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    r->fixed = grown;
    if (!(r->fixed[r->fixed_count].path = strdup(path))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    r->fixed[r->fixed_count].version = after;
    r->fixed[r->fixed_count++].secrets = secrets;
    /* The version that was current holds the secret in history. */
    if (before && before != after) {
        if ((rc = mt_memory_redact(m, before)) < 0 || (rc = note_redacted(r, before)) < 0)
            goto done;
    }
done:
    if (g.data)
        sodium_memzero(g.data, g.len);
    mt_guard_dispose(&g);
    mt_buf_dispose(&reply.text);
    return rc;
}

static int scan_current(mt_secrets_report *r, mt_memory *m, const char *rel, int fix)
{
    file_list l = {NULL, 0, 0};
    char *path = NULL, *data = NULL;
    size_t len = 0, i, found;
    int rc;

    if (m->store->version < 4 || !m->store->walk)
        return mt_error_set(MT_ENOSYS, "this store cannot list its memories (interface %u)",
                            m->store->version);
    /* Listed first, read after: a walk is no place to read or write. */
    if ((rc = m->store->walk(m->store, rel, collect, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        if ((rc = mt_memory_request_path(&path, l.paths[i])) < 0)
            goto done;
        rc = mt_memory_read(&data, &len, m, path);
        if (rc == MT_ENOTFOUND || rc == MT_EISDIR) { /* gone since the walk */
            free(path);
            path = NULL;
            continue;
        }
        if (rc < 0)
            goto done;
        if ((rc = scan_one(r, m, path, 0, data, len, &found)) < 0)
            goto done;
        if (fix && found && (rc = fix_current(r, m, path, l.paths[i], data, len, found)) < 0)
            goto done;
        sodium_memzero(data, len); /* from an encrypted store: the memory, decrypted */
        free(data);
        data = NULL;
        free(path);
        path = NULL;
    }
    rc = 0;
done:
    if (data)
        sodium_memzero(data, len);
    free(data);
    free(path);
    for (i = 0; i < l.n; i++)
        free(l.paths[i]);
    free(l.paths);
    return rc;
}

/* The memories met so far, by id: a set that stays fast at any size (a
 * store's history may name many thousands of memories). */
typedef struct {
    char (*ids)[24]; /* "" marks a free slot */
    size_t n, cap;   /* cap a power of two, or 0 */
    int empty;       /* "" itself was added */
} id_set;

static size_t id_hash(const char *s)
{
    size_t h = 14695981039346656037u;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* 1 when id was already in the set, 0 when it is added now. */
static int id_set_add(id_set *set, const char *id)
{
    size_t i;

    if (!*id) {
        i = (size_t)set->empty;
        set->empty = 1;
        return (int)i;
    }
    if ((set->n + 1) * 2 > set->cap) {
        id_set bigger = {NULL, 0, set->cap ? set->cap * 2 : 64, set->empty};
        size_t j;

        if (!(bigger.ids = calloc(bigger.cap, sizeof(*bigger.ids))))
            return mt_error_set(MT_ENOMEM, "out of memory");
        for (j = 0; j < set->cap; j++)
            if (set->ids[j][0])
                id_set_add(&bigger, set->ids[j]);
        free(set->ids);
        *set = bigger;
    }
    for (i = id_hash(id) & (set->cap - 1); set->ids[i][0]; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->ids[i], id) == 0)
            return 1;
    snprintf(set->ids[i], sizeof(set->ids[i]), "%s", id);
    set->n++;
    return 0;
}

/* Every version beneath path but each memory's newest when it still exists
 * (its content is the current one, scanned already). */
static int scan_history(mt_secrets_report *r, mt_memory *m, const char *path, int fix)
{
    mt_log_query q;
    mt_version *v = NULL;
    id_set seen = {NULL, 0, 0, 0};
    char *data = NULL;
    size_t n = 0, i, len = 0, found;
    int rc = 0;

    memset(&q, 0, sizeof(q));
    q.path = path;
    q.limit = LOG_PAGE;
    for (;;) {
        if ((rc = mt_memory_log(&v, &n, m, &q)) < 0)
            goto done;
        for (i = 0; i < n; i++) {
            const mt_version *x = &v[i];
            int newest;

            /* Newest first: the first version met of a memory is its newest. */
            if ((newest = id_set_add(&seen, x->memory_id)) < 0) {
                rc = newest;
                goto done;
            }
            newest = !newest;
            if ((newest && x->operation != MT_VERSION_DELETED) || x->redacted ||
                x->operation == MT_VERSION_DELETED)
                continue;
            if ((rc = mt_memory_version_content(&data, &len, m, x->id)) < 0)
                goto done;
            if ((rc = scan_one(r, m, x->path ? x->path : path, x->id, data, len, &found)) < 0)
                goto done;
            sodium_memzero(data, len);
            free(data);
            data = NULL;
            if (fix && found &&
                ((rc = mt_memory_redact(m, x->id)) < 0 || (rc = note_redacted(r, x->id)) < 0))
                goto done;
        }
        if (n < LOG_PAGE)
            break;
        q.before_id = v[n - 1].id;
        mt_versions_free(v, n);
        v = NULL;
        n = 0;
    }
done:
    if (data)
        sodium_memzero(data, len);
    free(data);
    mt_versions_free(v, n);
    free(seen.ids);
    return rc;
}

int mt_secrets_scan_store(mt_secrets_report *out, mt_memory *m, const char *path, int history,
                          int fix)
{
    char *rel = NULL;
    int rc;

    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_secrets_scan_store needs a report and a handle");
    memset(out, 0, sizeof(*out));
    if (!path)
        path = "/memories";
    if ((rc = mt_memory_rel(&rel, path)) < 0)
        goto done;
    if (history && !m->op.history) {
        rc = mt_error_set(MT_ENOSYS, "this store keeps no history: scan without --history");
        goto done;
    }
    if ((rc = scan_current(out, m, rel, fix)) < 0)
        goto done;
    if (history)
        rc = scan_history(out, m, path, fix);
done:
    free(rel);
    return rc;
}

void mt_secrets_report_dispose(mt_secrets_report *r)
{
    size_t i;

    for (i = 0; i < r->count; i++)
        free(r->findings[i].path);
    free(r->findings);
    for (i = 0; i < r->fixed_count; i++)
        free(r->fixed[i].path);
    free(r->fixed);
    free(r->redacted);
    memset(r, 0, sizeof(*r));
}

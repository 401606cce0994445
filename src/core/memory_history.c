/*
 * History through the handle: request paths in and out, the store's
 * versions underneath, and restore and undo made of the store's own create
 * and edit, so a restore is a change like any other (locked, limited, a
 * version of its own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/version_base.h"
#include "core/memory.h"
#include "util/path.h"
#include "util/sha256.h"

#define ROOT "/memories"

static int no_history(const mt_memory *m)
{
    if (m->store->version < 3 || !m->store->versions)
        return mt_error_set(MT_ENOSYS, "this store keeps no history");
    if (!m->opts.history)
        return mt_error_set(MT_ENOSYS, "history is off (--history off or MEMTOOL_HISTORY=off)");
    return 0;
}

int mt_memory_rel(char **rel, const char *path)
{
    switch (mt_path_parse(rel, path, path ? strlen(path) : 0)) {
    case MT_PATH_OK:
        return 0;
    case MT_PATH_NOMEM:
        return mt_error_set(MT_ENOMEM, "out of memory");
    default:
        return mt_error_set(MT_EINVAL, "%s is not a path under /memories", path ? path : "(null)");
    }
}

int mt_memory_request_path(char **out, const char *rel)
{
    size_t n = strlen(rel);

    if (!(*out = malloc(sizeof(ROOT) + 1 + n)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(*out, ROOT, sizeof(ROOT) - 1);
    (*out)[sizeof(ROOT) - 1] = n ? '/' : '\0';
    memcpy(*out + sizeof(ROOT), rel, n + 1);
    return 0;
}

/* A version's store path (NULL: none) as a request path, in place. */
static int request_path(char **p)
{
    char *full;
    int rc;

    if (!*p)
        return 0;
    if ((rc = mt_memory_request_path(&full, *p)) < 0)
        return rc;
    free(*p);
    *p = full;
    return 0;
}

static int version_paths(mt_version *v)
{
    int rc;

    if ((rc = request_path(&v->path)) < 0 || (rc = request_path(&v->previous_path)) < 0)
        return rc;
    return 0;
}

/* What was changed outside memtool beneath rel becomes versions first. */
static int catch_up(mt_memory *m, const char *rel)
{
    mt_store_op op;

    if (!m->store->catch_up)
        return 0;
    mt_memory_op(&op, m);
    return m->store->catch_up(m->store, &op, rel);
}

/* Versions of the store, store paths in and out. */
static int store_versions(mt_version **out, size_t *count, mt_memory *m, const mt_log_query *q)
{
    return m->store->versions(m->store, out, count, q);
}

int mt_memory_log(mt_version **out, size_t *count, mt_memory *m, const mt_log_query *query)
{
    mt_log_query q;
    char *rel = NULL;
    size_t i;
    int rc;

    if (out)
        *out = NULL;
    if (count)
        *count = 0;
    if (!out || !count || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_log needs out pointers and a handle");
    if ((rc = no_history(m)) < 0)
        return rc;
    if (query)
        q = *query;
    else
        memset(&q, 0, sizeof(q));
    if ((rc = mt_memory_rel(&rel, q.path ? q.path : ROOT)) < 0)
        return rc;
    q.path = rel;
    if ((rc = catch_up(m, rel)) < 0 || (rc = store_versions(out, count, m, &q)) < 0)
        goto done;
    for (i = 0; i < *count; i++)
        if ((rc = version_paths(&(*out)[i])) < 0) {
            mt_versions_free(*out, *count);
            *out = NULL;
            *count = 0;
            goto done;
        }
done:
    free(rel);
    return rc;
}

int mt_memory_version(mt_version *out, mt_memory *m, int64_t id)
{
    int rc;

    if (out)
        memset(out, 0, sizeof(*out));
    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_version needs an out pointer and a handle");
    if ((rc = no_history(m)) < 0)
        return rc;
    if ((rc = m->store->version_get(m->store, out, id)) < 0)
        return rc;
    if ((rc = version_paths(out)) < 0)
        mt_version_dispose(out);
    return rc;
}

int mt_memory_version_content(char **out, size_t *len, mt_memory *m, int64_t id)
{
    int rc;

    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if (!out || !len || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_version_content needs out pointers and a handle");
    if ((rc = no_history(m)) < 0)
        return rc;
    return m->store->version_content(m->store, out, len, id);
}

int mt_memory_redact(mt_memory *m, int64_t id)
{
    mt_store_op op;
    int rc;

    if (!m)
        return mt_error_set(MT_EINVAL, "mt_memory_redact needs a handle");
    if ((rc = no_history(m)) < 0)
        return rc;
    mt_memory_op(&op, m);
    return m->store->redact(m->store, &op, id);
}

typedef struct {
    const char *data;
    size_t len;
    int same; /* the memory held that content already */
} restore_content;

static int restore_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    restore_content *c = payload;

    /* A write equal to the current state is answered without a new version:
     * the store is stopped before it writes anything. */
    if (len == c->len && memcmp(data, c->data, len) == 0) {
        c->same = 1;
        return MT_ESTOPPED;
    }
    if (!(*out = malloc(c->len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory restoring");
    memcpy(*out, c->data, c->len);
    *out_len = c->len;
    return 0;
}

/* The newest version of a memory. */
static int newest_of(mt_version *out, mt_memory *m, const char *memory_id)
{
    mt_log_query q;
    mt_version *v = NULL;
    size_t n = 0;
    int rc;

    memset(&q, 0, sizeof(q));
    q.memory_id = memory_id;
    q.limit = 1;
    if ((rc = store_versions(&v, &n, m, &q)) < 0)
        return rc;
    if (n == 0) {
        mt_versions_free(v, n);
        return mt_error_set(MT_ENOTFOUND, "memory %s has no versions left", memory_id);
    }
    *out = v[0];
    free(v);
    return 0;
}

/* A restore is a write: the version's content may hold a secret written
 * before the policy was on (or with it off). Refused, or *data becomes the
 * redacted content (owned by g). */
static int guard_restore(mt_guard *g, mt_memory *m, const mt_version *v, const mt_version *now,
                         int64_t id, char **data, size_t *len)
{
    const char *rel = now->operation != MT_VERSION_DELETED && now->path ? now->path : v->path;
    char path[4200];
    int rc;

    if ((rc = mt_guard_content(g, m, *data, *len)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/%s", ROOT, rel ? rel : "");
    if (g->rejected)
        return mt_guard_restore_error(path, id, &g->found);
    if (!g->found.count)
        return 0;
    if (!g->data)
        return mt_error_set(MT_ELIMIT,
                            "version %lld, redacted, would hold %zu bytes, over the max file size "
                            "limit of %llu",
                            (long long)id, g->len, (unsigned long long)m->opts.max_file_size);
    free(*data);
    *data = g->data;
    *len = g->len;
    return 0;
}

static void note_redacted(mt_memory *m, const mt_guard_found *f)
{
    mt_buf b = MT_BUF_INIT;

    /* The note's own leading " (" and ")" are the CLI's to add. */
    if (mt_guard_note(&b, f) < 0 || b.len < 3)
        goto done;
    mt_memory_secrets_note_set(m, b.ptr + 2, b.len - 3);
done:
    mt_buf_dispose(&b);
}

int mt_memory_restore(int64_t *out_id, mt_memory *m, int64_t id)
{
    mt_version v, now;
    mt_store_op op;
    mt_guard g;
    restore_content c = {NULL, 0, 0};
    char *data = NULL;
    size_t len = 0;
    int rc;

    memset(&v, 0, sizeof(v));
    memset(&now, 0, sizeof(now));
    memset(&g, 0, sizeof(g));
    if (out_id)
        *out_id = 0;
    if (!m)
        return mt_error_set(MT_EINVAL, "mt_memory_restore needs a handle");
    mt_memory_secrets_note_set(m, "", 0);
    if ((rc = no_history(m)) < 0)
        return rc;
    if ((rc = m->store->version_get(m->store, &v, id)) < 0 ||
        (rc = m->store->version_content(m->store, &data, &len, id)) < 0 ||
        (rc = newest_of(&now, m, v.memory_id)) < 0)
        goto done;
    if ((rc = guard_restore(&g, m, &v, &now, id, &data, &len)) < 0)
        goto done;
    c.data = data;
    c.len = len;
    mt_memory_op(&op, m);
    if (op.max_file_size && len > op.max_file_size) {
        rc = mt_error_set(MT_ELIMIT,
                          "version %lld holds %zu bytes, over the max file size limit of %llu",
                          (long long)id, len, (unsigned long long)op.max_file_size);
        goto done;
    }
    if (now.operation != MT_VERSION_DELETED && now.path) {
        /* Live: the memory takes that content where it is now. */
        rc = m->store->edit(m->store, &op, now.path, restore_cb, &c);
        if (rc == MT_ESTOPPED && c.same) {
            rc = 0; /* *out_id stays 0: nothing changed */
            goto done;
        }
        if (rc != MT_ENOTFOUND)
            goto recorded;
        /* Gone from the disk meanwhile: made again, as it was deleted. */
        mt_memory_op(&op, m);
    }
    op.memory_id = v.memory_id;
    rc = m->store->create(m->store, &op,
                          now.operation != MT_VERSION_DELETED && now.path ? now.path : v.path, data,
                          len);
    if (rc == MT_EEXISTS)
        rc = mt_error_set(MT_EEXISTS,
                          "%s/%s now holds another memory: rename or delete it, then restore "
                          "version %lld",
                          ROOT, v.path, (long long)id);
recorded:
    if (rc == 0 || rc == MT_ENOTDURABLE) {
        if (out_id)
            *out_id = op.version;
        if (g.found.count)
            note_redacted(m, &g.found);
        if (op.history_error)
            rc = mt_error_set(MT_EIO, "restored, but the history could not record it: %s",
                              op.history_error);
    }
done:
    if (data != g.data)
        free(data);
    mt_guard_dispose(&g);
    mt_version_dispose(&v);
    mt_version_dispose(&now);
    return rc;
}

int mt_memory_undo(int64_t *out_id, int64_t *restored, mt_memory *m, const char *path)
{
    mt_log_query q;
    mt_version *v = NULL;
    char *rel = NULL, memory_id[24] = "";
    const char *current;
    size_t n = 0, i, same = 0;
    int64_t target = 0;
    int rc;

    if (out_id)
        *out_id = 0;
    if (restored)
        *restored = 0;
    if (!m)
        return mt_error_set(MT_EINVAL, "mt_memory_undo needs a handle");
    if ((rc = no_history(m)) < 0 || (rc = mt_memory_rel(&rel, path)) < 0)
        return rc;
    if ((rc = catch_up(m, rel)) < 0)
        goto done;
    /* The memory that is (or was last) at path: the newest version there. */
    memset(&q, 0, sizeof(q));
    q.path = rel;
    q.limit = 1000;
    if ((rc = store_versions(&v, &n, m, &q)) < 0)
        goto done;
    for (i = 0; i < n && !*memory_id; i++)
        if (v[i].path && strcmp(v[i].path, rel) == 0)
            memcpy(memory_id, v[i].memory_id, sizeof(memory_id));
    mt_versions_free(v, n);
    v = NULL;
    if (!*memory_id) {
        rc = mt_error_set(MT_ENOTFOUND, "%s has no history", path);
        goto done;
    }
    /* Its versions before the newest: the latest with content. */
    memset(&q, 0, sizeof(q));
    q.memory_id = memory_id;
    q.limit = 1000;
    if ((rc = store_versions(&v, &n, m, &q)) < 0)
        goto done;
    /* Back to the latest content that differs from the current one: a
     * version that holds the same bytes (a rename, a restore) would be an
     * undo that changes nothing. */
    current = n && v[0].operation != MT_VERSION_DELETED ? v[0].content_sha256 : "";
    for (i = 1; i < n && !target; i++) {
        if (v[i].operation == MT_VERSION_DELETED || v[i].redacted)
            continue;
        if (*current && strcmp(v[i].content_sha256, current) == 0) {
            same++;
            continue;
        }
        target = v[i].id;
    }
    if (!target) {
        if (same)
            rc = mt_error_set(MT_ENOTFOUND,
                              "nothing to undo: every earlier version of %s that can be read "
                              "holds its current content",
                              path);
        else
            rc = mt_error_set(MT_ENOTFOUND, "%s has no earlier version to go back to%s", path,
                              n == 1 && v[0].operation == MT_VERSION_CREATED
                                  ? " (it was just created: delete it to undo that)"
                                  : "");
        goto done;
    }
    if (restored)
        *restored = target;
    rc = mt_memory_restore(out_id, m, target);
done:
    mt_versions_free(v, n);
    free(rel);
    return rc;
}

static int sha_cb(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    (void)off;
    (void)last;
    mt_sha256_update(payload, data, len);
    return 0;
}

int mt_memory_sha256(char out[65], mt_memory *m, const char *path)
{
    mt_sha256 s;
    uint64_t size;
    char *rel = NULL;
    int rc;

    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_sha256 needs an out buffer and a handle");
    *out = '\0';
    if ((rc = mt_memory_rel(&rel, path)) < 0)
        return rc;
    mt_sha256_init(&s);
    if ((rc = m->store->read(m->store, &size, rel, MT_STORE_PIECE, sha_cb, &s)) >= 0)
        mt_sha256_final_hex(out, &s);
    free(rel);
    return rc;
}

int mt_history_find_base(mt_version *out, int64_t **skipped, size_t *nskipped, mt_memory *mem,
                         const mt_version *v)
{
    mt_version *older = NULL;
    int64_t *grown;
    mt_log_query q;
    size_t n = 0, i;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    *skipped = NULL;
    *nskipped = 0;
    memset(&q, 0, sizeof(q));
    q.memory_id = v->memory_id;
    q.before_id = v->id;
    q.limit = 100;
    for (;;) {
        if ((rc = mt_memory_log(&older, &n, mem, &q)) < 0)
            goto done;
        for (i = 0; i < n && older[i].redacted; i++) {
            if (!(grown = realloc(*skipped, (*nskipped + 1) * sizeof(**skipped)))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory");
                goto done;
            }
            *skipped = grown;
            (*skipped)[(*nskipped)++] = older[i].id;
        }
        if (i < n) {
            *out = older[i];
            memset(&older[i], 0, sizeof(older[i]));
        }
        q.before_id = n ? older[n - 1].id : 0;
        if (i < n || n < q.limit)
            goto done;
        mt_versions_free(older, n);
        older = NULL;
        n = 0;
    }
done:
    mt_versions_free(older, n);
    if (rc < 0) {
        free(*skipped);
        *skipped = NULL;
        *nskipped = 0;
    }
    return rc;
}

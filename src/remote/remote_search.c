/*
 * Search on a remote store: the API has no search, so a search reads every
 * memory beneath its path and counts the query's terms in each
 * (search/scan.h), ranking as the indexed stores do.
 *
 * What it reads is kept (remote_cache.c) and used again while the server's
 * content_sha256 of the memory is unchanged: a search lists the memories
 * (basic pages of 100, with their SHA-256s), takes what the cache holds, and
 * reads the rest one by one when they are few, or in full pages of 20 when
 * reading them one by one would cost more. A first search costs about one
 * request for each 20 memories; one with nothing changed since, one for each
 * 100.
 *
 * BM25 needs the collection's statistics, known only at the end, so a
 * matching memory's path and term counts are kept until then.
 */
#include <stdlib.h>
#include <string.h>

#include "machinery/scan_rank.h"
#include "remote/remote_store.h"

/* A memory listed beneath the path: its API id, path and SHA-256. */
typedef struct {
    char *id, *path;
    char sha[65];
} listed;

typedef struct {
    listed *v;
    size_t n, cap;
} listing;

static void listing_dispose(listing *l)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        free(l->v[i].id);
        free(l->v[i].path);
    }
    free(l->v);
}

static int list_cb(void *payload, mt_rmem *m, const char *path)
{
    listing *l = payload;

    (void)path;
    if (!m)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        listed *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return mt_error_set(MT_ENOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].id = m->id;
    l->v[l->n].path = m->path;
    memcpy(l->v[l->n].sha, m->sha, sizeof(m->sha));
    m->id = m->path = NULL; /* taken */
    l->n++;
    return 0;
}

typedef struct {
    mt_remote_store *rs;
    mt_scan_rank *rank;
    size_t memories; /* met beneath the path */
} full_ctx;

static int full_cb(void *payload, mt_rmem *m, const char *path)
{
    full_ctx *c = payload;

    if (!m || !m->has_content)
        return m ? mt_error_set(MT_EIO, "search: the server answered a memory without content") : 0;
    c->memories++;
    mt_remote_cache_put(c->rs->cache, m);
    return mt_scan_rank_add(c->rank, path + 1, m->content, (size_t)m->size);
}

/* Every memory beneath prefix into r: from the cache where it holds the
 * listed content, else read. *memories: how many there were. */
static int beneath(mt_remote_store *rs, mt_scan_rank *r, size_t *memories, const char *prefix)
{
    listing l = {0};
    size_t i, missing = 0;
    int rc;

    *memories = 0;
    if ((rc = mt_remote_scan_all(rs, prefix, 0, 0, list_cb, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++)
        missing += !mt_remote_cache_has(rs->cache, l.v[i].id, l.v[i].sha);
    /* Read one by one (a request each), or all again in full pages of 20. */
    if (missing > l.n / 20 + 1) {
        full_ctx c = {rs, r, 0};
        rc = mt_remote_scan_all(rs, prefix, 0, 1, full_cb, &c);
        *memories = c.memories;
        goto done;
    }
    for (i = 0; i < l.n && rc == 0; i++) {
        char *content = NULL;
        size_t size = 0;
        mt_rmem m;
        if ((rc = mt_remote_cache_get(rs->cache, &content, &size, l.v[i].id, l.v[i].sha)) == 1) {
            rc = mt_scan_rank_add(r, l.v[i].path + 1, content, size);
        } else if (rc == 0) {
            rc = mt_remote_get(rs, &m, l.v[i].id, l.v[i].path, "search");
            if (rc == 0) {
                mt_remote_cache_put(rs->cache, &m);
                rc = mt_scan_rank_add(r, l.v[i].path + 1, m.content, (size_t)m.size);
                mt_rmem_dispose(&m);
            } else if (rc == MT_ENOTFOUND) {
                rc = 0; /* moved or deleted since the listing: not there to find */
                continue;
            }
        }
        free(content);
        (*memories)++;
    }
done:
    listing_dispose(&l);
    return rc;
}

int mt_remote_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                     const char *path, size_t limit)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    mt_scan_rank r;
    mt_buf prefix = MT_BUF_INIT;
    size_t memories = 0;
    mt_rmem m;
    int rc = 0;

    *out = NULL;
    *count = 0;
    if ((rc = mt_scan_rank_start(&r, q, limit)) < 0)
        return rc;
    if (mt_buf_printf(&prefix, "/%s%s", path, *path ? "/" : "") < 0) {
        rc = MT_ENOMEM;
        goto done;
    }
    if (mt_remote_segments(path) < 20) /* else nothing can lie beneath it */
        rc = beneath(rs, &r, &memories, prefix.ptr);
    /* Nothing beneath the path: it may be a memory itself, searched alone
     * (as on a local store), at the cost of one request more. */
    if (rc == 0 && *path && memories == 0) {
        rc = mt_remote_find(rs, &m, path, 1);
        if (rc == MT_NODE_FILE)
            rc = mt_scan_rank_add(&r, path, m.content, (size_t)m.size);
        else if (rc == MT_NODE_DIR || rc == MT_ENOTFOUND || rc == MT_ENOTDIR)
            rc = 0;
        mt_rmem_dispose(&m);
    }
    if (rc == 0)
        rc = mt_scan_rank_hits(out, count, &r, limit);
done:
    mt_buf_dispose(&prefix);
    mt_scan_rank_dispose(&r);
    return rc;
}

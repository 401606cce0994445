/*
 * Search on a remote store: the API has no search, so each search reads
 * every memory beneath its path (full pages of at most 20) and counts the
 * query's terms in each (search/scan.h), ranking as the indexed stores do.
 * Nothing is kept: the cost is a read of what is searched, every time, in
 * about one request for each 20 memories.
 *
 * BM25 needs the collection's statistics, known only at the end, so a
 * matching memory's path and term counts are kept until then.
 */
#include <string.h>

#include "machinery/scan_rank.h"
#include "remote/remote_store.h"

typedef struct {
    mt_scan_rank *rank;
    size_t memories; /* met beneath the path */
} search_ctx;

static int scan_cb(void *payload, mt_rmem *m, const char *path)
{
    search_ctx *c = payload;

    if (!m || !m->has_content)
        return m ? mt_error_set(MT_EIO, "search: the server answered a memory without content") : 0;
    c->memories++;
    return mt_scan_rank_add(c->rank, path + 1, m->content, (size_t)m->size);
}

int mt_remote_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                     const char *path, size_t limit)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    mt_scan_rank r;
    mt_buf prefix = MT_BUF_INIT;
    search_ctx c = {&r, 0};
    mt_rmem m;
    int rc;

    *out = NULL;
    *count = 0;
    if ((rc = mt_scan_rank_start(&r, q, limit)) < 0)
        return rc;
    if (mt_buf_printf(&prefix, "/%s%s", path, *path ? "/" : "") < 0) {
        rc = MT_ENOMEM;
        goto done;
    }
    if (mt_remote_segments(path) < 20) /* else nothing can lie beneath it */
        rc = mt_remote_scan_all(rs, prefix.ptr, 0, 1, scan_cb, &c);
    /* Nothing beneath the path: it may be a memory itself, searched alone
     * (as on a local store), at the cost of one request more. */
    if (rc == 0 && *path && c.memories == 0) {
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

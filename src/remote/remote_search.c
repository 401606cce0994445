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
#include <stdlib.h>
#include <string.h>

#include "machinery/search_index.h"
#include "remote/remote_store.h"
#include "search/scan.h"

typedef struct {
    char *path;
    mt_search_scan_doc doc;
    double score;
} found_memory;

typedef struct {
    const mt_search_query *q;
    mt_search_scan_stats stats;
    found_memory *found;
    size_t n, cap;
} search_run;

static int scan_cb(void *payload, mt_rmem *m, const char *path)
{
    search_run *r = payload;
    mt_search_scan_doc doc;
    uint64_t cap = r->q->max_size ? r->q->max_size : MT_SEARCH_INDEX_CAP;
    int rc;

    if (!m || !m->has_content)
        return m ? mt_error_set(MT_EIO, "search: the server answered a memory without content") : 0;
    if ((rc = mt_search_scan_text(&doc, r->q, m->content,
                                  m->size < cap ? (size_t)m->size : (size_t)cap)) < 0)
        return rc;
    mt_search_scan_count(&r->stats, &doc, r->q);
    if (!mt_search_scan_matches(&doc, r->q))
        return 0;
    if (r->n == r->cap) {
        size_t cap2 = r->cap ? 2 * r->cap : 16;
        found_memory *grown = realloc(r->found, cap2 * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory searching");
        r->found = grown;
        r->cap = cap2;
    }
    if (!(r->found[r->n].path = strdup(path + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    r->found[r->n].doc = doc;
    r->found[r->n].score = 0;
    r->n++;
    return 0;
}

/* Best first; equal scores by path, bytewise, as the indexed stores order them. */
static int by_rank(const void *a, const void *b)
{
    const found_memory *x = a, *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->path, y->path);
}

int mt_remote_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                     const char *path, size_t limit)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    search_run r;
    mt_store_hit *hits = NULL;
    mt_buf prefix = MT_BUF_INIT;
    size_t i, n = 0;
    int rc;

    *out = NULL;
    *count = 0;
    memset(&r, 0, sizeof(r));
    r.q = q;
    if (limit == 0)
        return mt_error_set(MT_EINVAL, "a search needs a limit of at least 1");
    if (!q || q->count == 0 || q->count > MT_SEARCH_TERMS_MAX)
        return mt_error_set(MT_EINVAL, "a search needs 1 to %d terms", MT_SEARCH_TERMS_MAX);
    if (mt_buf_printf(&prefix, "/%s%s", path, *path ? "/" : "") < 0)
        return MT_ENOMEM;
    if (mt_remote_segments(path) >= 20)
        rc = 0; /* nothing can lie beneath it */
    else
        rc = mt_remote_scan_all(rs, prefix.ptr, 0, 1, scan_cb, &r);
    mt_buf_dispose(&prefix);
    if (rc < 0)
        goto done;
    for (i = 0; i < r.n; i++)
        r.found[i].score = mt_search_scan_bm25(&r.stats, &r.found[i].doc, q);
    if (r.n)
        qsort(r.found, r.n, sizeof(*r.found), by_rank);
    n = r.n < limit ? r.n : limit;
    if (n && !(hits = calloc(n, sizeof(*hits)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching");
        n = 0;
        goto done;
    }
    for (i = 0; i < n; i++) {
        hits[i].path = r.found[i].path;
        hits[i].score = r.found[i].score;
        r.found[i].path = NULL;
    }
    *out = hits;
    *count = n;
done:
    for (i = 0; i < r.n; i++)
        free(r.found[i].path);
    free(r.found);
    return rc;
}

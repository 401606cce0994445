/* A search by scanning: the texts counted, the matches kept and ranked (scan_rank.h). */
#include "machinery/scan_rank.h"

#include <stdlib.h>
#include <string.h>

#include "machinery/search_index.h"

int mt_scan_rank_start(mt_scan_rank *r, const mt_search_query *q, size_t limit)
{
    memset(r, 0, sizeof(*r));
    r->q = q;
    if (limit == 0)
        return mt_error_set(MT_EINVAL, "a search needs a limit of at least 1");
    if (!q || q->count == 0 || q->count > MT_SEARCH_TERMS_MAX)
        return mt_error_set(MT_EINVAL, "a search needs 1 to %d terms", MT_SEARCH_TERMS_MAX);
    return 0;
}

int mt_scan_rank_add(mt_scan_rank *r, const char *path, const char *text, size_t len)
{
    uint64_t cap = r->q->max_size ? r->q->max_size : MT_SEARCH_INDEX_CAP;
    mt_search_scan_doc doc;
    int rc;

    if ((rc = mt_search_scan_text(&doc, r->q, text, (uint64_t)len < cap ? len : (size_t)cap)) < 0)
        return rc;
    mt_search_scan_count(&r->stats, &doc, r->q);
    if (!mt_search_scan_matches(&doc, r->q))
        return 0;
    if (r->n == r->cap) {
        size_t cap2 = r->cap ? 2 * r->cap : 16;
        mt_scan_found *grown = realloc(r->found, cap2 * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory searching");
        r->found = grown;
        r->cap = cap2;
    }
    if (!(r->found[r->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    r->found[r->n].doc = doc;
    r->found[r->n].score = 0;
    r->n++;
    return 0;
}

static int by_rank(const void *a, const void *b)
{
    const mt_scan_found *x = a, *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->path, y->path);
}

int mt_scan_rank_hits(mt_store_hit **out, size_t *count, mt_scan_rank *r, size_t limit)
{
    mt_store_hit *hits = NULL;
    size_t i, n;

    *out = NULL;
    *count = 0;
    for (i = 0; i < r->n; i++)
        r->found[i].score = mt_search_scan_bm25(&r->stats, &r->found[i].doc, r->q);
    if (r->n)
        qsort(r->found, r->n, sizeof(*r->found), by_rank);
    n = r->n < limit ? r->n : limit;
    if (n && !(hits = calloc(n, sizeof(*hits))))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    for (i = 0; i < n; i++) {
        hits[i].path = r->found[i].path;
        hits[i].score = r->found[i].score;
        r->found[i].path = NULL;
    }
    *out = hits;
    *count = n;
    return 0;
}

void mt_scan_rank_dispose(mt_scan_rank *r)
{
    size_t i;

    for (i = 0; i < r->n; i++)
        free(r->found[i].path);
    free(r->found);
    memset(r, 0, sizeof(*r));
}

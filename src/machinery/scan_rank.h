/*
 * A search by scanning (search/scan.h), for a store or layer that keeps no
 * index (the encryption layer, the remote store): each text is counted as
 * the scan meets it and the matching ones' paths and counts are kept; BM25
 * needs the whole collection's statistics, so they are ranked at the end.
 * Memory grows with the texts that match, never with the corpus.
 */
#ifndef MT_MACHINERY_SCAN_RANK_H
#define MT_MACHINERY_SCAN_RANK_H

#include <stddef.h>

#include <memtool/store.h>

#include "search/scan.h"

typedef struct {
    char *path;
    mt_search_scan_doc doc;
    double score;
} mt_scan_found;

typedef struct {
    const mt_search_query *q;
    mt_search_scan_stats stats;
    mt_scan_found *found;
    size_t n, cap;
} mt_scan_rank;

/* Start a scan for q: *r zeroed, or MT_EINVAL for a limit of 0 or a query
 * without 1 to MT_SEARCH_TERMS_MAX terms. */
int mt_scan_rank_start(mt_scan_rank *r, const mt_search_query *q, size_t limit);

/* Count the text at path (its first q->max_size bytes, the indexed stores'
 * cap without one) and keep it when it matches. */
int mt_scan_rank_add(mt_scan_rank *r, const char *path, const char *text, size_t len);

/* The best `limit` of those kept, best first (equal scores by path,
 * bytewise, as the indexed stores order them), handed over in *out. */
int mt_scan_rank_hits(mt_store_hit **out, size_t *count, mt_scan_rank *r, size_t limit);

void mt_scan_rank_dispose(mt_scan_rank *r);

#endif

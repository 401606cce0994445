/*
 * Search by scanning: a parsed query matched against a memory's text in
 * memory, for a store that keeps no index (the encryption layer, whose index
 * would hold the words in the clear).
 *
 * A text matches exactly as the indexed stores match it: its words are cut
 * by mt_search_words, every term must occur, a phrase as words in a row, the
 * last word of a prefix term as a prefix (CJK pairs are words like any
 * other). Ranking is BM25 as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75,
 * an IDF that is never below 1e-6), over the collection of texts counted
 * with mt_search_scan_count: so a scan of a store ranks like its index would.
 * A query of one term is scored without the term's IDF, as the indexed
 * stores score it (machinery/fts5_rank.h): the same for every text, it changes
 * no order, and the scores stay theirs.
 */
#ifndef MT_SEARCH_SCAN_H
#define MT_SEARCH_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "search/words.h"

/* One text: how many words it has, and how many times each term occurs in
 * it (a phrase at each word where it ends, so "a a" occurs twice in "a a a",
 * as FTS5 counts it). */
typedef struct {
    uint64_t words;
    uint64_t freq[MT_SEARCH_TERMS_MAX];
} mt_search_scan_doc;

/* The collection a score is relative to: texts counted, their words, and in
 * how many of them each term occurs. */
typedef struct {
    uint64_t docs;
    uint64_t words;
    uint64_t holding[MT_SEARCH_TERMS_MAX];
} mt_search_scan_stats;

/* Count q's terms in text. The copies of its words the matcher keeps are
 * wiped before it returns: the text may be a secret. MT_EINVAL for a query
 * mt_search_query_parse would not make (too many terms, an empty term, a
 * phrase too long). */
int mt_search_scan_text(mt_search_scan_doc *out, const mt_search_query *q, const char *text,
                        size_t len);

/* Whether d matches q (mt_search_query_eval: its clauses occur, its excluded terms do not). */
int mt_search_scan_matches(const mt_search_scan_doc *d, const mt_search_query *q);

/* Count d in the collection s (start from a zeroed s). */
void mt_search_scan_count(mt_search_scan_stats *s, const mt_search_scan_doc *d,
                          const mt_search_query *q);

/* d's BM25 score in s (higher is better; positive when d matches). */
double mt_search_scan_bm25(const mt_search_scan_stats *s, const mt_search_scan_doc *d,
                           const mt_search_query *q);

#endif

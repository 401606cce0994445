/*
 * BM25 as SQLite's FTS5 bm25() computes it (k1 = 1.2, b = 0.75, an IDF never
 * below 1e-6), operation for operation, so that every ranking memtool makes
 * (machinery/fts5_rank.c over an FTS5 index, scan.c over texts read whole) gives
 * the same doubles for the same counts.
 */
#ifndef MT_SEARCH_BM25_H
#define MT_SEARCH_BM25_H

#include <math.h>

#define MT_BM25_K1      1.2
#define MT_BM25_B       0.75
#define MT_BM25_IDF_MIN 1e-6

/* The weight of a term `holding` of `docs` texts hold. A term in more than
 * half of them would weigh less than nothing: FTS5 gives it a weight just
 * above none instead. */
static inline double mt_bm25_idf(double docs, double holding)
{
    double idf = log((docs - holding + 0.5) / (holding + 0.5));

    return idf <= 0.0 ? MT_BM25_IDF_MIN : idf;
}

/* The term-frequency part: `freq` occurrences in a text of `dl` words,
 * `avgdl` the mean. A query of one term is ranked by this alone (its
 * weight is the same for every text); of several, by the sum of each
 * term's weight times this. */
static inline double mt_bm25_tf(double freq, double dl, double avgdl)
{
    return (freq * (MT_BM25_K1 + 1.0)) /
           (freq + MT_BM25_K1 * (1 - MT_BM25_B + MT_BM25_B * dl / avgdl));
}

#endif

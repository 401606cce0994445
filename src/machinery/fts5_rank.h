/*
 * mt_rank(search_words): the ranking of memtool's FTS5 searches, smaller for
 * better matches, as bm25() is.
 *
 * A query of one phrase (a word, a quoted phrase, a prefix) is ranked by
 * BM25's term-frequency part alone: with one phrase, bm25() multiplies that
 * part by the phrase's IDF, a positive constant of the query, so the order
 * is bm25()'s (save two values that the product would round to one), but
 * the IDF's count of the matching rows, for a phrase or a prefix a second
 * full evaluation of the query, is not made. A query of several phrases
 * gets bm25()'s value exactly: there the weights change the order.
 *
 * Each match's length is FTS5's own, read past a query's first few matches
 * by one cursor along the table's %_docsize rather than a lookup a match:
 * it ranks the one FTS5 table both stores search, main.search_words, and
 * no other.
 */
#ifndef MT_STORE_FTS5_RANK_H
#define MT_STORE_FTS5_RANK_H

struct sqlite3;

/*
 * The FTS5 option both stores' search_words tables are made with: prefix
 * indexes of 2 to 5 characters. Without one, FTS5 answers `word*` by
 * merging the lists of every word it begins, which for a short prefix of a
 * big store is hundreds of milliseconds (`di*`: 0.6 s over 100 MB); with
 * them such a prefix is one list, for an index about three times the size.
 * A longer prefix begins fewer words, and is merged.
 */
#define MT_FTS5_PREFIXES "prefix='2 3 4 5'"

/* 1 when db has a search_words table made without MT_FTS5_PREFIXES (by an
 * older memtool), which the caller makes again; 0 when not; or an error. */
int mt_fts5_prefixes_missing(struct sqlite3 *db);

/* Register mt_rank() with the FTS5 module of db: before any statement that
 * calls it is prepared, on every connection that searches. */
int mt_fts5_rank_register(struct sqlite3 *db);

#endif

/*
 * Search text: how memories and queries become words, the same way for every
 * store, so that a query finds the same memories on each.
 *
 * A word is a run of letters and digits, folded: lowercase, Latin letters
 * without their accents (é is e, ß is ss, æ is ae), Greek without tonos, ё as
 * е, fullwidth ASCII as ASCII; combining marks are dropped. Chinese, Japanese
 * and Korean text has no spaces between words, so a run of it is cut into
 * overlapping pairs of characters ("日本語" is 日本, 本語), and a query's run
 * into the same pairs as a phrase; a lone character stays a word of its own.
 * Everything else (punctuation, symbols, emoji) separates words. A word is
 * at most MT_SEARCH_WORD_MAX bytes once folded: longer runs are cut there,
 * the same way in a memory and in a query.
 *
 * A query is words, "phrases in quotes" and prefixes (word*), all of which
 * must appear in a memory for it to match; a term after - or NOT must not
 * appear, and of terms joined by OR one is enough (OR binds tighter than the
 * implied AND: "a b OR c" is a and (b or c)). NOT and OR are operators only
 * in capitals.
 */
#ifndef MT_SEARCH_TEXT_H
#define MT_SEARCH_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include <memtool/store.h>

#include "util/buf.h"

#define MT_SEARCH_WORD_MAX   64   /* bytes of one folded word */
#define MT_SEARCH_QUERY_MAX  1000 /* bytes of a query */
#define MT_SEARCH_TERMS_MAX  16   /* words, phrases and prefixes in a query */
#define MT_SEARCH_PHRASE_MAX 32   /* words in one phrase */

/* A word found in text: its folded bytes (not NUL-terminated, valid until the
 * callback returns) and where it was, as byte offsets into the text. */
typedef struct {
    const char *word;
    size_t len;
    size_t start, end;
} mt_search_word;

/* Called for each word in order; return 0 to go on, anything else to stop
 * the walk with that value. */
typedef int (*mt_search_word_cb)(void *payload, const mt_search_word *w);

/* Cut text into words. Bytes that are not UTF-8 separate words. */
int mt_search_words(const char *text, size_t len, mt_search_word_cb cb, void *payload);

/* What a store indexes for a memory: its words, each followed by one space. */
int mt_search_index_text(mt_buf *out, const char *text, size_t len);

/* Parse a query. MT_EINVAL with a message naming the problem: an empty query,
 * a quote left open, a * that does not end a word, a query with no words, one
 * too long or with too many terms. Free with mt_search_query_free. */
int mt_search_query_parse(mt_search_query **out, const char *query, size_t len);
void mt_search_query_free(mt_search_query *q);

/* Whether a text in which term i occurs freq[i] times matches q: its
 * clauses (terms joined by OR) each occur, its excluded terms do not. */
int mt_search_query_eval(const mt_search_query *q, const uint64_t *freq);

/* The query for SQLite FTS5 (over mt_search_index_text's words, with the
 * ascii tokenizer), and as a PostgreSQL tsquery: a literal of exact words
 * (for CAST(... AS tsquery); to_tsquery('simple', ...) reads it the same in
 * a UTF8 database, but parses its words again). */
int mt_search_fts5_match(mt_buf *out, const mt_search_query *q);
int mt_search_tsquery(mt_buf *out, const mt_search_query *q);

/* mt_search_index_text's words as a PostgreSQL tsvector literal, each word
 * exactly as cut, with its positions (tsvector.c says within which bounds),
 * for CAST(... AS tsvector): what the tsquery above is matched against. */
int mt_search_tsvector(mt_buf *out, const char *words, size_t len);

/* Where a query's terms occur in a memory's text, for showing a hit: the
 * lines (1-based, ascending, at most max_lines of them kept), how many times
 * any term occurs, and the first occurrence's byte range. */
typedef struct {
    uint32_t *lines;
    size_t line_count;
    int more_lines; /* lines beyond max_lines had matches too */
    uint64_t occurrences;
    int found;
    size_t first_start, first_end;
} mt_search_matches;

int mt_search_match(mt_search_matches *out, const mt_search_query *q, const char *text, size_t len,
                    size_t max_lines);
void mt_search_matches_dispose(mt_search_matches *m);

/* The byte ranges of the occurrences of q's terms to find (not the excluded
 * ones) in text, in the order they end: ranges[2k] and ranges[2k + 1] are the
 * k-th one's start and end, at most max of them. */
int mt_search_occurrences(size_t *ranges, size_t *count, size_t max, const mt_search_query *q,
                          const char *text, size_t len);

#endif

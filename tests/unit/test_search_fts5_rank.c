/* mt_rank() (machinery/fts5_rank.h) against FTS5's own bm25() on the same table:
 * for one phrase (a word, a phrase, a prefix) the same order, its value
 * bm25()'s without the IDF; for several phrases bm25()'s value itself. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "util/buf.h"
#include "search/words.h"
#include "machinery/fts5_rank.h"

#define DOCS 400

/* Words of a skewed spread, some sharing a prefix ("ka"), so that matches
 * differ in how often they hold a term and in their length. */
static const char *const VOCAB[] = {"ka",   "kalo", "kami", "karu",  "lo",   "mi",  "re",
                                    "tusa", "ne",   "po",   "diver", "stan", "gro", "lin"};
#define NVOCAB (sizeof(VOCAB) / sizeof(VOCAB[0]))

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The table made with FTS5 options beyond the tokenizer ("" none). */
static sqlite3 *corpus_with(const char *options)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *put = NULL;
    mt_buf text = MT_BUF_INIT;
    char sql[256];

    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(mt_fts5_rank_register(db), 0);
    snprintf(sql, sizeof(sql),
             "CREATE VIRTUAL TABLE search_words USING fts5(words, tokenize='ascii'%s)", options);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "INSERT INTO search_words(words) VALUES(?1)", -1, &put, NULL),
        SQLITE_OK);
    for (int i = 0; i < DOCS; i++) {
        size_t words = 1 + next_random() % 60;

        mt_buf_truncate(&text, 0);
        for (size_t w = 0; w < words; w++) {
            /* the square of a uniform draw: low indexes are common */
            uint64_t r = next_random() % (NVOCAB * NVOCAB);
            size_t k = (size_t)sqrt((double)r);

            assert_int_equal(mt_buf_printf(&text, "%s%s", w ? " " : "", VOCAB[NVOCAB - 1 - k]), 0);
        }
        sqlite3_bind_text(put, 1, text.ptr, (int)text.len, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(put), SQLITE_DONE);
        sqlite3_reset(put);
    }
    sqlite3_finalize(put);
    mt_buf_dispose(&text);
    return db;
}

static sqlite3 *corpus(void)
{
    return corpus_with("");
}

typedef struct {
    sqlite3_int64 id;
    double bm25, rank;
} row;

/* Every match of the query as memtool writes it for FTS5, ordered by fn
 * (ties by rowid), with both functions' values; the count in *n. */
static row *ranked(size_t *n, sqlite3 *db, const char *query, const char *fn)
{
    mt_search_query *q = NULL;
    mt_buf match = MT_BUF_INIT;
    char sql[256];
    sqlite3_stmt *s = NULL;
    row *rows = calloc(DOCS, sizeof(*rows));

    assert_non_null(rows);
    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    assert_int_equal(mt_search_fts5_match(&match, q), 0);
    snprintf(sql, sizeof(sql),
             "SELECT rowid, bm25(search_words), mt_rank(search_words) FROM search_words "
             "WHERE search_words MATCH ?1 ORDER BY %s(search_words), rowid",
             fn);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_text(s, 1, match.ptr, (int)match.len, SQLITE_STATIC);
    *n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        assert_true(*n < DOCS);
        rows[*n].id = sqlite3_column_int64(s, 0);
        rows[*n].bm25 = sqlite3_column_double(s, 1);
        rows[*n].rank = sqlite3_column_double(s, 2);
        (*n)++;
    }
    assert_int_equal(sqlite3_errcode(db), SQLITE_DONE);
    sqlite3_finalize(s);
    mt_buf_dispose(&match);
    mt_search_query_free(q);
    return rows;
}

/* One phrase's bm25() as FTS5 weighs it: its IDF from how many of the
 * table's rows match. */
static double idf_of(size_t rows, size_t hits)
{
    double w = log(((double)rows - (double)hits + 0.5) / ((double)hits + 0.5));

    return w <= 0.0 ? 1e-6 : w;
}

static double idf(size_t hits)
{
    return idf_of(DOCS, hits);
}

static size_t one_phrase(sqlite3 *db, const char *query, size_t min_hits)
{
    size_t n, m, i, ties = 0;
    row *by_bm25 = ranked(&n, db, query, "bm25");
    row *by_rank = ranked(&m, db, query, "mt_rank");

    assert_int_equal(n, m);
    assert_true(n >= min_hits);
    for (i = 0; i < n; i++) {
        /* the same rows in the same order, ties (broken by rowid) alike */
        if (by_bm25[i].id != by_rank[i].id)
            fail_msg("%s: row %zu is %lld by bm25(), %lld by mt_rank()", query, i,
                     (long long)by_bm25[i].id, (long long)by_rank[i].id);
        if (i > 0) {
            assert_int_equal(by_bm25[i - 1].bm25 == by_bm25[i].bm25,
                             by_rank[i - 1].rank == by_rank[i].rank);
            ties += by_rank[i - 1].rank == by_rank[i].rank;
        }
        /* a negative rank (FTS5 orders best first, ascending), bm25()'s
         * with the phrase's IDF left out */
        assert_true(by_rank[i].rank < 0);
        assert_true(by_rank[i].bm25 == -1.0 * (0.0 + idf(n) * -by_rank[i].rank));
    }
    assert_true(ties > 0); /* rows of one length and count: ties by rowid were tried */
    free(by_bm25);
    free(by_rank);
    return n;
}

static void test_one_phrase_orders_as_bm25(void **state)
{
    sqlite3 *db = corpus();

    (void)state;
    one_phrase(db, "ka", DOCS / 2); /* in most rows: its IDF is FTS5's floor */
    /* a rarer word: in under half the rows, so a real IDF, not FTS5's floor */
    assert_true(one_phrase(db, "gro", 20) < DOCS / 2);
    one_phrase(db, "\"ka kalo\"", 20);  /* a phrase */
    one_phrase(db, "ka*", DOCS / 2);    /* a prefix of four words */
    one_phrase(db, "\"kalo ka*\"", 20); /* a phrase ending in a prefix */
    sqlite3_close(db);
}

static void several_phrases(sqlite3 *db, const char *query)
{
    size_t n, m, i;
    row *by_bm25 = ranked(&n, db, query, "bm25");
    row *by_rank = ranked(&m, db, query, "mt_rank");

    assert_int_equal(n, m);
    assert_true(n > 10);
    for (i = 0; i < n; i++) {
        assert_true(by_bm25[i].id == by_rank[i].id);
        /* bm25() itself, to the bit */
        assert_memory_equal(&by_bm25[i].bm25, &by_bm25[i].rank, sizeof(double));
    }
    free(by_bm25);
    free(by_rank);
}

static void test_several_phrases_are_bm25(void **state)
{
    sqlite3 *db = corpus();

    (void)state;
    several_phrases(db, "ka gro");
    several_phrases(db, "\"ka kalo\" mi*");
    several_phrases(db, "ka ka");
    sqlite3_close(db);
}

/* The pages of the database a ranked query reads. */
static int pages_read(sqlite3 *db, const char *query, const char *fn)
{
    char sql[256];
    int hit = 0, miss = 0, hi;

    snprintf(sql, sizeof(sql),
             "SELECT rowid FROM search_words WHERE search_words MATCH '%s' "
             "ORDER BY %s(search_words) LIMIT 11",
             query, fn);
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_HIT, &hit, &hi, 1);
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &miss, &hi, 1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_HIT, &hit, &hi, 0);
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &miss, &hi, 0);
    return hit + miss;
}

/* One phrase is not counted again before it is ranked: fewer pages than
 * bm25() reads; several phrases are, as bm25() counts them (their values
 * are bm25()'s, above), and their lengths read along cost no more pages
 * than FTS5's lookups. */
static void test_one_phrase_not_counted(void **state)
{
    sqlite3 *db = corpus();
    static const char *const one[] = {"\"ka\"", "\"ka\" *", "\"ka kalo\""};

    (void)state;
    for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
        assert_true(pages_read(db, one[i], "mt_rank") < pages_read(db, one[i], "bm25"));
    assert_true(pages_read(db, "\"ka\" AND \"gro\"", "mt_rank") <=
                pages_read(db, "\"ka\" AND \"gro\"", "bm25"));
    sqlite3_close(db);
}

/* The statement on db reading %_docsize, if one is being stepped. */
static sqlite3_stmt *lengths_cursor(sqlite3 *db)
{
    for (sqlite3_stmt *s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s))
        if (strstr(sqlite3_sql(s), "search_words_docsize") && sqlite3_stmt_busy(s))
            return s;
    return NULL;
}

/* Every match of a query, in a scan in rowid order `order`, against
 * bm25(): mt_rank() is bm25() without the IDF for one phrase, bm25() for
 * several (`several`), whichever way each length was read. The cursor
 * along %_docsize is still reading lengths at the scan's last rows when
 * `along`. */
static void scan_agrees(sqlite3 *db, const char *match, int several, const char *order, int along)
{
    char sql[256];
    sqlite3_stmt *s = NULL, *cursor;
    size_t rows, hits, i = 0;
    int steps = -1;

    snprintf(sql, sizeof(sql),
             "SELECT (SELECT count(*) FROM search_words), count(*) FROM search_words "
             "WHERE search_words MATCH '%s'",
             match);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    rows = (size_t)sqlite3_column_int64(s, 0);
    hits = (size_t)sqlite3_column_int64(s, 1);
    sqlite3_finalize(s);
    assert_true(hits > 64); /* past the rows looked up before the cursor */
    snprintf(sql, sizeof(sql),
             "SELECT bm25(search_words), mt_rank(search_words) FROM search_words "
             "WHERE search_words MATCH '%s' ORDER BY rowid %s",
             match, order);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        double bm25 = sqlite3_column_double(s, 0), rank = sqlite3_column_double(s, 1);

        if (bm25 != (several ? rank : -1.0 * (0.0 + idf_of(rows, hits) * -rank)))
            fail_msg("%s %s: match %zu: bm25() %.17g, mt_rank() %.17g", match, order, i, bm25,
                     rank);
        if (along && ++i > hits - 8) {
            /* the cursor reads on: its steps grow row by row */
            assert_non_null(cursor = lengths_cursor(db));
            assert_true(sqlite3_stmt_status(cursor, SQLITE_STMTSTATUS_VM_STEP, 0) > steps);
            steps = sqlite3_stmt_status(cursor, SQLITE_STMTSTATUS_VM_STEP, 0);
        }
    }
    assert_int_equal(sqlite3_errcode(db), SQLITE_DONE);
    sqlite3_finalize(s);
    assert_null(lengths_cursor(db)); /* gone with the query */
}

/* The lengths of a word most rows hold are read by a cursor along
 * %_docsize: stepping over gaps in the rowids of every size, seeking
 * across big ones and in a scan backwards, over rowids below zero, in a
 * write transaction that changed them, and not at all from a table
 * without %_docsize. */
static void test_lengths_read_along(void **state)
{
    sqlite3 *db = corpus(), *bare = corpus_with(", columnsize=0");

    (void)state;
    /* rowids below zero too (-1 among them); gaps of 1 to 6 rows, and one of 100 */
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO search_words(rowid, words) SELECT -rowid, words "
                                  "FROM search_words WHERE rowid <= 120;"
                                  "DELETE FROM search_words WHERE rowid % 7 = 3 OR "
                                  "rowid % 11 IN (1, 2, 3, 4, 5) OR rowid BETWEEN 150 AND 249",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    scan_agrees(db, "ka", 0, "ASC", 1);
    scan_agrees(db, "ka OR lo", 1, "ASC", 1);
    scan_agrees(db, "ka", 0, "DESC", 1);
    scan_agrees(db, "ka*", 0, "ASC", 1);
    assert_int_equal(sqlite3_exec(db,
                                  "BEGIN; UPDATE search_words SET words = words || ' mi mi mi' "
                                  "WHERE rowid % 3 = 0",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    scan_agrees(db, "ka", 0, "ASC", 1);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    scan_agrees(bare, "ka", 0, "ASC", 0);
    sqlite3_close(bare);
    sqlite3_close(db);
}

/* Several connections each have their own: registering is per connection. */
static void test_registered_per_connection(void **state)
{
    sqlite3 *a = corpus(), *b = NULL;

    (void)state;
    assert_int_equal(sqlite3_open(":memory:", &b), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(b, "CREATE VIRTUAL TABLE t USING fts5(words); INSERT INTO t VALUES('x')", NULL,
                     NULL, NULL),
        SQLITE_OK);
    /* not registered on b: FTS5 does not know the function */
    assert_int_not_equal(
        sqlite3_exec(b, "SELECT mt_rank(t) FROM t WHERE t MATCH 'x'", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(mt_fts5_rank_register(b), 0);
    assert_int_equal(
        sqlite3_exec(b, "SELECT mt_rank(t) FROM t WHERE t MATCH 'x'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(b);
    sqlite3_close(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_phrase_orders_as_bm25),
        cmocka_unit_test(test_several_phrases_are_bm25),
        cmocka_unit_test(test_one_phrase_not_counted),
        cmocka_unit_test(test_lengths_read_along),
        cmocka_unit_test(test_registered_per_connection),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The SQLite store's search skips its check of every file while nothing
 * changed since the index was last whole (search_fresh): a change made by
 * another process, by plain SQL as the sqlite3 shell would, or between two
 * searches with other limits is still found by the next search; a record
 * is forgotten when a trigger that keeps it right was gone; a file left out
 * for want of its content is tried again by each search.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memtool/store.h>

#include <sqlite3.h>

#include "helpers.h"
#include "search/text.h"
#include "store/search_index.h"

static char dir[256], db_path[300];

static int setup(void **state)
{
    (void)state;
    mt_test_scratch_make(dir, sizeof(dir), "fresh");
    snprintf(db_path, sizeof(db_path), "%s/store.sqlite", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return mt_test_scratch_remove(dir);
}

/* An edit that writes the payload's text whatever the file held. */
static int replace_all(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    (void)data;
    (void)len;
    if (!(*out = strdup(payload)))
        return MT_ENOMEM;
    *out_len = strlen(*out);
    return 0;
}

static mt_store *open_store(void)
{
    mt_store *st;

    if (mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_NONE) < 0)
        fail_msg("open: %s", mt_error_last()->message);
    return st;
}

static void create(mt_store *st, const char *path, const char *text)
{
    mt_store_op op;

    mt_store_op_init(&op);
    if (st->create(st, &op, path, text, strlen(text)) < 0)
        fail_msg("create %s: %s", path, mt_error_last()->message);
}

static void sql(const char *text)
{
    sqlite3 *db;
    char *msg = NULL;

    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", text, msg);
    sqlite3_close(db);
}

/* 1 when the default tenant's record says its whole index is up to date
 * for cap, 0 when it does not (or there is none). */
static int fresh(long long cap)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    int got;

    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM search_fresh WHERE "
                                        "indexed = changes AND cap = ?1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, cap);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    got = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return got;
}

#define FOUND(st, query, want)                                                                     \
    do {                                                                                           \
        char *got_ = mt_test_store_found(st, query, 100, 0);                                       \
        if (strcmp(got_, want) != 0)                                                               \
            fail_msg("the store found for %s:\n%s\nnot\n%s", query, got_, want);                   \
        free(got_);                                                                                \
    } while (0)

/* Each kind of change, made by another process between two searches of
 * this one, is found; and the searches in between are the ones that skip. */
static void test_changes_of_other_processes(void **state)
{
    mt_store *st = open_store();
    int status, step;

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    create(st, "c.md", "charlie words\n");
    FOUND(st, "words", "a.md\nb.md\nc.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    FOUND(st, "alpha", "a.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    for (step = 0; step < 4; step++) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
            mt_store *other = open_store();
            mt_store_op op;
            int rc = 0;

            mt_store_op_init(&op);
            if (step == 0)
                rc = other->create(other, &op, "d.md", "delta words\n", 12);
            else if (step == 1)
                rc = other->edit(other, &op, "a.md", replace_all, "alpha again\n");
            else if (step == 2)
                rc = other->rename(other, &op, "b.md", "e.md");
            else
                rc = other->remove(other, &op, "c.md");
            other->free(other);
            _exit(rc < 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
        if (step == 0)
            FOUND(st, "delta", "d.md\n");
        else if (step == 1)
            FOUND(st, "again", "a.md\n");
        else if (step == 2)
            FOUND(st, "bravo", "e.md\n");
        else
            FOUND(st, "charlie", "-");
        assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    }
    FOUND(st, "words", "d.md\ne.md\n");
    st->free(st);
}

/* A change made in plain SQL (the sqlite3 shell, an older memtool) is
 * counted by the triggers all the same: a.md made to hold b.md's content. */
static void test_change_in_plain_sql(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    FOUND(st, "bravo", "b.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    sql("UPDATE contents SET refs = refs + 1 WHERE sha256 = (SELECT sha256 FROM nodes WHERE "
        "path = 'b.md');"
        "UPDATE nodes SET sha256 = (SELECT sha256 FROM nodes WHERE path = 'b.md') "
        "WHERE path = 'a.md'");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    FOUND(st, "bravo", "a.md\nb.md\n");
    FOUND(st, "alpha", "-");
    st->free(st);
}

/* The store's own search beneath path, with max_size. */
static char *found_beneath(mt_store *st, const char *query, const char *path, uint64_t max_size)
{
    mt_search_query *q = NULL;
    mt_store_hit *hits = NULL;
    size_t n = 0;
    char *out;

    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    q->max_size = max_size;
    if (st->search(st, &hits, &n, q, path, 10) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    mt_search_query_free(q);
    assert_non_null(out = strdup(n ? hits[0].path : "-"));
    mt_store_hits_free(hits, n);
    return out;
}

/* A record is for the max file size its search indexed to: a search with
 * another is not answered from it, and a search beneath a path that indexed
 * a file again to another size forgets it. */
static void test_other_limits(void **state)
{
    mt_store *st = open_store();
    char *got;

    (void)state;
    create(st, "x/big.md", "head words then a long stretch of filler before the tailword\n");
    create(st, "small.md", "head words\n");
    got = found_beneath(st, "tailword", "", 20);
    assert_string_equal(got, "-");
    free(got);
    assert_int_equal(fresh(20), 1);
    got = found_beneath(st, "tailword", "", 1000);
    assert_string_equal(got, "x/big.md");
    free(got);
    assert_int_equal(fresh(1000), 1);
    /* Beneath x, to 20 bytes: big.md's row holds its first 20 bytes now. */
    got = found_beneath(st, "tailword", "x", 20);
    assert_string_equal(got, "-");
    free(got);
    assert_int_equal(fresh(1000), 0);
    got = found_beneath(st, "tailword", "", 1000);
    assert_string_equal(got, "x/big.md");
    free(got);
    st->free(st);
}

/* Changes made while a trigger was gone went uncounted: the store, opened
 * again, makes it again and forgets every record. */
static void test_trigger_gone(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    FOUND(st, "bravo", "b.md\n");
    st->free(st);
    sql("DROP TRIGGER search_fresh_node_set;"
        "UPDATE contents SET refs = refs + 1 WHERE sha256 = (SELECT sha256 FROM nodes WHERE "
        "path = 'b.md');"
        "UPDATE nodes SET sha256 = (SELECT sha256 FROM nodes WHERE path = 'b.md') "
        "WHERE path = 'a.md'");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    st = open_store();
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    FOUND(st, "bravo", "a.md\nb.md\n");
    st->free(st);
}

/* A file whose content row is missing is left out and no record made, so
 * once the row is back (however it came back) the next search finds it. */
static void test_left_out_tried_again(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    sql("CREATE TABLE kept AS SELECT * FROM contents WHERE sha256 = (SELECT sha256 FROM nodes "
        "WHERE path = 'b.md');"
        "DELETE FROM contents WHERE sha256 = (SELECT sha256 FROM nodes WHERE path = 'b.md')");
    FOUND(st, "words", "a.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    sql("INSERT INTO contents SELECT * FROM kept; DROP TABLE kept");
    FOUND(st, "words", "a.md\nb.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    st->free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_changes_of_other_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_change_in_plain_sql, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_out_tried_again, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

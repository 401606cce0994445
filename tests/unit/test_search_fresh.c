/*
 * The SQLite store's search skips its check of every file, and answers in a
 * read snapshot without the write lock, while nothing changed since the
 * index was last whole (search_clean): a change made by another process, by
 * memtool, by plain SQL as the sqlite3 shell would, by another tenant, or
 * between two searches with other limits, or a directory put in a file's
 * place, is still found by the next search; a directory changed in place or
 * deleted, or a file's times, change nothing; a trigger dropped while a
 * handle is open makes every search check; a file left out for want of its
 * content is tried again by each search; a store made with the change
 * counter that came before is brought to the record when opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memtool/store.h>

#include <sqlite3.h>

#include "helpers.h"
#include "search/words.h"
#include "machinery/search_index.h"

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

static mt_store *open_tenant(const char *tenant)
{
    mt_store *st;

    if (mt_store_sqlite_open(&st, db_path, tenant, MT_DURABILITY_NONE) < 0)
        fail_msg("open: %s", mt_error_last()->message);
    return st;
}

static mt_store *open_store(void)
{
    return open_tenant(NULL);
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
    mt_test_sql_exec(db_path, text);
}

/* The first column of the first row of a query, as a number. */
static long long sql_number(const char *text)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    long long got;

    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, text, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", text, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    got = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return got;
}

/* a.md made to hold b.md's content, in plain SQL. */
#define A_AS_B                                                                                     \
    "UPDATE content_refs SET refs = refs + 1 WHERE sha256 = (SELECT sha256 FROM nodes WHERE "      \
    "path = 'b.md');"                                                                              \
    "UPDATE nodes SET sha256 = (SELECT sha256 FROM nodes WHERE path = 'b.md') "                    \
    "WHERE path = 'a.md';"

/* 1 when tenant's record says its whole index is up to date for cap (and
 * the schema is the one it was made under), 0 when it does not. */
static int fresh_of(const char *tenant, long long cap)
{
    char text[300];

    snprintf(text, sizeof(text),
             "SELECT count(*) FROM search_clean WHERE tenant = '%s' AND cap = %lld AND "
             "cookie = (SELECT schema_version FROM pragma_schema_version)",
             tenant, cap);
    return (int)sql_number(text);
}

static int fresh(long long cap)
{
    return fresh_of("default", cap);
}

/* What the searches did: the write transactions they committed (none for a
 * search answered from a read snapshot) and the memories they indexed or
 * forgot. */
static size_t txns, indexed;

static void count_hook(size_t written, int committed)
{
    if (committed) {
        txns++;
        indexed += written;
    }
}

/* The store's answer to query, and whether the search caught up (took the
 * write lock) to give it: 1 it did, 0 it answered from a read snapshot. */
static int found_how(mt_store *st, const char *query, const char *want)
{
    char *got;

    txns = indexed = 0;
    mt_search_index_hook = count_hook;
    got = mt_test_store_found(st, query, 100, 0);
    mt_search_index_hook = NULL;
    if (strcmp(got, want) != 0)
        fail_msg("the store found for %s:\n%s\nnot\n%s", query, got, want);
    free(got);
    return txns > 0;
}

/* The search that found want caught up first (took the write lock). */
#define CAUGHT_UP(st, query, want) assert_int_equal(found_how(st, query, want), 1)
/* The search that found want answered from a read snapshot, checking nothing. */
#define SKIPPED(st, query, want) assert_int_equal(found_how(st, query, want), 0)

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
    CAUGHT_UP(st, "words", "a.md\nb.md\nc.md\n");
    assert_int_equal(indexed, 3);
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    SKIPPED(st, "alpha", "a.md\n");
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
                rc = other->edit(other, &op, "a.md", mt_test_replace_with, "alpha again\n");
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
            CAUGHT_UP(st, "delta", "d.md\n");
        else if (step == 1)
            CAUGHT_UP(st, "again", "a.md\n");
        else if (step == 2)
            CAUGHT_UP(st, "bravo", "e.md\n");
        else
            CAUGHT_UP(st, "charlie", "-");
        /* One file indexed again (a rename: the new path indexed, the old
         * forgotten; a removal: forgotten). */
        assert_int_equal(indexed, step == 2 ? 2 : 1);
        assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    }
    SKIPPED(st, "words", "d.md\ne.md\n");
    st->free(st);
}

/* A file's content changed by this handle (the write path every memtool
 * change takes) is found by its next search, which is the only one that
 * catches up. */
static void test_own_edit_caught_up(void **state)
{
    mt_store *st = open_store();
    mt_store_op op;

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    CAUGHT_UP(st, "alpha", "a.md\n");
    SKIPPED(st, "alpha", "a.md\n");
    mt_store_op_init(&op);
    assert_int_equal(st->edit(st, &op, "a.md", mt_test_replace_with, "zulu words\n"), 0);
    CAUGHT_UP(st, "alpha", "-");
    assert_int_equal(indexed, 1);
    SKIPPED(st, "zulu", "a.md\n");
    st->free(st);
}

/* A fresh search takes no lock: it answers while another connection holds
 * the write lock (BEGIN IMMEDIATE) with a change of its own not yet
 * committed, which it does not see; once that commits, the next search
 * catches up on it. A search that took the write lock would wait here for
 * the change's whole transaction and then fail. */
static void test_fresh_search_takes_no_lock(void **state)
{
    mt_store *st = open_store();
    sqlite3 *holder;

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    CAUGHT_UP(st, "words", "a.md\nb.md\n");
    assert_int_equal(sqlite3_open(db_path, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE;" A_AS_B, NULL, NULL, NULL), SQLITE_OK);
    SKIPPED(st, "bravo", "b.md\n");
    SKIPPED(st, "alpha", "a.md\n");
    assert_int_equal(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(holder);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    assert_int_equal(indexed, 1);
    SKIPPED(st, "alpha", "-");
    st->free(st);
}

/* A change made in plain SQL (the sqlite3 shell, an older memtool) is
 * recorded by the triggers all the same: a.md made to hold b.md's content. */
static void test_change_in_plain_sql(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    CAUGHT_UP(st, "bravo", "b.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    sql(A_AS_B);
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    SKIPPED(st, "alpha", "-");
    st->free(st);
}

/* A directory put in a file's place by INSERT OR REPLACE, or moved there by
 * UPDATE OR REPLACE, deletes the file without its delete trigger: the put
 * or the move still marks the tenant changed. */
static void test_directory_replaces_file(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    create(st, "d/c.md", "charlie words\n");
    CAUGHT_UP(st, "words", "a.md\nb.md\nd/c.md\n");
    sql("INSERT OR REPLACE INTO nodes(tenant, path, kind, size) VALUES ('default', 'a.md', 2, 0)");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "words", "b.md\nd/c.md\n");
    sql("UPDATE OR REPLACE nodes SET path = 'b.md' WHERE tenant = 'default' AND path = 'd'");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "words", "d/c.md\n");
    st->free(st);
}

/* What no search reads keeps the record: a directory changed in place or
 * deleted, a file's times, a file's columns set to what they hold. Each tenant has its own record:
 * one tenant's change leaves the other's, whose search still skips and
 * never finds the first's memories. */
static void test_what_keeps_the_record(void **state)
{
    mt_store *ann = open_tenant("ann"), *bob = open_tenant("bob");

    (void)state;
    create(ann, "a.md", "alpha words\n");
    create(bob, "b.md", "bravo words\n");
    sql("INSERT INTO nodes(tenant, path, kind, size) VALUES ('ann', 'x', 2, 0)");
    CAUGHT_UP(ann, "words", "a.md\n");
    CAUGHT_UP(bob, "words", "b.md\n");
    sql("UPDATE nodes SET accessed = accessed + 1, modified = modified + 1;"
        "UPDATE nodes SET sha256 = sha256, size = size, path = path, kind = kind;"
        "UPDATE nodes SET size = 1 WHERE path = 'x';"
        "DELETE FROM nodes WHERE path = 'x'");
    assert_int_equal(fresh_of("ann", MT_SEARCH_INDEX_CAP), 1);
    assert_int_equal(fresh_of("bob", MT_SEARCH_INDEX_CAP), 1);
    create(ann, "x/c.md", "charlie words\n");
    assert_int_equal(fresh_of("ann", MT_SEARCH_INDEX_CAP), 0);
    assert_int_equal(fresh_of("bob", MT_SEARCH_INDEX_CAP), 1);
    SKIPPED(bob, "words", "b.md\n");
    SKIPPED(bob, "charlie", "-");
    CAUGHT_UP(ann, "words", "a.md\nx/c.md\n");
    /* A file moved from one tenant to the other, in plain SQL: both catch up. */
    sql("INSERT INTO contents SELECT 'bob', sha256, data FROM contents WHERE tenant = 'ann' "
        "AND sha256 = (SELECT sha256 FROM nodes WHERE tenant = 'ann' AND path = 'a.md');"
        "INSERT INTO content_refs SELECT tenant, sha256, 1 FROM contents WHERE tenant = 'bob' "
        "AND sha256 = (SELECT sha256 FROM nodes WHERE tenant = 'ann' AND path = 'a.md');"
        "UPDATE nodes SET tenant = 'bob' WHERE tenant = 'ann' AND path = 'a.md'");
    assert_int_equal(fresh_of("ann", MT_SEARCH_INDEX_CAP), 0);
    assert_int_equal(fresh_of("bob", MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(ann, "words", "x/c.md\n");
    CAUGHT_UP(bob, "alpha", "a.md\n");
    ann->free(ann);
    bob->free(bob);
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

/* A trigger dropped while this handle stays open: a change made then goes
 * unrecorded, so no record made before it is trusted (the schema moved on
 * since), and none is made while the trigger is missing: every search of
 * the open handle checks every file. Opened again, the store makes the
 * trigger again and its searches skip again. */
static void test_trigger_gone(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    CAUGHT_UP(st, "bravo", "b.md\n");
    sql("DROP TRIGGER search_clean_node_set;" A_AS_B);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    assert_int_equal(indexed, 1);
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    assert_int_equal(indexed, 0);
    st->free(st);
    st = open_store();
    assert_int_equal(sql_number("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND "
                                "name = 'search_clean_node_set'"),
                     1);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    SKIPPED(st, "bravo", "a.md\nb.md\n");
    st->free(st);
}

/* A trigger dropped and made again while the handle stays open, a change
 * made in between: the records made before are not trusted. */
static void test_trigger_made_again(void **state)
{
    mt_store *st = open_store();
    char *def;
    char text[2048];
    sqlite3 *db;
    sqlite3_stmt *q;

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    CAUGHT_UP(st, "bravo", "b.md\n");
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT sql FROM sqlite_master WHERE name = "
                                        "'search_clean_node_set'",
                                        -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_non_null(def = strdup((const char *)sqlite3_column_text(q, 0)));
    sqlite3_finalize(q);
    sqlite3_close(db);
    snprintf(text, sizeof(text), "DROP TRIGGER search_clean_node_set;" A_AS_B "%s", def);
    free(def);
    sql(text);
    CAUGHT_UP(st, "bravo", "a.md\nb.md\n");
    assert_int_equal(indexed, 1);
    SKIPPED(st, "bravo", "a.md\nb.md\n");
    st->free(st);
}

/* The record's table dropped while a handle is open: a search fails rather
 * than answer (and so does a change to a file: its trigger has nowhere to
 * write); opened again, the store makes it again. */
static void test_record_table_gone(void **state)
{
    mt_store *st = open_store();
    mt_search_query *q = NULL;
    mt_store_hit *hits = NULL;
    mt_store_op op;
    size_t n = 0;

    (void)state;
    create(st, "a.md", "alpha words\n");
    CAUGHT_UP(st, "alpha", "a.md\n");
    sql("DROP TABLE search_clean");
    assert_int_equal(mt_search_query_parse(&q, "alpha", 5), 0);
    assert_true(st->search(st, &hits, &n, q, "", 10) < 0);
    assert_non_null(strstr(mt_error_last()->message, "search_clean"));
    mt_search_query_free(q);
    mt_store_op_init(&op);
    assert_true(st->edit(st, &op, "a.md", mt_test_replace_with, "zulu words\n") < 0);
    st->free(st);
    st = open_store();
    mt_store_op_init(&op);
    assert_int_equal(st->edit(st, &op, "a.md", mt_test_replace_with, "zulu words\n"), 0);
    CAUGHT_UP(st, "zulu", "a.md\n");
    SKIPPED(st, "alpha", "-");
    st->free(st);
}

/* The change counter this record replaced (table search_fresh, its triggers
 * bumping a count at every change), as the memtool before this one left it:
 * replaced when the store is opened, the counter's table and triggers gone. */
static void test_counter_replaced(void **state)
{
    mt_store *st = open_store();
    mt_store_op op;

    (void)state;
    create(st, "a.md", "alpha words\n");
    create(st, "b.md", "bravo words\n");
    st->free(st);
    sql("DROP TABLE search_clean; DROP TRIGGER search_clean_node_put;"
        "DROP TRIGGER search_clean_node_gone; DROP TRIGGER search_clean_node_set;"
        "DROP TRIGGER search_clean_node_out;"
        "DROP TRIGGER search_clean_doc_put; DROP TRIGGER search_clean_doc_gone;"
        "DROP TRIGGER search_clean_doc_set;"
        "CREATE TABLE search_fresh(tenant TEXT PRIMARY KEY, changes INTEGER NOT NULL,"
        "  indexed INTEGER, cap INTEGER) WITHOUT ROWID;"
        "CREATE TRIGGER search_fresh_node_put AFTER INSERT ON nodes BEGIN"
        "  UPDATE search_fresh SET changes = changes + 1 WHERE tenant = new.tenant; END;"
        "CREATE TRIGGER search_fresh_node_gone AFTER DELETE ON nodes BEGIN"
        "  UPDATE search_fresh SET changes = changes + 1 WHERE tenant = old.tenant; END;"
        "CREATE TRIGGER search_fresh_node_set AFTER UPDATE OF tenant, path, kind, sha256"
        "  ON nodes BEGIN"
        "  UPDATE search_fresh SET changes = changes + 1 WHERE tenant IN (old.tenant, new.tenant);"
        "  END;"
        "CREATE TRIGGER search_fresh_doc_put AFTER INSERT ON search_docs BEGIN"
        "  UPDATE search_fresh SET indexed = NULL WHERE tenant = new.tenant; END;"
        "CREATE TRIGGER search_fresh_doc_gone AFTER DELETE ON search_docs BEGIN"
        "  UPDATE search_fresh SET indexed = NULL WHERE tenant = old.tenant; END;"
        "CREATE TRIGGER search_fresh_doc_set AFTER UPDATE ON search_docs BEGIN"
        "  UPDATE search_fresh SET indexed = NULL WHERE tenant IN (old.tenant, new.tenant); END;"
        "INSERT INTO search_fresh VALUES ('default', 4, 4, 8388608)");
    st = open_store();
    assert_int_equal(sql_number("SELECT count(*) FROM sqlite_master WHERE name LIKE "
                                "'search\\_fresh%' ESCAPE '\\'"),
                     0);
    assert_int_equal(sql_number("SELECT count(*) FROM sqlite_master WHERE name LIKE "
                                "'search\\_clean%' ESCAPE '\\'"),
                     8);
    assert_int_equal(sql_number("SELECT value FROM meta WHERE key = 'schema'"), 7);
    CAUGHT_UP(st, "words", "a.md\nb.md\n");
    assert_int_equal(indexed, 2);
    SKIPPED(st, "words", "a.md\nb.md\n");
    mt_store_op_init(&op);
    assert_int_equal(st->edit(st, &op, "a.md", mt_test_replace_with, "zulu words\n"), 0);
    CAUGHT_UP(st, "alpha", "-");
    SKIPPED(st, "zulu", "a.md\n");
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
    CAUGHT_UP(st, "words", "a.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "words", "a.md\n");
    sql("INSERT INTO contents SELECT * FROM kept; DROP TABLE kept");
    CAUGHT_UP(st, "words", "a.md\nb.md\n");
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 1);
    st->free(st);
}

/* The FTS5 table an older memtool made, without prefix indexes, is made
 * again when the store is opened: its words go (search_docs emptied), so
 * the next search indexes every memory again and a prefix finds what it
 * did; the table is whole (FTS5's own check), and the open after that
 * makes nothing again. */
static void test_older_words_table_remade(void **state)
{
    mt_store *st = open_store();

    (void)state;
    create(st, "a.md", "alphabetical order\n");
    create(st, "b.md", "bravo alphabet\n");
    CAUGHT_UP(st, "alph*", "a.md\nb.md\n");
    st->free(st);
    sql("DROP TRIGGER search_docs_put; DROP TRIGGER search_docs_gone;"
        "DROP TRIGGER search_docs_set; DROP TABLE search_words;"
        "CREATE VIRTUAL TABLE search_words USING fts5(words, content='search_docs',"
        "  content_rowid='id', tokenize='ascii');"
        "CREATE TRIGGER search_docs_put AFTER INSERT ON search_docs BEGIN"
        "  INSERT INTO search_words(rowid, words) VALUES (new.id, new.words); END;"
        "CREATE TRIGGER search_docs_gone AFTER DELETE ON search_docs BEGIN"
        "  INSERT INTO search_words(search_words, rowid, words) VALUES ('delete', old.id,"
        "  old.words); END;"
        "CREATE TRIGGER search_docs_set AFTER UPDATE ON search_docs BEGIN"
        "  INSERT INTO search_words(search_words, rowid, words) VALUES ('delete', old.id,"
        "  old.words);"
        "  INSERT INTO search_words(rowid, words) VALUES (new.id, new.words); END;"
        "INSERT INTO search_words(search_words) VALUES ('rebuild');");
    assert_int_equal(sql_number("SELECT count(*) FROM search_docs"), 2);
    st = open_store();
    assert_int_equal(sql_number("SELECT instr(sql, 'prefix=''2 3 4 5''') > 0 FROM sqlite_master "
                                "WHERE name = 'search_words'"),
                     1);
    assert_int_equal(sql_number("SELECT count(*) FROM search_docs"), 0);
    assert_int_equal(fresh(MT_SEARCH_INDEX_CAP), 0);
    CAUGHT_UP(st, "al*", "a.md\nb.md\n");
    assert_int_equal(indexed, 2);
    SKIPPED(st, "alphabetic*", "a.md\n");
    SKIPPED(st, "br*", "b.md\n");
    sql("INSERT INTO search_words(search_words, rank) VALUES ('integrity-check', 1)");
    st->free(st);
    st = open_store();
    assert_int_equal(sql_number("SELECT count(*) FROM search_docs"), 2);
    SKIPPED(st, "alph*", "a.md\nb.md\n");
    st->free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_changes_of_other_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_edit_caught_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_search_takes_no_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_change_in_plain_sql, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_replaces_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_what_keeps_the_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_made_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_table_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counter_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_left_out_tried_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_words_table_remade, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

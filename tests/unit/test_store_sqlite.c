/*
 * The SQLite store on its own: tenants sharing one file, many processes
 * sharing one memory, limits that hold across processes, writers killed at
 * random instants, and files that are not memtool stores.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <memtool/store.h>

#include <sqlite3.h>

#include "helpers.h"
#include "lib/memory.h"

static char dir[256], db_path[300];

static int setup(void **state)
{
    (void)state;
    mt_test_scratch_make(dir, sizeof(dir), "sqlite");
    snprintf(db_path, sizeof(db_path), "%s/store.sqlite", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return mt_test_scratch_remove(dir);
}

static mt_memory *open_mem(const char *tenant, const mt_options *opts)
{
    mt_store *st;
    mt_memory *mem;

    if (mt_store_sqlite_open(&st, db_path, tenant, MT_DURABILITY_NONE) < 0)
        fail_msg("open: %s", mt_error_last()->message);
    assert_int_equal(mt_memory_new(&mem, st, opts), 0);
    return mem;
}

static void call_ok(mt_memory *mem, const char *json)
{
    int err;
    char *text = mt_test_call(mem, &err, json);

    if (err)
        fail_msg("%s -> %s", json, text);
    free(text);
}

static void expect_missing(mt_memory *mem, const char *json)
{
    int err;
    char *text = mt_test_call(mem, &err, json);

    assert_int_equal(err, 1);
    assert_non_null(strstr(text, "does not exist"));
    free(text);
}

static void test_tenants(void **state)
{
    mt_memory *a, *b;
    mt_options o;
    mt_usage u;
    mt_version *v;
    size_t n;
    struct stat sb;

    (void)state;
    mt_options_init(&o);
    o.max_files = 1;
    a = open_mem("alice", &o);
    b = open_mem("bob", &o);
    assert_int_equal(stat(db_path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    call_ok(a, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"alice\"}");
    /* Bob's limit counts only Bob's files. */
    call_ok(b, "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"bob!\"}");
    expect_missing(a, "{\"command\":\"view\",\"path\":\"/memories/b.md\"}");
    expect_missing(b, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}");
    expect_missing(b, "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":"
                      "\"/memories/c.md\"}");
    {
        int err;
        char *text = mt_test_call(a, &err, "{\"command\":\"view\",\"path\":\"/memories\"}");
        assert_null(strstr(text, "b.md"));
        assert_non_null(strstr(text, "a.md"));
        free(text);
    }
    assert_int_equal(mt_memory_usage(&u, a), 0);
    assert_int_equal(u.files, 1);
    assert_int_equal(u.bytes, 5);
    assert_int_equal(mt_memory_usage(&u, b), 0);
    assert_int_equal(u.bytes, 4);
    assert_int_equal(mt_memory_log(&v, &n, a, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].path, "/memories/a.md");
    mt_versions_free(v, n);
    /* Alice's words rank above Bob's (all tenants share one index): Bob's
     * search finds his own all the same. */
    o.max_files = 4;
    mt_memory_free(a);
    mt_memory_free(b);
    a = open_mem("alice", &o);
    b = open_mem("bob", &o);
    call_ok(a, "{\"command\":\"create\",\"path\":\"/memories/s.md\",\"file_text\":\"beam "
               "beam beam beam\"}");
    call_ok(b, "{\"command\":\"create\",\"path\":\"/memories/w.md\",\"file_text\":\"one "
               "beam among other words\"}");
    {
        /* The store's own answer: the library would ask again for a hit it
         * cannot read. */
        char *got = mt_test_store_found(a->store, "beam", 1, 0);

        assert_string_equal(got, "s.md\n");
        free(got);
        got = mt_test_store_found(b->store, "beam", 1, 0);
        assert_string_equal(got, "w.md\n");
        free(got);
    }
    mt_memory_free(a);
    mt_memory_free(b);
    /* A bad tenant name is refused. */
    {
        mt_store *st;
        assert_int_equal(mt_store_sqlite_open(&st, db_path, "../x", MT_DURABILITY_NONE), MT_EINVAL);
        assert_int_equal(mt_store_sqlite_open(&st, db_path, ".memtool", MT_DURABILITY_NONE),
                         MT_EINVAL);
    }
}

static void test_not_a_store(void **state)
{
    char path[400];
    FILE *f;
    mt_store *st;

    (void)state;
    snprintf(path, sizeof(path), "%s/junk", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("this is not a database, it is text that goes on for a while....................\n", f);
    fclose(f);
    assert_int_equal(mt_store_sqlite_open(&st, path, NULL, MT_DURABILITY_FULL), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "not a memtool store"));
    /* A newer schema is refused, naming the fix. */
    assert_int_equal(mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_FULL), 0);
    st->free(st);
    {
        /* What a newer memtool would leave: its schema number, written with
         * SQLite itself, as a newer memtool would. */
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
        assert_int_equal(
            sqlite3_exec(db, "UPDATE meta SET value = '9' WHERE key = 'schema'", NULL, NULL, NULL),
            SQLITE_OK);
        assert_int_equal(sqlite3_changes(db), 1);
        sqlite3_close(db);
    }
    assert_int_equal(mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_FULL), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "upgrade memtool"));
}

/* Schema 2 (before search) is brought to 3 when opened; its first search
 * indexes what it holds. */
static void test_upgrade_search(void **state)
{
    mt_memory *mem = open_mem(NULL, NULL);
    mt_search_hit *h = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *q;
    size_t n = 0;

    (void)state;
    call_ok(mem, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"kept "
                 "across the upgrade\"}");
    mt_memory_free(mem);
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "DROP TRIGGER search_docs_put; DROP TRIGGER search_docs_gone;"
                                  "DROP TRIGGER search_docs_set; DROP TABLE search_words;"
                                  "DROP TABLE search_docs;"
                                  "UPDATE meta SET value = '2' WHERE key = 'schema'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    mem = open_mem(NULL, NULL);
    assert_int_equal(mt_memory_search(&h, &n, mem, "upgrade", NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/a.md");
    mt_search_hits_free(h, n);
    mt_memory_free(mem);
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT value FROM meta WHERE key = 'schema'), "
                                        "(SELECT count(*) FROM search_docs)",
                                        -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "3");
    assert_int_equal(sqlite3_column_int(q, 1), 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

#define PROCS   8
#define INSERTS 25

static void test_processes(void **state)
{
    mt_memory *mem;
    mt_options o;
    mt_version *v;
    mt_log_query q;
    size_t n, lines = 0, i;
    int64_t newest;
    char *text;
    int err, p;

    (void)state;
    mt_options_init(&o);
    o.history_keep = 0;
    o.lock_timeout_ms = 60000;
    mem = open_mem(NULL, &o);
    call_ok(mem, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}");
    mt_memory_free(mem);
    for (p = 0; p < PROCS; p++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            mt_memory *m = open_mem(NULL, &o);
            char json[256];
            int k, bad = 0;
            for (k = 0; k < INSERTS; k++) {
                snprintf(json, sizeof(json),
                         "{\"command\":\"insert\",\"path\":\"/memories/log.md\",\"insert_line\":0,"
                         "\"insert_text\":\"p%d-%d\\n\"}",
                         p, k);
                mt_result r;
                if (mt_memory_call(&r, m, json, strlen(json)) < 0 || r.is_error)
                    bad = 1;
                mt_result_dispose(&r);
            }
            mt_memory_free(m);
            _exit(bad);
        }
    }
    for (p = 0; p < PROCS; p++) {
        int status;
        assert_true(wait(&status) > 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    mem = open_mem(NULL, &o);
    text = mt_test_call(mem, &err, "{\"command\":\"view\",\"path\":\"/memories/log.md\"}");
    assert_int_equal(err, 0);
    for (i = 0; text[i]; i++)
        lines += text[i] == '\n';
    free(text);
    /* The header line and 200 numbered lines (the last has no newline: insert
     * at line 0 of an empty file). */
    assert_true(lines >= PROCS * INSERTS);
    memset(&q, 0, sizeof(q));
    q.limit = 1000;
    q.path = "/memories/log.md";
    assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
    assert_int_equal(n, PROCS * INSERTS + 1);
    for (i = 0; i < n; i++)
        assert_string_equal(v[i].memory_id, v[0].memory_id);
    newest = v[0].id;
    mt_versions_free(v, n);
    {
        /* Every insert is in the newest content, exactly once. */
        char *data = NULL;
        size_t len = 0;
        int found = 0, k;

        assert_int_equal(mt_memory_version_content(&data, &len, mem, newest), 0);
        for (p = 0; p < PROCS; p++)
            for (k = 0; k < INSERTS; k++) {
                char want[32];
                const char *at;
                snprintf(want, sizeof(want), "p%d-%d\n", p, k);
                at = strstr(data, want);
                found += at && (at == data || at[-1] == '\n');
            }
        assert_int_equal(len, strlen(data));
        free(data);
        assert_int_equal(found, PROCS * INSERTS);
    }
    mt_memory_free(mem);
}

static void test_max_files_race(void **state)
{
    mt_memory *mem;
    mt_options o;
    mt_usage u;
    int p;

    (void)state;
    mt_options_init(&o);
    o.max_files = 20;
    o.lock_timeout_ms = 60000;
    for (p = 0; p < PROCS; p++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            mt_memory *m = open_mem(NULL, &o);
            char json[256];
            int k;
            for (k = 0; k < 10; k++) {
                mt_result r;
                snprintf(json, sizeof(json),
                         "{\"command\":\"create\",\"path\":\"/memories/f%d-%d\",\"file_text\":"
                         "\"x\"}",
                         p, k);
                if (mt_memory_call(&r, m, json, strlen(json)) == 0)
                    mt_result_dispose(&r);
            }
            mt_memory_free(m);
            _exit(0);
        }
    }
    for (p = 0; p < PROCS; p++) {
        int status;
        assert_true(wait(&status) > 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    mem = open_mem(NULL, &o);
    assert_int_equal(mt_memory_usage(&u, mem), 0);
    assert_int_equal(u.files, 20);
    {
        mt_store_listing l;
        mt_store *st;
        assert_int_equal(mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_NONE), 0);
        assert_int_equal(st->list(st, &l, "", 1, 0), 0);
        assert_int_equal(l.count, 20);
        mt_store_listing_dispose(&l);
        st->free(st);
    }
    mt_memory_free(mem);
}

/* Writers killed at random instants: nothing torn, nothing committed lost,
 * and the usage counter is what a count finds. */
static void test_kill(void **state)
{
    mt_options o;
    int round;

    (void)state;
    mt_options_init(&o);
    o.lock_timeout_ms = 60000;
    srand(42);
    for (round = 0; round < 12; round++) {
        int fds[2];
        pid_t pid;
        char buf[4096];
        ssize_t got;
        size_t total = 0;
        int status, committed = 0;

        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            mt_memory *m = open_mem(NULL, &o);
            char json[256];
            int k;
            close(fds[0]);
            for (k = 0;; k++) {
                mt_result r;
                snprintf(json, sizeof(json),
                         "{\"command\":\"create\",\"path\":\"/memories/r%d/f%d.md\",\"file_text\":"
                         "\"content %d\"}",
                         round, k, k);
                if (mt_memory_call(&r, m, json, strlen(json)) == 0) {
                    if (!r.is_error && write(fds[1], "x", 1) != 1)
                        _exit(1);
                    mt_result_dispose(&r);
                }
            }
        }
        close(fds[1]);
        /* Wait for a first write, then kill at a random instant. */
        assert_int_equal(read(fds[0], buf, 1), 1);
        total = 1;
        usleep((useconds_t)(rand() % 20000));
        kill(pid, SIGKILL);
        while ((got = read(fds[0], buf, sizeof(buf))) > 0)
            total += (size_t)got;
        close(fds[0]);
        assert_true(waitpid(pid, &status, 0) == pid);
        committed = (int)total;
        {
            mt_memory *m = open_mem(NULL, &o);
            mt_store *st;
            mt_store_listing l;
            mt_usage u;
            size_t i, files = 0, dirs = 0;
            uint64_t bytes = 0;
            char path[128];
            int k;

            for (k = 0; k < committed; k++) {
                char json[256], want[64];
                int err;
                char *text;
                snprintf(json, sizeof(json),
                         "{\"command\":\"view\",\"path\":\"/memories/r%d/f%d.md\"}", round, k);
                snprintf(want, sizeof(want), "content %d", k);
                text = mt_test_call(m, &err, json);
                if (err || !strstr(text, want))
                    fail_msg("round %d: %s -> %s", round, json, text);
                free(text);
            }
            assert_int_equal(mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_NONE), 0);
            assert_int_equal(st->list(st, &l, "", 32, 0), 0);
            for (i = 0; i < l.count; i++) {
                if (l.entries[i].type == MT_NODE_FILE) {
                    files++;
                    bytes += l.entries[i].size;
                } else {
                    dirs++;
                }
            }
            mt_store_listing_dispose(&l);
            st->free(st);
            assert_int_equal(mt_memory_usage(&u, m), 0);
            assert_int_equal(u.files, files);
            assert_int_equal(u.dirs, dirs);
            assert_int_equal(u.bytes, bytes);
            (void)path;
            mt_memory_free(m);
        }
    }
}

/* A reader that says stop after its first piece gets no other. */
static int first_piece_only(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    (void)data;
    (void)len;
    (void)off;
    (void)last;
    ++*(int *)payload;
    return 1;
}

static void test_read_stops(void **state)
{
    mt_store *st;
    mt_store_op op;
    uint64_t size;
    size_t big = 3 * MT_STORE_PIECE + 17;
    char *data = malloc(big);
    int calls = 0;

    (void)state;
    assert_non_null(data);
    memset(data, 'x', big);
    assert_int_equal(mt_store_sqlite_open(&st, db_path, NULL, MT_DURABILITY_NONE), 0);
    mt_store_op_init(&op);
    assert_int_equal(st->create(st, &op, "big", data, big), 0);
    assert_int_equal(st->read(st, &size, "big", 1024, first_piece_only, &calls), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(size, big);
    st->free(st);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_search, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_files_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_stops, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

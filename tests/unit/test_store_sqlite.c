/*
 * The SQLite store on its own: tenants sharing one file, many processes
 * sharing one memory, limits that hold across processes, writers killed at
 * random instants, and files that are not memtool stores.
 */
#include <fcntl.h>
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
#include "core/memory.h"
#include "db/db.h"
#include "machinery/sqlite_wal.h"

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
    mt_test_ok(a, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"alice\"}");
    /* Bob's limit counts only Bob's files. */
    mt_test_ok(b, "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"bob!\"}");
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
    mt_test_ok(a, "{\"command\":\"create\",\"path\":\"/memories/s.md\",\"file_text\":\"beam "
                  "beam beam beam\"}");
    mt_test_ok(b, "{\"command\":\"create\",\"path\":\"/memories/w.md\",\"file_text\":\"one "
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

/* A store of this memtool made back into one of schema 5, as an older
 * memtool left it: no mark of changes made with history off, no record of
 * encryption. */
#define TO_SCHEMA_5                                                                                \
    "ALTER TABLE usage DROP COLUMN unrecorded; ALTER TABLE usage DROP COLUMN encryption;"          \
    "UPDATE meta SET value = '5' WHERE key = 'schema';"

/* ... of schema 4: no record of the prune by days, no index of versions by
 * time. */
#define TO_SCHEMA_4                                                                                \
    TO_SCHEMA_5                                                                                    \
    "DROP INDEX versions_at; ALTER TABLE usage DROP COLUMN expired_before;"                        \
    "ALTER TABLE usage DROP COLUMN expiry_seen; UPDATE meta SET value = '4' WHERE key = 'schema';"

/* ... and of schema 3: each content's count a column of its row. */
#define TO_SCHEMA_3                                                                                \
    TO_SCHEMA_4                                                                                    \
    "CREATE TABLE old(tenant TEXT NOT NULL, sha256 TEXT NOT NULL, refs INTEGER NOT NULL,"          \
    "  data BLOB NOT NULL, PRIMARY KEY (tenant, sha256));"                                         \
    "INSERT INTO old SELECT c.tenant, c.sha256, r.refs, c.data FROM contents c"                    \
    "  JOIN content_refs r USING (tenant, sha256);"                                                \
    "DROP TABLE contents; DROP TABLE content_refs; ALTER TABLE old RENAME TO contents;"            \
    "UPDATE meta SET value = '3' WHERE key = 'schema';"

static void sql_run(const char *text)
{
    mt_test_sql_exec(db_path, text);
}

/* The first column of text's first row (?1 is arg): as a number in *num,
 * as text in str (size bytes). Returns whether there was a row. */
static int sql_first(long long *num, char *str, size_t size, const char *text, const char *arg)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q;
    int row;

    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    if (sqlite3_prepare_v2(db, text, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", text, sqlite3_errmsg(db));
    if (arg)
        sqlite3_bind_text(q, 1, arg, -1, SQLITE_STATIC);
    row = sqlite3_step(q) == SQLITE_ROW;
    if (row && num)
        *num = sqlite3_column_int64(q, 0);
    if (row && str)
        snprintf(str, size, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
    return row;
}

/* The first column of text's one row as a number (-1: no row); ?1 is arg. */
static long long sql_num(const char *text, const char *arg)
{
    long long got = -1;

    sql_first(&got, NULL, 0, text, arg);
    return got;
}

/* The count of references of the content at tenant's path (-1: no count);
 * path is "tenant/path". */
static long long refs_at(const char *tenant_path)
{
    return sql_num("SELECT r.refs FROM content_refs r JOIN nodes n ON n.tenant = r.tenant AND "
                   "n.sha256 = r.sha256 WHERE n.tenant || '/' || n.path = ?1",
                   tenant_path);
}

static mt_store *open_store(const char *tenant)
{
    mt_store *st;

    if (mt_store_sqlite_open(&st, db_path, tenant, MT_DURABILITY_NONE) < 0)
        fail_msg("open: %s", mt_error_last()->message);
    return st;
}

/* Schema 3 (each count a column of its content's row) is brought to 5 when
 * opened: every count is kept, now in content_refs, the column is gone, and
 * a content still goes with its last reference. */
static void test_upgrade_refs(void **state)
{
    mt_store *a = open_store("a"), *b = open_store("b");
    mt_store_op op;
    char sha[65];
    (void)state;

    mt_test_refs_fixture(a, b);
    a->free(a);
    b->free(b);
    /* Two files and their versions; one file, history off; the other
     * tenant's own count of the same bytes. */
    assert_int_equal(refs_at("a/x.md"), 4);
    assert_int_equal(refs_at("a/lone.md"), 1);
    assert_int_equal(refs_at("b/x.md"), 2);
    sql_run(TO_SCHEMA_3);
    assert_int_equal(sql_num("SELECT refs FROM contents c JOIN nodes n USING (tenant, sha256) "
                             "WHERE n.tenant || '/' || n.path = ?1",
                             "a/x.md"),
                     4);

    a = open_store("a");
    assert_int_equal(sql_num("SELECT value FROM meta WHERE key = 'schema'", NULL), 7);
    assert_int_equal(
        sql_num("SELECT count(*) FROM pragma_table_info('contents') WHERE name = 'refs'", NULL), 0);
    /* Schema 5's record of the prune by days (none yet) and its index. */
    assert_int_equal(sql_num("SELECT count(*) FROM usage WHERE expired_before = 0 AND "
                             "expiry_seen = 0",
                             NULL),
                     2);
    assert_int_equal(sql_num("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                             "name = 'versions_at'",
                             NULL),
                     1);
    assert_int_equal(refs_at("a/x.md"), 4);
    assert_int_equal(refs_at("a/lone.md"), 1);
    assert_int_equal(refs_at("b/x.md"), 2);
    assert_int_equal(sql_num("SELECT count(*) FROM content_refs", NULL), 3);
    assert_int_equal(sql_num("SELECT count(*) FROM contents", NULL), 3);

    /* The last reference goes: the content and its count with it. */
    assert_true(sql_first(NULL, sha, sizeof(sha),
                          "SELECT sha256 FROM nodes WHERE tenant = 'a' AND path = 'lone.md'",
                          NULL));
    assert_int_equal(sql_num("SELECT count(*) FROM contents WHERE sha256 = ?1", sha), 1);
    assert_int_equal(sql_num("SELECT count(*) FROM content_refs WHERE sha256 = ?1", sha), 1);
    mt_test_store_op(&op, 0);
    assert_int_equal(a->remove(a, &op, "lone.md"), 0);
    assert_int_equal(sql_num("SELECT count(*) FROM contents WHERE sha256 = ?1", sha), 0);
    assert_int_equal(sql_num("SELECT count(*) FROM content_refs WHERE sha256 = ?1", sha), 0);
    /* One reference fewer (the file; its versions keep the content). */
    mt_test_store_op(&op, 1);
    assert_int_equal(a->remove(a, &op, "y.md"), 0);
    assert_int_equal(refs_at("a/x.md"), 3);
    assert_int_equal(refs_at("b/x.md"), 2);
    a->free(a);
}

/* The prune by days' tenant, for mt_test_days_prune. */
static mt_memory *days_open(void *ctx, const mt_options *opts)
{
    (void)ctx;
    return open_mem("days", opts);
}

static void days_age(void *ctx, int64_t ms)
{
    char q[160];

    (void)ctx;
    snprintf(q, sizeof(q), "UPDATE versions SET at = at - %lld WHERE tenant = 'days'",
             (long long)ms);
    sql_run(q);
}

/* The prune by days (mt_test_days_prune), in a tenant of its own; then the
 * plans of the statements a change runs on versions: each step reads a
 * bounded part of them by an index (a memory's versions, a range of ids or
 * times), never every version of the tenant (a prune that did was 8 ms of
 * each one-shot write in a history of 100,000; a memory's newest version
 * was found by walking back through every later one). */
static void test_prune_days(void **state)
{
    static const mt_db_stmt prunes[] = {MT_DB_VERSIONS_EXPIRED, MT_DB_VERSIONS_SUPERSEDED,
                                        MT_DB_VERSION_NEWEST, MT_DB_VERSION_NTH,
                                        MT_DB_VERSIONS_UPTO};
    static const char *const bounded[] = {"at>? AND at<?", "memory_id=?", "id>?", "id=?"};
    sqlite3 *db = NULL;
    size_t i;
    (void)state;

    mt_test_days_prune(days_open, days_age, NULL);
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    for (i = 0; i < sizeof(prunes) / sizeof(prunes[0]); i++) {
        char q[1024];
        sqlite3_stmt *plan = NULL;
        int searches = 0;

        snprintf(q, sizeof(q), "EXPLAIN QUERY PLAN %s", mt_db_sql[prunes[i]]);
        if (sqlite3_prepare_v2(db, q, -1, &plan, NULL) != SQLITE_OK)
            fail_msg("%s: %s", q, sqlite3_errmsg(db));
        while (sqlite3_step(plan) == SQLITE_ROW) {
            const char *step = (const char *)sqlite3_column_text(plan, 3);
            size_t k, ok = 0;

            if (!strncmp(step, "SCAN", 4))
                fail_msg("%s scans: %s", mt_db_sql[prunes[i]], step);
            if (strncmp(step, "SEARCH", 6) != 0)
                continue;
            for (k = 0; k < sizeof(bounded) / sizeof(bounded[0]); k++)
                ok += strstr(step, bounded[k]) != NULL;
            if (!ok)
                fail_msg("%s reads every version of the tenant: %s", mt_db_sql[prunes[i]], step);
            searches++;
        }
        sqlite3_finalize(plan);
        assert_true(searches >= 1);
    }
    sqlite3_close(db);
}

/* The bytes this process has written, by any write call (/proc/self/io). */
static unsigned long long written(void)
{
    char line[128];
    unsigned long long n = 0;
    int found = 0;
    FILE *f = fopen("/proc/self/io", "r");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "wchar: ", 7)) {
            n = strtoull(line + 7, NULL, 10);
            found = 1;
        }
    fclose(f);
    /* Without the line every cost would read as nothing written. */
    assert_true(found);
    return n;
}

#define BIG (8u << 20)

/* A new file that holds a big content the store keeps already gains it
 * references (its node and its version) without rewriting it: the change
 * writes (log and checkpoint together) a small fraction of the content.
 * The content is first kept once (history off), so its count goes from 1:
 * a count in the content's row would change the row's size there, and
 * SQLite would write the whole row again. */
static void test_ref_writes_little(void **state)
{
    mt_store *st = open_store(NULL);
    mt_store_op op;
    char *big = malloc(BIG);
    unsigned long long before, cost;
    size_t i;
    (void)state;

    assert_non_null(big);
    for (i = 0; i < BIG; i++)
        big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    mt_test_store_op(&op, 0);
    assert_int_equal(st->create(st, &op, "big.md", big, BIG), 0);
    mt_test_store_op(&op, 1);
    assert_int_equal(st->create(st, &op, "warm.md", "w", 1), 0);
    before = written();
    assert_int_equal(st->create(st, &op, "copy.md", big, BIG), 0);
    cost = written() - before;
    assert_true(op.version > 0);
    printf("a new reference to an 8 MB content wrote %llu bytes\n", cost);
    assert_true(cost < BIG / 16);
    assert_int_equal(refs_at("default/copy.md"), 3);
    assert_int_equal(sql_num("SELECT count(*) FROM contents WHERE length(data) = 8388608", NULL),
                     1);
    free(big);
    st->free(st);
}

/* Schema 2 (before search) is brought to 5 when opened; its first search
 * indexes what it holds. */
static void test_upgrade_search(void **state)
{
    mt_memory *mem = open_mem(NULL, NULL);
    mt_search_hit *h = NULL;
    size_t n = 0;

    (void)state;
    mt_test_ok(mem, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"kept "
                    "across the upgrade\"}");
    mt_memory_free(mem);
    sql_run(TO_SCHEMA_3 "DROP TRIGGER search_docs_put; DROP TRIGGER search_docs_gone;"
                        "DROP TRIGGER search_docs_set; DROP TABLE search_words;"
                        "DROP TABLE search_docs;"
                        "UPDATE meta SET value = '2' WHERE key = 'schema'");
    mem = open_mem(NULL, NULL);
    assert_int_equal(mt_memory_search(&h, &n, mem, "upgrade", NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/a.md");
    mt_search_hits_free(h, n);
    mt_memory_free(mem);
    assert_int_equal(sql_num("SELECT value FROM meta WHERE key = 'schema'", NULL), 7);
    assert_int_equal(sql_num("SELECT count(*) FROM search_docs", NULL), 1);
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
    mt_test_ok(mem, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}");
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

/* An edit is a use of the memory: its last access and change become now,
 * with its content, in one statement; an edit that is no use of it (a
 * re-encryption's: keep_access) changes the content and keeps both. */
/* SQLite's answer to one of mt_test_refs_mix's questions. */
static long long refs_sql(void *ctx, const char *text)
{
    (void)ctx;
    return sql_num(text, NULL);
}

static mt_memory *refs_open(void *ctx, const char *tenant, const mt_options *opts)
{
    (void)ctx;
    return open_mem(tenant, opts);
}

static void test_refs_agree(void **state)
{
    (void)state;
    mt_test_refs_mix(refs_open, refs_sql, NULL, "");
}

static void test_edit_times(void **state)
{
    mt_store *st = open_store(NULL);
    mt_store_op op;
    struct timespec ts;
    long long before;

    (void)state;
    mt_store_op_init(&op);
    assert_int_equal(st->create(st, &op, "a.md", "one\n", 4), 0);
    sql_run("UPDATE nodes SET accessed = 1000, modified = 2000");
    mt_store_op_init(&op);
    op.keep_access = 1;
    assert_int_equal(st->edit(st, &op, "a.md", mt_test_replace_with, "two!\n"), 0);
    assert_int_equal(sql_num("SELECT size FROM nodes WHERE path = 'a.md'", NULL), 5);
    assert_int_equal(sql_num("SELECT accessed FROM nodes WHERE path = 'a.md'", NULL), 1000);
    assert_int_equal(sql_num("SELECT modified FROM nodes WHERE path = 'a.md'", NULL), 2000);
    clock_gettime(CLOCK_REALTIME, &ts);
    before = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    mt_store_op_init(&op);
    assert_int_equal(st->edit(st, &op, "a.md", mt_test_replace_with, "three\n"), 0);
    assert_int_equal(sql_num("SELECT size FROM nodes WHERE path = 'a.md'", NULL), 6);
    assert_true(sql_num("SELECT accessed FROM nodes WHERE path = 'a.md'", NULL) >= before);
    assert_int_equal(sql_num("SELECT modified = accessed FROM nodes WHERE path = 'a.md'", NULL), 1);
    st->free(st);
}

/* A change made with history off marks the tenant; a catch-up of any path
 * then records every file the history lacks, wherever it is, and clears the
 * mark, after which a catch-up finds nothing to do. */
static void test_unrecorded_mark(void **state)
{
    mt_store *st = open_store(NULL);
    mt_store_op op;

    (void)state;
    mt_store_op_init(&op);
    op.history = 1;
    assert_int_equal(st->create(st, &op, "a/x.md", "one\n", 4), 0);
    assert_int_equal(st->create(st, &op, "b/y.md", "two\n", 4), 0);
    assert_int_equal(sql_num("SELECT unrecorded FROM usage", NULL), 0);
    assert_int_equal(sql_num("SELECT count(*) FROM versions", NULL), 2);
    mt_store_op_init(&op); /* history off */
    assert_int_equal(st->edit(st, &op, "a/x.md", mt_test_replace_with, "ONE\n"), 0);
    assert_int_equal(sql_num("SELECT unrecorded FROM usage", NULL), 1);
    assert_int_equal(sql_num("SELECT count(*) FROM versions", NULL), 2);
    /* Asked for b, the catch-up records a's change too. */
    mt_store_op_init(&op);
    op.history = 1;
    assert_int_equal(st->catch_up(st, &op, "b"), 0);
    assert_int_equal(sql_num("SELECT unrecorded FROM usage", NULL), 0);
    assert_int_equal(sql_num("SELECT count(*) FROM versions WHERE path = 'a/x.md' AND actor = "
                             "'external' AND size = 4",
                             NULL),
                     1);
    assert_int_equal(st->catch_up(st, &op, ""), 0);
    assert_int_equal(sql_num("SELECT count(*) FROM versions", NULL), 3);
    /* A redaction runs with history off, but changes no file: no mark. */
    mt_store_op_init(&op);
    op.history = 1;
    assert_int_equal(st->redact(st, &op, 1), 0);
    assert_int_equal(sql_num("SELECT redacted FROM versions WHERE id = 1", NULL), 1);
    assert_int_equal(sql_num("SELECT unrecorded FROM usage", NULL), 0);
    /* A store upgraded from schema 6 holds the mark: an older memtool's
     * changes with history off left none. */
    st->free(st);
    sql_run(TO_SCHEMA_5);
    st = open_store(NULL);
    assert_int_equal(sql_num("SELECT unrecorded FROM usage", NULL), 1);
    st->free(st);
}

/* A -wal or -shm name planted as a symlink to a file outside the store:
 * making the store private must leave the link's target as it was. */
static void test_private_links(void **state)
{
    char outside[300], link[320];
    struct stat sb;
    FILE *f;

    (void)state;
    snprintf(outside, sizeof(outside), "%s/outside", dir);
    assert_non_null(f = fopen(outside, "w"));
    fclose(f);
    assert_int_equal(chmod(outside, 0644), 0);
    snprintf(link, sizeof(link), "%s-wal", db_path);
    assert_int_equal(symlink(outside, link), 0);
    snprintf(link, sizeof(link), "%s-shm", db_path);
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(mt_sqlite_make_private(AT_FDCWD, db_path, 1), 0);
    assert_int_equal(stat(outside, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0644);
    assert_int_equal(stat(db_path, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_search, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_days, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ref_writes_little, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_files_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refs_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unrecorded_mark, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

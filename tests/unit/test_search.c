/* Search on the file store: ranking, an index that is never stale (the
 * store's own answer, after edits made outside memtool), a search killed
 * while indexing, statements kept, tenants, and searches racing writers. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "core/memory.h"
#include "search/words.h"
#include "fs/fs.h"
#include "machinery/history.h"
#include "machinery/search_index.h"

static void put(mt_memory *mem, const char *path, const char *text)
{
    char *json = NULL;
    int is_error = 0;
    char *res;
    size_t n = strlen(path) + strlen(text) + 100;

    json = malloc(n);
    assert_non_null(json);
    snprintf(json, n, "{\"command\":\"create\",\"path\":\"%s\",\"file_text\":\"%s\"}", path, text);
    res = mt_test_call(mem, &is_error, json);
    if (is_error)
        fail_msg("create %s: %s", path, res);
    free(res);
    free(json);
}

static size_t search(mt_search_hit **hits, mt_memory *mem, const char *query, size_t limit)
{
    mt_search_options so = {NULL, limit};
    size_t n = 0;

    if (mt_memory_search(hits, &n, mem, query, &so) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    return n;
}

static void test_ranking(void **state)
{
    mt_test_store ts;
    mt_search_hit *h;
    size_t n;

    (void)state;
    mt_test_store_init(&ts, NULL);
    put(ts.mem, "/memories/once.md", "the cache is mentioned here once among many other words");
    put(ts.mem, "/memories/five.md", "cache cache cache\\ncache and cache again");
    put(ts.mem, "/memories/none.md", "nothing relevant");
    n = search(&h, ts.mem, "cache", 10);
    assert_int_equal(n, 2);
    assert_string_equal(h[0].path, "/memories/five.md");
    assert_string_equal(h[1].path, "/memories/once.md");
    assert_true(h[0].score > h[1].score);
    assert_int_equal(h[0].matches, 5);
    assert_int_equal(h[0].line_count, 2);
    assert_int_equal(h[1].matches, 1);
    mt_search_hits_free(h, n);
    /* the limit keeps the best */
    n = search(&h, ts.mem, "cache", 1);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/five.md");
    mt_search_hits_free(h, n);
    mt_test_store_free(&ts);
}

/* Enough memories that indexing them all takes many batches. */
static void fill(mt_memory *mem, int count)
{
    char path[64], text[128];

    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof(path), "/memories/d%d/m%d.md", i % 10, i);
        snprintf(text, sizeof(text), "memory number w%d about topic%d", i, i % 7);
        put(mem, path, text);
    }
}

/* The child's stop in the index's catch-up: tell the parent, then wait to
 * be killed. */
static int stop_pipe = -1;
static size_t stop_at;
static int stop_committed;

static void stop_here(size_t written, int committed)
{
    char c = 1;

    if (written != stop_at || committed != stop_committed)
        return;
    if (write(stop_pipe, &c, 1) != 1)
        _exit(4);
    for (;;)
        pause();
}

/* The first row of sql in the history database of the file store at root,
 * read as another process reads it (what was committed): its first column
 * as a number, and its second as text in text (size bytes) when asked. */
static long history_row(const char *root, const char *sql, char *text, size_t size)
{
    char path[600];
    sqlite3 *db;
    sqlite3_stmt *s;
    long n;

    snprintf(path, sizeof(path), "%s/.memtool/history.db", root);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    n = (long)sqlite3_column_int64(s, 0);
    if (text)
        snprintf(text, size, "%s", (const char *)sqlite3_column_text(s, 1));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

/* The memories the index of the file store at root holds. */
static long indexed_rows(const char *root)
{
    return history_row(root, "SELECT count(*) FROM search_docs", NULL, 0);
}

/* A child searches, which indexes, and stops once it has written `at`
 * memories (committed: right after a transaction's commit; else inside a
 * transaction, between two memories); there the index holds `rows`, and the
 * child is killed. */
static void kill_indexing_at(const char *root, const mt_options *o, size_t at, int committed,
                             long rows)
{
    int fds[2], status;
    pid_t pid;
    char c;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mt_memory *mem;
        mt_search_hit *ch;
        size_t cn;
        mt_search_options so = {NULL, 5};

        close(fds[0]);
        stop_pipe = fds[1];
        stop_at = at;
        stop_committed = committed;
        mt_search_index_hook = stop_here;
        if (mt_memory_open(&mem, root, o) < 0)
            _exit(3);
        mt_memory_search(&ch, &cn, mem, "topic3", &so);
        _exit(0); /* never stopped: the parent reads no byte */
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    assert_int_equal(indexed_rows(root), rows);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_killed_while_indexing(void **state)
{
    mt_options o;
    mt_test_store ts;
    mt_search_hit *h;
    size_t n;
    char *got;

    (void)state;
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.history = 0;
    mt_test_store_init(&ts, &o);
    fill(ts.mem, 600);
    /* Killed inside its second transaction (64 memories a transaction):
     * the first stays, the second's 6 are gone with it. */
    kill_indexing_at(ts.root, &o, 70, 0, 64);
    /* Killed between two transactions of the next search, which goes on
     * from there. */
    kill_indexing_at(ts.root, &o, 64, 1, 128);
    /* The next search indexes the rest, and answers whole: the store's own
     * answer, and what the library makes of it. */
    got = mt_test_store_found(ts.mem->store, "w599", 10, o.max_file_size);
    assert_string_equal(got, "d9/m599.md\n");
    free(got);
    assert_int_equal(indexed_rows(ts.root), 600);
    n = search(&h, ts.mem, "topic3", 100);
    assert_int_equal(n, 86); /* i % 7 == 3 for 86 of 0..599 */
    mt_search_hits_free(h, n);
    mt_test_store_free(&ts);
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_non_null(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

static void test_outside_changes(void **state)
{
    mt_test_store ts;
    mt_search_hit *h;
    size_t n;
    char p[512];

    (void)state;
    mt_test_store_init(&ts, NULL);
    put(ts.mem, "/memories/a.md", "alpha beta");
    put(ts.mem, "/memories/b.md", "beta gamma");
    n = search(&h, ts.mem, "beta", 10);
    assert_int_equal(n, 2);
    mt_search_hits_free(h, n);
    /* Outside memtool: an edit in place, a removal, a new file. */
    write_file(ts.root, "a.md", "alpha delta");
    snprintf(p, sizeof(p), "%s/b.md", ts.root);
    assert_int_equal(unlink(p), 0);
    write_file(ts.root, "c.md", "beta again");
    n = search(&h, ts.mem, "beta", 10);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/c.md");
    mt_search_hits_free(h, n);
    n = search(&h, ts.mem, "delta", 10);
    assert_int_equal(n, 1);
    mt_search_hits_free(h, n);
    /* What is not a regular file (a FIFO, never opened) is left out. */
    write_file(ts.root, "plain.md", "beta plain");
    snprintf(p, sizeof(p), "%s/fifo.md", ts.root);
    assert_int_equal(mkfifo(p, 0600), 0);
    n = search(&h, ts.mem, "beta", 10);
    assert_int_equal(n, 2);
    mt_search_hits_free(h, n);
    mt_test_store_free(&ts);
}

/* The path of a memory of the store at root, outside memtool. */
static void at_root(char *out, size_t size, const mt_test_store *ts, const char *rel)
{
    snprintf(out, size, "%s/%s", ts->root, rel);
}

/* The store itself (not the library, which reads each hit again) answers
 * from the files as they are after changes made outside memtool: a write in
 * place that keeps the size and puts the modification time back, a file
 * replaced by rename (same size and time), a file deleted, a file made a
 * directory. */
static void test_store_sees_outside_edits(void **state)
{
    static const char *const files[][2] = {
        {"a.md", "alpha bravo\n"},
        {"b.md", "charlie echo\n"},
        {"c.md", "golf hotel\n"},
        {"d.md", "india juliet\n"},
    };
    mt_test_store ts;
    mt_store *st;
    mt_store_op op;
    struct stat before, after;
    struct timespec times[2];
    char p[600], q[600];
    size_t i;
    int fd;

    (void)state;
    mt_test_store_init(&ts, NULL);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    mt_store_op_init(&op);
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        assert_int_equal(st->create(st, &op, files[i][0], files[i][1], strlen(files[i][1])), 0);
#define FOUND(query, want)                                                                         \
    do {                                                                                           \
        char *got_ = mt_test_store_found(st, query, 100, 1 << 20);                                 \
        if (strcmp(got_, want) != 0)                                                               \
            fail_msg("the store found for %s:\n%s\nnot\n%s", query, got_, want);                   \
        free(got_);                                                                                \
    } while (0)
    FOUND("bravo", "a.md\n");
    FOUND("echo", "b.md\n");
    FOUND("golf", "c.md\n");
    FOUND("juliet", "d.md\n");
    /* Far enough from the creates that the kernel's clock gives the change
     * times of the edits below another value. */
    usleep(50 * 1000);

    /* Written in place, the size kept, the modification time put back. */
    at_root(p, sizeof(p), &ts, "a.md");
    assert_int_equal(stat(p, &before), 0);
    assert_true((fd = open(p, O_WRONLY)) >= 0);
    assert_int_equal(pwrite(fd, "delta", 5, 6), 5);
    close(fd);
    times[0] = before.st_atim;
    times[1] = before.st_mtim;
    assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    assert_false(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
                 after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
    FOUND("bravo", "-");
    FOUND("delta", "a.md\n");

    /* Replaced by rename: the same size and modification time. */
    at_root(p, sizeof(p), &ts, "b.md");
    snprintf(q, sizeof(q), "%s/b.new", ts.dir);
    assert_int_equal(stat(p, &before), 0);
    assert_true((fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
    assert_int_equal(write(fd, "charlie kilo\n", 13), 13);
    close(fd);
    times[0] = before.st_atim;
    times[1] = before.st_mtim;
    assert_int_equal(utimensat(AT_FDCWD, q, times, 0), 0);
    assert_int_equal(rename(q, p), 0);
    FOUND("echo", "-");
    FOUND("kilo", "b.md\n");

    /* Deleted. */
    at_root(p, sizeof(p), &ts, "c.md");
    assert_int_equal(unlink(p), 0);
    FOUND("golf", "-");

    /* Made a directory, with a memory in it that says one of its words. */
    at_root(p, sizeof(p), &ts, "d.md");
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mkdir(p, 0700), 0);
    write_file(ts.root, "d.md/x.md", "india lima\n");
    FOUND("juliet", "-");
    FOUND("india", "d.md/x.md\n");
#undef FOUND
    st->free(st);
    mt_test_store_free(&ts);
}

/* The query's statement, prepared once per connection, and how many times it ran. */
static int find_runs(sqlite3 *db)
{
    sqlite3_stmt *s;
    int finds = 0, runs = 0;

    for (s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s)) {
        if (strstr(sqlite3_sql(s), "mt_rank(search_words)")) {
            finds++;
            runs = sqlite3_stmt_status(s, SQLITE_STMTSTATUS_RUN, 0);
        }
    }
    assert_int_equal(finds, 1);
    return runs;
}

/* The index's statements are prepared once per connection: each search
 * runs the first one's again. The query is answered while the files are
 * walked, and that answer stands when the index held them all: the first
 * search (a new memory) runs it twice, the second (nothing changed) once,
 * the third (a memory changed: the early answer, a.md, is stale) twice again. */
static void test_statements_kept(void **state)
{
    static const int runs[] = {2, 3, 5};
    static const char *const want[] = {"a.md\nb.md\n", "a.md\nb.md\n", "b.md\n"};
    mt_test_store ts;
    mt_store *st;
    mt_store_op op;
    char *got;

    (void)state;
    mt_test_store_init(&ts, NULL);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    mt_store_op_init(&op);
    assert_int_equal(st->create(st, &op, "a.md", "kept words", 10), 0);
    assert_int_equal(st->create(st, &op, "b.md", "kept too", 8), 0);
    for (int i = 0; i < 3; i++) {
        if (i == 2)
            write_file(ts.root, "a.md", "other words\n");
        got = mt_test_store_found(st, "kept", 10, 1 << 20);
        assert_string_equal(got, want[i]);
        free(got);
        assert_int_equal(find_runs(mt_hist_sqlite(((mt_fs *)st)->search)), runs[i]);
    }
    got = mt_test_store_found(st, "other", 10, 1 << 20);
    assert_string_equal(got, "a.md\n");
    free(got);
    st->free(st);
    mt_test_store_free(&ts);
}

/* The index as another connection's search leaves it, in the callback
 * that gives the files: between the query's early answer and the
 * comparison, as a search of another process may. */
typedef struct {
    mt_search_index *other;
    const mt_search_query *q;
    const mt_search_doc *doc;
} meanwhile;

static int doc_text(void *payload, mt_buf *out, const char *path, size_t cap)
{
    (void)path;
    (void)cap;
    return mt_buf_puts(out, payload);
}

static int one_doc(void *payload, const mt_search_doc **docs, size_t *n, const unsigned char **sum)
{
    *docs = payload;
    *n = 1;
    *sum = NULL;
    return 0;
}

static int indexed_meanwhile(void *payload, const mt_search_doc **docs, size_t *n,
                             const unsigned char **sum)
{
    meanwhile *m = payload;
    mt_store_hit *hits;
    size_t count;

    assert_int_equal(mt_search_index_run(&hits, &count, m->other, one_doc, (void *)m->doc, doc_text,
                                         "bravo words", 1 << 20, m->q, "", 10),
                     0);
    mt_store_hits_free(hits, count);
    *docs = m->doc;
    *n = 1;
    *sum = NULL;
    return 0;
}

/* Two connections to one scratch index, as two processes' searches have,
 * and a query. */
typedef struct {
    char dir[256];
    sqlite3 *db, *odb;
    mt_search_index *ix, *ox;
    mt_search_query *q;
} two_searches;

static void two_open(two_searches *t, const char *name, const char *query)
{
    char path[300];

    mt_test_scratch_make(t->dir, sizeof(t->dir), name);
    snprintf(path, sizeof(path), "%s/index.db", t->dir);
    assert_int_equal(sqlite3_open(path, &t->db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(t->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_open(path, &t->odb), SQLITE_OK);
    assert_int_equal(mt_search_index_open(&t->ix, t->db), 0);
    assert_int_equal(mt_search_index_open(&t->ox, t->odb), 0);
    assert_int_equal(mt_search_query_parse(&t->q, query, strlen(query)), 0);
}

static void two_close(two_searches *t)
{
    mt_search_query_free(t->q);
    mt_search_index_free(t->ox);
    mt_search_index_free(t->ix);
    assert_int_equal(sqlite3_close(t->odb), SQLITE_OK);
    assert_int_equal(sqlite3_close(t->db), SQLITE_OK);
    assert_int_equal(mt_test_scratch_remove(t->dir), 0);
}

/* The comparison finds the index as the files are (the other search
 * brought it there), yet the early answer was from before: it does not
 * stand, and the query runs again. */
static void test_index_changed_meanwhile(void **state)
{
    static const mt_search_doc before = {"a.md", "1:11:1.000000000:1.000000000"},
                               after = {"a.md", "1:12:2.000000000:2.000000000"};
    two_searches t;
    mt_store_hit *hits;
    size_t count;
    meanwhile m;

    (void)state;
    two_open(&t, "meanwhile", "alpha");
    assert_int_equal(mt_search_index_run(&hits, &count, t.ix, one_doc, (void *)&before, doc_text,
                                         "alpha words", 1 << 20, t.q, "", 10),
                     0);
    assert_int_equal(count, 1);
    mt_store_hits_free(hits, count);
    m = (meanwhile){t.ox, t.q, &after};
    assert_int_equal(mt_search_index_run(&hits, &count, t.ix, indexed_meanwhile, &m, doc_text,
                                         "alpha words", 1 << 20, t.q, "", 10),
                     0);
    assert_int_equal(count, 0);
    mt_store_hits_free(hits, count);
    two_close(&t);
}

/*
 * A search that caught up, and another search's older reading of the same
 * file written between its commit and its query (the other walked before
 * the file changed, read it before, and committed after): the answer is
 * still from the file as this search found it. The other search writes
 * from the index hook, as this one's catch-up commits.
 */
static meanwhile *slow_other;

static void slower_writes(size_t written, int committed)
{
    static const mt_search_doc older = {"a.md", "1:11:1.000000000:1.000000000"};
    meanwhile *m = slow_other;
    mt_store_hit *hits;
    size_t count;

    (void)written;
    if (!committed || !m)
        return;
    slow_other = NULL; /* once: the other search's own commit comes back here */
    assert_int_equal(mt_search_index_run(&hits, &count, m->other, one_doc, (void *)&older, doc_text,
                                         "bravo words", 1 << 20, m->q, "", 10),
                     0);
    mt_store_hits_free(hits, count);
}

/*
 * A writer that comes between a search's reading of a memory and its write
 * of that reading (a redaction erasing the memory's words from the index)
 * is not undone by the older reading: the reading is made under the write
 * lock, so another connection, as another process's redaction, cannot take
 * it then. The other connection tries, and erases, from the read callback.
 */
typedef struct {
    sqlite3 *other;
    int tried, erased;
} eraser;

static int read_while_erasing(void *payload, mt_buf *out, const char *path, size_t cap)
{
    eraser *e = payload;

    (void)path;
    (void)cap;
    e->tried = 1;
    sqlite3_busy_timeout(e->other, 0);
    if (sqlite3_exec(e->other, "BEGIN IMMEDIATE; DELETE FROM search_words; COMMIT", NULL, NULL,
                     NULL) == SQLITE_OK)
        e->erased = 1;
    else
        sqlite3_exec(e->other, "ROLLBACK", NULL, NULL, NULL);
    return mt_buf_puts(out, "secret words");
}

static void test_read_under_write_lock(void **state)
{
    static const mt_search_doc doc = {"a.md", "1:12:2.000000000:2.000000000"};
    two_searches t;
    mt_store_hit *hits;
    size_t count;
    eraser e = {NULL, 0, 0};

    (void)state;
    two_open(&t, "read-locked", "secret");
    e.other = t.odb;
    assert_int_equal(mt_search_index_run(&hits, &count, t.ix, one_doc, (void *)&doc,
                                         read_while_erasing, &e, 1 << 20, t.q, "", 10),
                     0);
    mt_store_hits_free(hits, count);
    assert_int_equal(e.tried, 1);
    /* no writer came between the reading and its write */
    assert_int_equal(e.erased, 0);
    two_close(&t);
}

static void test_older_reading_after_catch_up(void **state)
{
    static const mt_search_doc found = {"a.md", "1:12:2.000000000:2.000000000"};
    two_searches t;
    mt_store_hit *hits;
    sqlite3_stmt *st;
    size_t count;
    meanwhile m;

    (void)state;
    two_open(&t, "older-reading", "alpha");
    m = (meanwhile){t.ox, t.q, NULL};
    slow_other = &m;
    mt_search_index_hook = slower_writes;
    assert_int_equal(mt_search_index_run(&hits, &count, t.ix, one_doc, (void *)&found, doc_text,
                                         "alpha words", 1 << 20, t.q, "", 10),
                     0);
    mt_search_index_hook = NULL;
    assert_null(slow_other); /* the other search did write in between */
    assert_int_equal(count, 1);
    assert_string_equal(hits[0].path, "a.md");
    mt_store_hits_free(hits, count);
    /* and the index holds the file as found again */
    assert_int_equal(sqlite3_prepare_v2(t.db, "SELECT stamp FROM search_docs", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), found.stamp);
    sqlite3_finalize(st);
    two_close(&t);
}

static void test_big_file_no_snippet(void **state)
{
    mt_options o;
    mt_test_store ts;
    mt_search_hit *h;
    size_t n;
    char *big;

    (void)state;
    mt_options_init(&o);
    o.max_file_size = 1000;
    mt_test_store_init(&ts, &o);
    big = malloc(5001);
    assert_non_null(big);
    memset(big, 'x', 5000);
    memcpy(big + 10, " needle ", 8);
    big[5000] = '\0';
    write_file(ts.root, "big.md", big);
    free(big);
    /* found, but not read whole past the file-size limit to show where */
    n = search(&h, ts.mem, "needle", 10);
    assert_int_equal(n, 1);
    assert_null(h[0].match);
    assert_int_equal(h[0].line_count, 0);
    mt_search_hits_free(h, n);
    mt_test_store_free(&ts);
}

static void test_tenants(void **state)
{
    mt_options o;
    mt_test_store ts;
    mt_memory *other;
    mt_search_hit *h;
    size_t n;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_options_init(&o);
    o.tenant = "other";
    assert_int_equal(mt_memory_open(&other, ts.root, &o), 0);
    put(ts.mem, "/memories/mine.md", "secretproject plans");
    put(other, "/memories/theirs.md", "secretproject budget");
    n = search(&h, ts.mem, "secretproject", 10);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/mine.md");
    mt_search_hits_free(h, n);
    n = search(&h, other, "secretproject", 10);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/theirs.md");
    mt_search_hits_free(h, n);
    mt_memory_free(other);
    mt_test_store_free(&ts);
}

typedef struct {
    mt_memory *mem;
    int stop;
    int errors;
} race_state;

static void *searcher(void *arg)
{
    race_state *s = arg;
    mt_search_options so = {NULL, 100};

    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        mt_search_hit *h;
        size_t n;

        if (mt_memory_search(&h, &n, s->mem, "racing", &so) < 0)
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
        else
            mt_search_hits_free(h, n);
    }
    return NULL;
}

static void test_race_with_writers(void **state)
{
    mt_options o;
    mt_test_store ts;
    race_state rs;
    pthread_t t[2];
    mt_search_hit *h;
    size_t n;
    char path[64];

    (void)state;
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    mt_test_store_init(&ts, &o);
    rs.mem = ts.mem;
    rs.stop = 0;
    rs.errors = 0;
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, searcher, &rs), 0);
    for (int i = 0; i < 60; i++) {
        snprintf(path, sizeof(path), "/memories/r%d.md", i);
        put(ts.mem, path, "racing words");
        if (i % 3 == 0) {
            char *res, json[128];
            int is_error;

            snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"%s\"}", path);
            res = mt_test_call(ts.mem, &is_error, json);
            free(res);
        }
    }
    __atomic_store_n(&rs.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(rs.errors, 0);
    /* Once the writers are done, a search sees exactly what is there. */
    n = search(&h, ts.mem, "racing", 100);
    assert_int_equal(n, 40);
    mt_search_hits_free(h, n);
    mt_test_store_free(&ts);
}

typedef struct {
    const char *root;
    int rc;
} fresh_state;

static void *fresh_search(void *arg)
{
    fresh_state *f = arg;
    mt_memory *mem;
    mt_search_hit *h;
    size_t n;

    if ((f->rc = mt_memory_open(&mem, f->root, NULL)) < 0)
        return NULL;
    if ((f->rc = mt_memory_search(&h, &n, mem, "word", NULL)) == 0)
        mt_search_hits_free(h, n);
    mt_memory_free(mem);
    return NULL;
}

/* The first search and the first change of a new store open its database
 * at once: both set it up, and neither fails for the other. */
static void test_fresh_store_race(void **state)
{
    char root[300];

    (void)state;
    for (int round = 0; round < 20; round++) {
        mt_test_store ts;
        fresh_state f;
        pthread_t t;

        mt_test_store_init(&ts, NULL);
        snprintf(root, sizeof(root), "%s/fresh", ts.dir);
        f.root = root;
        f.rc = 0;
        {
            mt_memory *mem;
            char *res;
            int is_error;

            assert_int_equal(mt_memory_open(&mem, root, NULL), 0);
            assert_int_equal(pthread_create(&t, NULL, fresh_search, &f), 0);
            res = mt_test_call(mem, &is_error,
                               "{\"command\":\"create\",\"path\":\"/memories/a.md\","
                               "\"file_text\":\"a word\"}");
            assert_false(is_error);
            free(res);
            pthread_join(t, NULL);
            mt_memory_free(mem);
        }
        if (f.rc < 0)
            fail_msg("round %d: the search failed: %s", round, mt_error_last()->message);
        mt_test_store_free(&ts);
    }
}

/* The index's FTS5 table as the history database of the store at root
 * holds it: its SQL, and its rows of words (after the SQL's text). */
static long words_table(char *sql, size_t size, const char *root)
{
    return history_row(root,
                       "SELECT (SELECT count(*) FROM search_words), sql FROM sqlite_master "
                       "WHERE name = 'search_words'",
                       sql, size);
}

static void search_finds(mt_memory *mem, const char *query, size_t want, const char *first)
{
    mt_search_hit *h;
    size_t n = search(&h, mem, query, 10);

    if (n != want || (first && strcmp(h[0].path, first) != 0))
        fail_msg("%s: %zu hits, the first %s", query, n, n ? h[0].path : "none");
    mt_search_hits_free(h, n);
}

#define IDS_OF_PATHS                                                                               \
    "SELECT count(*), group_concat(id || ' ' || path, ', ') FROM (SELECT id, path FROM "           \
    "search_docs ORDER BY path)"

/* An index an older memtool made, without FTS5's prefix indexes, is made
 * again when a search opens it: its words and stamps go, the next search
 * indexes every memory again, each under the id it had (a search of an
 * older memtool may hold them), and prefixes of every length (indexed and
 * merged) find what they did. */
/* A search that gives the index the files' digest. */
typedef struct {
    const mt_search_doc *doc;
    const unsigned char *sum;
} summed;

static int summed_doc(void *payload, const mt_search_doc **docs, size_t *n,
                      const unsigned char **sum)
{
    const summed *s = payload;

    *docs = s->doc;
    *n = 1;
    *sum = s->sum;
    return 0;
}

/* How many times the comparison of every memory with the index ran. */
static int compared(sqlite3 *db)
{
    sqlite3_stmt *s;

    for (s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s))
        if (strncmp(sqlite3_sql(s), "SELECT id, path, stamp FROM search_docs", 39) == 0)
            return sqlite3_stmt_status(s, SQLITE_STMTSTATUS_RUN, 0);
    fail_msg("no comparison prepared");
    return -1;
}

static int sums_kept(sqlite3 *db)
{
    sqlite3_stmt *s;
    int n;

    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM search_sum", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return n;
}

/* A search index of its own in a scratch directory, and the query "alpha". */
typedef struct {
    char dir[256], path[300];
    sqlite3 *db;
    mt_search_index *ix;
    mt_search_query *q;
} scratch_index;

static void scratch_index_open(scratch_index *x, const char *name)
{
    mt_test_scratch_make(x->dir, sizeof(x->dir), name);
    snprintf(x->path, sizeof(x->path), "%s/index.db", x->dir);
    assert_int_equal(sqlite3_open(x->path, &x->db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(x->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(mt_search_index_open(&x->ix, x->db), 0);
    assert_int_equal(mt_search_query_parse(&x->q, "alpha", 5), 0);
}

static void scratch_index_close(scratch_index *x)
{
    mt_search_query_free(x->q);
    mt_search_index_free(x->ix);
    assert_int_equal(sqlite3_close(x->db), SQLITE_OK);
    assert_int_equal(mt_test_scratch_remove(x->dir), 0);
}

/* As another program (or an older memtool) may: a.md's row indexed again
 * with other words and another stamp. */
#define REINDEXED_OUTSIDE                                                                          \
    "UPDATE search_docs SET stamp = 'elsewhere' WHERE path = 'a.md';"                              \
    "DELETE FROM search_words WHERE rowid = (SELECT id FROM search_docs WHERE path = 'a.md');"     \
    "INSERT INTO search_words(rowid, words) SELECT id, ' bravo words' FROM search_docs"            \
    " WHERE path = 'a.md';"

static size_t run_summed(mt_search_index *ix, const summed *s, const mt_search_query *q)
{
    mt_store_hit *hits;
    size_t count;

    assert_int_equal(mt_search_index_run(&hits, &count, ix, summed_doc, (void *)s, doc_text,
                                         "alpha words", 1 << 20, q, "", 10),
                     0);
    mt_store_hits_free(hits, count);
    return count;
}

/*
 * The files' digest is kept by the search that finds the index holding
 * exactly them, and spares the next ones the comparison of every memory.
 * A change to the index (here by another program, with other words)
 * deletes it, and the next search compares again and indexes the file
 * again. A digest kept before a trigger was dropped and made again is not
 * trusted, and none is kept while a trigger is missing or is not as made.
 */
static void test_digest_kept(void **state)
{
    static const mt_search_doc doc = {"a.md", "1:11:1.000000000:1.000000000"};
    static const char *const outside[] = {
        REINDEXED_OUTSIDE,
        "DROP TRIGGER search_sum_set;" REINDEXED_OUTSIDE
        "CREATE TRIGGER search_sum_set AFTER UPDATE ON search_docs BEGIN DELETE FROM search_sum;"
        " END;",
    };
    static const char *const unmade[] = {
        "DROP TRIGGER search_sum_put",
        "DROP TRIGGER search_sum_set; CREATE TRIGGER search_sum_set AFTER UPDATE ON search_docs"
        " WHEN 0 BEGIN DELETE FROM search_sum; END",
    };
    unsigned char digest[MT_SEARCH_SUM_BYTES];
    summed s = {&doc, digest};
    scratch_index x;
    size_t i;

    (void)state;
    memset(digest, 0x5a, sizeof(digest));
    for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        scratch_index_open(&x, "digest");
        /* indexed, then found the same: kept */
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(sums_kept(x.db), 0);
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(sums_kept(x.db), 1);
        assert_int_equal(compared(x.db), 2);
        /* the same digest: nothing compared */
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(compared(x.db), 2);
        mt_test_sql_exec(x.path, outside[i]);
        /* compared again, and a.md indexed again from its file */
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(compared(x.db), 3);
        scratch_index_close(&x);
    }
    /* a trigger missing, or one of the same name that would not delete: no digest kept */
    for (i = 0; i < sizeof(unmade) / sizeof(unmade[0]); i++) {
        scratch_index_open(&x, "digest");
        assert_int_equal(sqlite3_exec(x.db, unmade[i], NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(run_summed(x.ix, &s, x.q), 1);
        assert_int_equal(sums_kept(x.db), 0);
        scratch_index_close(&x);
    }
}

/* The other connection's write, committed just before the search takes
 * the write lock to keep the digest. */
static int commit_other(unsigned type, void *payload, void *stmt, void *sql)
{
    sqlite3 *other = payload;

    (void)type;
    (void)sql;
    if (strcmp(sqlite3_sql(stmt), "BEGIN IMMEDIATE") == 0 && !sqlite3_get_autocommit(other))
        assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    return 0;
}

static int busy_timeout(sqlite3 *db)
{
    sqlite3_stmt *s;
    int ms;

    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA busy_timeout", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    ms = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return ms;
}

/*
 * A digest is kept only when nothing was committed between the comparison
 * that found the index holding the files and its keeping (here another
 * connection commits just before the search takes the write lock), and
 * the search does not wait for a write lock another connection holds (its
 * busy timeout a minute, put back after).
 */
static void test_digest_not_kept_after_commit(void **state)
{
    static const mt_search_doc doc = {"a.md", "1:11:1.000000000:1.000000000"};
    unsigned char digest[MT_SEARCH_SUM_BYTES];
    summed s = {&doc, digest};
    scratch_index x;
    sqlite3 *odb;
    struct timespec t0, t1;

    (void)state;
    memset(digest, 0xa5, sizeof(digest));
    scratch_index_open(&x, "digest-commit");
    assert_int_equal(sqlite3_exec(x.db, "CREATE TABLE unrelated(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_busy_timeout(x.db, 60000);
    assert_int_equal(sqlite3_open(x.path, &odb), SQLITE_OK);
    assert_int_equal(run_summed(x.ix, &s, x.q), 1);
    /* the lock held by another connection throughout: not waited for */
    assert_int_equal(
        sqlite3_exec(odb, "BEGIN IMMEDIATE; INSERT INTO unrelated VALUES(1)", NULL, NULL, NULL),
        SQLITE_OK);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_summed(x.ix, &s, x.q), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 30);
    assert_int_equal(sums_kept(x.db), 0);
    assert_int_equal(busy_timeout(x.db), 60000);
    /* committed just before the search takes the lock: not kept either */
    sqlite3_trace_v2(x.db, SQLITE_TRACE_STMT, commit_other, odb);
    assert_int_equal(run_summed(x.ix, &s, x.q), 1);
    sqlite3_trace_v2(x.db, 0, NULL, NULL);
    assert_int_equal(sqlite3_get_autocommit(odb), 1);
    assert_int_equal(sums_kept(x.db), 0);
    assert_int_equal(run_summed(x.ix, &s, x.q), 1);
    assert_int_equal(sums_kept(x.db), 1);
    assert_int_equal(sqlite3_close(odb), SQLITE_OK);
    scratch_index_close(&x);
}

/* A searcher in a process of its own, till it is killed: 1 when a search failed. */
static void search_forever(const char *root)
{
    static const char *const queries[] = {"word*", "topic3", "memory"};
    mt_search_options so = {NULL, 5};
    mt_memory *mem;
    mt_search_hit *h;
    size_t n;

    if (mt_memory_open(&mem, root, NULL) < 0)
        _exit(1);
    for (unsigned i = 0;; i++) {
        if (mt_memory_search(&h, &n, mem, queries[i % 3], &so) < 0)
            _exit(1);
        mt_search_hits_free(h, n);
    }
}

/*
 * Searches in other processes, each on its connection of its own, keep
 * digests, use them and bring the index up to date all the while; none
 * of that makes this process's search answer from words a file no longer
 * holds: after each edit made outside memtool, a search finds the file by
 * its new word and not by the one before. (Each edit grows the file, so
 * its stamp changes on any kernel's clock.)
 */
static void test_digests_across_processes(void **state)
{
    mt_test_store ts;
    mt_search_hit *h;
    pid_t kids[2];
    char text[256], word[32], why[128] = "";
    size_t n;
    int i, k, status, running[2];

    (void)state;
    mt_test_store_init(&ts, NULL);
    fill(ts.mem, 300);
    write_file(ts.root, "a.md", "word0\n");
    n = search(&h, ts.mem, "word0", 10);
    assert_int_equal(n, 1);
    mt_search_hits_free(h, n);
    for (k = 0; k < 2; k++) {
        assert_true((kids[k] = fork()) >= 0);
        if (kids[k] == 0)
            search_forever(ts.root);
    }
    /* a failure is told after the searchers are killed, not left running */
    for (i = 1; i <= 150 && !*why; i++) {
        snprintf(text, sizeof(text), "word%d%*s\n", i, i, "");
        write_file(ts.root, "a.md", text);
        snprintf(word, sizeof(word), "word%d", i);
        n = search(&h, ts.mem, word, 10);
        if (n != 1 || strcmp(h[0].path, "/memories/a.md") != 0)
            snprintf(why, sizeof(why), "edit %d: %s found %zu memories", i, word, n);
        mt_search_hits_free(h, n);
        snprintf(word, sizeof(word), "word%d", i - 1);
        n = search(&h, ts.mem, word, 10);
        if (n != 0 && !*why)
            snprintf(why, sizeof(why), "edit %d: %s, the word before it, still found", i, word);
        mt_search_hits_free(h, n);
    }
    for (k = 0; k < 2; k++) {
        /* still searching, never failed, when killed */
        running[k] = waitpid(kids[k], &status, WNOHANG) == 0;
        kill(kids[k], SIGKILL);
        assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
    }
    if (*why)
        fail_msg("%s", why);
    assert_true(running[0] && running[1]);
    mt_test_store_free(&ts);
}

static void test_older_index_remade(void **state)
{
    mt_test_store ts;
    char path[600], sql[512], ids[512], ids_after[512];

    (void)state;
    mt_test_store_init(&ts, NULL);
    put(ts.mem, "/memories/a.md", "alphabetical order");
    put(ts.mem, "/memories/b.md", "bravo alphabet");
    search_finds(ts.mem, "zulu", 0, NULL);
    assert_int_equal(words_table(sql, sizeof(sql), ts.root), 2);
    assert_non_null(strstr(sql, "prefix='2 3 4 5'"));
    mt_memory_free(ts.mem);
    /* the table as an older memtool made it, with the same rows */
    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts.root);
    mt_test_sql_exec(path, "CREATE TABLE kept AS SELECT rowid + 10 AS id, words FROM search_words;"
                           "UPDATE search_docs SET id = id + 10;"
                           "DROP TABLE search_words;"
                           "CREATE VIRTUAL TABLE search_words USING fts5(words, tokenize='ascii');"
                           "INSERT INTO search_words(rowid, words) SELECT id, words FROM kept;"
                           "DROP TABLE kept;"
                           /* and the digests' table dropped by hand: made again first */
                           "DROP TABLE search_sum;");
    assert_int_equal(words_table(sql, sizeof(sql), ts.root), 2);
    assert_null(strstr(sql, "prefix="));
    assert_int_equal(history_row(ts.root, IDS_OF_PATHS, ids, sizeof(ids)), 2);
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, NULL), 0);
    search_finds(ts.mem, "al*", 2, NULL);
    assert_int_equal(words_table(sql, sizeof(sql), ts.root), 2);
    assert_non_null(strstr(sql, "prefix='2 3 4 5'"));
    assert_int_equal(history_row(ts.root, IDS_OF_PATHS, ids_after, sizeof(ids_after)), 2);
    assert_string_equal(ids_after, ids);
    assert_non_null(strstr(ids, "11 "));
    search_finds(ts.mem, "alph*", 2, NULL);
    search_finds(ts.mem, "alphabetic*", 1, "/memories/a.md");
    search_finds(ts.mem, "br*", 1, "/memories/b.md");
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking),
        cmocka_unit_test(test_killed_while_indexing),
        cmocka_unit_test(test_outside_changes),
        cmocka_unit_test(test_big_file_no_snippet),
        cmocka_unit_test(test_tenants),
        cmocka_unit_test(test_race_with_writers),
        cmocka_unit_test(test_fresh_store_race),
        cmocka_unit_test(test_store_sees_outside_edits),
        cmocka_unit_test(test_statements_kept),
        cmocka_unit_test(test_older_index_remade),
        cmocka_unit_test(test_index_changed_meanwhile),
        cmocka_unit_test(test_older_reading_after_catch_up),
        cmocka_unit_test(test_read_under_write_lock),
        cmocka_unit_test(test_digest_kept),
        cmocka_unit_test(test_digest_not_kept_after_commit),
        cmocka_unit_test(test_digests_across_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

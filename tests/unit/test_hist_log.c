/*
 * The history's log of versions (src/machinery/hist_log.c, history.c): what
 * goes through it rather than a transaction, that a batch loaded from it
 * ends as the same changes made one by one in transactions would, and that
 * a log moved away or read by either of its readers loses nothing.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "helpers.h"
#include "machinery/hist_log.h"
#include "machinery/history.h"

#define DAY_MS 86400000LL

/* How many versions the database holds, read by SQLite itself: memtool
 * would load the log first. */
static int db_versions(const mt_test_store *ts)
{
    char path[512];
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int n = -1;

    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts->root);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM versions", -1, &s, NULL),
                     SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

/* The file's access and modification times set back by `ago` ms. */
static void times_back(const mt_test_store *ts, const char *rel, int64_t ago)
{
    struct timespec t[2], now;
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", ts->root, rel);
    clock_gettime(CLOCK_REALTIME, &now);
    t[0].tv_sec = now.tv_sec - (time_t)(ago / 1000);
    t[0].tv_nsec = now.tv_nsec;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * A view records its access in the file's times, which moves the file's
 * change time: the next edit finds a file that does not look as recorded,
 * reads it, finds its content unchanged, and goes on through the log (no
 * transaction: the database is not written until the log is loaded). A
 * write in place that keeps the size and puts the modification time back
 * is still found, as a version by "external".
 */
static void test_view_then_edit_logged(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    struct stat before, after;
    char path[512];
    int in_db, fd;
    size_t n, i;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_create(ts.mem, "a.md", "one\\n");
    /* Idle for two minutes, as far as its times say; the log's catch-up
     * records how the file looks now, in the database. */
    times_back(&ts, "a.md", 120000);
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 1);
    mt_versions_free(v, n);
    assert_int_equal(mt_test_log_size(&ts), 0);
    in_db = db_versions(&ts);
    assert_int_equal(in_db, 1);

    snprintf(path, sizeof(path), "%s/a.md", ts.root);
    assert_int_equal(stat(path, &before), 0);
    usleep(20 * 1000); /* another change time from the kernel's clock */
    mt_test_ok(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}");
    assert_int_equal(stat(path, &after), 0);
    /* The view did record its access, and the change time moved with it. */
    assert_true(after.st_atim.tv_sec > before.st_atim.tv_sec + 60);
    assert_false(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
                 after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);

    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"one\",\"new_str\":\"two\"}");
    /* The edit's version waits in the log; no transaction wrote the database. */
    assert_true(mt_test_log_size(&ts) > 0);
    assert_int_equal(db_versions(&ts), in_db);
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 2);
    for (i = 0; i < n; i++)
        assert_string_not_equal(v[i].actor, "external");
    mt_versions_free(v, n);

    /* Written in place: the same size, the modification time put back. */
    usleep(20 * 1000);
    assert_int_equal(stat(path, &before), 0);
    assert_true((fd = open(path, O_WRONLY)) >= 0);
    assert_int_equal(pwrite(fd, "TWO", 3, 0), 3);
    close(fd);
    {
        struct timespec t[2] = {before.st_atim, before.st_mtim};
        assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
    }
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"TWO\",\"new_str\":\"three\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 4);
    assert_string_not_equal(v[0].actor, "external");
    assert_string_equal(v[1].actor, "external");
    {
        char *data;
        size_t len;
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[1].id), 0);
        assert_int_equal(len, 4);
        assert_memory_equal(data, "TWO\n", 4);
        free(data);
    }
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/*
 * A batch loaded from the log ends as the same changes made one at a time
 * in transactions: each change's caps apply where that change would have
 * applied them (its days after it, its cap on versions after its own
 * version of the memory it changed, never after a version found on the
 * disk or a move), whatever the other changes in the batch say.
 */

/* One history in a scratch directory; `logged`: its changes go to the log. */
typedef struct {
    char dir[256];
    int dirfd;
    mt_hist *h;
    uint64_t slot;
    int logged;
} side;

static void side_open(side *s)
{
    assert_int_equal(mt_hist_open(&s->h, s->dirfd, "history.db", MT_DURABILITY_NONE), 0);
    if (s->logged)
        mt_hist_log_attach(s->h, &s->slot);
}

/* A change: what a store's change calls, in its order. */
typedef struct {
    mt_hist_event e[2];
    size_t n;
    const char *prune; /* the memory the change's cap applies to, or NULL */
    unsigned keep, days;
} change;

static void side_change(side *s, const change *c)
{
    mt_store_op op;
    int64_t id;
    size_t i;

    mt_store_op_init(&op);
    op.history_keep = c->keep;
    op.history_days = c->days;
    if (!s->logged) {
        /* A handle of its own, as one-shot processes have: a handle prunes
         * by days at most once a minute. */
        mt_hist_close(s->h);
        side_open(s);
        assert_int_equal(mt_hist_begin(s->h), 0);
    } else {
        assert_int_equal(mt_hist_begin_logged(s->h, c->days), 0);
    }
    for (i = 0; i < c->n; i++)
        if (mt_hist_record(s->h, &id, &c->e[i]) < 0)
            fail_msg("record: %s", mt_error_last()->message);
    if (c->prune)
        assert_int_equal(mt_hist_prune(s->h, c->prune, c->keep), 0);
    if (mt_hist_commit(s->h, &op) < 0)
        fail_msg("commit: %s", mt_error_last()->message);
}

static void exec_ok(side *s, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(mt_hist_sqlite(s->h), sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

/* Every version (id, memory, op, path, size, content), one a line. */
static char *versions_text(side *s)
{
    mt_buf out = MT_BUF_INIT;
    sqlite3_stmt *st = NULL;
    char line[512];

    assert_int_equal(sqlite3_prepare_v2(mt_hist_sqlite(s->h),
                                        "SELECT id, memory_id, op, coalesce(path, ''), size "
                                        "FROM versions ORDER BY id",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        char *data = NULL;
        size_t len = 0;
        int op = sqlite3_column_int(st, 2);
        if (op != MT_VERSION_DELETED)
            assert_int_equal(mt_hist_content(s->h, &data, &len, id), 0);
        snprintf(line, sizeof(line), "%lld %s %d %s %lld %.*s\n", (long long)id,
                 (const char *)sqlite3_column_text(st, 1), op,
                 (const char *)sqlite3_column_text(st, 3), (long long)sqlite3_column_int64(st, 4),
                 (int)len, data ? data : "");
        free(data);
        assert_int_equal(mt_buf_put(&out, line, strlen(line)), 0);
    }
    sqlite3_finalize(st);
    assert_int_equal(mt_buf_put(&out, "", 1), 0);
    return out.ptr;
}

static int versions_of(side *s, const char *memory_id)
{
    sqlite3_stmt *st = NULL;
    int n = -1;

    assert_int_equal(sqlite3_prepare_v2(mt_hist_sqlite(s->h),
                                        "SELECT count(*) FROM versions WHERE memory_id = ?1", -1,
                                        &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, memory_id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

static size_t text_len(const char *s)
{
    return s ? strlen(s) : 0;
}

#define EV(op_, path_, prev_, id_, actor_, data_)                                                  \
    {                                                                                              \
        op_, path_, prev_, id_, actor_, data_, text_len(data_), NULL, NULL                         \
    }

static void test_batch_prunes_as_direct(void **state)
{
    /* The memories: how many versions each starts with, and how old. */
    static const struct {
        const char *path, *id;
        int versions;
        int64_t age_days;
    } mems[] = {
        {"a.md", "mem_000000000000000a", 3, 10},   {"b.md", "mem_000000000000000b", 3, 3},
        {"c.md", "mem_000000000000000c", 2, 40},   {"d.md", "mem_000000000000000d", 22, 0},
        {"t/e.md", "mem_000000000000000e", 22, 0},
    };
    const change changes[] = {
        /* Days 5: a's and c's old versions go (each memory's newest stays). */
        {{EV(MT_VERSION_MODIFIED, "a.md", NULL, NULL, "library", "a new")}, 1, NULL, 0, 5},
        /* Days 60 after it: takes nothing back, prunes nothing more. */
        {{EV(MT_VERSION_MODIFIED, "b.md", NULL, NULL, "library", "b new")}, 1, NULL, 0, 60},
        /* A file changed outside memtool, then the change: cap 20 applies
         * after the change's own version (24 versions: 20 kept). */
        {{EV(MT_VERSION_MODIFIED, "d.md", NULL, NULL, "external", "d outside"),
          EV(MT_VERSION_MODIFIED, "d.md", NULL, NULL, "library", "d new")},
         2,
         "mem_000000000000000d",
         20,
         0},
        /* A move of a directory: no cap applies to what moves (23 kept). */
        {{EV(MT_VERSION_MODIFIED, "u/e.md", "t/e.md", NULL, "library", NULL)}, 1, NULL, 20, 0},
    };
    side sides[2];
    char *text[2], sql[256], content[64];
    size_t i, k;
    int j;
    (void)state;

    for (k = 0; k < 2; k++) {
        side *s = &sides[k];
        memset(s, 0, sizeof(*s));
        mt_test_scratch_make(s->dir, sizeof(s->dir), "hist-batch");
        s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(s->dirfd >= 0);
        side_open(s); /* not logged yet: the memories' past, the same in both */
        for (i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
            for (j = 0; j < mems[i].versions; j++) {
                mt_hist_event e = EV(j ? MT_VERSION_MODIFIED : MT_VERSION_CREATED, mems[i].path,
                                     NULL, j ? NULL : mems[i].id, "library", NULL);
                int64_t id;
                snprintf(content, sizeof(content), "%s %d", mems[i].path, j);
                e.data = content;
                e.len = strlen(content);
                assert_int_equal(mt_hist_begin(s->h), 0);
                assert_int_equal(mt_hist_record(s->h, &id, &e), 0);
                assert_int_equal(mt_hist_commit(s->h, NULL), 0);
            }
            snprintf(sql, sizeof(sql), "UPDATE versions SET at = at - %lld WHERE memory_id = '%s'",
                     (long long)(mems[i].age_days * DAY_MS), mems[i].id);
            exec_ok(s, sql);
        }
        s->logged = k == 1;
        mt_hist_close(s->h);
        side_open(s);
        for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
            side_change(s, &changes[i]);
        if (s->logged) {
            /* All five versions wait in the log; a new handle loads them. */
            struct stat sb;
            assert_int_equal(fstatat(s->dirfd, MT_HIST_LOG, &sb, 0), 0);
            assert_true(sb.st_size > 0);
            mt_hist_close(s->h);
            side_open(s);
            assert_int_equal(mt_hist_load(s->h), 0);
            assert_int_equal(fstatat(s->dirfd, MT_HIST_LOG, &sb, 0), 0);
            assert_int_equal(sb.st_size, 0);
        }
        text[k] = versions_text(s);
    }
    /* The changes one by one did prune as each said. */
    assert_int_equal(versions_of(&sides[0], "mem_000000000000000a"), 1);
    assert_int_equal(versions_of(&sides[0], "mem_000000000000000b"), 4);
    assert_int_equal(versions_of(&sides[0], "mem_000000000000000c"), 1);
    assert_int_equal(versions_of(&sides[0], "mem_000000000000000d"), 20);
    assert_int_equal(versions_of(&sides[0], "mem_000000000000000e"), 23);
    if (strcmp(text[0], text[1]) != 0) {
        print_message("one by one:\n%s\nthrough the log:\n%s", text[0], text[1]);
        fail_msg("the batch's versions are not the ones the changes made one by one");
    }
    for (k = 0; k < 2; k++) {
        free(text[k]);
        mt_hist_close(sides[k].h);
        close(sides[k].dirfd);
        assert_int_equal(mt_test_scratch_remove(sides[k].dir), 0);
    }
}

static int count_step(void *p)
{
    ++*(long *)p;
    return 0;
}

/* One change of `path` (made if new) in a handle of its own, whose commit
 * prunes by `days` (due: a new handle); returns its VM steps. */
static long prune_change(side *s, const char *path, const char *id, const char *data, unsigned days)
{
    mt_hist_event e =
        EV(id ? MT_VERSION_CREATED : MT_VERSION_MODIFIED, path, NULL, id, "library", data);
    mt_store_op op;
    long steps = 0;
    int64_t vid;

    mt_store_op_init(&op);
    op.history_days = days;
    mt_hist_close(s->h);
    side_open(s);
    sqlite3_progress_handler(mt_hist_sqlite(s->h), 1, count_step, &steps);
    assert_int_equal(mt_hist_begin(s->h), 0);
    if (mt_hist_record(s->h, &vid, &e) < 0)
        fail_msg("record: %s", mt_error_last()->message);
    if (mt_hist_commit(s->h, &op) < 0)
        fail_msg("commit: %s", mt_error_last()->message);
    sqlite3_progress_handler(mt_hist_sqlite(s->h), 0, NULL, NULL);
    return steps;
}

/*
 * The prune by days: what goes is what always went (each memory's versions
 * older than the cut but its newest), and a prune reads what changed since
 * the last one, not the whole history. Two histories differ only in how
 * many memories were left alone past the cut (each such memory's one
 * version is its newest, kept); the same changes then prune the same, and
 * the prune after the first costs the big one about what it costs the
 * small one, counted in SQLite's virtual-machine steps (a scan of every
 * version, as before, costs a hundred times more).
 */
static void test_prune_days_follows_changes(void **state)
{
    static const int stale[2] = {100, 20000};
    long cost[2];
    char path[64], id[32], sql[256];
    size_t k;
    int i, j;
    (void)state;

    for (k = 0; k < 2; k++) {
        side s;
        int64_t vid;

        memset(&s, 0, sizeof(s));
        mt_test_scratch_make(s.dir, sizeof(s.dir), "hist-days");
        s.dirfd = open(s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(s.dirfd >= 0);
        side_open(&s);
        /* 200 days ago: the stale memories, one version each; a.md with
         * three, z.md with one. */
        assert_int_equal(mt_hist_begin(s.h), 0);
        for (i = 0; i < stale[k]; i++) {
            mt_hist_event e;
            snprintf(path, sizeof(path), "old/%05d.md", i);
            snprintf(id, sizeof(id), "mem_%016x", (unsigned)i);
            e = (mt_hist_event)EV(MT_VERSION_CREATED, path, NULL, id, "library", "left alone");
            assert_int_equal(mt_hist_record(s.h, &vid, &e), 0);
        }
        for (j = 0; j < 3; j++) {
            char data[16];
            mt_hist_event e = EV(j ? MT_VERSION_MODIFIED : MT_VERSION_CREATED, "a.md", NULL,
                                 j ? NULL : "mem_aaaaaaaaaaaaaaaa", "library", NULL);
            snprintf(data, sizeof(data), "a %d", j);
            e.data = data;
            e.len = strlen(data);
            assert_int_equal(mt_hist_record(s.h, &vid, &e), 0);
        }
        {
            mt_hist_event e =
                EV(MT_VERSION_CREATED, "z.md", NULL, "mem_zzzzzzzzzzzzzzzz", "library", "z 0");
            assert_int_equal(mt_hist_record(s.h, &vid, &e), 0);
        }
        assert_int_equal(mt_hist_commit(s.h, NULL), 0);
        snprintf(sql, sizeof(sql), "UPDATE versions SET at = at - %lld", 200 * DAY_MS);
        exec_ok(&s, sql);

        /* The first prune has no record of an earlier one: a's older
         * versions go; every memory's newest stays. */
        prune_change(&s, "a.md", NULL, "a 3", 90);
        assert_int_equal(versions_of(&s, "mem_aaaaaaaaaaaaaaaa"), 1);
        assert_int_equal(versions_of(&s, "mem_zzzzzzzzzzzzzzzz"), 1);
        assert_int_equal(versions_of(&s, "mem_0000000000000000"), 1);
        /* z.md, left alone past the cut, then changed: its old version goes
         * at the next prune, though it was older than the last cut. */
        prune_change(&s, "z.md", NULL, "z 1", 90);
        assert_int_equal(versions_of(&s, "mem_zzzzzzzzzzzzzzzz"), 1);
        {
            char *text = versions_text(&s);
            assert_non_null(strstr(text, " z.md 3 z 1\n"));
            assert_null(strstr(text, " z.md 3 z 0\n"));
            free(text);
        }
        /* A new memory and one more change: nothing else goes. */
        prune_change(&s, "b.md", "mem_bbbbbbbbbbbbbbbb", "b 0", 90);
        cost[k] = prune_change(&s, "b.md", NULL, "b 1", 90);
        assert_int_equal(versions_of(&s, "mem_bbbbbbbbbbbbbbbb"), 2);
        assert_int_equal(versions_of(&s, "mem_0000000000000000"), 1);
        snprintf(id, sizeof(id), "mem_%016x", (unsigned)(stale[k] - 1));
        assert_int_equal(versions_of(&s, id), 1);
        mt_hist_close(s.h);
        close(s.dirfd);
        assert_int_equal(mt_test_scratch_remove(s.dir), 0);
    }
    if (cost[1] > 2 * cost[0])
        fail_msg("a prune after %d memories left alone took %ld VM steps, after %d %ld", stale[1],
                 cost[1], stale[0], cost[0]);
}

/*
 * A log moved away (or replaced) between two changes of one handle: the
 * second change's version goes into the log the name holds now, where
 * loads find it, not into the file that was moved.
 */
static void test_log_moved_away(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    char path[512], aside[512];
    size_t n;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_create(ts.mem, "m.md", "one\\n");
    n = mt_test_log(&v, ts.mem, "/memories/m.md", 10);
    assert_int_equal(n, 1);
    mt_versions_free(v, n);
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/m.md\",\"old_str\":"
                       "\"one\",\"new_str\":\"two\"}");
    assert_true(mt_test_log_size(&ts) > 0);
    snprintf(path, sizeof(path), "%s/.memtool/history.log", ts.root);
    snprintf(aside, sizeof(aside), "%s/history.log.aside", ts.dir);
    assert_int_equal(rename(path, aside), 0);
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/m.md\",\"old_str\":"
                       "\"two\",\"new_str\":\"three\"}");
    assert_true(mt_test_log_size(&ts) > 0);
    n = mt_test_log(&v, ts.mem, "/memories/m.md", 10);
    /* The version of "two" went with the file moved away; this change's
     * came after it, found the file not as recorded (so "two" is a version
     * by "external"), and is kept. */
    assert_int_equal(n, 3);
    assert_string_not_equal(v[0].actor, "external");
    assert_string_equal(v[1].actor, "external");
    {
        char *data;
        size_t len;
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[0].id), 0);
        assert_int_equal(len, 6);
        assert_memory_equal(data, "three\n", 6);
        free(data);
    }
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* Records for the readers: three small ones. */
typedef struct {
    int n, stop_at;
} taken;

static int take(void *payload, const mt_hist_rec *r)
{
    taken *t = payload;

    (void)r;
    if (t->n == t->stop_at)
        return MT_ESTOPPED;
    t->n++;
    return 0;
}

/* Both readers (the whole log at once, record by record) take the same
 * records and say they end at the same place, also when the callback stops
 * them: at the end of the last record it took. */
static void test_log_readers_agree(void **state)
{
    mt_buf b = MT_BUF_INIT;
    mt_hist_rec r;
    size_t ends[3];
    uint64_t end;
    int fd, i, whole;
    (void)state;

    memset(&r, 0, sizeof(r));
    r.op = MT_VERSION_CREATED;
    snprintf(r.memory_id, sizeof(r.memory_id), "mem_0123456789abcdef");
    memset(r.sha256, 'e', 64);
    r.path = "a.md";
    r.actor = "test";
    for (i = 0; i < 3; i++) {
        r.id = i + 1;
        r.data = "abc";
        r.len = (size_t)i + 1;
        r.size = r.len;
        assert_int_equal(mt_hist_rec_encode(&b, &r), 0);
        ends[i] = b.len;
    }
    fd = mt_test_temp_fd("hist-log");
    assert_int_equal(write(fd, b.ptr, b.len), (ssize_t)b.len);
    for (whole = 0; whole < 2; whole++) {
        size_t at_most = whole ? SIZE_MAX : 0;
        taken t = {0, -1};

        assert_int_equal(mt_hist_log_each_sized(fd, at_most, &end, take, &t), 0);
        assert_int_equal(t.n, 3);
        assert_int_equal(end, ends[2]);
        /* Stopped by the callback at the second record. */
        t.n = 0;
        t.stop_at = 1;
        assert_int_equal(mt_hist_log_each_sized(fd, at_most, &end, take, &t), MT_ESTOPPED);
        assert_int_equal(t.n, 1);
        assert_int_equal(end, ends[0]);
    }
    /* The usual reader, for a log this small, is the whole one. */
    {
        taken t = {0, 1};
        assert_int_equal(mt_hist_log_each(fd, &end, take, &t), MT_ESTOPPED);
        assert_int_equal(end, ends[0]);
    }
    close(fd);
    mt_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_then_edit_logged),
        cmocka_unit_test(test_batch_prunes_as_direct),
        cmocka_unit_test(test_prune_days_follows_changes),
        cmocka_unit_test(test_log_moved_away),
        cmocka_unit_test(test_log_readers_agree),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

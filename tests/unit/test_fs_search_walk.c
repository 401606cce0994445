/* The files a search of the filesystem store brings its index up to, found
 * on helper threads: the same files as the store's own walk, in byte order
 * of their paths, with the stamps earlier versions wrote (an index they
 * made is not indexed again), an edit in place seen deep in the tree, a
 * helper's error failing the walk, a directory renamed while the walk runs
 * found where it went, and paths longer than PATH_MAX walked beneath their
 * directories. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "fs/fs.h"
#include "fs/fs_pool.h"
#include "fs/fs_search_walk.h"

/* More directories than a walk takes before its helpers start. */
#define DIRS 48

static void write_at(const char *root, const char *rel, const char *text)
{
    char p[2048];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_non_null(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

static void mkdir_at(const char *root, const char *rel)
{
    char p[2048];

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    assert_int_equal(mkdir(p, 0700), 0);
}

/* Files and directories whose names sort around each other ('-' and '.'
 * before '/'), hidden names, temporaries, a link and a FIFO, and enough
 * directories that helpers take part. */
static void make_tree(const char *root)
{
    char rel[256], p[1024];
    int i, j;

    assert_int_equal(mkdir(root, 0700), 0);
    write_at(root, "a.md", "root a\n");
    write_at(root, "a-b.md", "root a-b\n");
    write_at(root, "z.md", "root z\n");
    mkdir_at(root, "a");
    write_at(root, "a/b.md", "in a\n");
    mkdir_at(root, "a-b");
    write_at(root, "a-b/c.md", "in a-b\n");
    mkdir_at(root, "a.b");
    write_at(root, "a.b/d.md", "in a.b\n");
    mkdir_at(root, ".hidden");
    write_at(root, ".hidden/h.md", "hidden\n");
    write_at(root, ".mt-tmp.123.4.5\\", "a temporary\n");
    snprintf(p, sizeof(p), "%s/link.md", root);
    assert_int_equal(symlink("a.md", p), 0);
    snprintf(p, sizeof(p), "%s/fifo.md", root);
    assert_int_equal(mkfifo(p, 0600), 0);
    /* names a directory's sort tells apart past their first 8 bytes, or
     * by bytes past ASCII */
    mkdir_at(root, "keys");
    for (i = 0; i < 12; i++) {
        static const char *const names[] = {
            "longname-same-1.md",
            "longname-same-10.md",
            "longname-same-2.md",
            "longnam",
            "longname",
            "longname.md",
            "longname\xc3\xa9.md",
            "\xc3\xbc.md",
            "Z.md",
            "longnamf",
            "l",
            "longname-same-1",
        };
        snprintf(rel, sizeof(rel), "keys/%s", names[i]);
        write_at(root, rel, "keyed\n");
    }
    for (i = 0; i < DIRS; i++) {
        snprintf(rel, sizeof(rel), "d%02d", i);
        mkdir_at(root, rel);
        for (j = 0; j < 5; j++) {
            snprintf(rel, sizeof(rel), "d%02d/m%d.md", i, j);
            write_at(root, rel, "a memory of some words\n");
        }
        snprintf(rel, sizeof(rel), "d%02d/sub", i);
        mkdir_at(root, rel);
        snprintf(rel, sizeof(rel), "d%02d/sub/x.md", i);
        write_at(root, rel, "nested words\n");
        snprintf(rel, sizeof(rel), "d%02d/sub.md", i);
        write_at(root, rel, "beside sub\n");
    }
}

/* A store of make_tree's files, in ts's scratch directory. */
static void tree_store(mt_test_store *ts)
{
    mt_test_store_init(ts, NULL);
    snprintf(ts->root, sizeof(ts->root), "%s/tree", ts->dir);
    make_tree(ts->root);
}

/* The walk in one go, its helpers started as a search of a small store does. */
static int search_walk(mt_fs_search_files *out, mt_store *st, const char *rel, size_t indexed)
{
    mt_fs_search_walking w;

    mt_fs_search_walk_begin(&w, (mt_fs *)st, rel, indexed, 0);
    return mt_fs_search_walk_end(out, &w);
}

typedef struct {
    const char *root;
    size_t indexed;
    mt_search_doc *v;
    size_t n;
} serial;

/* The stamp as earlier versions wrote it. */
static int serial_file(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    serial *s = payload;
    char p[1024];
    struct stat sb;
    size_t len;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    assert_non_null(s->v = realloc(s->v, (s->n + 1) * sizeof(*s->v)));
    assert_non_null(s->v[s->n].path = strdup(path));
    snprintf(p, sizeof(p), "%s/%s", s->root, path);
    assert_int_equal(lstat(p, &sb), 0);
    snprintf(s->v[s->n].stamp, sizeof(s->v[s->n].stamp), "%llu:%lld:%lld.%09ld:%lld.%09ld",
             (unsigned long long)sb.st_ino, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
             (long)sb.st_mtim.tv_nsec, (long long)sb.st_ctim.tv_sec, (long)sb.st_ctim.tv_nsec);
    if ((uint64_t)sb.st_size > s->indexed) {
        len = strlen(s->v[s->n].stamp);
        snprintf(s->v[s->n].stamp + len, sizeof(s->v[s->n].stamp) - len, "<%zu", s->indexed);
    }
    s->n++;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mt_search_doc *)a)->path, ((const mt_search_doc *)b)->path);
}

/* The walk as one call, and in two halves with the helpers started at
 * once (a search's): the same files, stamps and order as the store's walk. */
static void same_as_serial(mt_store *st, const char *root, const char *rel, size_t indexed)
{
    serial s = {root, indexed, NULL, 0};
    unsigned char sum[MT_SEARCH_SUM_BYTES];
    mt_fs_search_walking w;
    mt_fs_search_files f;
    size_t i;
    int halves;

    assert_int_equal(mt_fs_walk(st, rel, serial_file, &s), 0);
    qsort(s.v, s.n, sizeof(*s.v), by_path);
    for (halves = 0; halves < 2; halves++) {
        if (halves) {
            mt_fs_search_walk_begin(&w, (mt_fs *)st, rel, indexed, 1);
            assert_int_equal(mt_fs_search_walk_end(&f, &w), 0);
        } else {
            assert_int_equal(search_walk(&f, st, rel, indexed), 0);
        }
        assert_int_equal(f.count, s.n);
        for (i = 0; i < s.n; i++) {
            assert_string_equal(f.docs[i].path, s.v[i].path);
            assert_string_equal(f.docs[i].stamp, s.v[i].stamp);
        }
        /* the same digest whichever threads walked which directories */
        if (halves)
            assert_memory_equal(f.sum, sum, sizeof(sum));
        memcpy(sum, f.sum, sizeof(sum));
        mt_fs_search_files_dispose(&f);
    }
    for (i = 0; i < s.n; i++)
        free(s.v[i].path);
    free(s.v);
}

static void test_walk_matches_store_walk(void **state)
{
    mt_test_store ts;
    mt_store *st;

    (void)state;
    tree_store(&ts);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    same_as_serial(st, ts.root, "", 1 << 20);
    same_as_serial(st, ts.root, "", 10); /* some files over the limit indexed */
    same_as_serial(st, ts.root, "d07", 1 << 20);
    same_as_serial(st, ts.root, "a-b", 1 << 20);
    /* no directories around its files: the order is its own sort's alone */
    same_as_serial(st, ts.root, "keys", 1 << 20);
    st->free(st);
    mt_test_store_free(&ts);
}

/* Written in place deep in a tree walked by helpers, the size kept and the
 * modification time put back (so no directory's time changes either): the
 * stamp differs, and a search finds the new words. */
static void test_edit_in_place_deep(void **state)
{
    mt_test_store ts;
    mt_store *st;
    mt_fs_search_files f;
    struct stat before, after, dir_before, dir_after;
    struct timespec times[2];
    char p[1024], d[1024], old_stamp[160];
    unsigned char sum[MT_SEARCH_SUM_BYTES];
    size_t i;
    int fd, seen = 0;
    char *got;

    (void)state;
    tree_store(&ts);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    got = mt_test_store_found(st, "nested", 100, 1 << 20);
    assert_int_equal(strlen(got), (size_t)DIRS * strlen("d00/sub/x.md\n"));
    free(got);
    assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
    for (i = 0; i < f.count; i++)
        if (strcmp(f.docs[i].path, "d17/sub/x.md") == 0)
            snprintf(old_stamp, sizeof(old_stamp), "%s", f.docs[i].stamp), seen = 1;
    assert_true(seen);
    memcpy(sum, f.sum, sizeof(sum));
    mt_fs_search_files_dispose(&f);
    usleep(50 * 1000); /* another change time from the kernel's clock */

    snprintf(p, sizeof(p), "%s/d17/sub/x.md", ts.root);
    snprintf(d, sizeof(d), "%s/d17/sub", ts.root);
    assert_int_equal(stat(p, &before), 0);
    assert_int_equal(stat(d, &dir_before), 0);
    assert_true((fd = open(p, O_WRONLY)) >= 0);
    assert_int_equal(pwrite(fd, "tucked", 6, 0), 6);
    close(fd);
    times[0] = before.st_atim;
    times[1] = before.st_mtim;
    assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(stat(d, &dir_after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    assert_true(dir_after.st_mtim.tv_sec == dir_before.st_mtim.tv_sec &&
                dir_after.st_mtim.tv_nsec == dir_before.st_mtim.tv_nsec);

    assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
    for (i = 0; i < f.count; i++)
        if (strcmp(f.docs[i].path, "d17/sub/x.md") == 0)
            assert_string_not_equal(f.docs[i].stamp, old_stamp);
    assert_memory_not_equal(f.sum, sum, sizeof(sum));
    mt_fs_search_files_dispose(&f);
    got = mt_test_store_found(st, "tucked", 100, 1 << 20);
    assert_string_equal(got, "d17/sub/x.md\n");
    free(got);
    got = mt_test_store_found(st, "nested", 100, 1 << 20);
    assert_int_equal(strlen(got), (size_t)(DIRS - 1) * strlen("d00/sub/x.md\n"));
    free(got);
    st->free(st);
    mt_test_store_free(&ts);
}

/* The walk's digest of the files: another walk of the same files gives it
 * again (an empty directory made meanwhile holds none), and a file moved
 * to another directory, renamed in its own, or removed changes it. */
static void test_digest_follows_files(void **state)
{
    static const char *const moves[][2] = {
        {"d03/m1.md", "d04/m1.md"},
        {"d05/m2.md", "d05/m2-renamed.md"},
        {"d06/sub/x.md", NULL},
    };
    unsigned char sum[MT_SEARCH_SUM_BYTES];
    mt_test_store ts;
    mt_store *st;
    mt_fs_search_files f;
    char p[1024], q[1024];
    size_t i;

    (void)state;
    tree_store(&ts);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
    memcpy(sum, f.sum, sizeof(sum));
    mt_fs_search_files_dispose(&f);
    mkdir_at(ts.root, "d02/empty");
    assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
    assert_memory_equal(f.sum, sum, sizeof(sum));
    mt_fs_search_files_dispose(&f);
    for (i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", ts.root, moves[i][0]);
        if (moves[i][1]) {
            snprintf(q, sizeof(q), "%s/%s", ts.root, moves[i][1]);
            assert_int_equal(rename(p, q), 0);
        } else {
            assert_int_equal(unlink(p), 0);
        }
        assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
        assert_memory_not_equal(f.sum, sum, sizeof(sum));
        memcpy(sum, f.sum, sizeof(sum));
        mt_fs_search_files_dispose(&f);
    }
    st->free(st);
    mt_test_store_free(&ts);
}

/* A directory too deep, met by whichever thread walks it, fails the walk
 * with the reason; the store's own walk says the same. */
static void test_too_deep_fails(void **state)
{
    mt_test_store ts;
    mt_store *st;
    mt_fs_search_files f;
    char rel[640];
    size_t len = 0;
    int i;

    (void)state;
    tree_store(&ts);
    len = (size_t)snprintf(rel, sizeof(rel), "d03/sub");
    for (i = 0; i < MT_WALK_MAX_DEPTH + 1; i++) {
        assert_true(len + 3 < sizeof(rel));
        len += (size_t)snprintf(rel + len, sizeof(rel) - len, "/n");
        mkdir_at(ts.root, rel);
    }
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    assert_int_equal(search_walk(&f, st, "", 1 << 20), MT_ELIMIT);
    assert_non_null(strstr(mt_error_last()->message, "nested more than"));
    assert_null(f.docs);
    assert_int_equal(f.count, 0);
    st->free(st);
    mt_test_store_free(&ts);
}

static void test_missing_path_fails(void **state)
{
    mt_test_store ts;
    mt_store *st;
    mt_fs_search_files f;

    (void)state;
    tree_store(&ts);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    assert_true(search_walk(&f, st, "nowhere", 1 << 20) < 0);
    assert_non_null(strstr(mt_error_last()->message, "nowhere"));
    st->free(st);
    mt_test_store_free(&ts);
}

/* Where the hook renames a directory, once: when the walk is about to look
 * at `at`/`name`, `from` becomes `to`. The hook runs on the walk's helper
 * threads too: `done` is claimed atomically, the rest set before the walk. */
static struct {
    const char *root, *at, *name, *from, *to;
    atomic_int done;
    int failed; /* the rename's errno, asserted on the test's thread after the walk */
} move;

static void move_once(const char *dir, const char *name)
{
    char from[1024], to[1024];

    if (!dir || strcmp(dir, move.at) != 0 || strcmp(name, move.name) != 0 ||
        atomic_exchange(&move.done, 1))
        return;
    snprintf(from, sizeof(from), "%s/%s", move.root, move.from);
    snprintf(to, sizeof(to), "%s/%s", move.root, move.to);
    move.failed = rename(from, to) == 0 ? 0 : errno;
}

/* The walk's paths, one a line, after a newline. */
static char *walked(mt_store *st)
{
    mt_fs_search_files f;
    mt_buf out = MT_BUF_INIT;
    size_t i;

    assert_int_equal(mt_buf_putc(&out, '\n'), 0); /* every path between newlines */
    assert_int_equal(search_walk(&f, st, "", 1 << 20), 0);
    for (i = 0; i < f.count; i++)
        assert_int_equal(mt_buf_printf(&out, "%s\n", f.docs[i].path), 0);
    mt_fs_search_files_dispose(&f);
    return out.ptr;
}

static void renamed_while_walked(const char *at, const char *name, const char *from, const char *to)
{
    mt_test_store ts;
    mt_store *st;
    char *paths, want[64];
    int j;

    tree_store(&ts);
    usleep(50 * 1000); /* the rename's times differ from the tree's on any clock */
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    move.root = ts.root;
    move.at = at;
    move.name = name;
    move.from = from;
    move.to = to;
    atomic_store(&move.done, 0);
    move.failed = 0;
    mt_fs_pool_hook = move_once;
    paths = walked(st);
    mt_fs_pool_hook = NULL;
    assert_true(atomic_load(&move.done));
    assert_int_equal(move.failed, 0);
    for (j = 0; j < 5; j++) {
        snprintf(want, sizeof(want), "\n%s/m%d.md\n", to, j);
        assert_non_null(strstr(paths, want));
    }
    snprintf(want, sizeof(want), "\n%s/sub/x.md\n", to);
    assert_non_null(strstr(paths, want));
    snprintf(want, sizeof(want), "\n%s/", from);
    assert_null(strstr(paths, want));
    /* Nothing else went missing: the tree's 7, the 12 in keys, and 7 in each directory. */
    for (j = -1, name = paths; (name = strchr(name, '\n')); name++)
        j++;
    assert_int_equal(j, 7 + 12 + DIRS * 7);
    free(paths);
    st->free(st);
    mt_test_store_free(&ts);
}

/* Renamed after its parent was listed, before it was opened: found under
 * its new name in the same walk, not left out until the next search. */
static void test_renamed_before_opened(void **state)
{
    (void)state;
    renamed_while_walked("", "d05", "d05", "e05");
}

/* Renamed while it is walked through its descriptor: its memories are not
 * given under the name it no longer has. */
static void test_renamed_while_walked(void **state)
{
    (void)state;
    renamed_while_walked("d07", "m2.md", "d07", "e07");
}

/* A tree made outside memtool whose paths pass PATH_MAX (no request can
 * make one: a request path is at most MT_PATH_MAX bytes with "/memories/"):
 * the walk goes beneath it by descriptors, and what no request could name
 * is no memory, so a search still answers for the rest. */
static void test_longer_than_path_max(void **state)
{
    mt_test_store ts;
    mt_store *st;
    char name[201], *paths;
    const char *p;
    size_t total = 4; /* "deep" */
    int fd, next, i;

    (void)state;
    tree_store(&ts);
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    mkdir_at(ts.root, "deep");
    write_at(ts.root, "deep/top.md", "a memory of some words\n");
    assert_true((fd = open(ts.root, O_RDONLY | O_DIRECTORY)) >= 0);
    assert_true((next = openat(fd, "deep", O_RDONLY | O_DIRECTORY)) >= 0);
    close(fd);
    fd = next;
    for (i = 0; total <= PATH_MAX + 200; i++) {
        int f;

        assert_int_equal(mkdirat(fd, name, 0700), 0);
        assert_true((next = openat(fd, name, O_RDONLY | O_DIRECTORY)) >= 0);
        close(fd);
        fd = next;
        total += 1 + strlen(name);
        assert_true((f = openat(fd, "m.md", O_WRONLY | O_CREAT, 0600)) >= 0);
        assert_int_equal(write(f, "far down\n", 9), 9);
        close(f);
    }
    close(fd);
    assert_int_equal(mt_store_fs_open(&st, ts.root, MT_DURABILITY_NONE), 0);
    paths = walked(st);
    assert_non_null(strstr(paths, "\ndeep/top.md\n"));
    assert_non_null(strstr(paths, "\nd23/sub/x.md\n"));
    /* The levels a request can name are memories, the rest are not. */
    for (i = 0, p = paths; (p = strstr(p, "/m.md\n")); p++)
        i++;
    assert_int_equal(i, (int)((MT_FS_REL_MAX - strlen("deep/m.md")) / 201));
    free(paths);
    st->free(st);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_matches_store_walk), cmocka_unit_test(test_edit_in_place_deep),
        cmocka_unit_test(test_too_deep_fails),          cmocka_unit_test(test_missing_path_fails),
        cmocka_unit_test(test_renamed_before_opened),   cmocka_unit_test(test_renamed_while_walked),
        cmocka_unit_test(test_longer_than_path_max),    cmocka_unit_test(test_digest_follows_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

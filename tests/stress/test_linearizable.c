/*
 * Every outcome of concurrent commands is that of some serial order of the
 * successful ones; the limits hold across processes; a lock held by someone
 * else is waited for a bounded time; a count that cannot see everything
 * refuses the write; a tree of any depth is really freed by delete.
 *
 * The races run in separate processes, each with its own handle (as a
 * `serve` and a `call` would), started together and staggered by a random
 * few hundred microseconds so that the second command lands inside the first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stress_util.h"

#define SMALL_ROUNDS 40
#define BIG_ROUNDS   12
#define BIG_SIZE     (4 << 20)

static char *base_dir;
static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static mt_memory *open_mem(const char *root, const mt_options *o)
{
    mt_memory *mem;
    mt_options d;

    if (!o) {
        mt_options_init(&d);
        d.durability = MT_DURABILITY_NONE; /* the races are the same; the rounds faster */
        d.max_file_size = 64 << 20;
        d.max_store_size = 1ULL << 30;
        o = &d;
    }
    if (mt_memory_open(&mem, root, o) != 0)
        fail_msg("open %s: %s", root, mt_error_last()->message);
    return mem;
}

/* Run one tool input in a child that waits on `go`, after `delay_us`;
 * the child's exit status is 0 for a success, 1 for a tool error. */
static pid_t spawn_calls(const char *root, int go, long delay_us, json_t **inputs, int n)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        mt_memory *mem = open_mem(root, NULL);
        char byte;
        int i, is_error = 0, any_error = 0;

        if (read(go, &byte, 1) != 1)
            _exit(3);
        if (delay_us > 0) {
            struct timespec ts = {0, delay_us * 1000};
            nanosleep(&ts, NULL);
        }
        for (i = 0; i < n; i++) {
            char *text = st_call(mem, &is_error, inputs[i]);
            if (!text)
                _exit(4);
            free(text);
            any_error |= is_error;
        }
        mt_memory_free(mem);
        _exit(any_error);
    }
    for (int i = 0; i < n; i++)
        json_decref(inputs[i]);
    return pid;
}

static int wait_exit(pid_t pid)
{
    int status;

    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
        fail_msg("a racing process died (status %d)", status);
    return WEXITSTATUS(status);
}

/* The original content of the edited file: `size` bytes, a marker near the end. */
static char *content(size_t size, const char *marker)
{
    char *s = malloc(size + 1);
    size_t i, m = strlen(marker);

    assert_non_null(s);
    for (i = 0; i < size; i++)
        s[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 23);
    memcpy(s + size - m - 1, marker, m);
    s[size - 1] = '\n';
    s[size] = '\0';
    return s;
}

typedef enum { RACE_DELETE, RACE_RENAME, RACE_RECREATE, RACE_SWAP } race_kind;

static const char *race_name[] = {"delete", "rename away", "delete and re-create",
                                  "rename away and move another in"};

/* One round: an edit of f against the other command(s); then the store must
 * be what some serial order of the successful commands makes of it. */
static void race_round(race_kind kind, size_t size, int use_insert)
{
    char *root = st_join(base_dir, "race"), *f, *g, *h, *orig, *edited, *other;
    json_t *a[1], *b[2];
    int pipefd[2], a_err, b_err, nb = 1;
    size_t len;
    pid_t pa, pb;
    char *got = NULL;

    st_rmrf(root);
    st_mkdirs(root);
    f = st_join(root, "f");
    g = st_join(root, "g");
    h = st_join(root, "h");
    orig = content(size, "MARK");
    other = content(size / 2 + 64, "OTHR"); /* no MARK: an edit of it fails */
    st_write(f, orig, size);
    if (kind == RACE_SWAP)
        st_write(h, other, strlen(other));
    /* What the edit makes of the original. */
    if (use_insert) {
        edited = malloc(size + 6);
        assert_non_null(edited);
        memcpy(edited, "EDIT\n", 5);
        memcpy(edited + 5, orig, size + 1);
    } else {
        edited = strdup(orig);
        assert_non_null(edited);
        memcpy(strstr(edited, "MARK"), "EDIT", 4);
    }
    a[0] = use_insert ? st_insert("/memories/f", 0, "EDIT")
                      : st_replace("/memories/f", "MARK", "EDIT");
    switch (kind) {
    case RACE_DELETE:
        b[0] = st_delete("/memories/f");
        break;
    case RACE_RENAME:
        b[0] = st_rename("/memories/f", "/memories/g");
        break;
    case RACE_RECREATE:
        b[0] = st_delete("/memories/f");
        b[1] = st_create("/memories/f", other, strlen(other));
        nb = 2;
        break;
    case RACE_SWAP:
        b[0] = st_rename("/memories/f", "/memories/g");
        b[1] = st_rename("/memories/h", "/memories/f");
        nb = 2;
        break;
    }
    assert_int_equal(pipe(pipefd), 0);
    pa = spawn_calls(root, pipefd[0], 0, a, 1);
    pb = spawn_calls(root, pipefd[0], (long)(st_rand(&seed) % (size > 65536 ? 3000 : 300)), b, nb);
    assert_int_equal(write(pipefd[1], "gg", 2), 2);
    close(pipefd[0]);
    close(pipefd[1]);
    a_err = wait_exit(pa);
    b_err = wait_exit(pb);
    if (b_err)
        fail_msg("%s: the second command failed", race_name[kind]);

    switch (kind) {
    case RACE_DELETE:
        /* edit, delete: gone; delete, edit: the edit fails and it is gone. */
        if ((got = st_read(f, &len)) != NULL)
            fail_msg("delete vs %s (%zu bytes): the deleted file is back (edit %s)",
                     use_insert ? "insert" : "str_replace", size, a_err ? "failed" : "succeeded");
        break;
    case RACE_RENAME:
        if ((got = st_read(f, &len)) != NULL)
            fail_msg("rename vs edit (%zu bytes): the file exists at both names", size);
        /* edit, rename: g edited; rename, edit: the edit fails, g original. */
        if (!st_equals(g, a_err ? orig : edited, a_err ? size : strlen(edited)))
            fail_msg("rename vs edit (%zu bytes): g is not what the edit %s leaves", size,
                     a_err ? "failing" : "succeeding");
        break;
    case RACE_RECREATE:
        /* Edit, delete, create: the new file. Delete, edit (fails), create:
         * the new file. Delete, create, edit: the edit of the new file,
         * which only an insert can make (it has no MARK). */
        if (!st_equals(f, other, strlen(other)) &&
            !(use_insert && !a_err && (got = st_read(f, &len)) != NULL &&
              len == strlen(other) + 5 && memcmp(got, "EDIT\n", 5) == 0 &&
              memcmp(got + 5, other, strlen(other)) == 0))
            fail_msg("re-create vs edit (%zu bytes): the new file is neither itself nor its "
                     "edit (edit %s)",
                     size, a_err ? "failed" : "succeeded");
        break;
    case RACE_SWAP: {
        /* Edit first: g edited, f the other. Edit between the renames: it
         * fails. Edit last: g original, f the other edited (an insert only). */
        int first =
            !a_err && st_equals(g, edited, strlen(edited)) && st_equals(f, other, strlen(other));
        int between = a_err && st_equals(g, orig, size) && st_equals(f, other, strlen(other));
        int last = !a_err && use_insert && st_equals(g, orig, size) &&
                   (got = st_read(f, &len)) != NULL && len == strlen(other) + 5 &&
                   memcmp(got, "EDIT\n", 5) == 0 && memcmp(got + 5, other, strlen(other)) == 0;
        if (!first && !between && !last)
            fail_msg("swap vs edit (%zu bytes, %s %s): no serial order leaves the store so", size,
                     use_insert ? "insert" : "str_replace", a_err ? "failed" : "succeeded");
        break;
    }
    }
    free(got);
    got = NULL;
    {
        mt_memory *mem = open_mem(root, NULL);
        st_check_usage(mem, root);
        mt_memory_free(mem);
    }
    free(f);
    free(g);
    free(h);
    free(orig);
    free(other);
    free(edited);
    free(root);
}

static void run_race(race_kind kind)
{
    long i, small = st_scaled(SMALL_ROUNDS), big = st_scaled(BIG_ROUNDS);

    for (i = 0; i < small; i++)
        race_round(kind, 200, (int)(i & 1));
    for (i = 0; i < big; i++)
        race_round(kind, BIG_SIZE, (int)(i & 1));
}

static void test_edit_vs_delete(void **state)
{
    (void)state;
    run_race(RACE_DELETE);
}

static void test_edit_vs_rename(void **state)
{
    (void)state;
    run_race(RACE_RENAME);
}

static void test_edit_vs_recreate(void **state)
{
    (void)state;
    run_race(RACE_RECREATE);
}

static void test_edit_vs_swap(void **state)
{
    (void)state;
    run_race(RACE_SWAP);
}

/* Long-lived handles in 8 processes (as `serve` would hold), all racing to
 * create: never more files or bytes than the limits, counted exactly. */
static void test_limits_across_processes(void **state)
{
    char *root = st_join(base_dir, "limits");
    long rounds = st_scaled(5);
    (void)state;

    for (long r = 0; r < rounds; r++) {
        int pipefd[2], made = 0, i;
        pid_t pids[8];
        mt_options o;
        mt_usage u;
        mt_memory *mem;

        st_rmrf(root);
        st_mkdirs(root);
        mt_options_init(&o);
        o.durability = MT_DURABILITY_NONE;
        o.max_files = 3;
        o.max_store_size = 64 * 1024;
        assert_int_equal(pipe(pipefd), 0);
        for (i = 0; i < 8; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] == 0) {
                mt_memory *m = open_mem(root, &o);
                char path[64], byte, *text;
                int is_error, ok = 0;
                static char kb[20 * 1024];

                memset(kb, 'x', sizeof(kb));
                /* A view first, so each handle has seen the store before the race. */
                free(st_call(m, &is_error, st_view("/memories")));
                if (read(pipefd[0], &byte, 1) != 1)
                    _exit(99);
                for (int k = 0; k < 4; k++) {
                    snprintf(path, sizeof(path), "/memories/p%d-%d", i, k);
                    text = st_call(m, &is_error, st_create(path, kb, sizeof(kb)));
                    free(text);
                    ok += !is_error;
                }
                mt_memory_free(m);
                _exit(ok);
            }
        }
        assert_int_equal(write(pipefd[1], "gggggggg", 8), 8);
        close(pipefd[0]);
        close(pipefd[1]);
        for (i = 0; i < 8; i++) {
            int status;
            assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
            assert_true(WIFEXITED(status));
            made += WEXITSTATUS(status);
        }
        mem = open_mem(root, &o);
        assert_int_equal(mt_memory_usage(&u, mem), 0);
        /* 3 files of 20 KiB fit both limits; a 4th would break both. */
        if (made != 3 || u.files != 3 || u.bytes != 3 * 20 * 1024)
            fail_msg("8 racing processes made %d files (the store holds %llu files, %llu "
                     "bytes); the limits allow 3",
                     made, (unsigned long long)u.files, (unsigned long long)u.bytes);
        st_check_usage(mem, root);
        mt_memory_free(mem);
    }
    free(root);
}

/* Bytes: two long-lived handles in two processes take turns, and together
 * stay under the store size, as a serve and a call sharing a store must. */
static void test_store_size_two_handles(void **state)
{
    char *root = st_join(base_dir, "bytes");
    mt_memory *mine, *theirs_check;
    mt_options o;
    int is_error, ok = 0, sync_a[2], sync_b[2];
    pid_t pid;
    char *text, path[64], byte;
    static char kb[4096];
    mt_usage u;
    (void)state;

    st_rmrf(root);
    st_mkdirs(root);
    memset(kb, 'y', sizeof(kb));
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.max_store_size = 64 * 1024;
    assert_int_equal(pipe(sync_a), 0);
    assert_int_equal(pipe(sync_b), 0);
    mine = open_mem(root, &o);
    free(st_call(mine, &is_error, st_view("/memories")));
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mt_memory *m = open_mem(root, &o);
        int n = 0;
        free(st_call(m, &is_error, st_view("/memories")));
        for (int k = 0; k < 16; k++) {
            if (read(sync_a[0], &byte, 1) != 1)
                _exit(99);
            snprintf(path, sizeof(path), "/memories/child%d", k);
            free(st_call(m, &is_error, st_create(path, kb, sizeof(kb))));
            n += !is_error;
            if (write(sync_b[1], "c", 1) != 1)
                _exit(99);
        }
        mt_memory_free(m);
        _exit(n);
    }
    for (int k = 0; k < 16; k++) {
        snprintf(path, sizeof(path), "/memories/parent%d", k);
        text = st_call(mine, &is_error, st_create(path, kb, sizeof(kb)));
        free(text);
        ok += !is_error;
        assert_int_equal(write(sync_a[1], "p", 1), 1);
        assert_int_equal(read(sync_b[0], &byte, 1), 1);
    }
    {
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        ok += WEXITSTATUS(status);
    }
    theirs_check = open_mem(root, &o);
    assert_int_equal(mt_memory_usage(&u, theirs_check), 0);
    if (ok != 16 || u.bytes != 16 * sizeof(kb))
        fail_msg("two handles made %d files of 4 KiB (%llu bytes) under a 64 KiB limit", ok,
                 (unsigned long long)u.bytes);
    st_check_usage(theirs_check, root);
    mt_memory_free(theirs_check);
    mt_memory_free(mine);
    close(sync_a[0]);
    close(sync_a[1]);
    close(sync_b[0]);
    close(sync_b[1]);
    free(root);
}

/* Run fn in a child under an alarm: a hang is a failure, not a stuck test. */
static void in_child_bounded(void (*fn)(const char *), const char *root, unsigned seconds)
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(seconds);
        fn(root);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        fail_msg("a command hung for %u s behind a lock someone else holds", seconds);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the bounded-wait check failed (status %d)", status);
}

static void expect(mt_memory *m, json_t *in, int want_error, const char *want_prefix)
{
    int is_error;
    char *text = st_call(m, &is_error, in);

    if (!text || is_error != want_error || strncmp(text, want_prefix, strlen(want_prefix)) != 0) {
        fprintf(stderr, "got %s: %s\nwant %s: %s...\n", is_error ? "error" : "success",
                text ? text : "(null)", want_error ? "error" : "success", want_prefix);
        _exit(1);
    }
    free(text);
}

static void foreign_file_lock(const char *root)
{
    mt_memory *m = open_mem(root, NULL);

    /* A foreign flock on a memory file does not stall its edits, nor its delete. */
    expect(m, st_replace("/memories/locked", "one", "two"), 0, "The memory file has been edited");
    expect(m, st_insert("/memories/locked", 0, "zero"), 0, "The file /memories/locked has been");
    expect(m, st_delete("/memories/locked"), 0, "Successfully deleted /memories/locked");
    mt_memory_free(m);
}

static void foreign_store_lock(const char *root)
{
    mt_options o;
    mt_memory *m;
    char *path = st_join(root, "kept");

    mt_options_init(&o);
    o.lock_timeout_ms = 300;
    m = open_mem(root, &o);
    /* Every change waits its bounded time, then says so, naming the path;
     * nothing happened (the delete in particular). */
    expect(m, st_replace("/memories/kept", "a", "b"), 1,
           "Error: Cannot complete the operation on /memories/kept: another process has held "
           "the store's lock for over 300 ms");
    expect(m, st_insert("/memories/kept", 0, "x"), 1,
           "Error: Cannot complete the operation on /memories/kept: another process");
    expect(m, st_delete("/memories/kept"), 1,
           "Error: Cannot complete the operation on /memories/kept: another process");
    expect(m, st_create("/memories/new", "x", 1), 1,
           "Error: Cannot complete the operation on /memories/new: another process");
    expect(m, st_rename("/memories/kept", "/memories/moved"), 1,
           "Error: Cannot complete the operation on /memories/kept: another process");
    /* Reads take no lock. */
    expect(m, st_view("/memories/kept"), 0, "Here's the content of /memories/kept");
    if (!st_equals(path, "a\n", 2))
        _exit(1);
    mt_memory_free(m);
    free(path);
}

static void test_foreign_locks_bounded(void **state)
{
    char *root = st_join(base_dir, "flock"), *file, *statef;
    int fd, sfd;
    mt_memory *m;
    (void)state;

    st_rmrf(root);
    st_mkdirs(root);
    file = st_join(root, "locked");
    st_write(file, "one\n", 4);
    /* A process that can open a memory file can flock it. */
    fd = open(file, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    in_child_bounded(foreign_file_lock, root, 30);
    close(fd);

    /* ...and the store's own lock, if it can reach the directory. */
    free(file);
    file = st_join(root, "kept");
    st_write(file, "a\n", 2);
    m = open_mem(root, NULL);
    free(st_call(m, &(int){0}, st_create("/memories/first", "", 0))); /* makes the state file */
    mt_memory_free(m);
    statef = st_join(root, ".memtool/state");
    sfd = open(statef, O_RDONLY | O_CLOEXEC);
    assert_true(sfd >= 0);
    assert_int_equal(flock(sfd, LOCK_EX), 0);
    in_child_bounded(foreign_store_lock, root, 30);
    close(sfd);
    free(statef);
    free(file);
    free(root);
}

/* The store's own directory deleted from outside while a handle holds its
 * lock file open: the handle must lock the file that is there now, the one
 * every other process uses, not the deleted one. */
static void test_state_file_replaced(void **state)
{
    char *root = st_join(base_dir, "replaced"), *dir, *statef;
    mt_memory *old_handle, *other;
    mt_options o;
    int is_error, fd;
    char *text;
    (void)state;

    st_rmrf(root);
    st_mkdirs(root);
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.lock_timeout_ms = 200;
    old_handle = open_mem(root, &o);
    free(st_call(old_handle, &is_error, st_create("/memories/a", "a\n", 2)));
    assert_false(is_error);
    dir = st_join(root, ".memtool");
    st_rmrf(dir);
    other = open_mem(root, &o);
    free(st_call(other, &is_error, st_create("/memories/b", "b\n", 2)));
    assert_false(is_error);
    statef = st_join(root, ".memtool/state");
    fd = open(statef, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    /* Someone holds the store's lock: the old handle must wait for it too. */
    text = st_call(old_handle, &is_error, st_create("/memories/c", "c\n", 2));
    if (!is_error || !strstr(text, "held the store's lock"))
        fail_msg("a handle whose lock file was deleted went on without the store's lock: %s", text);
    free(text);
    close(fd);
    text = st_call(old_handle, &is_error, st_create("/memories/c", "c\n", 2));
    assert_false(is_error);
    free(text);
    st_check_usage(old_handle, root);
    mt_memory_free(other);
    mt_memory_free(old_handle);
    free(statef);
    free(dir);
    free(root);
}

/* A tree nested deeper than any walk enters (made outside memtool): its
 * delete frees all of it, and the next count is complete again. */
static void test_delete_deep_tree(void **state)
{
    char *root = st_join(base_dir, "deep");
    int fd, i, is_error;
    mt_memory *m;
    char *text;
    (void)state;

    st_rmrf(root);
    st_mkdirs(root);
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(mkdirat(fd, "top", 0700), 0);
    {
        int cur = openat(fd, "top", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (i = 0; i < 400; i++) {
            int f = openat(cur, "data", O_WRONLY | O_CREAT | O_CLOEXEC, 0600), next;
            assert_true(f >= 0);
            assert_int_equal(write(f, "0123456789", 10), 10);
            close(f);
            assert_int_equal(mkdirat(cur, "d", 0700), 0);
            next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            assert_true(next >= 0);
            close(cur);
            cur = next;
        }
        close(cur);
    }
    m = open_mem(root, NULL);
    /* Too deep to count: a write is refused, not let through on a short count. */
    text = st_call(m, &is_error, st_create("/memories/x", "x", 1));
    assert_true(is_error);
    if (!strstr(text, "cannot count") || !strstr(text, "nested more than"))
        fail_msg("a store too deep to count allowed or mis-explained a write: %s", text);
    free(text);
    text = st_call(m, &is_error, st_delete("/memories/top"));
    if (is_error)
        fail_msg("delete of a deep tree failed: %s", text);
    free(text);
    /* Nothing is left on disk: no hidden temporary holding the tree. */
    if (st_count_temps(root) != 0)
        fail_msg("delete left %zu temporary entries holding the tree", st_count_temps(root));
    text = st_call(m, &is_error, st_create("/memories/x", "x", 1));
    if (is_error)
        fail_msg("after the delete, a write still fails: %s", text);
    free(text);
    st_check_usage(m, root);
    mt_memory_free(m);
    close(fd);
    free(root);
}

static int highest_fd(void)
{
    int high = 2;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        int n = 0;
        const char *p = de->d_name;
        if (*p < '0' || *p > '9')
            continue;
        for (; *p >= '0' && *p <= '9'; p++)
            n = n * 10 + (*p - '0');
        if (n > high)
            high = n;
    }
    closedir(d);
    return high;
}

/* A count that runs out of descriptors refuses the write instead of
 * counting a full store as nearly empty. */
static void low_fds_create(const char *root)
{
    mt_options o;
    mt_memory *m;
    struct rlimit rl;
    int is_error, fd;
    char *text;

    mt_options_init(&o);
    o.max_files = 5; /* the store holds 40: any write that adds a file must be refused */
    m = open_mem(root, &o);
    /* A first change opens the state file and counts the store; then the
     * counter is damaged (as a crash leaves it dirty), so the next change
     * must count again, with too few descriptors. */
    free(st_call(m, &is_error, st_delete("/memories/nothing")));
    {
        char *state = st_join(root, ".memtool/state");
        static const char zeros[128];
        int sfd = open(state, O_WRONLY | O_CLOEXEC);
        if (sfd < 0 || pwrite(sfd, zeros, sizeof(zeros), 0) != (ssize_t)sizeof(zeros))
            _exit(2);
        close(sfd);
        free(state);
    }
    /* Descriptors for what is open now, the parent directory and the
     * temporary of the create: the count runs out at once. */
    fd = highest_fd();
    for (;;) { /* fill the holes below it, so only the two above are free */
        int x = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (x < 0 || x > fd) {
            if (x >= 0)
                close(x);
            break;
        }
    }
    rl.rlim_cur = (rlim_t)fd + 3;
    rl.rlim_max = (rlim_t)fd + 3;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        _exit(2);
    text = st_call(m, &is_error, st_create("/memories/one-more", "x", 1));
    if (!is_error || !strstr(text, "cannot count")) {
        fprintf(stderr, "with too few descriptors to count, a create gave: %s\n", text);
        _exit(1);
    }
    free(text);
    mt_memory_free(m);
}

static void test_count_fails_closed(void **state)
{
    char *root = st_join(base_dir, "fds"), path[4096];
    (void)state;

    st_rmrf(root);
    for (int i = 0; i < 40; i++) {
        char *file;
        snprintf(path, sizeof(path), "%s/d%d", root, i);
        st_mkdirs(path);
        file = st_join(path, "f");
        st_write(file, "x", 1);
        free(file);
    }
    in_child_bounded(low_fds_create, root, 60);
    {
        char *file = st_join(root, "one-more");
        assert_int_equal(access(file, F_OK), -1);
        free(file);
    }
    free(root);
}

static int setup(void **state)
{
    (void)state;
    base_dir = st_mkdtemp("linearizable");
    seed ^= (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    print_message("seed %llu\n", (unsigned long long)seed);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    st_rmrf(base_dir);
    free(base_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_vs_delete),
        cmocka_unit_test(test_edit_vs_rename),
        cmocka_unit_test(test_edit_vs_recreate),
        cmocka_unit_test(test_edit_vs_swap),
        cmocka_unit_test(test_limits_across_processes),
        cmocka_unit_test(test_store_size_two_handles),
        cmocka_unit_test(test_foreign_locks_bounded),
        cmocka_unit_test(test_state_file_replaced),
        cmocka_unit_test(test_delete_deep_tree),
        cmocka_unit_test(test_count_fails_closed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * Crash safety (SPEC section 5): a process killed with SIGKILL at a random
 * moment in create, str_replace, insert, rename or a recursive delete leaves
 * every file with exactly its old or its new content, no temporary file in
 * any listing, and a store that opens and works.
 *
 * Each round forks a child that runs one command on the store; the parent
 * waits until the child is about to start it, sleeps a random time within the
 * command's duration (measured first, then steered by where the kills land),
 * and kills it. Then the parent checks the
 * store through the filesystem directly. Durability is the default (full), so
 * kills land inside fsyncs too. MT_STRESS_SCALE multiplies the rounds;
 * MT_STRESS_SEED replays a run.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stress_util.h"

#define ROUNDS 150 /* per command: 750 kills in all at scale 1 */

typedef struct crash_ctx crash_ctx;

typedef struct {
    const char *name;
    void (*prepare)(crash_ctx *c, long round);
    json_t *(*op)(crash_ctx *c, long round);
    /* Check old-or-new; `done` says whether the child finished first. */
    void (*verify)(crash_ctx *c, long round, int done);
} crash_case;

struct crash_ctx {
    char *dir;  /* scratch directory */
    char *root; /* the store root inside it */
    mt_memory *mem;
    uint64_t rng;
    /* str_replace and insert: what the file holds now. */
    char *content;
    size_t content_len;
    char *next; /* what it holds if the command lands */
    size_t next_len;
    int rename_at_b; /* rename: which side the file is on */
};

static uint64_t seed_from_env(void)
{
    const char *s = getenv("MT_STRESS_SEED");
    struct timespec ts;

    if (s && *s)
        return strtoull(s, NULL, 0) | 1;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid()) | 1;
}

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Deterministic filler text, different per tag. */
static char *filler(size_t len, unsigned tag)
{
    char *p = malloc(len + 1);

    assert_non_null(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (i % 64 == 63) ? '\n' : (char)('a' + (i * 7 + tag * 13) % 26);
    p[len] = '\0';
    return p;
}

static char *store_path(crash_ctx *c, const char *rel)
{
    return st_join(c->root, rel);
}

/*
 * Fork a child that runs `input` on the store, kill it after delay_ns once it
 * is ready, and reap it. Returns 1 when the command had finished before the
 * kill, else 0; *took_ns gets how long the command ran when it finished.
 */
static int run_and_kill(crash_ctx *c, json_t *input, long long delay_ns, long long *took_ns)
{
    int fds[2], status, done = 0;
    char byte;
    pid_t pid;
    long long start;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int is_error;
        char *text;
        close(fds[0]);
        if (write(fds[1], "r", 1) != 1)
            _exit(2);
        text = st_call(c->mem, &is_error, input);
        if (text && !is_error)
            (void)!write(fds[1], "d", 1);
        else
            fprintf(stderr, "child: the command failed: %s\n", text ? text : "(out of memory)");
        _exit(0);
    }
    json_decref(input);
    close(fds[1]);
    assert_int_equal(read(fds[0], &byte, 1), 1);
    start = now_ns();
    if (delay_ns >= 0) {
        struct timespec ts = {(time_t)(delay_ns / 1000000000LL), (long)(delay_ns % 1000000000LL)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (took_ns)
        *took_ns = now_ns() - start;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    done = read(fds[0], &byte, 1) == 1;
    close(fds[0]);
    return done;
}

/* The store opens anew and does every command; no temporary file shows in a
 * listing; stale temporaries are cleaned once old enough. */
static void check_store_after(crash_ctx *c)
{
    mt_memory *mem;
    int is_error;
    char *text;
    size_t temps;

    text = st_call(c->mem, &is_error, st_view("/memories"));
    assert_non_null(text);
    assert_false(is_error);
    assert_false(st_shows_temp(text));
    free(text);

    /* A writer killed under the store's lock left the usage counter dirty:
     * the next change counts the store again, so the counter is exact, and
     * removes the temporaries. One killed while it prepared its change
     * outside the lock left a temporary nobody holds, which a walk removes
     * once it is old enough. */
    {
        /* The rounds leave trees of every size behind: the limits are not
         * what this test is about. */
        mt_options o;
        mt_options_init(&o);
        o.max_dirs = o.max_files = 1000000;
        o.max_store_size = (uint64_t)1 << 32;
        assert_int_equal(mt_memory_open(&mem, c->root, &o), 0);
    }
    text = st_call(mem, &is_error, st_create("/memories/after/ok.md", "one\ntwo\n", 8));
    if (is_error)
        fail_msg("the first change after the kills failed: %s", text);
    free(text);
    st_check_usage(mem, c->root);
    temps = st_count_temps(c->root);
    st_age_temps(c->root, 3600);
    text = st_call(c->mem, &is_error, st_view("/memories"));
    assert_non_null(text);
    assert_false(is_error);
    free(text);
    if (st_count_temps(c->root) != 0)
        fail_msg("%zu of %zu stale temporary entries are left after a walk of the store",
                 st_count_temps(c->root), temps);
    text = st_call(mem, &is_error, st_replace("/memories/after/ok.md", "two", "three"));
    assert_false(is_error);
    free(text);
    text = st_call(mem, &is_error, st_insert("/memories/after/ok.md", 0, "zero"));
    assert_false(is_error);
    free(text);
    text = st_call(mem, &is_error, st_rename("/memories/after", "/memories/later"));
    assert_false(is_error);
    free(text);
    text = st_call(mem, &is_error, st_view("/memories/later/ok.md"));
    assert_false(is_error);
    assert_non_null(strstr(text, "     1\tzero\n     2\tone\n     3\tthree"));
    free(text);
    text = st_call(mem, &is_error, st_delete("/memories/later"));
    assert_false(is_error);
    free(text);
    mt_memory_free(mem);
}

static void run_case(const crash_case *k)
{
    crash_ctx c;
    long rounds = st_scaled(ROUNDS), r, mid = 0;
    long long took[5], window;
    uint64_t seed = seed_from_env();

    memset(&c, 0, sizeof(c));
    c.rng = seed;
    c.dir = st_mkdtemp("crash");
    c.root = st_join(c.dir, "store");
    assert_int_equal(mt_memory_open(&c.mem, c.root, NULL), 0);

    /* Calibrate: five rounds run to the end give the command's duration. */
    for (r = 0; r < 5; r++) {
        k->prepare(&c, r);
        st_forget_usage(c.root);
        assert_int_equal(run_and_kill(&c, k->op(&c, r), -1, &took[r]), 1);
        k->verify(&c, r, 1);
    }
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && took[j - 1] > took[j]; j--) {
            long long t = took[j];
            took[j] = took[j - 1];
            took[j - 1] = t;
        }
    window = took[2] + took[2] / 4;
    for (r = 5; r < rounds + 5; r++) {
        long long delay = (long long)(st_rand(&c.rng) % (uint64_t)(window > 1000 ? window : 1000));
        int done;
        k->prepare(&c, r);
        /* The layout was written around memtool: as after any such change,
         * its counter must be counted again (this also makes every killed
         * command start from a counter that needs a recount). */
        st_forget_usage(c.root);
        done = run_and_kill(&c, k->op(&c, r), delay, NULL);
        mid += !done;
        k->verify(&c, r, done);
        /* Steer the window toward the command's real length under the load
         * of the moment: a kill that came too late shrinks it, one that
         * landed inside grows it, so about half the kills land inside. */
        window = done ? window - window / 8 : window + window / 16;
    }
    print_message("%s: %ld kills, %ld before the command finished (window %lld us, seed %llu)\n",
                  k->name, rounds, mid, window / 1000, (unsigned long long)seed);
    /* Kills that all land after the command would prove nothing. */
    if (mid < rounds / 10)
        fail_msg("%s: only %ld of %ld kills landed inside the command", k->name, mid, rounds);
    check_store_after(&c);

    mt_memory_free(c.mem);
    free(c.content);
    free(c.next);
    st_rmrf(c.dir);
    free(c.root);
    free(c.dir);
}

/* ---- create: the file is missing or whole ---- */

static void create_prepare(crash_ctx *c, long round)
{
    (void)c;
    (void)round;
}

static void create_rel(char *buf, size_t cap, long round)
{
    snprintf(buf, cap, "c/%ld/d%ld/f%ld.md", round % 7, round % 3, round);
}

static json_t *create_op(crash_ctx *c, long round)
{
    char rel[128], path[160];
    size_t len = 16384 + (size_t)(round % 5) * 16384;
    char *text = filler(len, (unsigned)round);
    json_t *in;

    (void)c;
    create_rel(rel, sizeof(rel), round);
    snprintf(path, sizeof(path), "/memories/%s", rel);
    in = st_create(path, text, len);
    free(text);
    return in;
}

static void create_verify(crash_ctx *c, long round, int done)
{
    char rel[128];
    size_t len = 16384 + (size_t)(round % 5) * 16384, got = 0;
    char *want = filler(len, (unsigned)round), *p, *data;

    create_rel(rel, sizeof(rel), round);
    p = store_path(c, rel);
    data = st_read(p, &got);
    if (data && (got != len || memcmp(data, want, len) != 0))
        fail_msg("create round %ld: %s holds %zu bytes that are not the text", round, rel, got);
    if (done && !data)
        fail_msg("create round %ld: reported done but %s is missing", round, rel);
    free(data);
    free(want);
    free(p);
}

/* ---- str_replace: the file holds A or B ---- */

#define HEAD_A "HEAD-A"

static void replace_prepare(crash_ctx *c, long round)
{
    if (round == 0) {
        char *body = filler(65536, 1), *p = store_path(c, "s.md");
        size_t n = strlen(HEAD_A) + 1 + 65536;
        c->content = malloc(n + 1);
        assert_non_null(c->content);
        snprintf(c->content, n + 1, "%s\n%s", HEAD_A, body);
        c->content_len = n;
        st_write(p, c->content, n);
        free(body);
        free(p);
    }
}

/* The other head: HEAD-B followed by 32 KiB, so the two versions differ in size. */
static char *head_b(void)
{
    char *extra = filler(32768, 2), *h = malloc(32768 + 8);

    assert_non_null(h);
    snprintf(h, 32768 + 8, "HEAD-B%s", extra);
    free(extra);
    return h;
}

static json_t *replace_op(crash_ctx *c, long round)
{
    char *b = head_b();
    int at_a = strncmp(c->content, HEAD_A "\n", 7) == 0;
    const char *from = at_a ? HEAD_A : b, *to = at_a ? b : HEAD_A;
    size_t flen = strlen(from), tlen = strlen(to);
    json_t *in = st_replace("/memories/s.md", from, to);

    (void)round;
    free(c->next);
    c->next_len = c->content_len - flen + tlen;
    c->next = malloc(c->next_len + 1);
    assert_non_null(c->next);
    memcpy(c->next, to, tlen);
    memcpy(c->next + tlen, c->content + flen, c->content_len - flen + 1);
    free(b);
    return in;
}

static void swap_if_new(crash_ctx *c, const char *rel, long round, int done, const char *what)
{
    char *p = store_path(c, rel), *data;
    size_t got = 0;

    data = st_read(p, &got);
    free(p);
    if (!data)
        fail_msg("%s round %ld: %s is gone", what, round, rel);
    if (got == c->next_len && memcmp(data, c->next, got) == 0) {
        char *t = c->content;
        c->content = c->next;
        c->content_len = c->next_len;
        c->next = t;
    } else if (got != c->content_len || memcmp(data, c->content, got) != 0) {
        fail_msg("%s round %ld: %s holds %zu bytes, neither the old (%zu) nor the new (%zu)", what,
                 round, rel, got, c->content_len, c->next_len);
    } else if (done) {
        fail_msg("%s round %ld: reported done but %s holds the old content", what, round, rel);
    }
    free(data);
}

static void replace_verify(crash_ctx *c, long round, int done)
{
    swap_if_new(c, "s.md", round, done, "str_replace");
}

/* ---- insert: the file holds the old lines, or them with the new one ---- */

static void insert_prepare(crash_ctx *c, long round)
{
    if (round == 0) {
        char *p = store_path(c, "i.md");
        c->content = filler(8192, 3); /* 128 lines of 64 */
        c->content_len = 8192;
        st_write(p, c->content, c->content_len);
        free(p);
    }
}

static json_t *insert_op(crash_ctx *c, long round)
{
    size_t lines = 0, at = 0, line, tlen;
    char *pad = filler(2040, (unsigned)round), text[2100];
    json_t *in;

    for (size_t i = 0; i < c->content_len; i++)
        lines += c->content[i] == '\n';
    line = (size_t)round % (lines + 1);
    for (size_t seen = 0; seen < line; at++)
        seen += c->content[at] == '\n';
    /* One line of text: the filler's newlines would make it several. */
    for (char *q = pad; *q; q++)
        if (*q == '\n')
            *q = ' ';
    snprintf(text, sizeof(text), "INS-%ld %s", round, pad);
    free(pad);
    tlen = strlen(text);
    free(c->next);
    c->next_len = c->content_len + tlen + 1;
    c->next = malloc(c->next_len + 1);
    assert_non_null(c->next);
    memcpy(c->next, c->content, at);
    memcpy(c->next + at, text, tlen);
    c->next[at + tlen] = '\n';
    memcpy(c->next + at + tlen + 1, c->content + at, c->content_len - at + 1);
    in = st_insert("/memories/i.md", (long)line, text);
    return in;
}

static void insert_verify(crash_ctx *c, long round, int done)
{
    swap_if_new(c, "i.md", round, done, "insert");
}

/* ---- rename: the file is at exactly one of its two names, whole ---- */

#define RENAME_LEN 20000

static void rename_names(char *a, char *b, size_t cap, long round)
{
    snprintf(a, cap, "r/a/f.md");
    snprintf(b, cap, "r/b%ld/sub/g.md", round);
}

static void rename_prepare(crash_ctx *c, long round)
{
    if (round == 0) {
        char *text = filler(RENAME_LEN, 4), *d = store_path(c, "r/a"),
             *p = store_path(c, "r/a/f.md");
        st_mkdirs(d);
        st_write(p, text, RENAME_LEN);
        free(text);
        free(d);
        free(p);
        c->rename_at_b = 0;
    } else if (c->rename_at_b) {
        /* Back to a, outside the measured command, so each round moves a -> b<round>. */
        char a[64], b[64], *pa, *pb;
        rename_names(a, b, sizeof(a), round - 1);
        pa = store_path(c, a);
        pb = store_path(c, b);
        assert_int_equal(rename(pb, pa), 0);
        free(pa);
        free(pb);
        c->rename_at_b = 0;
    }
}

static json_t *rename_op(crash_ctx *c, long round)
{
    char a[64], b[64], pa[80], pb[80];

    (void)c;
    rename_names(a, b, sizeof(a), round);
    snprintf(pa, sizeof(pa), "/memories/%s", a);
    snprintf(pb, sizeof(pb), "/memories/%s", b);
    return st_rename(pa, pb);
}

static void rename_verify(crash_ctx *c, long round, int done)
{
    char a[64], b[64], *pa, *pb, *want = filler(RENAME_LEN, 4);
    int at_a, at_b;

    rename_names(a, b, sizeof(a), round);
    pa = store_path(c, a);
    pb = store_path(c, b);
    at_a = st_equals(pa, want, RENAME_LEN);
    at_b = st_equals(pb, want, RENAME_LEN);
    if (at_a == at_b)
        fail_msg("rename round %ld: the file is %s", round,
                 at_a ? "at both names" : "at neither name, or not whole");
    if (done && at_a)
        fail_msg("rename round %ld: reported done but the file did not move", round);
    c->rename_at_b = at_b;
    free(pa);
    free(pb);
    free(want);
}

/* ---- recursive delete: the tree is whole, or gone from every listing ---- */

#define TREE_FILES 24

static void tree_file(char *buf, size_t cap, long round, int i)
{
    snprintf(buf, cap, "t%ld/s%d/x%d/f%d.md", round, i % 3, i % 2, i);
}

static void delete_prepare(crash_ctx *c, long round)
{
    for (int i = 0; i < TREE_FILES; i++) {
        char rel[96], *p, *d, *text = filler(2048, (unsigned)i);
        tree_file(rel, sizeof(rel), round, i);
        p = store_path(c, rel);
        d = strdup(p);
        assert_non_null(d);
        *strrchr(d, '/') = '\0';
        st_mkdirs(d);
        st_write(p, text, 2048);
        free(text);
        free(p);
        free(d);
    }
}

static json_t *delete_op(crash_ctx *c, long round)
{
    char path[64];

    (void)c;
    snprintf(path, sizeof(path), "/memories/t%ld", round);
    return st_delete(path);
}

static void delete_verify(crash_ctx *c, long round, int done)
{
    char rel[96], *p, *text;
    struct stat sb;
    int is_error;

    snprintf(rel, sizeof(rel), "t%ld", round);
    p = store_path(c, rel);
    if (lstat(p, &sb) == 0) {
        if (done)
            fail_msg("delete round %ld: reported done but %s is there", round, rel);
        for (int i = 0; i < TREE_FILES; i++) {
            char f[96], *fp, *want = filler(2048, (unsigned)i);
            tree_file(f, sizeof(f), round, i);
            fp = store_path(c, f);
            if (!st_equals(fp, want, 2048))
                fail_msg("delete round %ld: %s is visible but %s is not whole", round, rel, f);
            free(fp);
            free(want);
        }
    }
    free(p);
    /* Whatever happened, a listing shows no temporary name. */
    text = st_call(c->mem, &is_error, st_view("/memories"));
    assert_non_null(text);
    assert_false(is_error);
    if (st_shows_temp(text))
        fail_msg("delete round %ld: a listing shows a temporary entry:\n%s", round, text);
    free(text);
}

static const crash_case cases[] = {
    {"create", create_prepare, create_op, create_verify},
    {"str_replace", replace_prepare, replace_op, replace_verify},
    {"insert", insert_prepare, insert_op, insert_verify},
    {"rename", rename_prepare, rename_op, rename_verify},
    {"delete", delete_prepare, delete_op, delete_verify},
};

static void test_kill_create(void **state)
{
    (void)state;
    run_case(&cases[0]);
}

static void test_kill_str_replace(void **state)
{
    (void)state;
    run_case(&cases[1]);
}

static void test_kill_insert(void **state)
{
    (void)state;
    run_case(&cases[2]);
}

static void test_kill_rename(void **state)
{
    (void)state;
    run_case(&cases[3]);
}

static void test_kill_recursive_delete(void **state)
{
    (void)state;
    run_case(&cases[4]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_create),           cmocka_unit_test(test_kill_str_replace),
        cmocka_unit_test(test_kill_insert),           cmocka_unit_test(test_kill_rename),
        cmocka_unit_test(test_kill_recursive_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

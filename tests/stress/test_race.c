/*
 * Symlink-swap races (SPEC section 1: containment is the kernel's job).
 *
 * Two attacker threads keep exchanging, with renameat2(RENAME_EXCHANGE),
 *   - the store's directory d with a symlink to a directory outside, and
 *   - d's subdirectory sub with a symlink to a directory outside,
 * while worker threads run every command on paths through d and sub, tens of
 * thousands of times. Outside, canary files must never be read (their atime
 * stays put: a read under relatime moves it), changed or joined by anything
 * new, and no result may ever hold a canary's bytes. The run must also prove
 * it raced: many swaps, and commands that met the link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stress_util.h"

#define OPS     24000 /* in all, at scale 1 */
#define WORKERS 3
#define CANARY  "CANARY-outside-the-store-7c1e"
/* The outside files hold what the workers' edits look for, so a write that
 * reached one would succeed and show. */
#define OUTSIDE_TEXT CANARY "\ninside-A\ninside-B\ninside-g\n"

static const char *const outside_files[] = {"f.md", "log.md", "sub/g.md", "secret.md"};
#define N_OUTSIDE 4

typedef struct {
    char *dir, *root, *outside;
    mt_memory *mem;
    atomic_int stop;
    atomic_long swaps, inner_swaps;
    atomic_long ops, link_hits, leaks, no_result;
    long per_worker;
    int rootfd, dfd; /* opened before the attack starts */
    struct stat before[N_OUTSIDE];
    int atime_works;
} race;

typedef struct {
    race *r;
    int id;
} worker_arg;

static void *attack_top(void *arg)
{
    race *r = arg;
    int fd = r->rootfd;

    while (!atomic_load(&r->stop))
        if (renameat2(fd, "d", fd, "s", RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&r->swaps, 1);
    /* Leave the real directory at d for the checks. */
    {
        struct stat sb;
        if (fstatat(fd, "d", &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
            renameat2(fd, "d", fd, "s", RENAME_EXCHANGE);
    }
    return NULL;
}

static void *attack_inner(void *arg)
{
    race *r = arg;
    /* A descriptor of the real d, opened before any swap: it follows d
     * wherever the other attacker moves it. */
    int fd = r->dfd;

    while (!atomic_load(&r->stop))
        if (renameat2(fd, "sub", fd, "esub", RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&r->inner_swaps, 1);
    {
        struct stat sb;
        if (fstatat(fd, "sub", &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
            renameat2(fd, "sub", fd, "esub", RENAME_EXCHANGE);
    }
    return NULL;
}

static void one_op(race *r, int id, long i)
{
    char a[96], b[96];
    json_t *in;
    char *text;
    int is_error = 0;

    switch (i % 12) {
    case 0:
        in = st_view("/memories/d/f.md");
        break;
    case 1:
        in = st_view(i % 24 == 1 ? "/memories/d" : "/memories/s");
        break;
    case 2:
        in = st_view("/memories/d/sub/g.md");
        break;
    case 3:
        snprintf(a, sizeof(a), "/memories/d/new-%d-%ld.md", id, i);
        in = st_create(a, "made inside\n", 12);
        break;
    case 4:
        in = i % 24 == 4 ? st_replace("/memories/d/f.md", "inside-A", "inside-B")
                         : st_replace("/memories/d/f.md", "inside-B", "inside-A");
        break;
    case 5:
        snprintf(a, sizeof(a), "w%d-%ld", id, i);
        in = st_insert("/memories/d/log.md", 0, a);
        break;
    case 6:
        snprintf(a, sizeof(a), "/memories/d/new-%d-%ld.md", id, i - 3);
        snprintf(b, sizeof(b), "/memories/d/sub/moved-%d-%ld.md", id, i);
        in = st_rename(a, b);
        break;
    case 7:
        snprintf(a, sizeof(a), "/memories/d/sub/moved-%d-%ld.md", id, i - 1);
        in = st_delete(a);
        break;
    case 8:
        snprintf(a, sizeof(a), "/memories/d/sub/tree-%d-%ld/x/a.md", id, i);
        in = st_create(a, "tree\n", 5);
        break;
    case 9:
        snprintf(a, sizeof(a), "/memories/d/sub/tree-%d-%ld", id, i - 1);
        in = st_delete(a);
        break;
    case 10:
        in = st_replace("/memories/d/sub/g.md", "inside-g", "inside-g");
        break;
    default:
        in = st_view("/memories/s/secret.md");
        break;
    }
    if (!in)
        abort(); /* out of memory building the input: not what is tested */
    text = st_call(r->mem, &is_error, in);
    if (!text) {
        /* No result at all: only out of memory may do that, and nothing here
         * is short of memory. (cmocka cannot fail a test from a thread.) */
        fprintf(stderr, "NO RESULT for operation %ld of worker %d: %s\n", i, id,
                mt_error_last()->message);
        atomic_fetch_add(&r->no_result, 1);
        return;
    }
    if (strstr(text, CANARY)) {
        atomic_fetch_add(&r->leaks, 1);
        fprintf(stderr, "LEAK: %s\n", text);
    }
    if (strstr(text, "symbolic link"))
        atomic_fetch_add(&r->link_hits, 1);
    atomic_fetch_add(&r->ops, 1);
    free(text);
}

static void *work(void *arg)
{
    worker_arg *w = arg;

    for (long i = 0; i < w->r->per_worker; i++)
        one_op(w->r, w->id, i);
    return NULL;
}

/* Every name below dir, sorted and joined, to compare before and after. */
static void list_tree(char *out, size_t cap, size_t *len, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *names[64];
    size_t n = 0;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        assert_true(n < 64);
        names[n] = strdup(de->d_name);
        assert_non_null(names[n++]);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        char *full = st_join(dir, names[i]), sub[512];
        struct stat sb;
        int k = snprintf(out + *len, cap - *len, "%s%s\n", prefix, names[i]);
        assert_true(k > 0 && (size_t)k < cap - *len);
        *len += (size_t)k;
        if (lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            snprintf(sub, sizeof(sub), "%s%s/", prefix, names[i]);
            list_tree(out, cap, len, full, sub);
        }
        free(full);
        free(names[i]);
    }
}

static void age_atime(const char *path)
{
    struct timespec ts[2];

    clock_gettime(CLOCK_REALTIME, &ts[1]);
    ts[1].tv_sec -= 3600;
    ts[0] = ts[1];
    ts[0].tv_sec -= 3600;
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void setup_layout(race *r)
{
    char *p;
    struct stat sb;
    int fd;
    char buf[8];

    r->dir = st_mkdtemp("race");
    r->root = st_join(r->dir, "store");
    r->outside = st_join(r->dir, "outside");
    p = st_join(r->outside, "sub");
    st_mkdirs(p);
    free(p);
    for (int i = 0; i < N_OUTSIDE; i++) {
        p = st_join(r->outside, outside_files[i]);
        st_write(p, OUTSIDE_TEXT, strlen(OUTSIDE_TEXT));
        age_atime(p);
        free(p);
    }
    /* Whether a read shows in the atime on this mount (relatime does). */
    p = st_join(r->outside, "probe");
    st_write(p, "probe", 5);
    age_atime(p);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0 && read(fd, buf, sizeof(buf)) > 0);
    close(fd);
    assert_int_equal(stat(p, &sb), 0);
    r->atime_works = sb.st_atime > sb.st_mtime;
    unlink(p);
    free(p);
    for (int i = 0; i < N_OUTSIDE; i++) {
        p = st_join(r->outside, outside_files[i]);
        assert_int_equal(stat(p, &r->before[i]), 0);
        free(p);
    }

    p = st_join(r->root, "d/sub");
    st_mkdirs(p);
    free(p);
    p = st_join(r->root, "d/f.md");
    st_write(p, "inside-A\n", 9);
    free(p);
    p = st_join(r->root, "d/log.md");
    st_write(p, "", 0);
    free(p);
    p = st_join(r->root, "d/sub/g.md");
    st_write(p, "inside-g\n", 9);
    free(p);
    p = st_join(r->root, "s");
    assert_int_equal(symlink(r->outside, p), 0);
    free(p);
    {
        char *target = st_join(r->outside, "sub");
        p = st_join(r->root, "d/esub");
        assert_int_equal(symlink(target, p), 0);
        free(p);
        free(target);
    }
}

static void test_symlink_swaps(void **state)
{
    race r;
    pthread_t top, inner, workers[WORKERS];
    worker_arg args[WORKERS];
    mt_options opts;
    char before[4096], after[4096];
    size_t blen = 0, alen = 0;
    long long t0;
    struct timespec ts;

    (void)state;
    memset(&r, 0, sizeof(r));
    setup_layout(&r);
    list_tree(before, sizeof(before), &blen, r.outside, "");
    mt_options_init(&opts);
    opts.durability = MT_DURABILITY_NONE; /* containment does not depend on it; speed does */
    assert_int_equal(mt_memory_open(&r.mem, r.root, &opts), 0);
    r.per_worker = st_scaled(OPS) / WORKERS;

    r.rootfd = open(r.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(r.rootfd >= 0);
    r.dfd = openat(r.rootfd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    assert_true(r.dfd >= 0);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
    assert_int_equal(pthread_create(&top, NULL, attack_top, &r), 0);
    assert_int_equal(pthread_create(&inner, NULL, attack_inner, &r), 0);
    for (int i = 0; i < WORKERS; i++) {
        args[i].r = &r;
        args[i].id = i;
        assert_int_equal(pthread_create(&workers[i], NULL, work, &args[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(workers[i], NULL);
    atomic_store(&r.stop, 1);
    pthread_join(top, NULL);
    pthread_join(inner, NULL);
    close(r.dfd);
    close(r.rootfd);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    print_message("%ld operations, %ld + %ld swaps, %ld met a link, %lld ms\n", atomic_load(&r.ops),
                  atomic_load(&r.swaps), atomic_load(&r.inner_swaps), atomic_load(&r.link_hits),
                  ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 - t0);

    assert_int_equal(atomic_load(&r.leaks), 0);
    assert_int_equal(atomic_load(&r.no_result), 0);
    /* Nothing new outside, nothing gone. */
    list_tree(after, sizeof(after), &alen, r.outside, "");
    after[alen] = '\0';
    before[blen] = '\0';
    assert_string_equal(after, before);
    for (int i = 0; i < N_OUTSIDE; i++) {
        struct stat sb;
        char *p = st_join(r.outside, outside_files[i]);
        assert_int_equal(lstat(p, &sb), 0);
        assert_true(st_equals(p, OUTSIDE_TEXT, strlen(OUTSIDE_TEXT)));
        if (sb.st_mtim.tv_sec != r.before[i].st_mtim.tv_sec ||
            sb.st_mtim.tv_nsec != r.before[i].st_mtim.tv_nsec || sb.st_ino != r.before[i].st_ino)
            fail_msg("%s outside the store was written or replaced", outside_files[i]);
        if (r.atime_works && sb.st_atim.tv_sec != r.before[i].st_atim.tv_sec)
            fail_msg("%s outside the store was read", outside_files[i]);
        free(p);
    }
    /* The race really ran: without swaps and hits the test proves nothing. */
    assert_true(atomic_load(&r.ops) >= st_scaled(OPS) - WORKERS);
    if (atomic_load(&r.swaps) < 100 || atomic_load(&r.inner_swaps) < 100 ||
        atomic_load(&r.link_hits) < 10)
        fail_msg("the attack did not race: %ld + %ld swaps, %ld link hits", atomic_load(&r.swaps),
                 atomic_load(&r.inner_swaps), atomic_load(&r.link_hits));

    mt_memory_free(r.mem);
    st_rmrf(r.dir);
    free(r.root);
    free(r.outside);
    free(r.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlink_swaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

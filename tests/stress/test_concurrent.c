/*
 * Concurrent writers (SPEC section 5): threads of one process, and processes
 * each with its own handle, on the same files at once. Every edit that
 * reported success is in the file exactly once (no lost update), a reader
 * never sees a torn file, and of racing creates or renames onto one name
 * exactly one wins.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "stress_util.h"

#define THREADS 4
#define PROCS   3
#define INSERTS 200 /* per writer */
#define COUNTS  150 /* compare-and-swap increments per writer */
#define DUELS   150 /* racing creates and renames */

typedef struct {
    char *dir, *root;
    mt_memory *mem;
} store;

static void store_open(store *s, mt_durability d)
{
    mt_options opts;

    s->dir = st_mkdtemp("conc");
    s->root = st_join(s->dir, "store");
    mt_options_init(&opts);
    opts.durability = d;
    assert_int_equal(mt_memory_open(&s->mem, s->root, &opts), 0);
}

static void store_close(store *s)
{
    mt_memory_free(s->mem);
    st_rmrf(s->dir);
    free(s->root);
    free(s->dir);
}

/* Threads and children report trouble here instead of through cmocka. */
static atomic_int failures;

static void failure(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s\n", what, detail ? detail : "(null)");
    atomic_fetch_add(&failures, 1);
}

/* ---- inserts: every line lands once ---- */

typedef struct {
    mt_memory *mem;
    char tag;
    int id;
    long n;
    long ok;
} inserter;

static void insert_lines(inserter *w)
{
    for (long i = 0; i < w->n; i++) {
        char line[64], *text;
        int is_error = 1;
        snprintf(line, sizeof(line), "%c%d-%ld", w->tag, w->id, i);
        /* Line 0 or the current end: both are always valid. */
        text = st_call(w->mem, &is_error, st_insert("/memories/shared.md", 0, line));
        if (!text || is_error)
            failure("an insert failed", text);
        else
            w->ok++;
        free(text);
    }
}

static void *insert_thread(void *arg)
{
    insert_lines(arg);
    return NULL;
}

/* A reader: every view shows whole lines, numbered 1..n with no gap. */
typedef struct {
    mt_memory *mem;
    atomic_int *stop;
    long views;
} viewer;

static void check_view(const char *text)
{
    const char *p = strchr(text, '\n');
    long want = 1;

    while (p) {
        long num;
        char tag;
        int id, used = 0;
        long i;
        p++;
        if (*p == '[')
            break; /* the truncation note */
        if (sscanf(p, "%6ld\t%c%d-%ld%n", &num, &tag, &id, &i, &used) != 4 || num != want ||
            (p[used] != '\n' && p[used] != '\0') || (tag != 't' && tag != 'p')) {
            failure("a view showed a torn or renumbered line", p);
            return;
        }
        want++;
        p = strchr(p, '\n');
    }
}

static void *view_thread(void *arg)
{
    viewer *v = arg;

    while (!atomic_load(v->stop)) {
        int is_error = 1;
        char *text = st_call(v->mem, &is_error, st_view("/memories/shared.md"));
        if (!text || is_error)
            failure("a view failed", text);
        else
            check_view(text);
        free(text);
        v->views++;
    }
    return NULL;
}

static void test_inserts_threads_and_processes(void **state)
{
    store s;
    pthread_t th[THREADS], vt;
    inserter w[THREADS];
    viewer v;
    atomic_int stop = 0;
    pid_t pids[PROCS];
    long n = st_scaled(INSERTS), total, lines = 0;
    char *path, *data, *p;
    size_t len;
    int is_error;
    char *text;

    (void)state;
    atomic_store(&failures, 0);
    store_open(&s, MT_DURABILITY_NONE);
    text = st_call(s.mem, &is_error, st_create("/memories/shared.md", "", 0));
    assert_false(is_error);
    free(text);

    /* Processes first, so no thread exists when fork() copies the process. */
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            inserter pw = {NULL, 'p', i, n, 0};
            if (mt_memory_open(&pw.mem, s.root, NULL) < 0)
                _exit(3);
            insert_lines(&pw);
            mt_memory_free(pw.mem);
            _exit(pw.ok == n && atomic_load(&failures) == 0 ? 0 : 1);
        }
    }
    v.mem = s.mem;
    v.stop = &stop;
    v.views = 0;
    assert_int_equal(pthread_create(&vt, NULL, view_thread, &v), 0);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (inserter){s.mem, 't', i, n, 0};
        assert_int_equal(pthread_create(&th[i], NULL, insert_thread, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < PROCS; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("writer process %d failed (status %d)", i, status);
    }
    atomic_store(&stop, 1);
    pthread_join(vt, NULL);
    assert_int_equal(atomic_load(&failures), 0);

    /* Every line exactly once: count them, and find each one. */
    total = (THREADS + PROCS) * n;
    path = st_join(s.root, "shared.md");
    data = st_read(path, &len);
    assert_non_null(data);
    for (p = data; *p; p++)
        lines += *p == '\n';
    if (lines != total)
        fail_msg("%ld lines after %ld inserts: updates were lost or doubled", lines, total);
    for (int k = 0; k < THREADS + PROCS; k++) {
        for (long i = 0; i < n; i++) {
            char want[64];
            snprintf(want, sizeof(want), "\n%c%d-%ld\n", k < THREADS ? 't' : 'p',
                     k < THREADS ? k : k - THREADS, i);
            /* The leading newline: the file's first line has none before it. */
            if (!strstr(data, want) && strncmp(data, want + 1, strlen(want + 1)) != 0)
                fail_msg("line %s was lost", want + 1);
        }
    }
    print_message("%ld inserts by %d threads and %d processes, %ld views meanwhile\n", total,
                  THREADS, PROCS, v.views);
    free(data);
    free(path);
    store_close(&s);
}

/* ---- compare-and-swap counter: successes add up ---- */

typedef struct {
    mt_memory *mem;
    long n;
    long ok;
} counter;

/* Read count=N, replace it with count=N+1; a concurrent writer makes the
 * replacement miss, and then we read again. Every success must count. */
static void count_up(counter *c)
{
    for (long done = 0, tries = 0; done < c->n && tries < c->n * 200; tries++) {
        int is_error = 1;
        char *text = st_call(c->mem, &is_error, st_view("/memories/counter.md")), *at;
        char from[32], to[32];
        long v;

        if (!text || is_error || !(at = strstr(text, "count=")) ||
            sscanf(at, "count=%ld", &v) != 1) {
            failure("cannot read the counter", text);
            free(text);
            return;
        }
        free(text);
        snprintf(from, sizeof(from), "count=%ld\n", v);
        snprintf(to, sizeof(to), "count=%ld\n", v + 1);
        text = st_call(c->mem, &is_error, st_replace("/memories/counter.md", from, to));
        if (text && !is_error) {
            c->ok++;
            done++;
        } else if (!text || !strstr(text, "did not appear verbatim")) {
            failure("a replacement failed unexpectedly", text);
        }
        free(text);
    }
}

static void *count_thread(void *arg)
{
    count_up(arg);
    return NULL;
}

static void test_counter_no_lost_update(void **state)
{
    store s;
    pthread_t th[THREADS];
    counter c[THREADS];
    pid_t pids[PROCS];
    int fds[PROCS][2];
    long n = st_scaled(COUNTS), ok = 0, final;
    char *text, *at;
    int is_error;

    (void)state;
    atomic_store(&failures, 0);
    store_open(&s, MT_DURABILITY_NONE);
    text = st_call(s.mem, &is_error, st_create("/memories/counter.md", "count=0\n", 8));
    assert_false(is_error);
    free(text);
    for (int i = 0; i < PROCS; i++) {
        assert_int_equal(pipe(fds[i]), 0);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            counter pc = {NULL, n, 0};
            close(fds[i][0]);
            if (mt_memory_open(&pc.mem, s.root, NULL) < 0)
                _exit(3);
            count_up(&pc);
            mt_memory_free(pc.mem);
            if (write(fds[i][1], &pc.ok, sizeof(pc.ok)) != sizeof(pc.ok))
                _exit(4);
            _exit(atomic_load(&failures) == 0 ? 0 : 1);
        }
        close(fds[i][1]);
    }
    for (int i = 0; i < THREADS; i++) {
        c[i] = (counter){s.mem, n, 0};
        assert_int_equal(pthread_create(&th[i], NULL, count_thread, &c[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += c[i].ok;
    }
    for (int i = 0; i < PROCS; i++) {
        long got = 0;
        int status;
        assert_int_equal(read(fds[i][0], &got, sizeof(got)), (ssize_t)sizeof(got));
        close(fds[i][0]);
        ok += got;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(atomic_load(&failures), 0);
    text = st_call(s.mem, &is_error, st_view("/memories/counter.md"));
    assert_false(is_error);
    at = strstr(text, "count=");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "count=%ld", &final), 1);
    free(text);
    print_message("counter at %ld after %ld successful replacements\n", final, ok);
    if (final != ok)
        fail_msg("the counter reads %ld after %ld successful increments: an update was lost", final,
                 ok);
    assert_int_equal(ok, (THREADS + PROCS) * n);
    store_close(&s);
}

/* ---- duels: racing creates and renames onto one name ---- */

typedef struct {
    mt_memory *mem;
    pthread_barrier_t *go;
    int id;
    long rounds;
    int rename_mode;
    long *wins; /* [round]: how many won */
    int *winner;
} duelist;

static void *duel_thread(void *arg)
{
    duelist *d = arg;

    for (long r = 0; r < d->rounds; r++) {
        char dest[64], src[64], body[64], *text;
        int is_error = 1;
        snprintf(dest, sizeof(dest), "/memories/duel/%ld/target.md", r);
        snprintf(body, sizeof(body), "written by %d\n", d->id);
        if (d->rename_mode)
            snprintf(src, sizeof(src), "/memories/src/%ld-%d.md", r, d->id);
        pthread_barrier_wait(d->go);
        text = st_call(d->mem, &is_error,
                       d->rename_mode ? st_rename(src, dest) : st_create(dest, body, strlen(body)));
        if (!text)
            failure("out of memory in a duel", NULL);
        else if (!is_error) {
            __atomic_fetch_add(&d->wins[r], 1, __ATOMIC_SEQ_CST);
            d->winner[r] = d->id;
        } else if (!strstr(text, "already exists")) {
            failure("a losing duelist got an unexpected error", text);
        }
        free(text);
    }
    return NULL;
}

static void duel(int rename_mode)
{
    store s;
    pthread_t th[THREADS];
    duelist d[THREADS];
    pthread_barrier_t go;
    long rounds = st_scaled(DUELS);
    long *wins = calloc((size_t)rounds, sizeof(long));
    int *winner = calloc((size_t)rounds, sizeof(int));

    assert_non_null(wins);
    assert_non_null(winner);
    atomic_store(&failures, 0);
    store_open(&s, MT_DURABILITY_NONE);
    if (rename_mode) {
        for (long r = 0; r < rounds; r++)
            for (int i = 0; i < THREADS; i++) {
                char p[64], body[64], *text;
                int is_error;
                snprintf(p, sizeof(p), "/memories/src/%ld-%d.md", r, i);
                snprintf(body, sizeof(body), "written by %d\n", i);
                text = st_call(s.mem, &is_error, st_create(p, body, strlen(body)));
                assert_false(is_error);
                free(text);
            }
    }
    pthread_barrier_init(&go, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        d[i] = (duelist){s.mem, &go, i, rounds, rename_mode, wins, winner};
        assert_int_equal(pthread_create(&th[i], NULL, duel_thread, &d[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(atomic_load(&failures), 0);
    for (long r = 0; r < rounds; r++) {
        char rel[64], want[64], *p;
        if (wins[r] != 1)
            fail_msg("round %ld: %ld duelists won", r, wins[r]);
        snprintf(rel, sizeof(rel), "duel/%ld/target.md", r);
        snprintf(want, sizeof(want), "written by %d\n", winner[r]);
        p = st_join(s.root, rel);
        if (!st_equals(p, want, strlen(want)))
            fail_msg("round %ld: the file is not the winner's", r);
        free(p);
        /* A losing rename left its source where it was. */
        for (int i = 0; rename_mode && i < THREADS; i++) {
            char src[64], *sp;
            snprintf(src, sizeof(src), "src/%ld-%d.md", r, i);
            sp = st_join(s.root, src);
            snprintf(want, sizeof(want), "written by %d\n", i);
            if ((i == winner[r]) == st_equals(sp, want, strlen(want)))
                fail_msg("round %ld: source %d is %s", r, i,
                         i == winner[r] ? "still there after winning" : "gone after losing");
            free(sp);
        }
    }
    free(wins);
    free(winner);
    store_close(&s);
}

static void test_racing_creates(void **state)
{
    (void)state;
    duel(0);
}

static void test_racing_renames(void **state)
{
    (void)state;
    duel(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inserts_threads_and_processes),
        cmocka_unit_test(test_counter_no_lost_update),
        cmocka_unit_test(test_racing_creates),
        cmocka_unit_test(test_racing_renames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

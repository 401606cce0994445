/*
 * Rekeys while the store is in use, on the encrypted file and SQLite stores:
 *
 * - threads of one handle create, edit and view memories while another
 *   thread of the same handle rekeys it again and again (run under TSan
 *   and ASan: the keys a rekey swaps are never read unguarded nor freed
 *   under a thread still using them), and nothing written is lost;
 * - two processes rekey the same store to the same key at once while a
 *   third writes with the new key, reading the old (SECURITY.md: "two
 *   rekeys at once to the same key are safe"): both succeed, and after them
 *   the new key alone reads every memory and every version.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "core/memory.h"
#include "store_openers.h"

#define WORKERS 3
#define CREATES 24 /* files each worker makes, at most */
#define REKEYS  4

typedef struct {
    const char *name; /* "fs-crypt" or "sqlite-crypt" */
    char dir[256];
    char key[3][300];
} scratch;

static void scratch_init(scratch *s, const char *name)
{
    size_t j;

    s->name = name;
    mt_test_scratch_make(s->dir, sizeof(s->dir), "rekeyc");
    for (j = 0; j < 3; j++) {
        snprintf(s->key[j], sizeof(s->key[j]), "%s/k%zu", s->dir, j + 1);
        assert_int_equal(mt_crypt_key_generate_file(s->key[j]), 0);
    }
}

static void scratch_free(scratch *s)
{
    assert_int_equal(mt_test_scratch_remove(s->dir), 0);
}

/* The store with key k, also reading with key old (-1: none). 0 or an error. */
static int open_keys(mt_memory **out, const scratch *s, int k, int old)
{
    mt_crypt_key *key = NULL, *prev = NULL;
    char path[600];
    mt_store *st;
    int rc;

    *out = NULL;
    if ((rc = mt_crypt_key_load_file(&key, s->key[k])) < 0)
        return rc;
    if (old >= 0 && ((rc = mt_crypt_key_load_file(&prev, s->key[old])) < 0 ||
                     (rc = mt_crypt_key_accept(key, prev)) < 0))
        goto done;
    if (strcmp(s->name, "fs-crypt") == 0) {
        snprintf(path, sizeof(path), "%s/fs", s->dir);
        rc = mt_memory_open_encrypted(out, path, NULL, key);
    } else {
        snprintf(path, sizeof(path), "%s/store.sqlite", s->dir);
        if ((rc = mt_store_sqlite_open(&st, path, NULL, 0)) == 0 &&
            (rc = mt_store_crypt_wrap(&st, st, key)) == 0)
            rc = mt_memory_new(out, st, NULL);
    }
done:
    mt_crypt_key_free(prev);
    mt_crypt_key_free(key);
    return rc;
}

static mt_memory *open_ok(const scratch *s, int k, int old)
{
    mt_memory *m = NULL;

    if (open_keys(&m, s, k, old) < 0)
        fail_msg("open %s: %s", s->name, mt_error_last()->message);
    return m;
}

/* A call; 0, or -1 with why in err (no cmocka in threads or children). */
static int call(mt_memory *m, char *err, size_t errlen, const char *json)
{
    int failed = 0;
    char *t = mt_test_call(m, &failed, json);

    if (failed)
        snprintf(err, errlen, "%s: %s", json, t ? t : "(no text)");
    free(t);
    return failed ? -1 : 0;
}

/* The memory at path holds want; 0, or -1 with why in err. */
static int holds(mt_memory *m, char *err, size_t errlen, const char *path, const char *want)
{
    char *data = NULL;
    size_t len = 0;
    int rc = 0;

    if (mt_memory_read(&data, &len, m, path) < 0) {
        snprintf(err, errlen, "read %s: %s", path, mt_error_last()->message);
        return -1;
    }
    if (len != strlen(want) || memcmp(data, want, len) != 0) {
        snprintf(err, errlen, "%s holds \"%.*s\", not \"%s\"", path, (int)len, data, want);
        rc = -1;
    }
    free(data);
    return rc;
}

/* Worker w's round i: a new memory, an edit of its first, both read back. */
static int round_of(mt_memory *m, char *err, size_t errlen, int w, unsigned i)
{
    char json[300], path[64], want[32];

    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories/w%d/n%u.md\",\"file_text\":\"v%u\\n\"}",
             w, i, i);
    if (call(m, err, errlen, json) < 0)
        return -1;
    if (i > 0) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/w%d/n0.md\",\"old_str\":\"v%u"
                 "\",\"new_str\":\"v%u\"}",
                 w, i - 1, i);
        if (call(m, err, errlen, json) < 0)
            return -1;
    }
    snprintf(path, sizeof(path), "/memories/w%d/n%u.md", w, i);
    snprintf(want, sizeof(want), "v%u\n", i);
    if (holds(m, err, errlen, path, want) < 0)
        return -1;
    snprintf(path, sizeof(path), "/memories/w%d/n0.md", w);
    return holds(m, err, errlen, path, want);
}

/* What worker w left after `rounds` rounds reads back. */
static void check_rounds(mt_memory *m, int w, unsigned rounds)
{
    char err[600], path[64], want[32];
    unsigned i;

    assert_true(rounds > 0);
    for (i = 1; i < rounds; i++) {
        snprintf(path, sizeof(path), "/memories/w%d/n%u.md", w, i);
        snprintf(want, sizeof(want), "v%u\n", i);
        if (holds(m, err, sizeof(err), path, want) < 0)
            fail_msg("%s", err);
    }
    snprintf(path, sizeof(path), "/memories/w%d/n0.md", w);
    snprintf(want, sizeof(want), "v%u\n", rounds - 1);
    if (holds(m, err, sizeof(err), path, want) < 0)
        fail_msg("%s", err);
}

/* Every version with content reads; how many there are. */
static size_t check_versions(mt_memory *m)
{
    mt_version *v = NULL;
    mt_log_query q;
    size_t n = 0, i, read = 0;

    memset(&q, 0, sizeof(q));
    q.limit = 100000;
    if (mt_memory_log(&v, &n, m, &q) < 0)
        fail_msg("log: %s", mt_error_last()->message);
    for (i = 0; i < n; i++) {
        char *data = NULL;
        size_t len = 0;
        if (v[i].redacted || !v[i].content_sha256[0])
            continue;
        if (mt_memory_version_content(&data, &len, m, v[i].id) < 0)
            fail_msg("version %lld of %s: %s", (long long)v[i].id, v[i].path ? v[i].path : "-",
                     mt_error_last()->message);
        free(data);
        read++;
    }
    mt_versions_free(v, n);
    return read;
}

/* Everything under key k alone: status names one key, and it opens all. */
static void assert_all_under(const scratch *s, int k, int workers, const unsigned *rounds)
{
    mt_crypt_status st;
    mt_memory *m = open_ok(s, k, -1);
    mt_crypt_key *key = mt_test_key_load(s->key[k]);
    char id[17];
    int w;

    if (mt_memory_crypt_status(&st, m) < 0)
        fail_msg("status: %s", mt_error_last()->message);
    mt_crypt_key_id(id, key);
    assert_int_equal(st.count, 1);
    assert_string_equal(st.keys[0].key_id, id);
    assert_int_equal(st.plain + st.versions_plain, 0);
    mt_crypt_status_dispose(&st);
    for (w = 0; w < workers; w++)
        check_rounds(m, w, rounds[w]);
    assert_true(check_versions(m) > 0);
    mt_crypt_key_free(key);
    mt_memory_free(m);
}

typedef struct {
    mt_memory *m;
    int w;
    atomic_int *stop, *started;
    unsigned rounds;
    unsigned overlapped; /* rounds that ended while the rekeys ran */
    char err[600];
} worker;

static void *work(void *p)
{
    worker *w = p;
    unsigned views = 0;

    /* Writes while the rekeys run (a few at least), then views until they end. */
    while (w->rounds < CREATES && (w->rounds < 4 || !atomic_load(w->stop))) {
        if (round_of(w->m, w->err, sizeof(w->err), w->w, w->rounds) < 0)
            return NULL;
        w->rounds++;
        w->overlapped += atomic_load(w->started) && !atomic_load(w->stop);
    }
    while (!atomic_load(w->stop) || views < 4) {
        char path[64], want[32];
        snprintf(path, sizeof(path), "/memories/w%d/n0.md", w->w);
        snprintf(want, sizeof(want), "v%u\n", w->rounds - 1);
        if (holds(w->m, w->err, sizeof(w->err), path, want) < 0)
            return NULL;
        views++;
    }
    return NULL;
}

typedef struct {
    mt_memory *m;
    mt_crypt_key *keys[REKEYS];
    atomic_int *stop, *started;
    int done, retried;
    char err[600];
} rekeyer;

/* Each file or version a rekey has dealt with: one is under way. */
static int rekey_seen(void *payload, const mt_rekey_event *e)
{
    (void)e;
    atomic_store((atomic_int *)payload, 1);
    return 0;
}

static void *rekey_main(void *p)
{
    rekeyer *r = p;
    int i;

    /* A version its memory's writes made current after the rekey passed
     * the file stays under the key it was written with, named as a failure:
     * as SECURITY.md says, a rekey run again (the writes done) takes it. */
    for (i = 0; i < REKEYS && !r->err[0]; i++) {
        int tries;
        for (tries = 0; tries < 50; tries++) {
            mt_rekey_result res;
            int rc = mt_memory_rekey(&res, r->m, r->keys[i], rekey_seen, r->started), others = 0;
            size_t f;
            for (f = 0; f < res.nfailures; f++)
                if (res.failures[f].kind != MT_REKEY_VERSION ||
                    !strstr(res.failures[f].message, "is its memory's current content"))
                    others++;
            if (others)
                snprintf(r->err, sizeof(r->err), "rekey %d: %s", i + 1, res.failures[0].message);
            else if (rc < 0 && !res.nfailures)
                snprintf(r->err, sizeof(r->err), "rekey %d: %s", i + 1, mt_error_last()->message);
            mt_rekey_result_dispose(&res);
            if (rc == 0) {
                r->done++;
                break;
            }
            if (r->err[0])
                break;
            r->retried++;
        }
    }
    atomic_store(r->stop, 1);
    return NULL;
}

static void threads_one_handle(const char *name)
{
    static const int order[REKEYS] = {1, 2, 0, 1}; /* k2, k3, k1, k2 */
    scratch s;
    mt_memory *m;
    worker w[WORKERS];
    rekeyer r;
    pthread_t tw[WORKERS], tr;
    atomic_int stop, started;
    unsigned rounds[WORKERS], overlapped = 0;
    mt_rekey_result res;
    int i;

    scratch_init(&s, name);
    m = open_ok(&s, 0, -1);
    atomic_init(&stop, 0);
    atomic_init(&started, 0);
    memset(&r, 0, sizeof(r));
    r.m = m;
    r.stop = &stop;
    r.started = &started;
    for (i = 0; i < REKEYS; i++)
        r.keys[i] = mt_test_key_load(s.key[order[i]]);
    for (i = 0; i < WORKERS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].m = m;
        w[i].w = i;
        w[i].stop = &stop;
        w[i].started = &started;
        /* The first round before the rekeys start: a store with files. */
        if (round_of(m, w[i].err, sizeof(w[i].err), i, 0) < 0)
            fail_msg("%s", w[i].err);
        w[i].rounds = 1;
    }
    for (i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_create(&tw[i], NULL, work, &w[i]), 0);
    assert_int_equal(pthread_create(&tr, NULL, rekey_main, &r), 0);
    assert_int_equal(pthread_join(tr, NULL), 0);
    for (i = 0; i < WORKERS; i++)
        assert_int_equal(pthread_join(tw[i], NULL), 0);
    for (i = 0; i < WORKERS; i++)
        if (w[i].err[0])
            fail_msg("%s, worker %d: %s", name, i, w[i].err);
    if (r.err[0])
        fail_msg("%s: %s", name, r.err);
    assert_int_equal(r.done, REKEYS);
    /* Some write ran while a rekey did: otherwise nothing here was concurrent. */
    for (i = 0; i < WORKERS; i++)
        overlapped += w[i].overlapped;
    if (overlapped == 0)
        fail_msg("%s: no worker's round ended while the rekeys ran", name);
    /* The handle still reads all it wrote, every version too. */
    for (i = 0; i < WORKERS; i++) {
        rounds[i] = w[i].rounds;
        check_rounds(m, i, rounds[i]);
    }
    assert_true(check_versions(m) > 0);
    /* What was written under the key before the last rekey's is taken by
     * one more; then the last key alone reads everything. */
    if (mt_memory_rekey(&res, m, r.keys[REKEYS - 1], NULL, NULL) < 0)
        fail_msg("%s, last rekey: %s", name, mt_error_last()->message);
    mt_rekey_result_dispose(&res);
    for (i = 0; i < REKEYS; i++)
        mt_crypt_key_free(r.keys[i]);
    mt_memory_free(m);
    assert_all_under(&s, order[REKEYS - 1], WORKERS, rounds);
    scratch_free(&s);
}

static void test_threads_one_handle(void **state)
{
    (void)state;
    threads_one_handle("fs-crypt");
    threads_one_handle("sqlite-crypt");
}

/* A child: rekeys the store with k1 to k2 (rekey), or writes with k2 reading k1,
 * once go releases it. */
static int child(const scratch *s, int rekey, unsigned *rounds, mt_test_barrier *go)
{
    char err[600] = "";
    mt_memory *m = NULL;
    int rc = 0;

    if (open_keys(&m, s, rekey ? 0 : 1, rekey ? -1 : 0) < 0) {
        fprintf(stderr, "open: %s\n", mt_error_last()->message);
        return 1;
    }
    /* The three start together, each with its store open. */
    if (mt_test_barrier_wait(go) < 0) {
        fprintf(stderr, "the start barrier failed\n");
        mt_memory_free(m);
        return 1;
    }
    if (rekey) {
        mt_crypt_key *k2 = NULL;
        mt_rekey_result res;
        if (mt_crypt_key_load_file(&k2, s->key[1]) < 0 ||
            mt_memory_rekey(&res, m, k2, NULL, NULL) < 0) {
            fprintf(stderr, "rekey: %s\n", mt_error_last()->message);
            rc = 1;
        } else {
            mt_rekey_result_dispose(&res);
        }
        mt_crypt_key_free(k2);
    } else {
        unsigned i;
        for (i = 1; i < *rounds && rc == 0; i++)
            if (round_of(m, err, sizeof(err), 1, i) < 0) {
                fprintf(stderr, "writer: %s\n", err);
                rc = 1;
            }
    }
    mt_memory_free(m);
    return rc;
}

static void two_processes(const char *name)
{
    scratch s;
    mt_memory *m;
    unsigned rounds[2] = {CREATES, CREATES};
    pid_t pids[3];
    mt_test_barrier go;
    char err[600];
    unsigned i;
    int k, status;

    scratch_init(&s, name);
    m = open_ok(&s, 0, -1);
    for (i = 0; i < CREATES; i++)
        if (round_of(m, err, sizeof(err), 0, i) < 0)
            fail_msg("%s", err);
    if (round_of(m, err, sizeof(err), 1, 0) < 0)
        fail_msg("%s", err);
    mt_memory_free(m);
    mt_test_barrier_make(&go);
    for (k = 0; k < 3; k++) {
        pids[k] = mt_test_fork(pids, (size_t)k);
        if (pids[k] == 0)
            _exit(child(&s, k < 2, &rounds[1], &go));
    }
    mt_test_barrier_release(&go);
    for (k = 0; k < 3; k++) {
        assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("%s: %s exited with status %d", name, k < 2 ? "a rekey" : "the writer",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    /* Both rekeys done and the writer's writes under k2: k2 alone reads all. */
    assert_all_under(&s, 1, 2, rounds);
    scratch_free(&s);
}

static void test_two_processes(void **state)
{
    (void)state;
    two_processes("fs-crypt");
    two_processes("sqlite-crypt");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_one_handle),
        cmocka_unit_test(test_two_processes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

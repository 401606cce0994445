/* mt_memory_search on the file store: ranking, an index that is never stale,
 * a search killed while indexing, tenants, and searches racing writers. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

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

static void test_killed_while_indexing(void **state)
{
    mt_options o;
    mt_test_store ts;
    mt_search_hit *h;
    size_t n;
    pid_t pid;
    int status;

    (void)state;
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.history = 0;
    mt_test_store_init(&ts, &o);
    fill(ts.mem, 600);
    /* A child starts the first search (which indexes everything) and is
     * killed in the middle of it, at a moment no one chooses. */
    for (int round = 0; round < 5; round++) {
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            mt_memory *mem;
            mt_search_hit *ch;
            size_t cn;
            mt_search_options so = {NULL, 5};

            if (mt_memory_open(&mem, ts.root, &o) < 0)
                _exit(3);
            mt_memory_search(&ch, &cn, mem, "topic3", &so);
            _exit(0);
        }
        usleep(2000 + 7000 * round);
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &status, 0), pid);
    }
    /* Whatever was committed stays, the rest is indexed now, and the
     * answer is the whole one. */
    n = search(&h, ts.mem, "topic3", 100);
    assert_int_equal(n, 86); /* i % 7 == 3 for 86 of 0..599 */
    mt_search_hits_free(h, n);
    n = search(&h, ts.mem, "w599", 10);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].path, "/memories/d9/m599.md");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking),          cmocka_unit_test(test_killed_while_indexing),
        cmocka_unit_test(test_outside_changes),  cmocka_unit_test(test_big_file_no_snippet),
        cmocka_unit_test(test_tenants),          cmocka_unit_test(test_race_with_writers),
        cmocka_unit_test(test_fresh_store_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

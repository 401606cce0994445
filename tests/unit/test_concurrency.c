/* SPEC section 5: concurrent edits from processes and threads all land. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define WORKERS 8
#define EDITS   25

typedef struct {
    mt_memory *mem;
    int id;
    int failures;
} worker;

static void insert_many(mt_memory *mem, int id, int *failures)
{
    char json[256];
    int i, err;

    for (i = 0; i < EDITS; i++) {
        char *text;
        snprintf(json, sizeof(json),
                 "{\"command\":\"insert\",\"path\":\"/memories/shared.md\",\"insert_line\":%d,"
                 "\"insert_text\":\"w%d-e%d\"}",
                 i % 2, id, i);
        text = mt_test_call(mem, &err, json);
        *failures += err;
        free(text);
    }
}

/* Every expected line exactly once, and nothing else but the first line. */
static void check_lines(const mt_test_store *ts)
{
    char *file = mt_test_read(ts, "shared.md", NULL), want[64], *data;
    int id, i, lines = 0;
    const char *p;

    assert_non_null(file);
    for (p = file; *p; p++)
        lines += *p == '\n';
    /* A newline in front, so every line, the first too, reads "\n...\n". */
    assert_true(asprintf(&data, "\n%s", file) > 0);
    free(file);
    assert_int_equal(lines, 1 + WORKERS * EDITS);
    for (id = 0; id < WORKERS; id++) {
        for (i = 0; i < EDITS; i++) {
            snprintf(want, sizeof(want), "\nw%d-e%d\n", id, i);
            p = strstr(data, want);
            assert_non_null(p);
            assert_null(strstr(p + 1, want));
        }
    }
    free(data);
}

static void test_processes(void **state)
{
    mt_test_store ts;
    pid_t pids[WORKERS];
    int i, status;
    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_test_expect(
        ts.mem,
        "{\"command\":\"create\",\"path\":\"/memories/shared.md\",\"file_text\":\"head\\n\"}", 0,
        "File created successfully at: /memories/shared.md");
    for (i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            /* Each process its own handle, as separate programs would have. */
            mt_memory *mem;
            int failures = 0;
            if (mt_memory_open(&mem, ts.root, NULL) < 0)
                _exit(100);
            insert_many(mem, i, &failures);
            mt_memory_free(mem);
            _exit(failures);
        }
    }
    for (i = 0; i < WORKERS; i++) {
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    check_lines(&ts);
    mt_test_store_free(&ts);
}

static void *thread_main(void *arg)
{
    worker *w = arg;
    insert_many(w->mem, w->id, &w->failures);
    return NULL;
}

static void test_threads_one_handle(void **state)
{
    mt_test_store ts;
    pthread_t threads[WORKERS];
    worker w[WORKERS];
    int i;
    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_test_expect(
        ts.mem,
        "{\"command\":\"create\",\"path\":\"/memories/shared.md\",\"file_text\":\"head\\n\"}", 0,
        "File created successfully at: /memories/shared.md");
    for (i = 0; i < WORKERS; i++) {
        w[i].mem = ts.mem;
        w[i].id = i;
        w[i].failures = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, thread_main, &w[i]), 0);
    }
    for (i = 0; i < WORKERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(w[i].failures, 0);
    }
    check_lines(&ts);
    mt_test_store_free(&ts);
}

static void *replace_main(void *arg)
{
    worker *w = arg;
    char json[256];
    int i, err;

    for (i = 0; i < EDITS; i++) {
        char *text;
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/slots\",\"old_str\":"
                 "\"[todo %d.%d]\",\"new_str\":\"[done %d.%d]\"}",
                 w->id, i, w->id, i);
        text = mt_test_call(w->mem, &err, json);
        w->failures += err;
        free(text);
    }
    return NULL;
}

static void test_concurrent_replaces(void **state)
{
    mt_test_store ts;
    pthread_t threads[WORKERS];
    worker w[WORKERS];
    char *json, *data, want[32];
    size_t cap = 64 * WORKERS * EDITS, len;
    int i, j, err;
    (void)state;
    mt_test_store_init(&ts, NULL);
    /* Separate handles, like separate processes, but threads for speed. */
    json = malloc(cap);
    len = (size_t)snprintf(json, cap,
                           "{\"command\":\"create\",\"path\":\"/memories/slots\",\"file_text\":\"");
    for (i = 0; i < WORKERS; i++)
        for (j = 0; j < EDITS; j++)
            len += (size_t)snprintf(json + len, cap - len, "[todo %d.%d]\\n", i, j);
    snprintf(json + len, cap - len, "\"}");
    free(mt_test_call(ts.mem, &err, json));
    assert_int_equal(err, 0);
    free(json);
    for (i = 0; i < WORKERS; i++) {
        assert_int_equal(mt_memory_open(&w[i].mem, ts.root, NULL), 0);
        w[i].id = i;
        w[i].failures = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, replace_main, &w[i]), 0);
    }
    for (i = 0; i < WORKERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(w[i].failures, 0);
        mt_memory_free(w[i].mem);
    }
    data = mt_test_read(&ts, "slots", NULL);
    assert_null(strstr(data, "todo"));
    for (i = 0; i < WORKERS; i++)
        for (j = 0; j < EDITS; j++) {
            snprintf(want, sizeof(want), "[done %d.%d]\n", i, j);
            assert_non_null(strstr(data, want));
        }
    free(data);
    mt_test_store_free(&ts);
}

static void *create_main(void *arg)
{
    worker *w = arg;
    int err;
    free(mt_test_call(w->mem, &err,
                      "{\"command\":\"create\",\"path\":\"/memories/once\",\"file_text\":\"x\"}"));
    w->failures = err;
    return NULL;
}

static void test_one_create_wins(void **state)
{
    mt_test_store ts;
    pthread_t threads[WORKERS];
    worker w[WORKERS];
    int i, wins = 0;
    (void)state;
    mt_test_store_init(&ts, NULL);
    for (i = 0; i < WORKERS; i++) {
        w[i].mem = ts.mem;
        assert_int_equal(pthread_create(&threads[i], NULL, create_main, &w[i]), 0);
    }
    for (i = 0; i < WORKERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        wins += !w[i].failures;
    }
    assert_int_equal(wins, 1);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_threads_one_handle),
        cmocka_unit_test(test_concurrent_replaces),
        cmocka_unit_test(test_one_create_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

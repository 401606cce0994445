/* The audit log: one whole JSON line per call, from any number of processes. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

static json_t **read_lines(const char *path, size_t *count)
{
    FILE *f = fopen(path, "r");
    json_t **lines = NULL;
    char *line = NULL;
    size_t cap = 0, n = 0;
    ssize_t len;

    assert_non_null(f);
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t err;
        json_t *j;
        assert_int_equal(line[len - 1], '\n');
        if (!(j = json_loadb(line, (size_t)len - 1, 0, &err)))
            fail_msg("line %zu is not JSON (%s): %s", n + 1, err.text, line);
        lines = realloc(lines, (n + 1) * sizeof(*lines));
        assert_non_null(lines);
        lines[n++] = j;
    }
    free(line);
    fclose(f);
    *count = n;
    return lines;
}

static void free_lines(json_t **lines, size_t n)
{
    while (n--)
        json_decref(lines[n]);
    free(lines);
}

static void test_fields(void **state)
{
    mt_test_store ts;
    mt_options o;
    char log[512];
    json_t **l;
    size_t n;
    int is_error;
    (void)state;

    snprintf(log, sizeof(log), "/tmp/memtool-audit-%ld.log", (long)getpid());
    unlink(log);
    mt_options_init(&o);
    o.audit = log;
    o.actor = "tester";
    mt_test_store_init(&ts, &o);
    free(mt_test_call(
        ts.mem, &is_error,
        "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"hello\"}"));
    free(mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}"));
    free(mt_test_call(ts.mem, &is_error,
                      "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":"
                      "\"/memories/\\u0001\\\"\\n\"}"));
    free(mt_test_call(ts.mem, &is_error, "{\"path\":\"/memories/x\"}"));
    l = read_lines(log, &n);
    assert_int_equal(n, 4);
    assert_string_equal(json_string_value(json_object_get(l[0], "actor")), "tester");
    assert_string_equal(json_string_value(json_object_get(l[0], "command")), "create");
    assert_string_equal(json_string_value(json_object_get(l[0], "path")), "/memories/a.md");
    assert_int_equal(json_integer_value(json_object_get(l[0], "bytes_written")), 5);
    assert_true(json_is_false(json_object_get(l[0], "is_error")));
    assert_string_equal(json_string_value(json_object_get(l[1], "command")), "view");
    assert_true(json_integer_value(json_object_get(l[1], "bytes_read")) > 5);
    assert_string_equal(json_string_value(json_object_get(l[2], "new_path")), "/memories/\x01\"\n");
    assert_true(json_is_true(json_object_get(l[2], "is_error")));
    assert_true(json_is_null(json_object_get(l[3], "command")));
    assert_true(json_is_true(json_object_get(l[3], "is_error")));
    assert_non_null(json_object_get(l[3], "time"));
    free_lines(l, n);
    unlink(log);
    mt_test_store_free(&ts);
}

/* A write the secrets guard refuses: the line says what it found, by kind
 * and line, and never holds the secret; other lines have no "guard". */
static void test_guard_refusal(void **state)
{
    static const char token[] = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";
    mt_test_store ts;
    mt_options o;
    char log[512], json[256], *text;
    json_t **l;
    size_t n, i;
    int is_error;
    (void)state;

    snprintf(log, sizeof(log), "/tmp/memtool-audit-guard-%ld.log", (long)getpid());
    unlink(log);
    mt_options_init(&o);
    o.audit = log;
    mt_test_store_init(&ts, &o);
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories/k.md\",\"file_text\":\"note\\n%s\\n\"}",
             token);
    free(mt_test_call(ts.mem, &is_error, json));
    assert_true(is_error);
    free(mt_test_call(ts.mem, &is_error,
                      "{\"command\":\"create\",\"path\":\"/memories/ok.md\",\"file_text\":\"x\"}"));
    assert_false(is_error);
    l = read_lines(log, &n);
    assert_int_equal(n, 2);
    assert_string_equal(json_string_value(json_object_get(l[0], "guard")),
                        "a secret (github-token, line 2)");
    assert_true(json_is_true(json_object_get(l[0], "is_error")));
    assert_null(json_object_get(l[1], "guard"));
    for (i = 0; i < n; i++) {
        text = json_dumps(l[i], 0);
        assert_null(strstr(text, "aB3dE5gH7jK9"));
        free(text);
    }
    free_lines(l, n);
    unlink(log);
    mt_test_store_free(&ts);
}

/* A path longer than the 4,096 bytes a field keeps, with a 2, 3 or 4-byte
 * character across the limit: the line is still JSON (valid UTF-8), the
 * path is cut before that character, and path_bytes gives its whole length. */
static void test_cut_between_characters(void **state)
{
    static const char *const chars[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
    enum { LIMIT = 4096 };
    mt_test_store ts;
    mt_options o;
    char log[512], path[LIMIT + 16], json[LIMIT + 128];
    json_t **l;
    size_t n, i = 0, calls = 0;
    int is_error;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(log, sizeof(log), "%s/audit.log", ts.dir);
    mt_options_init(&o);
    o.audit = log;
    mt_memory_free(ts.mem);
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, &o), 0);
    /* For each character, each place it can start so the limit falls inside
     * it, then one where it ends at the limit exactly. */
    for (size_t k = 0; k < 3; k++) {
        size_t clen = strlen(chars[k]);
        for (size_t back = 1; back <= clen; back++) {
            size_t at = LIMIT - back, len = at + clen + 3;
            memcpy(path, "/memories/", 10);
            memset(path + 10, 'a', at - 10);
            memcpy(path + at, chars[k], clen);
            memcpy(path + at + clen, "bcd", 3);
            snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"%.*s\"}", (int)len,
                     path);
            free(mt_test_call(ts.mem, &is_error, json));
            assert_true(is_error); /* too long a path */
            calls++;
        }
    }
    /* Short enough: whole, and no path_bytes. */
    free(mt_test_call(ts.mem, &is_error,
                      "{\"command\":\"view\",\"path\":\"/memories/\xE2\x82\xAC\"}"));
    l = read_lines(log, &n);
    assert_int_equal(n, calls + 1);
    for (size_t k = 0; k < 3; k++) {
        size_t clen = strlen(chars[k]);
        for (size_t back = 1; back <= clen; back++, i++) {
            size_t at = LIMIT - back, want = back == clen ? LIMIT : at;
            const char *got = json_string_value(json_object_get(l[i], "path"));

            assert_non_null(got);
            assert_int_equal(json_string_length(json_object_get(l[i], "path")), want);
            assert_memory_equal(got, "/memories/", 10);
            for (size_t j = 10; j < at; j++)
                assert_int_equal(got[j], 'a');
            if (want == LIMIT)
                assert_memory_equal(got + at, chars[k], clen);
            assert_int_equal(json_integer_value(json_object_get(l[i], "path_bytes")),
                             at + clen + 3);
        }
    }
    assert_string_equal(json_string_value(json_object_get(l[i], "path")), "/memories/\xE2\x82\xAC");
    assert_null(json_object_get(l[i], "path_bytes"));
    free_lines(l, n);
    mt_test_store_free(&ts);
}

/* 6 processes x 300 calls with long paths: every line whole. */
static void test_processes_share(void **state)
{
    mt_test_store ts;
    mt_options o;
    char log[512], link[512];
    json_t **l;
    size_t n, i, per[6] = {0};
    int p, status;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(log, sizeof(log), "%s/audit.log", ts.dir);
    mt_options_init(&o);
    o.audit = log;
    for (p = 0; p < 6; p++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char actor[16], json[1024];
            mt_memory *mem;
            int k;
            snprintf(actor, sizeof(actor), "p%d", p);
            o.actor = actor;
            if (mt_memory_open(&mem, ts.root, &o) < 0)
                _exit(3);
            for (k = 0; k < 300; k++) {
                mt_result r;
                snprintf(json, sizeof(json),
                         "{\"command\":\"view\",\"path\":\"/memories/%0300d/%d\"}", k, p);
                if (mt_memory_call(&r, mem, json, strlen(json)) < 0)
                    _exit(4);
                mt_result_dispose(&r);
            }
            mt_memory_free(mem);
            _exit(0);
        }
    }
    for (p = 0; p < 6; p++) {
        assert_true(wait(&status) > 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    l = read_lines(log, &n);
    assert_int_equal(n, 1800);
    for (i = 0; i < n; i++) {
        const char *a = json_string_value(json_object_get(l[i], "actor"));
        assert_non_null(a);
        assert_true(a[0] == 'p' && a[1] >= '0' && a[1] <= '5');
        per[a[1] - '0']++;
        assert_int_equal(strlen(json_string_value(json_object_get(l[i], "path"))), 312);
    }
    for (p = 0; p < 6; p++)
        assert_int_equal(per[p], 300);
    free_lines(l, n);
    /* Never through a link. */
    mt_memory_free(ts.mem);
    snprintf(link, sizeof(link), "%s/link.log", ts.dir);
    assert_int_equal(symlink(log, link), 0);
    o.audit = link;
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, &o), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "symbolic link"));
    ts.mem = NULL;
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_guard_refusal),
        cmocka_unit_test(test_cut_between_characters),
        cmocka_unit_test(test_processes_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

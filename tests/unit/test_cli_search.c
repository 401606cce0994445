/*
 * memtool search when memory runs out after the search, while it makes its
 * output: every allocation from there on is made to fail in turn (memtool's
 * own through the linker's --wrap, jansson's through its allocator hooks),
 * and each run must exit 2 saying so, as grep and rg fail, never 1 (which
 * says nothing matched) nor print a result with hits left out.
 */
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "helpers.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_mt_memory_search(mt_search_hit **out, size_t *count, mt_memory *m, const char *query,
                            const mt_search_options *opts);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_mt_memory_search(mt_search_hit **out, size_t *count, mt_memory *m, const char *query,
                            const mt_search_options *opts);

static int armed;    /* the search is done: allocations count */
static long fail_at; /* the one to fail (0: none) */
static long allocs;  /* counted since the search */
static int failed;   /* one was made to fail */

static int fail_now(void)
{
    if (!armed || ++allocs != fail_at)
        return 0;
    failed = 1;
    return 1;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t count, size_t n)
{
    return fail_now() ? NULL : __real_calloc(count, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

static void *json_malloc(size_t n)
{
    return __wrap_malloc(n);
}

int __wrap_mt_memory_search(mt_search_hit **out, size_t *count, mt_memory *m, const char *query,
                            const mt_search_options *opts)
{
    int rc = __real_mt_memory_search(out, count, m, query, opts);

    allocs = 0;
    armed = 1;
    return rc;
}

/* The whole of a file (malloc'd, NUL-terminated). */
static char *slurp(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    char *s = __real_malloc((size_t)n + 1);

    assert_non_null(s);
    assert_int_equal(pread(fd, s, (size_t)n, 0), n);
    s[n] = '\0';
    return s;
}

typedef struct {
    int status;
    char *out, *err;
} run_result;

/* memtool search with argv, its standard output and error caught. */
static void run(run_result *r, const mt_cli *cli, int argc, char **argv, long fail)
{
    char out_path[] = "/tmp/memtool-cli-out-XXXXXX", err_path[] = "/tmp/memtool-cli-err-XXXXXX";
    int out = mkstemp(out_path), err = mkstemp(err_path), saved_out, saved_err;

    assert_true(out >= 0 && err >= 0);
    unlink(out_path);
    unlink(err_path);
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(STDOUT_FILENO);
    saved_err = dup(STDERR_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    fail_at = fail;
    failed = 0;
    optind = 0;
    r->status = mt_cmd_search(cli, argc, argv);
    armed = 0;
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    r->out = slurp(out);
    r->err = slurp(err);
    close(out);
    close(err);
}

static void each_failure(const mt_cli *cli, int argc, char **argv)
{
    run_result whole, r;
    long fail, failures = 0;

    run(&whole, cli, argc, argv, 0);
    assert_int_equal(whole.status, 0);
    assert_non_null(strstr(whole.out, "/memories/b.md"));
    for (fail = 1; fail < 10000; fail++) {
        run(&r, cli, argc, argv, fail);
        if (!failed) {
            free(r.out);
            free(r.err);
            break;
        }
        failures++;
        if (r.status == 0) {
            /* an allocation it could do without: the result is whole */
            assert_string_equal(r.out, whole.out);
        } else {
            if (r.status != 2 || !strstr(r.err, "out of memory"))
                fail_msg("%s %s: allocation %ld failed: exit %d, stderr: %s", argv[1],
                         argc > 2 ? argv[2] : "", fail, r.status, r.err);
        }
        free(r.out);
        free(r.err);
    }
    assert_true(failures > 0);
    free(whole.out);
    free(whole.err);
}

static void test_out_of_memory(void **state)
{
    mt_test_store ts;
    mt_cli cli;
    char *text[] = {"search", "needle", NULL};
    char *json[] = {"search", "needle", "--json", NULL};

    (void)state;
    json_set_alloc_funcs(json_malloc, free);
    mt_test_store_init(&ts, NULL);
    mt_test_expect(ts.mem,
                   "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a "
                   "needle\\nand a needle again\"}",
                   0, "File created successfully at: /memories/a.md");
    mt_test_expect(ts.mem,
                   "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"one "
                   "needle\"}",
                   0, "File created successfully at: /memories/b.md");
    memset(&cli, 0, sizeof(cli));
    mt_options_init(&cli.opts);
    cli.root = ts.root;
    each_failure(&cli, 2, text);
    each_failure(&cli, 3, json);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

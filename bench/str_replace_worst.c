/*
 * mt_bench_str_replace_worst [--csv] [SECONDS [CASE]]: str_replace on the inputs that make
 * naive match finding quadratic, through mt_memory_call as a tool input
 * arrives, next to two floors: one memchr pass over the file's bytes and one
 * memcmp of old_str against them, the least any answer must read; and the
 * same call with an old_str of as many bytes that matches nowhere ('z's),
 * which costs what the search does not: the input's parsing, the lock, the
 * read and the echo in the answer. CASE (1-based) runs one case. Each case
 * runs for about SECONDS (default 0.5, at least 3 calls); the median is shown.
 * Not run by ctest: it times things, and tests must not depend on the clock.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memtool.h>

#include "common.h"

#define KIB 1024

typedef struct {
    const char *name;
    const char *file_unit; /* the file: this repeated to file_len bytes */
    size_t file_len;
    const char *old_unit; /* old_str: this repeated to old_len bytes */
    size_t old_len;
    char old_last;      /* when not 0, old_str's last byte is changed to this */
    const char *expect; /* how the result starts */
} worst_case;

static const worst_case cases[] = {
    {"a*512K / a*256K, 256K+1 overlapping matches", "a", 512 * KIB, "a", 256 * KIB, 0,
     "No replacement was performed. Multiple"},
    {"a*512K / a*256K with its last byte b, none", "a", 512 * KIB, "a", 256 * KIB, 'b',
     "No replacement was performed, old_str"},
    {"ab*256K / ab*64K, a match at every even offset", "ab", 512 * KIB, "ab", 128 * KIB, 0,
     "No replacement was performed. Multiple"},
    {"ab*256K / ab*64K with its last byte a, none", "ab", 512 * KIB, "ab", 128 * KIB, 'a',
     "No replacement was performed, old_str"},
    {"a*512K / a*255 then b (memmem's short-needle path), none", "a", 512 * KIB, "a", 256, 'b',
     "No replacement was performed, old_str"},
    {"a\\n*512K / a, one match on each of 512K lines", "a\n", 1024 * KIB - 2, "a", 1, 0,
     "No replacement was performed. Multiple"},
    {"1 MiB of text / a unique line (the common case)", "the quick brown fox\n", 1024 * KIB - 64,
     "UNIQUE_TOKEN_LINE\n", 18, 0, "The memory file has been edited"},
};

static char *repeat(const char *unit, size_t n)
{
    size_t u = strlen(unit), i;
    char *s = malloc(n + 1);

    if (!s)
        bench_die("out of memory");
    for (i = 0; i < n; i++)
        s[i] = unit[i % u];
    s[n] = '\0';
    return s;
}

static char *tool_input(const char *old_str, const char *new_str)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path",
                          "/memories/f.txt", "old_str", old_str, "new_str", new_str);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    if (!text)
        bench_die("cannot build the tool input");
    return text;
}

static uint64_t call_ns(mt_memory *mem, const char *input, const char *expect)
{
    uint64_t t0 = bench_now_ns(), t;
    mt_result res;

    if (mt_memory_call(&res, mem, input, strlen(input)) < 0)
        bench_die("mt_memory_call failed");
    t = bench_now_ns() - t0;
    if (strncmp(res.text, expect, strlen(expect)) != 0)
        bench_die("unexpected result: %.200s", res.text);
    mt_result_dispose(&res);
    return t;
}

/* The floor: the bytes every answer must look at, once each. */
static uint64_t floor_ns(const char *file, size_t len, const char *old_str, size_t old_len)
{
    const void *volatile sink;
    volatile int cmp;
    uint64_t t0 = bench_now_ns();

    sink = memchr(file, '\0', len);
    cmp = memcmp(file, old_str, old_len < len ? old_len : len);
    (void)sink;
    (void)cmp;
    return bench_now_ns() - t0;
}

/* Rows for timings.csv (suite "worst", the case's number as op, its name as
 * param), in the columns the other suites write. */
static void csv_row(size_t index, const char *impl, const char *name, const bench_stats *st)
{
    printf("worst,case%zu,%s,none,\"%s\",%zu,%.3f,%.3f,%.3f,%.3f\n", index, impl, name, st->n,
           st->median_us, st->p99_us, st->mean_us, st->min_us);
}

static int csv;

/* One case: the call's median, the memchr floor's and the no-match call's. */
static void run_case(mt_memory *mem, const char *path, const worst_case *c, size_t index,
                     double seconds)
{
    char *file = repeat(c->file_unit, c->file_len), *old_str = repeat(c->old_unit, c->old_len);
    char *forth, *back = NULL, *zs = repeat("z", c->old_len), *nowhere = tool_input(zs, "x");
    bench_samples s, f, z;
    bench_stats st, fl, zl;
    uint64_t start = bench_now_ns();

    if (c->old_last)
        old_str[c->old_len - 1] = c->old_last;
    if (strcmp(c->old_unit, "UNIQUE_TOKEN_LINE\n") == 0) {
        /* Put the token in the middle; each call swaps it back and forth. */
        size_t at = c->file_len / 2;
        at -= at % strlen(c->file_unit);
        memcpy(file + at, old_str, c->old_len);
        back = tool_input("UNIQUE_TOKEN_LINE_B\n", "UNIQUE_TOKEN_LINE\n");
        forth = tool_input(old_str, "UNIQUE_TOKEN_LINE_B\n");
    } else {
        forth = tool_input(old_str, "x");
    }
    bench_write_file(path, file, c->file_len);
    bench_samples_init(&s, 64);
    bench_samples_init(&f, 64);
    bench_samples_init(&z, 64);
    while (s.n < 3 || (double)(bench_now_ns() - start) < seconds * 1e9) {
        bench_samples_add(&s, call_ns(mem, forth, c->expect));
        if (back)
            call_ns(mem, back, c->expect);
        bench_samples_add(&f, floor_ns(file, c->file_len, old_str, c->old_len));
        bench_samples_add(&z, call_ns(mem, nowhere, "No replacement was performed, old_str"));
    }
    st = bench_stats_of(&s);
    fl = bench_stats_of(&f);
    zl = bench_stats_of(&z);
    if (csv) {
        csv_row(index, "memtool", c->name, &st);
        csv_row(index, "floor", c->name, &fl);
        csv_row(index, "nomatch", c->name, &zl);
    } else {
        printf("%-58s %10.3f %10.3f %10.3f\n", c->name, st.median_us / 1000, fl.median_us / 1000,
               zl.median_us / 1000);
    }
    bench_samples_free(&s);
    bench_samples_free(&f);
    bench_samples_free(&z);
    free(zs);
    free(nowhere);
    free(forth);
    free(back);
    free(file);
    free(old_str);
}

int main(int argc, char **argv)
{
    double seconds;
    uint64_t only;
    char dir[] = "/tmp/mt-bench-worst-XXXXXX", root[64], path[96];
    mt_options opts;
    mt_memory *mem;
    size_t i;

    if (argc > 1 && strcmp(argv[1], "--csv") == 0) {
        csv = 1;
        argv++;
        argc--;
    }
    seconds = argc > 1 ? strtod(argv[1], NULL) : 0.5;
    only = argc > 2 ? bench_parse_u64(argv[2], "CASE") : 0;
    if (seconds <= 0)
        bench_die("usage: mt_bench_str_replace_worst [--csv] [SECONDS [CASE]]");
    if (!mkdtemp(dir))
        bench_die("mkdtemp failed");
    bench_fmt(root, sizeof(root), "%s/store", dir);
    bench_fmt(path, sizeof(path), "%s/f.txt", root);
    mt_options_init(&opts);
    opts.durability = MT_DURABILITY_NONE; /* the search is timed, not the disk */
    if (mt_memory_open(&mem, root, &opts) < 0)
        bench_die("cannot open the store: %s", mt_error_last()->message);

    if (!csv)
        printf("%-58s %10s %10s %10s\n", "case (medians, ms)", "call", "memchr", "no match");
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (!only || only == i + 1)
            run_case(mem, path, &cases[i], i + 1, seconds);
    mt_memory_free(mem);
    bench_remove_tree(dir);
    return 0;
}

/*
 * What the benchmark programs share: a clock, sample statistics, the CSV row
 * format every suite writes, and the fixture contents, which the Node side
 * (sdk_bench.mjs) builds byte for byte the same way so all three
 * implementations work on identical files.
 */
#ifndef MT_BENCH_COMMON_H
#define MT_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The tokens str_replace swaps back and forth: each run leaves the file as it
 * found it, so every iteration of an edit works on the same bytes. */
#define BENCH_TOKEN_A "TOKEN_AAAA"
#define BENCH_TOKEN_B "TOKEN_BBBB"

/* A "small memory file": 20 lines, 1262 bytes, TOKEN_A on line 10. */
#define BENCH_SMALL_LINES 20
/* The line insert puts text after. */
#define BENCH_INSERT_LINE 10
#define BENCH_INSERT_TEXT "inserted by the benchmark\n"

/* Nanoseconds on the monotonic clock. */
uint64_t bench_now_ns(void);

typedef struct {
    uint64_t *ns;
    size_t n, cap;
} bench_samples;

void bench_samples_init(bench_samples *s, size_t cap);
void bench_samples_add(bench_samples *s, uint64_t ns);
void bench_samples_free(bench_samples *s);

typedef struct {
    size_t n;
    double median_us, p99_us, mean_us, min_us;
} bench_stats;

/* Sorts the samples in place; nearest-rank percentiles. */
bench_stats bench_stats_of(bench_samples *s);

/*
 * One result row. Every timing suite writes the same columns, so one parser
 * reads them all:
 *   suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us
 */
#define BENCH_CSV_HEADER "suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us"
void bench_row(FILE *out, const char *suite, const char *op, const char *impl,
               const char *durability, const char *param, const bench_stats *st);

/* The small file's text (malloc'd, NUL-terminated). */
char *bench_small_text(size_t *len);

/* Write a whole file (created or truncated); dies on failure. */
void bench_write_file(const char *path, const char *data, size_t len);
/* mkdir -p; dies on failure. */
void bench_mkdirs(const char *path);
/* Make the directory, or remove everything in it: the directory itself
 * stays, so descriptors held on it (the floor's) stay valid. */
void bench_empty_dir(const char *path);
/* rm -rf of a directory's contents and the directory; missing is fine. */
void bench_remove_tree(const char *path);

/* Print to stderr and exit 1: the harness stops on the first surprise, so a
 * broken run never yields numbers. */
__attribute__((format(printf, 1, 2), noreturn)) void bench_die(const char *fmt, ...);

/* snprintf that dies instead of truncating. */
__attribute__((format(printf, 3, 4))) void bench_fmt(char *buf, size_t size, const char *fmt, ...);

/* An unsigned number from a command-line argument, or die. */
uint64_t bench_parse_u64(const char *s, const char *what);

#endif

/*
 * mt_bench_secrets: what the secrets check costs, each figure next to a floor
 * measured in the same run, in the same process.
 *
 *   mt_bench_secrets --corpus FILE --dir DIR [--iters N]
 *
 * scan     mt_secrets_scan over 1 MiB of ordinary memory text (the unit tests'
 *          false-positive corpus, repeated), against a plain pass over the
 *          same bytes: memchr for newlines and a byte sum, the least any scan
 *          must do.
 * create   a create of the small benchmark file (1262 bytes) through
 *          mt_memory_call at durability none, with --secrets reject against
 *          the same create with the check off. Each iteration deletes its
 *          file after (untimed).
 * 1 MiB    the same for a create of the 1 MiB text (max file size raised).
 *
 * Samples alternate between the two sides in blocks, so load elsewhere
 * lands on both. CSV rows (common.h) on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <memtool.h>

#include "common.h"
#include "guard/secrets.h"

#define BLOCK 20
#define MIB   (1u << 20)

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0)
        bench_die("cannot read %s", path);
    rewind(f);
    if (!(buf = malloc((size_t)n)) || fread(buf, 1, (size_t)n, f) != (size_t)n)
        bench_die("cannot read %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static volatile unsigned long sink;

static void floor_pass(const char *d, size_t len)
{
    const char *p = d, *end = d + len;
    unsigned long lines = 0, sum = 0;
    size_t i;

    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        lines++;
        p++;
    }
    for (i = 0; i < len; i++)
        sum += (unsigned char)d[i];
    sink = lines + sum;
}

static mt_memory *open_mem(const char *dir, mt_secrets_policy policy)
{
    mt_options o;
    mt_memory *m;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.history = 0;
    o.secrets = policy;
    o.max_file_size = 4 * MIB;
    if (mt_memory_open(&m, dir, &o) < 0)
        bench_die("cannot open %s: %s", dir, mt_error_last()->message);
    return m;
}

static void call(mt_memory *m, const char *json)
{
    mt_result res;

    if (mt_memory_call(&res, m, json, strlen(json)) < 0 || res.is_error)
        bench_die("%s", res.text ? res.text : mt_error_last()->message);
    mt_result_dispose(&res);
}

static void creates(const char *label, const char *dir, const char *text, size_t len, size_t iters)
{
    mt_memory *on = open_mem(dir, MT_SECRETS_REJECT), *off = open_mem(dir, MT_SECRETS_OFF);
    json_t *j = json_pack("{s:s, s:s, s:s%}", "command", "create", "path", "/memories/b.md",
                          "file_text", text, len);
    char *create = json_dumps(j, 0);
    const char *del = "{\"command\":\"delete\",\"path\":\"/memories/b.md\"}";
    bench_samples s_on, s_off;
    bench_stats st;
    size_t i, k;

    bench_samples_init(&s_on, iters);
    bench_samples_init(&s_off, iters);
    for (i = 0; i < iters; i += BLOCK) {
        size_t b = iters - i < BLOCK ? iters - i : BLOCK;
        for (k = 0; k < 2 * b; k++) {
            mt_memory *m = k < b ? on : off;
            uint64_t t0 = bench_now_ns();
            call(m, create);
            bench_samples_add(k < b ? &s_on : &s_off, bench_now_ns() - t0);
            call(m, del);
        }
    }
    st = bench_stats_of(&s_on);
    bench_row(stdout, "secrets", label, "reject", "none", "", &st);
    st = bench_stats_of(&s_off);
    bench_row(stdout, "secrets", label, "off", "none", "", &st);
    bench_samples_free(&s_on);
    bench_samples_free(&s_off);
    free(create);
    json_decref(j);
    mt_memory_free(on);
    mt_memory_free(off);
}

int main(int argc, char **argv)
{
    const char *corpus = NULL, *dir = NULL;
    size_t iters = 200, len, i, k, count;
    char *text, *big, *small;
    bench_samples s_scan, s_floor;
    bench_stats st;
    mt_secret_hit hit;

    for (i = 1; i + 1 < (size_t)argc; i += 2) {
        if (strcmp(argv[i], "--corpus") == 0)
            corpus = argv[i + 1];
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--iters") == 0)
            iters = strtoul(argv[i + 1], NULL, 10);
    }
    if (!corpus || !dir || iters == 0)
        bench_die("usage: mt_bench_secrets --corpus FILE --dir DIR [--iters N]");
    text = slurp(corpus, &len);
    if (!(big = malloc(MIB)))
        bench_die("out of memory");
    for (i = 0; i < MIB; i++)
        big[i] = text[i % len];
    /* Warm: the patterns compile once per process, not per scan. */
    if (mt_secrets_scan(&hit, 1, &count, big, MIB, NULL) < 0 || count != 0)
        bench_die("the corpus must scan clean");
    bench_samples_init(&s_scan, iters);
    bench_samples_init(&s_floor, iters);
    for (i = 0; i < iters; i += BLOCK) {
        size_t b = iters - i < BLOCK ? iters - i : BLOCK;
        for (k = 0; k < 2 * b; k++) {
            uint64_t t0 = bench_now_ns();
            if (k < b)
                mt_secrets_scan(&hit, 1, &count, big, MIB, NULL);
            else
                floor_pass(big, MIB);
            bench_samples_add(k < b ? &s_scan : &s_floor, bench_now_ns() - t0);
        }
    }
    st = bench_stats_of(&s_scan);
    bench_row(stdout, "secrets", "scan_1mib", "memtool", "", "", &st);
    st = bench_stats_of(&s_floor);
    bench_row(stdout, "secrets", "scan_1mib", "floor", "", "", &st);
    bench_samples_free(&s_scan);
    bench_samples_free(&s_floor);

    small = bench_small_text(&len);
    creates("create_small", dir, small, len, iters * 10);
    creates("create_1mib", dir, big, MIB, iters / 4 ? iters / 4 : 1);
    free(small);
    free(big);
    free(text);
    return 0;
}

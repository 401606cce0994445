/*
 * Search in an encrypted store against a plain one, in process, on the file
 * store and the SQLite store. An encrypted store keeps no index: each search
 * reads and opens every memory beneath its path, so its time grows with the
 * store; a plain store answers from its index (brought up to date by a first
 * search, not timed). N memories of 40 words (about 240 bytes) from a
 * 12-word vocabulary in 20 directories, a rare word in 1 of 100; each query
 * runs ROUNDS times on each store, taking turns; the median is shown.
 *
 *     mt_bench_crypt_search [N]
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "crypt_pair.h"

#define ROUNDS  11
#define QUERIES 4

static const char *const queries[QUERIES] = {"needleword", "cache", "\"river stone\"", "win*"};

/* Nanoseconds the search took. */
static uint64_t search(mt_memory *m, const char *q)
{
    mt_search_hit *h;
    size_t n;
    uint64_t t = bench_now_ns();

    if (mt_memory_search(&h, &n, m, q, NULL) < 0)
        bench_die("search %s: %s", q, mt_error_last()->message);
    t = bench_now_ns() - t;
    mt_search_hits_free(h, n);
    return t;
}

/* The same memories in every store: the words come from one seeded sequence. */
static mt_memory *make(const char *url, mt_crypt_key *key, uint64_t n)
{
    static const char *const words[] = {"deploy", "cache", "river", "stone", "lamp",   "quiet",
                                        "north",  "table", "green", "paper", "signal", "window"};
    unsigned seed = 7;
    mt_memory *m = bench_crypt_open(url, key);
    char text[600], json[800];
    size_t len;
    uint64_t i;
    int w;

    for (i = 0; i < n; i++) {
        for (w = 0, len = 0; w < 40; w++) {
            seed = seed * 1103515245u + 12345u;
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", w ? " " : "",
                                    words[(seed >> 16) % 12]);
        }
        if (i % 100 == 3)
            snprintf(text + len, sizeof(text) - len, " needleword");
        bench_fmt(json, sizeof(json),
                  "{\"command\":\"create\",\"path\":\"/memories/d%02u/m%05llu.md\",\"file_text\":"
                  "\"%s\"}",
                  (unsigned)(i % 20), (unsigned long long)i, text);
        bench_call(m, json, strlen(json));
    }
    search(m, "deploy"); /* a plain store's index is made by its first search */
    return m;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? bench_parse_u64(argv[1], "memories") : 1000;
    bench_crypt_pair p;
    int s, k, i, q;

    if (n < 100)
        n = 100;
    bench_crypt_pair_init(&p, "csearch");
    printf("store   query            plain      encrypted   (%llu memories, %d rounds, median)\n",
           (unsigned long long)n, ROUNDS);
    for (s = 0; s < BENCH_CRYPT_KINDS; s++) {
        mt_memory *m[2];

        for (k = 0; k < 2; k++)
            m[k] = make(p.url[s][k], k ? p.key : NULL, n);
        for (q = 0; q < QUERIES; q++) {
            bench_samples t[2];
            double med[2];

            for (k = 0; k < 2; k++)
                bench_samples_init(&t[k], ROUNDS);
            for (i = 0; i < ROUNDS; i++)
                for (k = 0; k < 2; k++)
                    bench_samples_add(&t[k], search(m[k], queries[q]));
            for (k = 0; k < 2; k++) {
                med[k] = bench_stats_of(&t[k]).median_us / 1e3;
                bench_samples_free(&t[k]);
            }
            printf("%-7s %-15s %7.2f ms  %8.2f ms\n", p.kind[s], queries[q], med[0], med[1]);
        }
        mt_memory_free(m[0]);
        mt_memory_free(m[1]);
    }
    bench_crypt_pair_free(&p);
    return 0;
}

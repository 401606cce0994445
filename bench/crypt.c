/*
 * Encryption at rest: a view of a small memory in process, encrypted against
 * plain, on the file store and the SQLite store. Each round runs N views of
 * each, interleaved so both see the same machine; the median round is shown.
 *
 *     mt_bench_crypt [N]
 */
#include <stdio.h>

#include "common.h"
#include "crypt_pair.h"

#define ROUNDS 7

/* Nanoseconds a view took, on average over n. */
static uint64_t views(mt_memory *m, uint64_t n)
{
    static const char view[] = "{\"command\":\"view\",\"path\":\"/memories/notes.md\"}";
    uint64_t t = bench_now_ns(), i;

    for (i = 0; i < n; i++)
        bench_call(m, view, sizeof(view) - 1);
    return (bench_now_ns() - t) / n;
}

static mt_memory *open_one(const char *url, mt_crypt_key *key)
{
    static const char create[] =
        "{\"command\":\"create\",\"path\":\"/memories/notes.md\",\"file_text\":\"# Notes\\n- "
        "uses pytest\\n- deploy with make release\\n- staging is on port 8080\\n\"}";
    mt_memory *m = bench_crypt_open(url, key);

    bench_call(m, create, sizeof(create) - 1);
    return m;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? bench_parse_u64(argv[1], "views") : 20000;
    bench_crypt_pair p;
    int s, k, i;

    if (n < 10)
        n = 10;
    bench_crypt_pair_init(&p, "crypt");
    printf("store   plain view   encrypted view   ratio   (%llu views x %d rounds, median)\n",
           (unsigned long long)n, ROUNDS);
    for (s = 0; s < BENCH_CRYPT_KINDS; s++) {
        mt_memory *m[2];
        bench_samples t[2];
        double med[2];

        for (k = 0; k < 2; k++) {
            m[k] = open_one(p.url[s][k], k ? p.key : NULL);
            bench_samples_init(&t[k], ROUNDS);
        }
        views(m[0], n / 10);
        views(m[1], n / 10);
        for (i = 0; i < ROUNDS; i++)
            for (k = 0; k < 2; k++)
                bench_samples_add(&t[k], views(m[k], n));
        for (k = 0; k < 2; k++) {
            med[k] = bench_stats_of(&t[k]).median_us;
            bench_samples_free(&t[k]);
            mt_memory_free(m[k]);
        }
        printf("%-7s %8.2f us    %10.2f us     %.2fx\n", p.kind[s], med[0], med[1],
               med[1] / med[0]);
    }
    bench_crypt_pair_free(&p);
    return 0;
}

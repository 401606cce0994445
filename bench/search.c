/*
 * Search: how long one search takes on a big store, in process, once the
 * index is up to date (the first search, which indexes everything, is timed
 * on its own). Each query runs `rounds` times; the median per query is shown.
 *
 *     mt_bench_search STORE_URL QUERIES_FILE ROUNDS
 *
 * Prints CSV rows: op,query,n,median_us,min_us,hits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool.h>

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static size_t search(mt_memory *m, const char *q)
{
    mt_search_hit *h;
    size_t n;

    if (mt_memory_search(&h, &n, m, q, NULL) < 0) {
        fprintf(stderr, "search %s: %s\n", q, mt_error_last()->message);
        exit(1);
    }
    mt_search_hits_free(h, n);
    return n;
}

int main(int argc, char **argv)
{
    mt_options o;
    mt_memory *m;
    char line[512];
    FILE *f;
    double t, *times;
    long rounds;
    size_t hits;

    if (argc != 4 || (rounds = strtol(argv[3], NULL, 10)) < 1) {
        fprintf(stderr, "usage: mt_bench_search STORE_URL QUERIES_FILE ROUNDS\n");
        return 2;
    }
    mt_options_init(&o);
    o.max_store_size = 1ULL << 40;
    o.max_files = 1000000;
    o.max_dirs = 100000;
    o.max_file_size = 64 << 20;
    if (mt_memory_open_url(&m, argv[1], &o) < 0) {
        fprintf(stderr, "open %s: %s\n", argv[1], mt_error_last()->message);
        return 1;
    }
    if (!(f = fopen(argv[2], "r")) || !(times = calloc((size_t)rounds, sizeof(*times)))) {
        perror(argv[2]);
        return 1;
    }
    t = now_us();
    hits = search(m, "zzzznotaword");
    printf("first_search,zzzznotaword,1,%.1f,%.1f,%zu\n", now_us() - t, now_us() - t, hits);
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!*line)
            continue;
        for (long i = 0; i < rounds; i++) {
            t = now_us();
            hits = search(m, line);
            times[i] = now_us() - t;
        }
        qsort(times, (size_t)rounds, sizeof(*times), cmp_double);
        /* CSV: the query quoted, its own quotes doubled */
        fputs("search,\"", stdout);
        for (const char *c = line; *c; c++)
            fputs(*c == '"' ? "\"\"" : (char[]){*c, 0}, stdout);
        printf("\",%ld,%.1f,%.1f,%zu\n", rounds, times[rounds / 2], times[0], hits);
    }
    fclose(f);
    free(times);
    mt_memory_free(m);
    return 0;
}

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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool.h>

#define ROUNDS  11
#define QUERIES 4

static const char *const queries[QUERIES] = {"needleword", "cache", "\"river stone\"", "win*"};

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double search(mt_memory *m, const char *q)
{
    mt_search_hit *h;
    size_t n;
    double t = now_s();

    if (mt_memory_search(&h, &n, m, q, NULL) < 0) {
        fprintf(stderr, "search %s: %s\n", q, mt_error_last()->message);
        exit(1);
    }
    t = now_s() - t;
    mt_search_hits_free(h, n);
    return t;
}

/* The same memories in every store: the words come from one seeded sequence. */
static mt_memory *make(const char *url, mt_crypt_key *key, int n)
{
    static const char *const words[] = {"deploy", "cache", "river", "stone", "lamp",   "quiet",
                                        "north",  "table", "green", "paper", "signal", "window"};
    unsigned seed = 7;
    mt_options o;
    mt_memory *m;
    mt_result r;
    char text[600], json[800];
    size_t len;
    int i, w;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    if (mt_memory_open_url_encrypted(&m, url, &o, key) < 0) {
        fprintf(stderr, "%s: %s\n", url, mt_error_last()->message);
        exit(1);
    }
    for (i = 0; i < n; i++) {
        for (w = 0, len = 0; w < 40; w++) {
            seed = seed * 1103515245u + 12345u;
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", w ? " " : "",
                                    words[(seed >> 16) % 12]);
        }
        if (i % 100 == 3)
            snprintf(text + len, sizeof(text) - len, " needleword");
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/d%02d/m%05d.md\",\"file_text\":"
                 "\"%s\"}",
                 i % 20, i, text);
        if (mt_memory_call(&r, m, json, strlen(json)) < 0 || r.is_error) {
            fprintf(stderr, "create failed: %s\n", r.text ? r.text : mt_error_last()->message);
            exit(1);
        }
        mt_result_dispose(&r);
    }
    search(m, "deploy"); /* a plain store's index is made by its first search */
    return m;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 1000;
    char dir[] = "/tmp/memtool-bench-csearch-XXXXXX", url[4][300], key_path[300], cmd[400];
    const char *names[2] = {"file", "sqlite"};
    mt_crypt_key *key;
    int s, k, i, q;

    if (n < 100)
        n = 100;
    if (!mkdtemp(dir))
        return 1;
    snprintf(key_path, sizeof(key_path), "%s/key", dir);
    if (mt_crypt_key_generate_file(key_path) < 0 || mt_crypt_key_load_file(&key, key_path) < 0) {
        fprintf(stderr, "%s\n", mt_error_last()->message);
        return 1;
    }
    snprintf(url[0], sizeof(url[0]), "file:%s/plain", dir);
    snprintf(url[1], sizeof(url[1]), "file:%s/crypt", dir);
    snprintf(url[2], sizeof(url[2]), "sqlite:%s/plain.db", dir);
    snprintf(url[3], sizeof(url[3]), "sqlite:%s/crypt.db", dir);
    printf("store   query            plain      encrypted   (%d memories, %d rounds, median)\n", n,
           ROUNDS);
    for (s = 0; s < 2; s++) {
        mt_memory *m[2];
        double t[2][ROUNDS];

        for (k = 0; k < 2; k++)
            m[k] = make(url[s * 2 + k], k ? key : NULL, n);
        for (q = 0; q < QUERIES; q++) {
            for (i = 0; i < ROUNDS; i++)
                for (k = 0; k < 2; k++)
                    t[k][i] = search(m[k], queries[q]);
            qsort(t[0], ROUNDS, sizeof(double), cmp);
            qsort(t[1], ROUNDS, sizeof(double), cmp);
            printf("%-7s %-15s %7.2f ms  %8.2f ms\n", names[s], queries[q], t[0][ROUNDS / 2] * 1e3,
                   t[1][ROUNDS / 2] * 1e3);
        }
        mt_memory_free(m[0]);
        mt_memory_free(m[1]);
    }
    mt_crypt_key_free(key);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

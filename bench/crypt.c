/*
 * Encryption at rest: a view of a small memory in process, encrypted against
 * plain, on the file store and the SQLite store. Each round runs N views of
 * each, interleaved so both see the same machine; the median round is shown.
 *
 *     mt_bench_crypt [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memtool.h>

#define ROUNDS 7

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double views(mt_memory *m, int n)
{
    static const char view[] = "{\"command\":\"view\",\"path\":\"/memories/notes.md\"}";
    mt_result r;
    double t = now_s();
    int i;

    for (i = 0; i < n; i++) {
        if (mt_memory_call(&r, m, view, sizeof(view) - 1) < 0 || r.is_error) {
            fprintf(stderr, "view failed: %s\n", r.text ? r.text : mt_error_last()->message);
            exit(1);
        }
        mt_result_dispose(&r);
    }
    return (now_s() - t) / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static mt_memory *open_one(const char *url, mt_crypt_key *key)
{
    static const char create[] =
        "{\"command\":\"create\",\"path\":\"/memories/notes.md\",\"file_text\":\"# Notes\\n- "
        "uses pytest\\n- deploy with make release\\n- staging is on port 8080\\n\"}";
    mt_options o;
    mt_memory *m;
    mt_result r;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    if (mt_memory_open_url_encrypted(&m, url, &o, key) < 0) {
        fprintf(stderr, "%s: %s\n", url, mt_error_last()->message);
        exit(1);
    }
    if (mt_memory_call(&r, m, create, sizeof(create) - 1) == 0)
        mt_result_dispose(&r);
    return m;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20000;
    char dir[] = "/tmp/memtool-bench-crypt-XXXXXX", url[4][300], key_path[300], cmd[400];
    const char *names[2] = {"file", "sqlite"};
    mt_crypt_key *key;
    int s, k, i;

    if (n < 10)
        n = 10;

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
    printf("store   plain view   encrypted view   ratio   (%d views x %d rounds, median)\n", n,
           ROUNDS);
    for (s = 0; s < 2; s++) {
        mt_memory *m[2];
        double t[2][ROUNDS];
        for (k = 0; k < 2; k++)
            m[k] = open_one(url[s * 2 + k], k ? key : NULL);
        views(m[0], n / 10);
        views(m[1], n / 10);
        for (i = 0; i < ROUNDS; i++)
            for (k = 0; k < 2; k++)
                t[k][i] = views(m[k], n);
        qsort(t[0], ROUNDS, sizeof(double), cmp);
        qsort(t[1], ROUNDS, sizeof(double), cmp);
        printf("%-7s %8.2f us    %10.2f us     %.2fx\n", names[s], t[0][ROUNDS / 2] * 1e6,
               t[1][ROUNDS / 2] * 1e6, t[1][ROUNDS / 2] / t[0][ROUNDS / 2]);
        mt_memory_free(m[0]);
        mt_memory_free(m[1]);
    }
    mt_crypt_key_free(key);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

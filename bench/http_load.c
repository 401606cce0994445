/*
 * A keep-alive HTTP load for memtool server's benchmark: THREADS clients,
 * each one connection (libcurl keeps it open), GET URL for SECONDS; prints
 * requests per second and the latency percentiles as one JSON line.
 *
 *   mt_bench_http_load URL SECONDS THREADS [HEADER...]
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *url;
    struct curl_slist *headers;
    double seconds;
    double *lat; /* ms */
    size_t n, cap;
    long errors;
} worker;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sink(char *p, size_t size, size_t n, void *u)
{
    (void)p, (void)u;
    return size * n;
}

static void *run(void *arg)
{
    worker *w = arg;
    CURL *c = curl_easy_init();
    double end = now() + w->seconds, t;
    long code;

    curl_easy_setopt(c, CURLOPT_URL, w->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    while ((t = now()) < end) {
        if (curl_easy_perform(c) != CURLE_OK ||
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200) {
            w->errors++;
            continue;
        }
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 4096;
            w->lat = realloc(w->lat, w->cap * sizeof(double));
        }
        w->lat[w->n++] = (now() - t) * 1000;
    }
    curl_easy_cleanup(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct curl_slist *h = NULL;
    pthread_t *tid;
    worker *w;
    double *all;
    size_t total = 0, k = 0;
    long errors = 0;
    int threads, i;

    if (argc < 4)
        return fprintf(stderr, "usage: mt_bench_http_load URL SECONDS THREADS [HEADER...]\n"), 2;
    threads = (int)strtol(argv[3], NULL, 10);
    curl_global_init(CURL_GLOBAL_ALL);
    for (i = 4; i < argc; i++)
        h = curl_slist_append(h, argv[i]);
    tid = calloc((size_t)threads, sizeof(*tid));
    w = calloc((size_t)threads, sizeof(*w));
    for (i = 0; i < threads; i++) {
        w[i].url = argv[1];
        w[i].headers = h;
        w[i].seconds = strtod(argv[2], NULL);
        pthread_create(&tid[i], NULL, run, &w[i]);
    }
    for (i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        total += w[i].n;
        errors += w[i].errors;
    }
    all = malloc((total ? total : 1) * sizeof(double));
    for (i = 0; i < threads; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof(double));
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof(double), cmp);
    printf("{\"requests\":%zu,\"errors\":%ld,\"rps\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n",
           total, errors, (double)total / strtod(argv[2], NULL), total ? all[total / 2] : 0.0,
           total ? all[total * 99 / 100] : 0.0);
    free(all);
    free(w);
    free(tid);
    curl_slist_free_all(h);
    return errors ? 1 : 0;
}

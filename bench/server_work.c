/*
 * The work a memory-store API retrieve needs beyond HTTP, in process: the
 * key checked, the request answered by memtool server's own routes (the
 * store's record read, the memory's newest version found, its content read
 * and checked) and the answer encoded, by THREADS threads for SECONDS on one
 * store. With the HTTP floor (mt_bench_http_floor) it gives the floor of a
 * retrieve on this machine: both run on the same cores, so their costs add.
 * Prints {"ops":N,"rps":R} as one JSON line.
 *
 *   mt_bench_server_work STORE_URL KEYS_FILE KEY STORE_ID MEMORY_ID SECONDS THREADS
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool.h>

#include "httpd/keys.h"
#include "httpd/registry.h"
#include "httpd/routes.h"

typedef struct {
    mt_registry *reg;
    mt_keys *keys;
    const char *key;
    char path[256];
    double seconds;
    long ops, errors;
} worker;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *no_query(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return NULL;
}

static void *run(void *arg)
{
    worker *w = arg;
    double end = now() + w->seconds;

    while (now() < end) {
        mt_key_info info;
        mt_http_request rq = {"GET", w->path, no_query, NULL, NULL, 0, &info, "req_bench", NULL};
        mt_http_reply reply = {0};
        char *text;

        if (mt_keys_check(&info, w->keys, w->key, strlen(w->key)) < 0) {
            w->errors++;
            continue;
        }
        mt_routes_dispatch(&reply, w->reg, &rq);
        text = reply.body ? json_dumps(reply.body, JSON_COMPACT) : NULL;
        if (reply.status != 200 || !text)
            w->errors++;
        else
            w->ops++;
        free(text);
        json_decref(reply.body);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_options opts;
    mt_registry *reg = NULL;
    mt_keys *keys = NULL;
    worker *w;
    pthread_t *t;
    long threads, ops = 0, errors = 0, i;
    double seconds, start;

    if (argc != 8) {
        fprintf(stderr, "usage: mt_bench_server_work STORE_URL KEYS_FILE KEY STORE_ID MEMORY_ID "
                        "SECONDS THREADS\n");
        return 2;
    }
    seconds = strtod(argv[6], NULL);
    threads = strtol(argv[7], NULL, 10);
    mt_options_init(&opts);
    if (threads < 1 || mt_keys_open(&keys, argv[2]) < 0 ||
        mt_registry_open(&reg, argv[1], &opts, NULL, 0) < 0) {
        fprintf(stderr, "mt_bench_server_work: %s\n", mt_error_last()->message);
        return 1;
    }
    w = calloc((size_t)threads, sizeof(*w));
    t = calloc((size_t)threads, sizeof(*t));
    if (!w || !t)
        return 1;
    start = now();
    for (i = 0; i < threads; i++) {
        w[i].reg = reg;
        w[i].keys = keys;
        w[i].key = argv[3];
        w[i].seconds = seconds;
        snprintf(w[i].path, sizeof(w[i].path), "/v1/memory_stores/%s/memories/%s", argv[4],
                 argv[5]);
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    for (i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        ops += w[i].ops;
        errors += w[i].errors;
    }
    seconds = now() - start;
    printf("{\"ops\":%ld,\"errors\":%ld,\"rps\":%.0f}\n", ops, errors, (double)ops / seconds);
    mt_registry_free(reg);
    mt_keys_free(keys);
    free(w);
    free(t);
    return errors ? 1 : 0;
}

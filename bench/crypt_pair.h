/*
 * What the encryption benchmarks (crypt.c, crypt_search.c) share: a scratch
 * directory with a key file, and for each store kind a plain store and an
 * encrypted one side by side, so each measure takes turns between them.
 */
#ifndef MT_BENCH_CRYPT_PAIR_H
#define MT_BENCH_CRYPT_PAIR_H

#include <memtool.h>

#define BENCH_CRYPT_KINDS 2 /* the file store and the SQLite store */

typedef struct {
    char dir[64];
    char url[BENCH_CRYPT_KINDS][2][300]; /* [kind][0 plain, 1 encrypted] */
    const char *kind[BENCH_CRYPT_KINDS]; /* "file", "sqlite" */
    mt_crypt_key *key;
} bench_crypt_pair;

/* A new directory /tmp/memtool-bench-NAME-XXXXXX with a new key; dies on failure. */
void bench_crypt_pair_init(bench_crypt_pair *p, const char *name);
/* The key freed, the directory removed with all in it. */
void bench_crypt_pair_free(bench_crypt_pair *p);

/* A handle on url with durability none, encrypted with key unless NULL;
 * dies on failure. */
mt_memory *bench_crypt_open(const char *url, mt_crypt_key *key);

/* A tool call that must succeed; dies with its text otherwise. */
void bench_call(mt_memory *m, const char *json, size_t len);

#endif

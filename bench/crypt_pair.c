#include "crypt_pair.h"

#include <stdlib.h>

#include "common.h"

void bench_crypt_pair_init(bench_crypt_pair *p, const char *name)
{
    static const char *const kinds[BENCH_CRYPT_KINDS] = {"file", "sqlite"};
    char key_path[300];
    int k;

    bench_fmt(p->dir, sizeof(p->dir), "/tmp/memtool-bench-%s-XXXXXX", name);
    if (!mkdtemp(p->dir))
        bench_die("cannot make a directory %s", p->dir);
    bench_fmt(key_path, sizeof(key_path), "%s/key", p->dir);
    if (mt_crypt_key_generate_file(key_path) < 0 || mt_crypt_key_load_file(&p->key, key_path) < 0)
        bench_die("%s", mt_error_last()->message);
    for (k = 0; k < BENCH_CRYPT_KINDS; k++)
        p->kind[k] = kinds[k];
    bench_fmt(p->url[0][0], sizeof(p->url[0][0]), "file:%s/plain", p->dir);
    bench_fmt(p->url[0][1], sizeof(p->url[0][1]), "file:%s/crypt", p->dir);
    bench_fmt(p->url[1][0], sizeof(p->url[1][0]), "sqlite:%s/plain.db", p->dir);
    bench_fmt(p->url[1][1], sizeof(p->url[1][1]), "sqlite:%s/crypt.db", p->dir);
}

void bench_crypt_pair_free(bench_crypt_pair *p)
{
    mt_crypt_key_free(p->key);
    p->key = NULL;
    bench_remove_tree(p->dir);
}

mt_memory *bench_crypt_open(const char *url, mt_crypt_key *key)
{
    mt_options o;
    mt_memory *m;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    if (mt_memory_open_url_encrypted(&m, url, &o, key) < 0)
        bench_die("%s: %s", url, mt_error_last()->message);
    return m;
}

void bench_call(mt_memory *m, const char *json, size_t len)
{
    mt_result r;

    if (mt_memory_call(&r, m, json, len) < 0)
        bench_die("%.60s: %s", json, mt_error_last()->message);
    if (r.is_error)
        bench_die("%.60s: %s", json, r.text);
    mt_result_dispose(&r);
}

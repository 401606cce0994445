/*
 * How often a migration out of an encrypted store and a rekey of one
 * decrypt each version: a store of MEMORIES memories with EDITS versions
 * each, counted through the crypt layer's test hook.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "crypt/crypt.h"

#define MEMORIES 20
#define EDITS    10 /* versions of each memory: a create and EDITS - 1 edits */
#define VERSIONS (MEMORIES * EDITS)

static atomic_ulong unseals;

static void count_unseal(void)
{
    atomic_fetch_add(&unseals, 1);
}

static mt_memory *open_encrypted(const char *root, const char *key_path)
{
    mt_crypt_key *key = mt_test_key_load(key_path);
    mt_memory *m = NULL;

    if (mt_memory_open_encrypted(&m, root, NULL, key) < 0)
        fail_msg("open %s: %s", root, mt_error_last()->message);
    mt_crypt_key_free(key);
    return m;
}

static void fill(mt_memory *m)
{
    char json[256], path[32];
    int i, e;

    for (i = 0; i < MEMORIES; i++) {
        snprintf(path, sizeof(path), "m%d.md", i);
        mt_test_create(m, path, "v0");
        for (e = 1; e < EDITS; e++) {
            snprintf(json, sizeof(json),
                     "{\"command\":\"str_replace\",\"path\":\"/memories/m%d.md\",\"old_str\":"
                     "\"v%d\",\"new_str\":\"v%d\"}",
                     i, e - 1, e);
            mt_test_ok(m, json);
        }
    }
}

static void test_decrypts(void **state)
{
    mt_test_keys s;
    char src[300], dst[300];
    mt_memory *from, *to;
    mt_migrate_stats st;
    mt_rekey_result r;
    unsigned long migrate_n, rekey_n;

    (void)state;
    mt_test_keys_init(&s, "decrypts");
    snprintf(src, sizeof(src), "%s/src", s.dir);
    snprintf(dst, sizeof(dst), "%s/dst", s.dir);
    from = open_encrypted(src, s.key);
    fill(from);
    assert_int_equal(mt_memory_open(&to, dst, NULL), 0);

    mt_crypt_unseal_hook = count_unseal;
    atomic_store(&unseals, 0);
    if (mt_memory_migrate(&st, from, to, NULL, NULL) < 0)
        fail_msg("migrate: %s", mt_error_last()->message);
    migrate_n = atomic_load(&unseals);
    assert_int_equal(st.versions_copied, VERSIONS);

    {
        mt_crypt_key *next = mt_test_key_load(s.key2);
        atomic_store(&unseals, 0);
        if (mt_memory_rekey(&r, from, next, NULL, NULL) < 0)
            fail_msg("rekey: %s", mt_error_last()->message);
        rekey_n = atomic_load(&unseals);
        mt_crypt_key_free(next);
    }
    mt_crypt_unseal_hook = NULL;
    /* A migration opens each version once for its size and SHA-256 and each
     * memory's file once; the destination's import then asks for a version's
     * content only when it does not keep it already (the memories share the
     * same EDITS texts) and for each memory's current file. Fewer than one
     * per version would be a version not read through the layer at all. */
    assert_true(migrate_n >= VERSIONS + MEMORIES);
    assert_true(migrate_n <= VERSIONS + MEMORIES + EDITS + MEMORIES);
    /* A rekey opens each file and each older version once, exactly: each
     * memory's newest version takes the file's new bytes with it (no
     * version is added), and is not opened again. */
    assert_int_equal(r.files, MEMORIES);
    assert_int_equal(r.versions, VERSIONS - MEMORIES);
    assert_int_equal(rekey_n, VERSIONS);
    print_message("%d versions: migrate decrypted %lu times, rekey %lu (files %llu, versions "
                  "%llu)\n",
                  VERSIONS, migrate_n, rekey_n, (unsigned long long)r.files,
                  (unsigned long long)r.versions);
    mt_rekey_result_dispose(&r);
    mt_memory_free(from);
    mt_memory_free(to);
    mt_test_keys_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decrypts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

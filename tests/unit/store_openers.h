/* The stores the store tests run on: each opens a fresh store in a scratch
 * directory. Another store is added to `mt_test_stores` and every store
 * test runs on it too. */
#ifndef MT_TEST_STORE_OPENERS_H
#define MT_TEST_STORE_OPENERS_H

#include <stdio.h>

#include <memtool.h>
#include <memtool/store.h>

typedef struct {
    const char *name;
    /* A handle on a new store beneath dir (an empty directory of its own),
     * or on the one made there before; opts->tenant names the tenant. */
    int (*open)(mt_memory **out, const char *dir, const mt_options *opts);
} mt_test_store_opener;

static int mt_test_open_fs(mt_memory **out, const char *dir, const mt_options *opts)
{
    char root[600];

    snprintf(root, sizeof(root), "%s/fs", dir);
    return mt_memory_open(out, root, opts);
}

static int mt_test_open_sqlite(mt_memory **out, const char *dir, const mt_options *opts)
{
    char path[600];
    mt_store *st;
    int rc;

    snprintf(path, sizeof(path), "%s/store.sqlite", dir);
    if ((rc = mt_store_sqlite_open(&st, path, opts ? opts->tenant : NULL,
                                   opts ? opts->durability : 0)) < 0)
        return rc;
    return mt_memory_new(out, st, opts);
}

/* A key the encrypted openers' key accepts too (NULL: none): a store
 * records its key, and opens only with a key that reads it; a test that
 * writes with another key opens with that one accepting the store's. */
static mt_crypt_key *mt_test_also_key;

/* The same stores encrypted, with a key file kept beside them (made at
 * the first open, so a store opened again reads with the same key). */
static int mt_test_crypt_key(mt_crypt_key **key, const char *dir)
{
    char path[600];
    int rc;

    snprintf(path, sizeof(path), "%s/key", dir);
    if ((rc = mt_crypt_key_load_file(key, path)) == MT_ENOTFOUND &&
        (rc = mt_crypt_key_generate_file(path)) == 0)
        rc = mt_crypt_key_load_file(key, path);
    if (rc == 0 && mt_test_also_key && (rc = mt_crypt_key_accept(*key, mt_test_also_key)) < 0) {
        mt_crypt_key_free(*key);
        *key = NULL;
    }
    return rc;
}

static int mt_test_open_fs_crypt(mt_memory **out, const char *dir, const mt_options *opts)
{
    char root[600];
    mt_crypt_key *key;
    int rc;

    snprintf(root, sizeof(root), "%s/fs", dir);
    if ((rc = mt_test_crypt_key(&key, dir)) < 0)
        return rc;
    rc = mt_memory_open_encrypted(out, root, opts, key);
    mt_crypt_key_free(key);
    return rc;
}

static int mt_test_open_sqlite_crypt(mt_memory **out, const char *dir, const mt_options *opts)
{
    char path[600];
    mt_crypt_key *key;
    mt_store *st;
    int rc;

    snprintf(path, sizeof(path), "%s/store.sqlite", dir);
    if ((rc = mt_test_crypt_key(&key, dir)) < 0)
        return rc;
    if ((rc = mt_store_sqlite_open(&st, path, opts ? opts->tenant : NULL,
                                   opts ? opts->durability : 0)) == 0 &&
        (rc = mt_store_crypt_wrap(&st, st, key)) == 0)
        rc = mt_memory_new(out, st, opts);
    mt_crypt_key_free(key);
    return rc;
}

/* The first is the reference the others are compared with. */
static const mt_test_store_opener mt_test_stores[] = {
    {"fs", mt_test_open_fs},
    {"sqlite", mt_test_open_sqlite},
    {"fs-crypt", mt_test_open_fs_crypt},
    {"sqlite-crypt", mt_test_open_sqlite_crypt},
};
#define MT_TEST_NSTORES (sizeof(mt_test_stores) / sizeof(mt_test_stores[0]))

#endif

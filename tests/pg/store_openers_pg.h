/*
 * The store tests' list of stores (tests/unit/store_openers.h) with the
 * PostgreSQL store added: forced in (-include) before a store test's own
 * source, so the same test runs on every store, PostgreSQL too, inside the
 * cluster of scripts/with-pg.sh. A fresh store is a new tenant.
 */
#ifndef MT_TEST_STORE_OPENERS_PG_H
#define MT_TEST_STORE_OPENERS_PG_H

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* The shared list is taken under another name, and given again below with
 * PostgreSQL; the test's own include of the header then finds it included. */
#define mt_test_stores mt_test_stores_shared
#include "store_openers.h"
#undef mt_test_stores
#undef MT_TEST_NSTORES

/* The first use makes the schema as the database's owner and grants
 * memtool's role what it needs, as an administrator would. */
static int mt_test_pg_prepare(void)
{
    static int done;
    const char *owner = getenv("MEMTOOL_TEST_PG_OWNER");
    PGconn *c;
    PGresult *r;
    int ok;

    if (done)
        return 0;
    if (!owner || !getenv("MEMTOOL_TEST_PG")) {
        fprintf(stderr, "MEMTOOL_TEST_PG is not set: run this test through scripts/with-pg.sh "
                        "(ctest does), which starts the PostgreSQL test cluster\n");
        return MT_EINVAL;
    }
    if (mt_store_pg_upgrade(owner) < 0)
        return mt_error_last()->code;
    c = PQconnectdb(owner);
    r = PQexec(c, "GRANT USAGE ON SCHEMA memtool TO memtool; GRANT SELECT ON memtool.meta TO "
                  "memtool; GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes, "
                  "memtool.contents, memtool.content_refs, memtool.versions, memtool.search_docs "
                  "TO memtool");
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "granting: %s", PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    done = ok;
    return ok ? 0 : MT_EIO;
}

/* The store of a scratch directory: its name is unique, so is the tenant. */
static int mt_test_pg_store(mt_store **st, const char *dir, const mt_options *opts)
{
    const char *base = strrchr(dir, '/');
    char tenant[64];
    int rc;

    if ((rc = mt_test_pg_prepare()) < 0)
        return rc;
    snprintf(tenant, sizeof(tenant), "t-%s%s%s", base ? base + 1 : dir,
             opts && opts->tenant ? "-" : "", opts && opts->tenant ? opts->tenant : "");
    return mt_store_pg_open(st, getenv("MEMTOOL_TEST_PG"), tenant);
}

static int mt_test_open_pg(mt_memory **out, const char *dir, const mt_options *opts)
{
    mt_store *st;
    int rc;

    if ((rc = mt_test_pg_store(&st, dir, opts)) < 0)
        return rc;
    return mt_memory_new(out, st, opts);
}

/* The same tenant encrypted, with the key kept in dir as the others do. */
static int mt_test_open_pg_crypt(mt_memory **out, const char *dir, const mt_options *opts)
{
    mt_crypt_key *key;
    mt_store *st;
    int rc;

    if ((rc = mt_test_crypt_key(&key, dir)) < 0)
        return rc;
    if ((rc = mt_test_pg_store(&st, dir, opts)) == 0 &&
        (rc = mt_store_crypt_wrap(&st, st, key)) == 0)
        rc = mt_memory_new(out, st, opts);
    mt_crypt_key_free(key);
    return rc;
}

static const mt_test_store_opener mt_test_stores[] = {
    {"fs", mt_test_open_fs},
    {"sqlite", mt_test_open_sqlite},
    {"postgresql", mt_test_open_pg},
    {"postgresql-crypt", mt_test_open_pg_crypt},
};
#define MT_TEST_NSTORES (sizeof(mt_test_stores) / sizeof(mt_test_stores[0]))

#endif

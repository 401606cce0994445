/* Opening a store by URL, with its tenant. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <memtool/store.h>

#include "crypt/crypt.h"
#include "db/db.h"
#include "fs/fs.h"
#include "remote/remote.h"
#include "util/path.h"
#include "factory/store_factory.h"

/* The tenant every store has; naming it is the same as naming none. */
#define DEFAULT_TENANT "default"

/*
 * A tenant of the file store is a store of its own beneath the default
 * tenant's reserved directory, which no request path can name: the kernel
 * (openat2 beneath each tenant's root) keeps tenants apart, and copying the
 * directory takes every tenant along.
 */
int mt_store_fs_open_tenant(mt_store **out, int *read_only, const char *dir, const char *tenant,
                            mt_durability durability, unsigned flags)
{
    struct stat sb;
    char *root = NULL;
    size_t n;
    int rc;

    *out = NULL;
    if ((rc = mt_store_tenant_check(tenant)) < 0)
        return rc;
    if (!tenant || !*tenant || strcmp(tenant, DEFAULT_TENANT) == 0)
        return mt_store_fs_open_with(out, read_only, dir, durability, flags);
    n = strlen(dir) + sizeof("/" MT_RESERVED_NAME "/tenants/") + strlen(tenant);
    if (!(root = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    snprintf(root, n, "%s/" MT_RESERVED_NAME "/tenants/%s", dir, tenant);
    /* The store first, then its tenant: each error names what is missing. */
    if ((flags & MT_STORE_OPEN_EXISTING) && stat(dir, &sb) < 0 && errno == ENOENT)
        rc = mt_error_set(MT_ENOTFOUND,
                          "no store at %s: check --root/--store, or create it with a write", dir);
    else if ((flags & MT_STORE_OPEN_EXISTING) && stat(root, &sb) < 0 && errno == ENOENT)
        rc = mt_error_set(MT_ENOTFOUND,
                          "no tenant '%s' in the store: check --tenant (a tenant is made by its "
                          "first write)",
                          tenant);
    else
        rc = mt_store_fs_open_with(out, read_only, root, durability, flags);
    free(root);
    return rc;
}

int mt_store_open_url(mt_store **out, const char *url, const char *tenant, mt_durability durability)
{
    return mt_store_open_url_with(out, NULL, url, tenant, durability, 0);
}

int mt_store_open_url_with(mt_store **out, int *read_only, const char *url, const char *tenant,
                           mt_durability durability, unsigned flags)
{
    mt_store_url u;
    int rc;

    if (read_only)
        *read_only = 0;
    if (!out)
        return mt_error_set(MT_EINVAL, "mt_store_open_url needs an out pointer");
    *out = NULL;
    if ((rc = mt_store_tenant_check(tenant)) < 0)
        return rc;
    if ((rc = mt_store_url_parse(&u, url)) < 0)
        return rc;
    switch (u.kind) {
    case MT_STORE_FILE:
        rc = mt_store_fs_open_tenant(out, read_only, u.target, tenant, durability, flags);
        break;
    case MT_STORE_SQLITE:
        rc = mt_store_sqlite_open_with(out, read_only, u.target, tenant, durability, flags);
        break;
    case MT_STORE_PG:
        rc = mt_store_pg_open_with(out, u.target, tenant, flags);
        break;
    case MT_STORE_REMOTE:
        /* A memory store is the whole store: the API has no tenants (the
         * key chooses what it sees). */
        if (tenant && *tenant && strcmp(tenant, DEFAULT_TENANT) != 0)
            rc = mt_error_set(MT_EINVAL,
                              "a remote store has no tenants: the key says whose memory stores "
                              "it reaches (leave out --tenant)");
        else
            rc = mt_store_remote_open(out, u.target);
        break;
    }
    mt_store_url_dispose(&u);
    return rc;
}

int mt_store_assemble(mt_store **out, int *read_only, const char *root, const char *url,
                      const char *tenant, mt_durability durability, unsigned flags,
                      mt_crypt_key *key)
{
    int rc;

    if (read_only)
        *read_only = 0;
    if (key && url && (!strncmp(url, "https:", 6) || !strncmp(url, "http:", 5)))
        return mt_error_set(MT_EINVAL,
                            "encryption at rest is not available on a remote store (a memory store "
                            "of the memory-store API takes its content as text): leave out "
                            "--encrypt and the key");
    rc = url ? mt_store_open_url_with(out, read_only, url, tenant, durability, flags)
             : mt_store_fs_open_tenant(out, read_only, root, tenant, durability, flags);
    if (rc < 0)
        return rc;
    if (key && (rc = mt_store_crypt_wrap(out, *out, key)) < 0)
        return rc;
    return 0;
}

int mt_store_admit(int *plain, mt_store *st)
{
    int rc;

    *plain = 0;
    /* Encryption is the store's, not the caller's: a store that says it is
     * encrypted opens only through mt_store_crypt_wrap, with its key. */
    if (mt_store_is_crypt(st))
        return 0;
    if ((rc = mt_crypt_record_refuse(st)) < 0)
        return rc;
    /* Opened without a key: every change checks the store is still plain
     * (unless beneath the encryption on purpose, as the records are off). */
    *plain = !mt_crypt_record_off;
    return 0;
}

int mt_store_upgrade_url(const char *url)
{
    mt_store_url u;
    mt_store *st = NULL;
    int rc;

    if ((rc = mt_store_url_parse(&u, url)) < 0)
        return rc;
    switch (u.kind) {
    case MT_STORE_PG:
        rc = mt_store_pg_upgrade(u.target);
        break;
    case MT_STORE_SQLITE:
        /* Opening makes the schema where there is none and checks it. */
        if ((rc = mt_store_sqlite_open(&st, u.target, NULL, MT_DURABILITY_FULL)) == 0)
            st->free(st);
        break;
    default:
        rc = 0; /* a file store keeps no schema */
        break;
    }
    mt_store_url_dispose(&u);
    return rc;
}

int mt_store_vacuum_url(int *vacuumed, const char *url)
{
    mt_store_url u;
    int rc;

    *vacuumed = 0;
    if ((rc = mt_store_url_parse(&u, url)) < 0)
        return rc;
    /* The file and SQLite stores erase at once: nothing to vacuum. */
    if (u.kind == MT_STORE_PG && (rc = mt_store_pg_vacuum(u.target)) == 0)
        *vacuumed = 1;
    mt_store_url_dispose(&u);
    return rc;
}

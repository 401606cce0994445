/* Opening a store by URL, with its tenant. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <memtool/store.h>

#include "fs.h"
#include "lib/path.h"
#include "url.h"

/* The tenant every store has; naming it is the same as naming none. */
#define DEFAULT_TENANT "default"

int mt_store_read_only_error(void)
{
    return mt_error_set(MT_EIO, "the store is read-only (a read-only mount, or no permission to "
                                "write it): nothing was changed; reading it works");
}

int mt_store_sealed_error(void)
{
    return mt_error_set(MT_ECRYPT, "another process made the store encrypted after this one opened "
                                   "it without a key, so nothing was written: open it again with "
                                   "its key (--key-file PATH or MEMTOOL_KEY_FILE, or its "
                                   "passphrase in MEMTOOL_PASSPHRASE)");
}

int mt_store_tenant_check(const char *tenant)
{
    if (!tenant || !*tenant)
        return 0;
    if (!mt_path_name_ok(tenant, strlen(tenant)))
        return mt_error_set(
            MT_EINVAL,
            "'%.100s' is not a tenant name: a tenant is named like a file (1 to 255 "
            "bytes, no '/', control characters, '.', '..' or names beginning "
            "with .memtool or .mt-tmp.)",
            tenant);
    return 0;
}

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
    }
    mt_store_url_dispose(&u);
    return rc;
}

/* Opening a store by URL, with its tenant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

#include "lib/path.h"
#include "url.h"

/* The tenant every store has; naming it is the same as naming none. */
#define DEFAULT_TENANT "default"

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
int mt_store_fs_open_tenant(mt_store **out, const char *dir, const char *tenant,
                            mt_durability durability)
{
    char *root = NULL;
    size_t n;
    int rc;

    if ((rc = mt_store_tenant_check(tenant)) < 0)
        return rc;
    if (!tenant || !*tenant || strcmp(tenant, DEFAULT_TENANT) == 0)
        return mt_store_fs_open(out, dir, durability);
    n = strlen(dir) + sizeof("/" MT_RESERVED_NAME "/tenants/") + strlen(tenant);
    if (!(root = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    snprintf(root, n, "%s/" MT_RESERVED_NAME "/tenants/%s", dir, tenant);
    rc = mt_store_fs_open(out, root, durability);
    free(root);
    return rc;
}

int mt_store_open_url(mt_store **out, const char *url, const char *tenant, mt_durability durability)
{
    mt_store_url u;
    int rc;

    if (!out)
        return mt_error_set(MT_EINVAL, "mt_store_open_url needs an out pointer");
    *out = NULL;
    if ((rc = mt_store_tenant_check(tenant)) < 0)
        return rc;
    if ((rc = mt_store_url_parse(&u, url)) < 0)
        return rc;
    switch (u.kind) {
    case MT_STORE_FILE:
        rc = mt_store_fs_open_tenant(out, u.target, tenant, durability);
        break;
    case MT_STORE_SQLITE:
        rc = mt_store_sqlite_open(out, u.target, tenant, durability);
        break;
    case MT_STORE_PG:
        rc = mt_store_pg_open(out, u.target, tenant);
        break;
    }
    mt_store_url_dispose(&u);
    return rc;
}

/*
 * The store contract's helpers (include/memtool/store.h): every store, shim
 * and caller frees and fills its types here, so none depends on another
 * store for them.
 */
#include "contract/store_contract.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/path.h"

void mt_store_op_init(mt_store_op *op)
{
    memset(op, 0, sizeof(*op));
    op->lock_timeout_ms = 5000;
}

void mt_version_dispose(mt_version *v)
{
    if (!v)
        return;
    free(v->path);
    free(v->previous_path);
    free(v->actor);
    memset(v, 0, sizeof(*v));
}

void mt_versions_free(mt_version *v, size_t count)
{
    size_t i;

    if (!v)
        return;
    for (i = 0; i < count; i++)
        mt_version_dispose(&v[i]);
    free(v);
}

void mt_store_listing_dispose(mt_store_listing *listing)
{
    size_t i;

    if (!listing)
        return;
    for (i = 0; i < listing->count; i++)
        free(listing->entries[i].path);
    free(listing->entries);
    memset(listing, 0, sizeof(*listing));
}

void mt_store_hits_free(mt_store_hit *hits, size_t count)
{
    size_t i;

    for (i = 0; hits && i < count; i++)
        free(hits[i].path);
    free(hits);
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

int mt_store_control(mt_store *st, int request, void *arg)
{
    if (!st || st->version < 7 || !st->control)
        return MT_ENOSYS;
    return st->control(st, request, arg);
}

void mt_crypt_status_dispose(mt_crypt_status *status)
{
    if (!status)
        return;
    free(status->keys);
    memset(status, 0, sizeof(*status));
}

void mt_rekey_result_dispose(mt_rekey_result *result)
{
    size_t i;

    if (!result)
        return;
    for (i = 0; i < result->nfailures; i++) {
        free(result->failures[i].path);
        free(result->failures[i].message);
    }
    free(result->failures);
    memset(result, 0, sizeof(*result));
}

int mt_store_path_error(int code, const char *what, const char *rel)
{
    const char *shown = rel && *rel ? rel : MT_STORE_SHOWN_ROOT;

    switch (code) {
    case MT_ENOTFOUND:
        return mt_error_set(code, "%s %s: no such file or directory", what, shown);
    case MT_EEXISTS:
        return mt_error_set(code, "%s %s: it already exists", what, shown);
    case MT_ENOTDIR:
        return mt_error_set(code, "%s %s: a component is not a directory", what, shown);
    case MT_EISDIR:
        return mt_error_set(code, "%s %s: it is a directory", what, shown);
    default:
        return mt_error_set(code, "%s %s: %s", what, shown, strerror(EINVAL));
    }
}

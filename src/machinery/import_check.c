/* The checks every store's import shares (import.h). */
#include "machinery/import_check.h"
#include "util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static int id_ok(const char *id)
{
    size_t i;

    if (!id || strlen(id) != 20 || memcmp(id, "mem_", 4) != 0)
        return 0;
    for (i = 4; i < 20; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return 1;
}

int mt_import_has_content(const mt_version *v)
{
    return v->operation != MT_VERSION_DELETED && !v->redacted;
}

int mt_import_live(const mt_store_import *in)
{
    return in->versions[in->count - 1].operation != MT_VERSION_DELETED;
}

int mt_import_start(const mt_store_op *op, mt_store_import *in)
{
    int rc;

    if (in) {
        in->present = 0;
        in->made = 0;
    }
    if ((rc = mt_import_check(in)) < 0)
        return rc;
    if (!op->history)
        return mt_error_set(MT_EINVAL, "an import records versions: history must be on");
    return 0;
}

int mt_import_check(const mt_store_import *in)
{
    size_t i;

    if (!in || !id_ok(in->memory_id))
        return mt_error_set(MT_EINVAL, "an import needs a memory id (\"mem_\" and 16 hex digits)");
    if (!in->versions || in->count == 0 || !in->content)
        return mt_error_set(MT_EINVAL,
                            "memory %s: an import needs its versions and a reader of "
                            "their content",
                            in->memory_id);
    for (i = 0; i < in->count; i++) {
        const mt_version *v = &in->versions[i];
        if (v->operation != MT_VERSION_CREATED && v->operation != MT_VERSION_MODIFIED &&
            v->operation != MT_VERSION_DELETED)
            return mt_error_set(MT_EINVAL, "memory %s: version %zu has no operation", in->memory_id,
                                i + 1);
        if (!v->actor || !*v->actor)
            return mt_error_set(MT_EINVAL, "memory %s: version %zu has no actor", in->memory_id,
                                i + 1);
        if (!v->redacted && (!v->path || !*v->path))
            return mt_error_set(MT_EINVAL, "memory %s: version %zu has no path", in->memory_id,
                                i + 1);
    }
    /* A live memory's newest version is its current content: never redacted
     * (a deleted memory's deletion may be). */
    if (in->versions[in->count - 1].redacted &&
        in->versions[in->count - 1].operation != MT_VERSION_DELETED)
        return mt_error_set(MT_EINVAL,
                            "memory %s: its newest version is redacted, which no memory's "
                            "current content can be",
                            in->memory_id);
    return 0;
}

int mt_import_fetch(char **data, size_t *len, char sha[65], const mt_store_import *in, size_t i)
{
    const mt_version *v = &in->versions[i];
    int rc;

    *data = NULL;
    *len = 0;
    if ((rc = in->content(in->payload, data, len, i)) < 0) {
        free(*data);
        *data = NULL;
        return rc;
    }
    if (!*data && !(*data = calloc(1, 1)))
        return mt_error_set(MT_ENOMEM, "out of memory importing a memory");
    mt_sha256_hex(sha, *data, *len);
    if (v->content_sha256[0] &&
        (strcmp(sha, v->content_sha256) != 0 || (uint64_t)*len != v->content_size)) {
        sodium_memzero(*data, *len);
        free(*data);
        *data = NULL;
        *len = 0;
        return mt_error_set(MT_EIO,
                            "memory %s: the content given for its version %zu has SHA-256 %.8s, "
                            "not the %.8s the version names; nothing was imported",
                            in->memory_id, i + 1, sha, v->content_sha256);
    }
    return 0;
}

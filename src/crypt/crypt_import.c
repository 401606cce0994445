/*
 * The encryption layer's import: the caller hands plaintext (a memory of a
 * plain store, or one another layer with another key opened), and every
 * version's content is sealed here, with the writing key and the memory's
 * own id in its header, before the store beneath sees it. The store beneath
 * is told the sealed sizes and computes the SHA-256 of what it keeps; this
 * layer checks the plaintext against the SHA-256 each version names.
 */
#include "crypt/crypt_layer.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypt/crypt.h"
#include "machinery/import_check.h"

typedef struct {
    mt_crypt_key *key;
    const mt_store_import *outer;
} seal_args;

static int seal_content(void *payload, char **out, size_t *len, size_t index)
{
    seal_args *a = payload;
    uint64_t generation = 0;
    char *plain, sha[65];
    size_t plen, i;
    int rc;

    *out = NULL;
    *len = 0;
    if ((rc = mt_import_fetch(&plain, &plen, sha, a->outer, index)) < 0)
        return rc;
    /* The n-th content the memory held, as its edits would have numbered it. */
    for (i = 0; i <= index; i++)
        generation += mt_import_has_content(&a->outer->versions[i]) ? 1 : 0;
    rc = mt_crypt_seal_for(a->key, out, len, a->outer->memory_id, generation, plain, plen);
    sodium_memzero(plain, plen);
    free(plain);
    return rc;
}

int mt_crypt_import(mt_store *st, mt_store_op *op, mt_store_import *in)
{
    mt_store *inner = mt_crypt_inner(st);
    seal_args a = {NULL, in};
    mt_store_import sealed;
    mt_version *v = NULL;
    unsigned epoch;
    size_t i;
    int rc;

    if ((rc = mt_import_start(op, in)) < 0)
        return rc;
    if (!(v = malloc(in->count * sizeof(*v))))
        return mt_error_set(MT_ENOMEM, "out of memory importing a memory");
    /* The versions as the store beneath keeps them: sealed, so each content
     * is MT_CRYPT_OVERHEAD bytes more (a redacted one's size too) and of a
     * SHA-256 only the store beneath can tell. */
    memcpy(v, in->versions, in->count * sizeof(*v));
    for (i = 0; i < in->count; i++) {
        if (v[i].operation == MT_VERSION_DELETED)
            continue;
        v[i].content_sha256[0] = '\0';
        v[i].content_size += MT_CRYPT_OVERHEAD;
    }
    memset(&sealed, 0, sizeof(sealed));
    sealed.memory_id = in->memory_id;
    sealed.versions = v;
    sealed.count = in->count;
    sealed.content = seal_content;
    sealed.payload = &a;
    sealed.accessed_ms = in->accessed_ms;
    sealed.modified_ms = in->modified_ms;
    op->file_overhead = MT_CRYPT_OVERHEAD;
    a.key = mt_crypt_writer_take(st, &epoch);
    rc = inner->import(inner, op, &sealed);
    mt_crypt_writer_drop(st, a.key, epoch);
    in->present = sealed.present;
    in->made = sealed.made;
    free(v);
    return rc;
}

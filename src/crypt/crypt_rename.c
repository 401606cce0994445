/*
 * A rename with new content beneath the encryption layer
 * (mt_store_op.rename_content): the content sealed for the memory moved,
 * as an edit seals it, so that plaintext never reaches the inner store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "contract/store_contract.h"
#include "crypt/crypt_layer.h"
#include "util/sha256.h"

/* The file at rel, sealed (*sealed, as the inner store holds it) and opened
 * (*plain, its header *h). */
static int open_sealed(mt_crypt *c, char **sealed, size_t *slen, char **plain, size_t *plen,
                       mt_crypt_header *h, const char *rel)
{
    int rc;

    *plain = NULL;
    if ((rc = mt_crypt_read_sealed(c, sealed, slen, rel)) < 0)
        return rc;
    if ((rc = mt_crypt_unseal(plain, plen, h, c, *sealed, *slen, rel)) < 0) {
        free(*sealed);
        *sealed = NULL;
    }
    return rc;
}

/*
 * A rename with new content (op->rename_content). The content is sealed
 * here, as an edit's is: for the memory whose file is read (its header's
 * memory id, one generation on), under the writing key. The inner store
 * gets only that, and the SHA-256 of the very file read as its
 * precondition, so that its own check, under its lock, fails if the file
 * changed since. `at` is the file read: the source, or for a retry that
 * finds none there, the destination (a move that went through without its
 * content: the inner store then finishes it).
 */
static int rename_sealed(mt_crypt *c, mt_store_op *op, const char *from, const char *to,
                         const char *at)
{
    const char *was = op->rename_data, *given = was ? was : "";
    size_t given_len = op->rename_len;
    char *sealed = NULL, *plain = NULL, *next = NULL, inner[65], sha[65], memory[24];
    size_t slen = 0, plen = 0, nlen = 0;
    mt_crypt_header h;
    int rc;

    if ((rc = open_sealed(c, &sealed, &slen, &plain, &plen, &h, at)) < 0)
        return rc;
    mt_sha256_hex(sha, plain, plen);
    if (op->expect_sha256 && strcmp(sha, op->expect_sha256) != 0) {
        memcpy(op->current_sha256, sha, sizeof(sha));
        rc = mt_error_set(MT_ECONFLICT, "%s was changed by someone else", at);
        goto done;
    }
    /* The memory the store has there must be the one the header names, as
     * an edit checks: else the new content would be sealed for another. */
    if ((rc = mt_crypt_memory_at(c, memory, at)) < 0)
        goto done;
    if (rc == 1 && strcmp(memory, h.memory_id) != 0) {
        rc = mt_error_set(MT_ECRYPT,
                          "%s%s failed its integrity check: it holds the content of memory %s, "
                          "but the store has memory %s there (files were swapped or copied "
                          "outside memtool); it was not changed",
                          MT_STORE_SHOWN(at), h.memory_id, memory);
        goto done;
    }
    mt_sha256_hex(inner, sealed, slen);
    h.generation++;
    {
        unsigned epoch;
        mt_crypt_key *key = mt_crypt_writer_take(&c->base, &epoch);

        rc = mt_crypt_seal(&next, &nlen, key, &h, h.kdf == MT_CRYPT_KDF_PASS ? h.salt : NULL, given,
                           given_len);
        if (rc == 0) {
            INNER_OP(op, inner);
            op->rename_data = next;
            op->rename_len = nlen;
            rc = c->inner->rename(c->inner, op, from, to);
            op->rename_data = was;
            op->rename_len = given_len;
            INNER_DONE(op);
        }
        mt_crypt_writer_drop(&c->base, key, epoch);
    }
done:
    free(sealed);
    free(next);
    if (plain) {
        sodium_memzero(plain, plen);
        free(plain);
    }
    return rc;
}

/* How often a rename with content and no precondition of the caller's is
 * tried again when its file changed between the read and the inner store's
 * lock: each time another writer made progress. */
#define RENAME_TRIES 4

int mt_crypt_rename_content(mt_crypt *c, mt_store_op *op, const char *from, const char *to)
{
    char said[256], now[65], want[65], *plain;
    size_t len;
    int rc, tries;

    /* The layer has its inner store's version: a caller gives content only
     * to a store of version 7, and an older one would drop it. */
    if (c->inner->version < 7)
        return mt_error_set(MT_ENOSYS, "the store under the encryption has no rename with content");
    for (tries = 0; tries < RENAME_TRIES; tries++) {
        op->culprit = 0;
        rc = rename_sealed(c, op, from, to, from);
        if (rc != MT_ECONFLICT || op->expect_sha256)
            break;
    }
    if (rc == MT_EISDIR || rc == MT_EUNSUPPORTED)
        return mt_error_set(MT_EINVAL, "%s is not a regular file: only a file takes new content",
                            from);
    if (rc == MT_ECONFLICT)
        mt_crypt_conflict_now(c, op, op->culprit ? to : from);
    if (rc != MT_ENOTFOUND || op->culprit || !op->expect_sha256)
        return rc;
    /* Nothing at the source: a retry, done when the destination holds the
     * new content, to finish when it holds the expected one. */
    snprintf(said, sizeof(said), "%s", mt_error_last()->message);
    if (mt_crypt_open_current(c, &plain, &len, to) == 0) {
        mt_sha256_hex(now, plain, len);
        sodium_memzero(plain, len);
        free(plain);
        mt_sha256_hex(want, op->rename_data ? op->rename_data : "", op->rename_len);
        if (strcmp(now, want) == 0)
            return 0;
        if (strcmp(now, op->expect_sha256) == 0 &&
            (rc = rename_sealed(c, op, from, to, to)) != MT_ENOTFOUND)
            return rc;
    }
    op->culprit = 0;
    return mt_error_set(MT_ENOTFOUND, "%s", said);
}

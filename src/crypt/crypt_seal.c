/*
 * The encryption layer's files: the header written and read, the keys a
 * write seals with and a read opens with (held by reference while a rekey
 * changes them), and sealing and opening themselves.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "contract/store_contract.h"
#include "crypt/crypt.h"
#include "crypt/crypt_layer.h"
#include "machinery/history.h"

static void put_u64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static void header_write(unsigned char *p, const mt_crypt_header *h)
{
    memset(p, 0, MT_CRYPT_HEADER);
    memcpy(p, mt_crypt_magic, 4);
    p[4] = MT_CRYPT_FORMAT;
    p[5] = h->kdf;
    memcpy(p + 8, h->key_id, MT_CRYPT_ID);
    memcpy(p + 16, h->salt, MT_CRYPT_SALT);
    memcpy(p + 32, h->memory_id, strnlen(h->memory_id, MT_CRYPT_MEMID));
    put_u64(p + 52, h->generation);
    memcpy(p + 60, h->nonce, sizeof(h->nonce));
}

/* Parse the header of data (len bytes) at rel. */
int mt_crypt_header_read(mt_crypt_header *h, const unsigned char *p, size_t len, const char *rel)
{
    if (len < MT_CRYPT_HEADER || memcmp(p, mt_crypt_magic, 4) != 0)
        return mt_error_set(MT_ECRYPT,
                            "%s%s is not encrypted (it has no memtool encryption header): it was "
                            "written outside memtool or without --encrypt; memtool never shows "
                            "it as plain text in an encrypted store",
                            MT_STORE_SHOWN(rel));
    if (p[4] != MT_CRYPT_FORMAT || (p[5] != MT_CRYPT_KDF_KEY && p[5] != MT_CRYPT_KDF_PASS))
        return mt_error_set(MT_ECRYPT,
                            "%s%s is encrypted in format %u, which this memtool does not read "
                            "(it reads format %d)",
                            MT_STORE_SHOWN(rel), p[4], MT_CRYPT_FORMAT);
    if (len < MT_CRYPT_HEADER + MT_CRYPT_TAG)
        return mt_error_set(MT_ECRYPT,
                            "%s%s failed its integrity check: the file is cut short (%zu bytes)",
                            MT_STORE_SHOWN(rel), len);
    h->kdf = p[5];
    memcpy(h->key_id, p + 8, MT_CRYPT_ID);
    memcpy(h->salt, p + 16, MT_CRYPT_SALT);
    memcpy(h->memory_id, p + 32, MT_CRYPT_MEMID);
    h->memory_id[MT_CRYPT_MEMID] = '\0';
    h->generation = get_u64(p + 52);
    memcpy(h->nonce, p + 60, sizeof(h->nonce));
    return 0;
}

/* The keys to read with, referenced (old may be NULL): put back with keys_drop. */
typedef struct {
    mt_crypt_key *key, *old, *also[ALSO_MAX];
    unsigned nalso;
} held_keys;

static void keys_take(mt_crypt *c, held_keys *k)
{
    pthread_mutex_lock(&c->keys_lock);
    k->key = mt_crypt_key_ref(c->key);
    k->old = c->old ? mt_crypt_key_ref(c->old) : NULL;
    for (k->nalso = 0; k->nalso < c->nalso; k->nalso++)
        k->also[k->nalso] = mt_crypt_key_ref(c->also[k->nalso]);
    pthread_mutex_unlock(&c->keys_lock);
}

static void keys_drop(held_keys *k)
{
    mt_crypt_key_free(k->key);
    mt_crypt_key_free(k->old);
    while (k->nalso)
        mt_crypt_key_free(k->also[--k->nalso]);
}

mt_crypt_key *mt_crypt_writer_take(mt_store *st, unsigned *epoch)
{
    mt_crypt *c = (mt_crypt *)st;
    mt_crypt_key *key;

    pthread_mutex_lock(&c->keys_lock);
    key = mt_crypt_key_ref(c->key);
    *epoch = c->epoch;
    c->writing_cur++;
    pthread_mutex_unlock(&c->keys_lock);
    return key;
}

void mt_crypt_writer_drop(mt_store *st, mt_crypt_key *key, unsigned epoch)
{
    mt_crypt *c = (mt_crypt *)st;

    pthread_mutex_lock(&c->keys_lock);
    if (epoch == c->epoch)
        c->writing_cur--;
    else if (--c->writing_old == 0)
        pthread_cond_broadcast(&c->keys_idle);
    pthread_mutex_unlock(&c->keys_lock);
    mt_crypt_key_free(key);
}

static int key_for(unsigned char material[MT_CRYPT_KEY], const held_keys *k,
                   const mt_crypt_header *h, const char *rel)
{
    char id[MT_CRYPT_ID * 2 + 1], given[MT_CRYPT_ID * 2 + 1];
    unsigned i;
    int rc;

    if ((rc = mt_crypt_key_reader(material, k->key, h)) != 0 ||
        (k->old && (rc = mt_crypt_key_reader(material, k->old, h)) != 0))
        return rc;
    for (i = 0; i < k->nalso; i++)
        if ((rc = mt_crypt_key_reader(material, k->also[i], h)) != 0)
            return rc;
    mt_crypt_hex(id, h->key_id, MT_CRYPT_ID);
    mt_crypt_key_id(given, k->key);
    if (h->kdf == MT_CRYPT_KDF_PASS)
        return mt_error_set(MT_ECRYPT,
                            "%s%s is encrypted with key %s (from a passphrase), not the key given "
                            "(%s%s): give that passphrase in MEMTOOL_PASSPHRASE",
                            MT_STORE_SHOWN(rel), id, *given ? "key " : "a passphrase", given);
    return mt_error_set(MT_ECRYPT,
                        "%s%s is encrypted with key %s, not the key given (%s%s): give that "
                        "key with --key-file",
                        MT_STORE_SHOWN(rel), id, *given ? "key " : "a passphrase", given);
}

/* Seal plain into a new malloc'd file: *h's memory id and generation, a
 * fresh nonce, and the writing key (keeping salt when given). */
int mt_crypt_seal(char **out, size_t *out_len, mt_crypt_key *key, mt_crypt_header *h,
                  const unsigned char *salt, const char *plain, size_t len)
{
    unsigned char material[MT_CRYPT_KEY], *p = NULL;
    unsigned long long clen;
    int rc;

    *out = NULL;
    if (len > SIZE_MAX - MT_CRYPT_OVERHEAD - 1)
        return mt_error_set(MT_ENOMEM, "out of memory encrypting a file");
    if ((rc = mt_crypt_key_writer(material, h, key, salt)) < 0)
        goto done;
    randombytes_buf(h->nonce, sizeof(h->nonce));
    if (!(p = malloc(len + MT_CRYPT_OVERHEAD + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory encrypting a file");
        goto done;
    }
    header_write(p, h);
    crypto_aead_xchacha20poly1305_ietf_encrypt(p + MT_CRYPT_HEADER, &clen,
                                               (const unsigned char *)plain, len, p,
                                               MT_CRYPT_HEADER, NULL, h->nonce, material);
    *out = (char *)p;
    *out_len = MT_CRYPT_HEADER + (size_t)clen;
done:
    sodium_memzero(material, sizeof(material));
    return rc;
}

void (*mt_crypt_unseal_hook)(void);

/* Open a sealed file: *plain malloc'd and NUL-terminated. */
int mt_crypt_unseal(char **plain, size_t *plain_len, mt_crypt_header *h, mt_crypt *c,
                    const char *data, size_t len, const char *rel)
{
    unsigned char material[MT_CRYPT_KEY];
    held_keys k;
    unsigned long long plen;
    unsigned char *p = NULL;
    int rc;

    *plain = NULL;
    *plain_len = 0;
    if ((rc = mt_crypt_header_read(h, (const unsigned char *)data, len, rel)) < 0)
        return rc;
    keys_take(c, &k);
    if ((rc = key_for(material, &k, h, rel)) <= 0) {
        rc = rc < 0 ? rc : MT_ECRYPT; /* key_for said why */
        goto done;
    }
    if (!(p = malloc(len - MT_CRYPT_OVERHEAD + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory decrypting a file");
        goto done;
    }
    if (mt_crypt_unseal_hook)
        mt_crypt_unseal_hook();
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            p, &plen, NULL, (const unsigned char *)data + MT_CRYPT_HEADER, len - MT_CRYPT_HEADER,
            (const unsigned char *)data, MT_CRYPT_HEADER, h->nonce, material) != 0) {
        free(p);
        p = NULL;
        rc = mt_error_set(MT_ECRYPT,
                          "%s%s failed its integrity check: its content or header was changed "
                          "outside memtool (or the file is damaged); it is not shown",
                          MT_STORE_SHOWN(rel));
        goto done;
    }
    p[plen] = '\0';
    *plain = (char *)p;
    *plain_len = (size_t)plen;
    rc = 0;
done:
    sodium_memzero(material, sizeof(material));
    keys_drop(&k);
    return rc;
}

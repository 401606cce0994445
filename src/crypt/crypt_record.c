/*
 * The store's record that it is encrypted (store.h, `encryption`): made
 * when a store is first opened with a key, so that encryption is a
 * property of the store and not of the process that opens it. Every later
 * open checks it: one without a key is refused (no ciphertext shown, no
 * plaintext written next to the sealed files), one with another key is
 * refused at once, before any file is read.
 *
 * The record holds what a header holds of the key and nothing secret, as
 * restic's and age's do: "memtool-encryption 1 key ID" for a key file (ID
 * its BLAKE2b id), "memtool-encryption 1 passphrase ID SALT" for a
 * passphrase (SALT for Argon2id; ID the id of the key derived with it, the
 * verifier). A wrong passphrase costs its one derivation to refuse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "contract/store_contract.h"
#include "crypt/crypt.h"

#define RECORD_TAG "memtool-encryption 1"

/* How long an open waits for a change holding the store's lock. */
#define RECORD_LOCK_MS 5000

static int has_record(const mt_store *st)
{
    return st->version >= 7 && st->encryption;
}

static void record_format(char out[MT_STORE_RECORD_MAX], const mt_crypt_header *h)
{
    char id[MT_CRYPT_ID * 2 + 1], salt[MT_CRYPT_SALT * 2 + 1];

    mt_crypt_hex(id, h->key_id, MT_CRYPT_ID);
    if (h->kdf == MT_CRYPT_KDF_PASS) {
        mt_crypt_hex(salt, h->salt, MT_CRYPT_SALT);
        snprintf(out, MT_STORE_RECORD_MAX, RECORD_TAG " passphrase %s %s", id, salt);
    } else
        snprintf(out, MT_STORE_RECORD_MAX, RECORD_TAG " key %s", id);
}

static int hex_field(unsigned char *out, size_t n, const char *text, size_t len)
{
    size_t got = 0;

    return len == n * 2 && sodium_hex2bin(out, n, text, len, NULL, &got, NULL) == 0 && got == n
               ? 0
               : -1;
}

static int record_parse(mt_crypt_header *h, const char *rec)
{
    const char *p = rec + sizeof(RECORD_TAG " ") - 1;

    memset(h, 0, sizeof(*h));
    if (strncmp(rec, RECORD_TAG " ", sizeof(RECORD_TAG " ") - 1) != 0)
        goto bad;
    if (strncmp(p, "key ", 4) == 0) {
        h->kdf = MT_CRYPT_KDF_KEY;
        if (hex_field(h->key_id, MT_CRYPT_ID, p + 4, strlen(p + 4)) < 0)
            goto bad;
        return 0;
    }
    if (strncmp(p, "passphrase ", 11) == 0) {
        p += 11;
        h->kdf = MT_CRYPT_KDF_PASS;
        if (strlen(p) != MT_CRYPT_ID * 2 + 1 + MT_CRYPT_SALT * 2 || p[MT_CRYPT_ID * 2] != ' ' ||
            hex_field(h->key_id, MT_CRYPT_ID, p, MT_CRYPT_ID * 2) < 0 ||
            hex_field(h->salt, MT_CRYPT_SALT, p + MT_CRYPT_ID * 2 + 1, MT_CRYPT_SALT * 2) < 0)
            goto bad;
        return 0;
    }
bad:
    return mt_error_set(MT_ECRYPT,
                        "the store's encryption record is damaged or from a newer memtool "
                        "(\"%.60s\"): restore it from a backup, or upgrade memtool",
                        rec);
}

/* Whether key (or a key it accepts) is the one h names; else why not. */
static int key_matches(const mt_crypt_header *h, mt_crypt_key *key)
{
    char id[MT_CRYPT_ID * 2 + 1], given[MT_CRYPT_ID * 2 + 1];
    int rc;

    if ((rc = mt_crypt_key_reader(NULL, key, h)) != 0)
        return rc < 0 ? rc : 0;
    mt_crypt_hex(id, h->key_id, MT_CRYPT_ID);
    mt_crypt_key_id(given, key);
    if (h->kdf == MT_CRYPT_KDF_PASS)
        return mt_error_set(
            MT_ECRYPT,
            "the store is encrypted with a passphrase (key %s), and %s is not "
            "it: give that passphrase in MEMTOOL_PASSPHRASE",
            id, mt_crypt_key_is_passphrase(key) ? "the passphrase given" : "the key file given");
    if (mt_crypt_key_is_passphrase(key))
        return mt_error_set(MT_ECRYPT,
                            "the store is encrypted with key %s, not with a passphrase: give "
                            "that key with --key-file PATH (or MEMTOOL_KEY_FILE) and unset "
                            "MEMTOOL_PASSPHRASE",
                            id);
    return mt_error_set(MT_ECRYPT,
                        "the store is encrypted with key %s, not the key given (key %s): give "
                        "that key with --key-file PATH (or MEMTOOL_KEY_FILE)",
                        id, given);
}

int mt_crypt_record_settle(mt_store *inner, mt_crypt_key *key)
{
    unsigned char material[MT_CRYPT_KEY];
    char rec[MT_STORE_RECORD_MAX], *got = NULL, *plain = NULL;
    mt_crypt_header h;
    int rc, found, tries = 0;

    if (!has_record(inner) || mt_crypt_record_off)
        return 0;
again:
    if ((rc = inner->encryption(inner, &got, NULL, 0, RECORD_LOCK_MS)) < 0)
        return rc;
    if (rc == 1)
        goto check;
    /* No record: a new store, a plain one, or one a memtool before the
     * record encrypted. One memory tells which. */
    if ((found = mt_crypt_probe(&h, &plain, inner)) < 0) {
        rc = found;
        goto done;
    }
    if (found == 2) {
        rc = mt_error_set(MT_ECRYPT,
                          "the store holds memories that are not encrypted (" MT_STORE_SHOWN_ROOT
                          "/%s is "
                          "one), so it cannot be opened with a key: to encrypt them, copy "
                          "them into a new store with memtool --key-file KEY --store SOURCE "
                          "migrate --from-plain --to NEW; to use it as it is, open it without "
                          "a key",
                          plain ? plain : "");
        goto done;
    }
    if (found == 1) {
        if ((rc = key_matches(&h, key)) < 0)
            goto done;
    } else {
        rc = mt_crypt_key_writer(material, &h, key, NULL);
        sodium_memzero(material, sizeof(material));
        if (rc < 0)
            goto done;
    }
    record_format(rec, &h);
    /* A new store is claimed only while it is still empty under the lock:
     * a writer without the key may have put a memory there since the look. */
    if ((rc = inner->encryption(inner, &got, rec, found == 1 ? 0 : MT_STORE_RECORD_IF_EMPTY,
                                RECORD_LOCK_MS)) < 0) {
        if (rc == MT_ECONFLICT && ++tries < 3) {
            free(got);
            free(plain);
            got = plain = NULL;
            goto again; /* look again: that memory tells what the store is now */
        }
        /* A store encrypted before the record, which cannot be written now
         * (read-only): its files still say what they are. */
        if (found == 1)
            rc = 0;
        goto done;
    }
check:
    /* Ours, or that of a process that recorded first. */
    if ((rc = record_parse(&h, got)) == 0)
        rc = key_matches(&h, key);
done:
    free(got);
    free(plain);
    return rc;
}

int mt_crypt_record_off;

int mt_crypt_record_refuse(mt_store *st)
{
    mt_crypt_header h;
    char *got = NULL, *plain = NULL, id[MT_CRYPT_ID * 2 + 1];
    int rc;

    if (!has_record(st) || mt_crypt_record_off)
        return 0;
    if ((rc = st->encryption(st, &got, NULL, 0, RECORD_LOCK_MS)) < 0)
        return rc;
    if (rc == 1)
        rc = record_parse(&h, got) < 0 ? MT_ECRYPT : 1;
    else if ((rc = mt_crypt_probe(&h, &plain, st)) == 2 || rc < 0)
        /* Plain; or a store whose files the look could not reach (a tree
         * deeper than a walk goes before its first file): that store opens
         * as it did before records were kept, and a sealed file in it is
         * refused when read, as it always was. */
        rc = 0;
    free(got);
    free(plain);
    if (rc <= 0)
        return rc;
    mt_crypt_hex(id, h.key_id, MT_CRYPT_ID);
    return mt_error_set(MT_ECRYPT,
                        "the store is encrypted (with %s %s), and no key was given: give its "
                        "key with --key-file PATH (or MEMTOOL_KEY_FILE), or its passphrase in "
                        "MEMTOOL_PASSPHRASE",
                        h.kdf == MT_CRYPT_KDF_PASS ? "a passphrase, key" : "key", id);
}

int mt_crypt_record_rekey(mt_store *inner, mt_crypt_key *new_key)
{
    unsigned char material[MT_CRYPT_KEY];
    char rec[MT_STORE_RECORD_MAX], *got = NULL;
    mt_crypt_header h;
    int rc;

    if (!has_record(inner))
        return 0;
    memset(&h, 0, sizeof(h));
    rc = mt_crypt_key_writer(material, &h, new_key, NULL);
    sodium_memzero(material, sizeof(material));
    if (rc < 0)
        return rc;
    record_format(rec, &h);
    rc = inner->encryption(inner, &got, rec, 1, RECORD_LOCK_MS);
    free(got);
    return rc;
}

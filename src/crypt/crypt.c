/*
 * Encryption at rest: a store over any store. Every file the inner store
 * holds is a header and the memory's content sealed with
 * XChaCha20-Poly1305 (the header is the associated data), and every version
 * its history keeps is such a file too. What callers see is the plaintext:
 * sizes, listings, usage, limits, SHA-256 preconditions and versions are
 * the memories', byte for byte as without encryption (each file is exactly
 * MT_CRYPT_OVERHEAD bytes more, which the inner store is told through
 * op->file_overhead and which is taken off what it reports).
 *
 * Nothing reaches the inner store unsealed: create and edit hand it only
 * what seal() made. Nothing unsealed reaches a caller: a file without the
 * header, with a key not given, or failing its tag is an MT_ECRYPT error
 * naming the path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "contract/store_contract.h"
#include "crypt/crypt.h"
#include "crypt/crypt_search.h"
#include "crypt/crypt_layer.h"
#include "machinery/history.h"
#include "util/sha256.h"

/* The largest file opened: content is authenticated whole, so it is read
 * whole; memory stays bounded whatever a file put there from outside holds. */
#define READ_MAX ((uint64_t)256 * 1024 * 1024)

static const unsigned char MAGIC[4] = {'M', 'T', 'C', 'R'};

/* Files whose memory id was checked, by path: a file with the same nonce at
 * the same path is the very file checked (every write draws a new nonce),
 * so a view need not ask the store again. A slot holds one path; a
 * collision only costs a check. */
#define CHECKED_SLOTS 256

typedef struct {
    char path[64]; /* paths longer are not kept */
    unsigned char nonce[24];
} checked;

#define ALSO_MAX 8

typedef struct {
    mt_store base;
    mt_store *inner;
    pthread_mutex_t checked_lock;
    checked checked[CHECKED_SLOTS];
    /* The keys, which a rekey changes while other threads of the handle
     * read and write: each operation takes references under keys_lock and
     * works with those, so a key is never freed under it. */
    pthread_mutex_t keys_lock;
    pthread_cond_t keys_idle; /* writing_old fell to 0 */
    mt_crypt_key *key;        /* writes with it, reads with it and those it accepts */
    mt_crypt_key *old;        /* after a rekey: the key before, still read */
    /* Keys read besides these two: a rekey's own while it runs (what it
     * re-encrypted already), and it stays when the rekey fails part way
     * (what it did re-encrypt), until a rekey succeeds; past ALSO_MAX the
     * oldest is dropped. */
    mt_crypt_key *also[ALSO_MAX];
    unsigned nalso;
    pthread_mutex_t rekey_lock; /* one rekey of the handle at a time */
    unsigned epoch;             /* rekeys done: which of the two a writer holds */
    unsigned writing_cur;       /* writes sealing with key */
    unsigned writing_old;       /* writes sealing with old (begun before the last rekey) */
} mt_crypt;

int mt_store_is_crypt(const mt_store *st);
static int c_control(mt_store *st, int request, void *arg);

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
    memcpy(p, MAGIC, 4);
    p[4] = MT_CRYPT_FORMAT;
    p[5] = h->kdf;
    memcpy(p + 8, h->key_id, MT_CRYPT_ID);
    memcpy(p + 16, h->salt, MT_CRYPT_SALT);
    memcpy(p + 32, h->memory_id, strnlen(h->memory_id, MT_CRYPT_MEMID));
    put_u64(p + 52, h->generation);
    memcpy(p + 60, h->nonce, sizeof(h->nonce));
}

/* Parse the header of data (len bytes) at rel. */
static int header_read(mt_crypt_header *h, const unsigned char *p, size_t len, const char *rel)
{
    if (len < MT_CRYPT_HEADER || memcmp(p, MAGIC, 4) != 0)
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
static int seal(char **out, size_t *out_len, mt_crypt_key *key, mt_crypt_header *h,
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
static int unseal(char **plain, size_t *plain_len, mt_crypt_header *h, mt_crypt *c,
                  const char *data, size_t len, const char *rel)
{
    unsigned char material[MT_CRYPT_KEY];
    held_keys k;
    unsigned long long plen;
    unsigned char *p = NULL;
    int rc;

    *plain = NULL;
    *plain_len = 0;
    if ((rc = header_read(h, (const unsigned char *)data, len, rel)) < 0)
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

static uint64_t minus(uint64_t size, uint64_t files)
{
    uint64_t o = files * MT_CRYPT_OVERHEAD;

    return size > o ? size - o : 0;
}

/* Reading the inner store's file whole. */
typedef struct {
    char *data;
    size_t len;
    const char *rel;
} whole_read;

static int collect(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    whole_read *w = payload;
    char *grown;

    (void)last;
    if (off + len > READ_MAX)
        return mt_error_set(MT_ELIMIT,
                            "%s%s is over %llu bytes, more than an encrypted file may be",
                            MT_STORE_SHOWN(w->rel), (unsigned long long)READ_MAX);
    if (!(grown = realloc(w->data, (size_t)off + len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory reading a file");
    w->data = grown;
    memcpy(w->data + off, data, len);
    w->len = (size_t)off + len;
    w->data[w->len] = '\0';
    return 0;
}

static int read_sealed(mt_crypt *c, char **out, size_t *len, const char *rel)
{
    whole_read w = {NULL, 0, rel};
    uint64_t size;
    int rc;

    *out = NULL;
    *len = 0;
    rc = c->inner->read(c->inner, &size, rel, (size_t)READ_MAX, collect, &w);
    if (rc < 0) {
        free(w.data);
        return rc;
    }
    if (!w.data && !(w.data = calloc(1, 1)))
        return mt_error_set(MT_ENOMEM, "out of memory reading a file");
    *out = w.data;
    *len = w.len;
    return 0;
}

static checked *checked_slot(mt_crypt *c, const char *rel)
{
    uint32_t hash = 2166136261u;
    const char *p;

    for (p = rel; *p; p++)
        hash = (hash ^ (unsigned char)*p) * 16777619u;
    return &c->checked[hash % CHECKED_SLOTS];
}

/* A remove or rename changes which memory the store records where: a file
 * checked before may now be at a path recorded for another memory. */
static void checked_forget(mt_crypt *c)
{
    pthread_mutex_lock(&c->checked_lock);
    memset(c->checked, 0, sizeof(c->checked));
    pthread_mutex_unlock(&c->checked_lock);
}

/* check_memory's answer when the record names another memory (its message
 * is set, as MT_ECRYPT's): open_current looks once more. */
#define MT_ESWAPPED (-1000)

/* The store's own record of which memory is at rel, against the header. */
static int check_memory(mt_crypt *c, const mt_crypt_header *h, const char *rel)
{
    checked *slot = checked_slot(c, rel);
    size_t n = strlen(rel);
    char id[24];
    int rc, seen;

    if (!c->inner->memory_id)
        return 0;
    pthread_mutex_lock(&c->checked_lock);
    seen = n < sizeof(slot->path) && strcmp(slot->path, rel) == 0 &&
           memcmp(slot->nonce, h->nonce, sizeof(h->nonce)) == 0;
    pthread_mutex_unlock(&c->checked_lock);
    if (seen)
        return 0;
    if ((rc = c->inner->memory_id(c->inner, id, rel)) == 0)
        return 0;
    if (rc < 0)
        return rc;
    if (strcmp(id, h->memory_id) == 0) {
        if (n < sizeof(slot->path)) {
            pthread_mutex_lock(&c->checked_lock);
            memcpy(slot->path, rel, n + 1);
            memcpy(slot->nonce, h->nonce, sizeof(h->nonce));
            pthread_mutex_unlock(&c->checked_lock);
        }
        return 0;
    }
    mt_error_set(MT_ECRYPT,
                 "%s%s failed its integrity check: it holds the content of memory %s, but "
                 "the store has memory %s there (files were swapped or copied outside "
                 "memtool); it is not shown",
                 MT_STORE_SHOWN(rel), h->memory_id, id);
    return MT_ESWAPPED;
}

static int open_current(mt_crypt *c, char **plain, size_t *plain_len, const char *rel)
{
    mt_crypt_header h;
    char *sealed;
    size_t len;
    int rc, tries;

    /* The file is read, then the record asked: a rename and a create at rel
     * in between (by memtool) make them disagree, and a second read sees
     * the new file. */
    for (tries = 0; tries < 2; tries++) {
        if ((rc = read_sealed(c, &sealed, &len, rel)) < 0)
            return rc;
        if ((rc = unseal(plain, plain_len, &h, c, sealed, len, rel)) == 0 &&
            (rc = check_memory(c, &h, rel)) < 0) {
            sodium_memzero(*plain, *plain_len);
            free(*plain);
            *plain = NULL;
        }
        free(sealed);
        if (rc != MT_ESWAPPED)
            break;
    }
    return rc == MT_ESWAPPED ? MT_ECRYPT : rc;
}

static void sha256_hex(char out[65], const void *data, size_t len)
{
    mt_sha256_hex(out, data, len);
}

static int c_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *path)
{
    mt_crypt *c = (mt_crypt *)st;
    int rc = c->inner->stat(c->inner, type, size, path);

    if (rc == 0 && *type == MT_NODE_FILE)
        *size = minus(*size, 1);
    return rc;
}

static int c_read(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                  void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    char *plain;
    size_t len, off = 0;
    int rc;

    if ((rc = open_current(c, &plain, &len, path)) < 0)
        return rc;
    *size = len;
    /* In pieces as the inner store would give them, so a view stays one code path. */
    do {
        size_t n = len <= whole ? len : len - off < MT_STORE_PIECE ? len - off : MT_STORE_PIECE;
        rc = cb(payload, plain + off, n, off, off + n == len);
        off += n;
    } while (rc == 0 && off < len);
    sodium_memzero(plain, len);
    free(plain);
    return rc < 0 ? rc : 0;
}

/* The memory a sealed file names, from its header alone (not verified):
 * what the inner store records for a file it meets without a record. */
static int header_memory_id(char out[24], const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t i;

    if (len < MT_CRYPT_HEADER + MT_CRYPT_TAG || memcmp(p, MAGIC, 4) != 0 ||
        p[4] != MT_CRYPT_FORMAT || memcmp(p + 32, "mem_", 4) != 0)
        return 0;
    for (i = 4; i < MT_CRYPT_MEMID; i++)
        if (!((p[32 + i] >= '0' && p[32 + i] <= '9') || (p[32 + i] >= 'a' && p[32 + i] <= 'f')))
            return 0;
    memcpy(out, p + 32, MT_CRYPT_MEMID);
    out[MT_CRYPT_MEMID] = '\0';
    return 1;
}

/* Every change the inner store is given: the overhead told, the ids of
 * memories kept even with history off (check_memory reads them). */
static void inner_op(mt_store_op *op)
{
    op->file_overhead = MT_CRYPT_OVERHEAD;
    op->track_ids = 1;
    op->memory_id_of = header_memory_id;
}

/* Run an inner change with inner_op and the plaintext precondition taken
 * off (the layer checks it, or gives the inner store the ciphertext's). */
#define INNER_OP(op, inner_expect)                                                                 \
    const char *saved_expect_ = (op)->expect_sha256;                                               \
    inner_op(op);                                                                                  \
    (op)->expect_sha256 = (inner_expect)
#define INNER_DONE(op) (op)->expect_sha256 = saved_expect_

static int c_create(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len)
{
    mt_crypt *c = (mt_crypt *)st;
    const char *given_id = op->memory_id;
    mt_crypt_header h;
    mt_crypt_key *key;
    unsigned epoch;
    char *sealed;
    size_t slen;
    int rc;

    memset(&h, 0, sizeof(h));
    /* A restore brings back its memory's id; a new memory gets one here, so
     * that the header and the store's record name the same memory. */
    if (given_id)
        snprintf(h.memory_id, sizeof(h.memory_id), "%s", given_id);
    else
        mt_hist_new_memory_id(h.memory_id);
    h.generation = 1;
    key = mt_crypt_writer_take(st, &epoch);
    if ((rc = seal(&sealed, &slen, key, &h, NULL, data, len)) == 0) {
        INNER_OP(op, op->expect_sha256);
        op->memory_id = h.memory_id;
        rc = c->inner->create(c->inner, op, path, sealed, slen);
        op->memory_id = given_id;
        INNER_DONE(op);
        free(sealed);
    }
    mt_crypt_writer_drop(st, key, epoch);
    return rc;
}

typedef struct {
    mt_crypt *c;
    mt_store_op *op;
    const char *rel, *expect;
    mt_edit_cb cb;
    void *payload;
    mt_crypt_key *rekey; /* a rekey: seal with this key, content unchanged */
    int unchanged;       /* the new content was the old: the file was handed back as it was */
    int sealed;          /* a rekey sealed it with the new key */
    const char *memory;  /* the memory the store has at rel, or NULL when it keeps none */
    mt_crypt_key *key;   /* an edit: the writing key */
} edit_args;

/* Before an edit, the memory the store has at rel: the file the edit reads
 * must hold that memory's content, as a view's must (check_memory). Asked
 * before the edit, not in its callback, which a SQL store runs inside its
 * own transaction. 1 with out filled, 0 when the store keeps none. */
static int memory_at(mt_crypt *c, char out[24], const char *rel)
{
    int rc;

    if (!c->inner->memory_id)
        return 0;
    rc = c->inner->memory_id(c->inner, out, rel);
    return rc == MT_ENOTFOUND ? 0 : rc; /* the edit says so in its own words */
}

/* The content the edit read is another memory's: files were swapped. */
static int edit_swapped(const edit_args *a, const mt_crypt_header *h)
{
    if (!a->memory || strcmp(a->memory, h->memory_id) == 0)
        return 0;
    return mt_error_set(MT_ECRYPT,
                        "%s%s failed its integrity check: it holds the content of memory %s, "
                        "but the store has memory %s there (files were swapped or copied outside "
                        "memtool, or it was replaced meanwhile); it was not changed",
                        MT_STORE_SHOWN(a->rel), h->memory_id, a->memory);
}

static int dup_sealed(char **out, size_t *out_len, const char *data, size_t len)
{
    if (!(*out = malloc(len ? len : 1)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(*out, data, len);
    *out_len = len;
    return 0;
}

static int edit_sealed(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    edit_args *a = payload;
    mt_crypt_header h;
    char *plain = NULL, *next = NULL;
    size_t plen, nlen = 0;
    int rc;

    *out = NULL;
    if (a->rekey) {
        /* Done by an earlier run: left as it is. */
        if ((rc = header_read(&h, (const unsigned char *)data, len, a->rel)) < 0)
            return rc;
        if ((rc = mt_crypt_key_reader(NULL, a->rekey, &h)) < 0)
            return rc;
        if (rc == 1) {
            a->unchanged = 1;
            return dup_sealed(out, out_len, data, len);
        }
    }
    if ((rc = unseal(&plain, &plen, &h, a->c, data, len, a->rel)) < 0)
        return rc;
    if ((rc = edit_swapped(a, &h)) < 0)
        goto done;
    if (a->expect) {
        char sha[65];
        sha256_hex(sha, plain, plen);
        if (strcmp(sha, a->expect) != 0) {
            memcpy(a->op->current_sha256, sha, sizeof(sha));
            rc = mt_error_set(MT_ECONFLICT, "%s was changed by someone else", a->rel);
            goto done;
        }
    }
    if (a->rekey) {
        h.generation++;
        if ((rc = seal(out, out_len, a->rekey, &h, NULL, plain, plen)) == 0)
            a->sealed = 1;
        goto done;
    }
    if ((rc = a->cb(&next, &nlen, plain, plen, a->payload)) < 0)
        goto done;
    if (nlen == plen && memcmp(next, plain, plen) == 0) {
        /* No change: the same file back, so the store sees none. */
        a->unchanged = 1;
        rc = dup_sealed(out, out_len, data, len);
    } else {
        h.generation++;
        rc = seal(out, out_len, a->key, &h, h.kdf == MT_CRYPT_KDF_PASS ? h.salt : NULL, next, nlen);
    }
done:
    if (plain) {
        sodium_memzero(plain, plen);
        free(plain);
    }
    if (next) {
        sodium_memzero(next, nlen);
        free(next);
    }
    return rc;
}

static int c_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    edit_args a = {c, op, path, op->expect_sha256, cb, payload, NULL, 0, 0, NULL, NULL};
    char memory[24];
    int rc;

    if ((rc = memory_at(c, memory, path)) < 0)
        return rc;
    a.memory = rc == 1 ? memory : NULL;
    {
        unsigned epoch;
        INNER_OP(op, NULL);
        a.key = mt_crypt_writer_take(st, &epoch);
        rc = c->inner->edit(c->inner, op, path, edit_sealed, &a);
        mt_crypt_writer_drop(st, a.key, epoch);
        INNER_DONE(op);
    }
    return rc;
}

/* A remove or rename with a precondition on the plaintext: checked here,
 * and the inner store given the SHA-256 of the very file checked, so that
 * its own check (atomic with the change) fails if the file changed since. */
static int sealed_expect(mt_crypt *c, mt_store_op *op, char inner[65], const char *rel)
{
    char *sealed = NULL, *plain = NULL, sha[65];
    size_t slen, plen;
    mt_crypt_header h;
    int rc;

    if ((rc = read_sealed(c, &sealed, &slen, rel)) < 0)
        return rc;
    if ((rc = unseal(&plain, &plen, &h, c, sealed, slen, rel)) == 0) {
        sha256_hex(sha, plain, plen);
        if (strcmp(sha, op->expect_sha256) != 0) {
            memcpy(op->current_sha256, sha, sizeof(sha));
            rc = mt_error_set(MT_ECONFLICT, "%s was changed by someone else", rel);
        } else {
            sha256_hex(inner, sealed, slen);
        }
        sodium_memzero(plain, plen);
        free(plain);
    }
    free(sealed);
    return rc;
}

/* After the inner store's MT_ECONFLICT: what the file holds now, as plaintext. */
static void conflict_now(mt_crypt *c, mt_store_op *op, const char *rel)
{
    char *plain;
    size_t len;

    op->current_sha256[0] = '\0';
    if (open_current(c, &plain, &len, rel) == 0) {
        sha256_hex(op->current_sha256, plain, len);
        free(plain);
    }
}

static int c_remove(mt_store *st, mt_store_op *op, const char *path)
{
    mt_crypt *c = (mt_crypt *)st;
    char inner[65];
    int rc;

    if (op->expect_sha256 && (rc = sealed_expect(c, op, inner, path)) < 0) {
        if (rc == MT_ECONFLICT || rc == MT_ECRYPT || rc == MT_ENOMEM)
            return rc;
        /* Nothing there, a directory...: the inner store's words, as without
         * encryption (the plaintext's SHA-256 never matches a sealed file). */
        memcpy(inner, op->expect_sha256, 65);
    }
    {
        INNER_OP(op, op->expect_sha256 ? inner : NULL);
        rc = c->inner->remove(c->inner, op, path);
        INNER_DONE(op);
    }
    if (rc == 0)
        checked_forget(c);
    if (rc == MT_ECONFLICT)
        conflict_now(c, op, path);
    return rc;
}

static int c_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    mt_crypt *c = (mt_crypt *)st;
    char inner[65];
    int rc;

    if (op->expect_sha256 && (rc = sealed_expect(c, op, inner, from)) < 0) {
        if (rc == MT_ECONFLICT || rc == MT_ECRYPT || rc == MT_ENOMEM)
            return rc;
        /* A retry of a rename done when the destination holds that content;
         * else the inner store's words, as without encryption. */
        if (rc != MT_ENOTFOUND || sealed_expect(c, op, inner, to) < 0) {
            memcpy(inner, op->expect_sha256, 65);
            op->current_sha256[0] = '\0';
        }
    }
    {
        INNER_OP(op, op->expect_sha256 ? inner : NULL);
        rc = c->inner->rename(c->inner, op, from, to);
        INNER_DONE(op);
    }
    if (rc == 0)
        checked_forget(c);
    if (rc == MT_ECONFLICT)
        conflict_now(c, op, op->culprit ? to : from);
    return rc;
}

static int c_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
                  size_t max_entries)
{
    mt_crypt *c = (mt_crypt *)st;
    size_t i;
    int rc = c->inner->list(c->inner, out, path, depth, max_entries);

    if (rc < 0)
        return rc;
    for (i = 0; i < out->count; i++)
        out->entries[i].size = minus(out->entries[i].size, out->entries[i].files);
    out->size = minus(out->size, out->files);
    return 0;
}

static int c_usage(mt_store *st, mt_store_usage *out)
{
    mt_crypt *c = (mt_crypt *)st;
    int rc = c->inner->usage(c->inner, out);

    if (rc == 0)
        out->bytes = minus(out->bytes, out->files);
    return rc;
}

static void c_free(mt_store *st)
{
    mt_crypt *c = (mt_crypt *)st;

    if (!c)
        return;
    c->inner->free(c->inner);
    mt_crypt_key_free(c->key);
    mt_crypt_key_free(c->old);
    while (c->nalso)
        mt_crypt_key_free(c->also[--c->nalso]);
    pthread_mutex_destroy(&c->checked_lock);
    pthread_mutex_destroy(&c->keys_lock);
    pthread_mutex_destroy(&c->rekey_lock);
    pthread_cond_destroy(&c->keys_idle);
    free(c);
}

/* A version's sealed content, opened, and checked to be that memory's. */
static int version_open(mt_crypt *c, char **out, size_t *len, const mt_version *v)
{
    char *rel, *sealed;
    size_t slen, n = (v->path ? strlen(v->path) : 0) + sizeof(v->memory_id) + 64;
    mt_crypt_header h;
    int rc;

    /* The path it was at, for messages: the memory id alone tells a person
     * nothing. */
    if (!(rel = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    if (v->path && *v->path)
        snprintf(rel, n, "(version %lld of " MT_STORE_SHOWN_ROOT "/%s, %s)", (long long)v->id,
                 v->path, v->memory_id);
    else
        snprintf(rel, n, "(version %lld of %s)", (long long)v->id, v->memory_id);
    if ((rc = c->inner->version_content(c->inner, &sealed, &slen, v->id)) < 0) {
        free(rel);
        return rc;
    }
    rc = unseal(out, len, &h, c, sealed, slen, rel);
    free(rel);
    free(sealed);
    /* A file the history first met as a change from outside memtool (made
     * with history off) was given an id by the history, not by this layer. */
    if (rc == 0 && strcmp(h.memory_id, v->memory_id) != 0 && strcmp(v->actor, "external") != 0) {
        free(*out);
        *out = NULL;
        return mt_error_set(MT_ECRYPT,
                            "version %lld failed its integrity check: it holds the content of "
                            "memory %s, not of %s",
                            (long long)v->id, h.memory_id, v->memory_id);
    }
    return rc;
}

/* A version as callers see it: the plaintext's size and SHA-256. */
static int version_plain(mt_crypt *c, mt_version *v)
{
    char *plain;
    size_t len;
    int rc;

    /* The sizes of a redacted version: the size is all that is left. */
    v->content_size = minus(v->content_size, v->content_size ? 1 : 0);
    if (v->redacted || !v->content_sha256[0])
        return 0;
    if ((rc = version_open(c, &plain, &len, v)) < 0)
        return rc;
    sha256_hex(v->content_sha256, plain, len);
    v->content_size = len;
    sodium_memzero(plain, len);
    free(plain);
    return 0;
}

static void versions_drop(mt_version *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(v[i].path);
        free(v[i].previous_path);
        free(v[i].actor);
    }
    free(v);
}

static int c_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *q)
{
    mt_crypt *c = (mt_crypt *)st;
    size_t i;
    int rc = c->inner->versions(c->inner, out, count, q);

    for (i = 0; rc == 0 && i < *count; i++)
        rc = version_plain(c, &(*out)[i]);
    if (rc < 0 && *out) {
        versions_drop(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

static int c_version_get(mt_store *st, mt_version *out, int64_t id)
{
    mt_crypt *c = (mt_crypt *)st;
    int rc = c->inner->version_get(c->inner, out, id);

    if (rc == 0 && (rc = version_plain(c, out)) < 0) {
        free(out->path);
        free(out->previous_path);
        free(out->actor);
        memset(out, 0, sizeof(*out));
    }
    return rc;
}

static int c_version_content(mt_store *st, char **out, size_t *len, int64_t id)
{
    mt_crypt *c = (mt_crypt *)st;
    mt_version v;
    int rc;

    *out = NULL;
    *len = 0;
    if ((rc = c->inner->version_get(c->inner, &v, id)) < 0)
        return rc;
    if (v.redacted || !v.content_sha256[0])
        rc = c->inner->version_content(c->inner, out, len, id); /* its own error, or nothing */
    else
        rc = version_open(c, out, len, &v);
    free(v.path);
    free(v.previous_path);
    free(v.actor);
    return rc;
}

static int c_redact(mt_store *st, mt_store_op *op, int64_t id)
{
    mt_crypt *c = (mt_crypt *)st;

    op->file_overhead = MT_CRYPT_OVERHEAD;
    return c->inner->redact(c->inner, op, id);
}

static int c_catch_up(mt_store *st, mt_store_op *op, const char *path)
{
    mt_crypt *c = (mt_crypt *)st;

    inner_op(op);
    return c->inner->catch_up(c->inner, op, path);
}

typedef struct {
    mt_walk_cb cb;
    void *payload;
} walk_args;

static int walk_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    walk_args *a = payload;

    return a->cb(a->payload, path, type, type == MT_NODE_FILE ? minus(size, 1) : size);
}

static int c_walk(mt_store *st, const char *path, mt_walk_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    walk_args a = {cb, payload};

    return c->inner->walk(c->inner, path, walk_one, &a);
}

static int c_memory_id(mt_store *st, char out[24], const char *path)
{
    mt_crypt *c = (mt_crypt *)st;

    return c->inner->memory_id ? c->inner->memory_id(c->inner, out, path) : 0;
}

/* Expiry: the inner store keeps the times; sizes are the memories'. */
static int c_touch(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms)
{
    mt_crypt *c = (mt_crypt *)st;

    return c->inner->touch(c->inner, recorded, path, now_ms);
}

static int c_times(mt_store *st, const char *path, int64_t accessed_ms, int64_t modified_ms)
{
    mt_crypt *c = (mt_crypt *)st;

    return c->inner->times(c->inner, path, accessed_ms, modified_ms);
}

typedef struct {
    mt_idle_cb cb;
    void *payload;
} idle_state;

static int c_idle_one(void *payload, const char *path, uint64_t size, int64_t last_access_ms,
                      int64_t modified_ms)
{
    idle_state *s = payload;

    return s->cb(s->payload, path, size > MT_CRYPT_OVERHEAD ? size - MT_CRYPT_OVERHEAD : 0,
                 last_access_ms, modified_ms);
}

static int c_idle(mt_store *st, const char *path, mt_idle_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    idle_state s = {cb, payload};

    return c->inner->idle(c->inner, path, c_idle_one, &s);
}

static int c_version_count(mt_store *st, uint64_t *out)
{
    mt_crypt *c = (mt_crypt *)st;

    return c->inner->version_count(c->inner, out);
}

static int search_open(void *payload, char **plain, size_t *len, const char *path)
{
    return open_current(payload, plain, len, path);
}

/* Never the inner store's index: it would hold sealed bytes (crypt_search.c). */
static int c_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                    const char *path, size_t limit)
{
    mt_crypt *c = (mt_crypt *)st;

    return mt_crypt_search(out, count, c->inner, search_open, c, q, path, limit);
}

mt_store *mt_crypt_inner(mt_store *st)
{
    return ((mt_crypt *)st)->inner;
}

static mt_store *crypt_listing(mt_store *st)
{
    return mt_store_is_crypt(st) ? ((mt_crypt *)st)->inner : st;
}

int mt_crypt_seal_for(mt_crypt_key *key, char **out, size_t *out_len, const char *memory_id,
                      uint64_t generation, const char *plain, size_t len)
{
    mt_crypt_header h;

    memset(&h, 0, sizeof(h));
    snprintf(h.memory_id, sizeof(h.memory_id), "%s", memory_id);
    h.generation = generation;
    return seal(out, out_len, key, &h, NULL, plain, len);
}

int mt_store_is_crypt(const mt_store *st)
{
    return st && st->stat == c_stat;
}

int mt_store_crypt_wrap(mt_store **out, mt_store *inner, mt_crypt_key *key)
{
    mt_crypt *c;

    if (out)
        *out = NULL;
    if (!out || !inner || !key) {
        if (inner)
            inner->free(inner);
        return mt_error_set(MT_EINVAL,
                            "mt_store_crypt_wrap needs an out pointer, a store and a key");
    }
    if (inner->version < MT_STORE_CRYPT_VERSION || !inner->versions || !inner->walk) {
        inner->free(inner);
        return mt_error_set(MT_EINVAL,
                            "the store has interface version %u; encryption needs version %d with "
                            "history and walk (see memtool/store.h)",
                            inner->version, MT_STORE_CRYPT_VERSION);
    }
    if (mt_crypt_record_settle(inner, key) < 0) {
        int rc = mt_error_last()->code;
        inner->free(inner);
        return rc;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        inner->free(inner);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    c->base = *inner; /* the version, and NULL where the inner store has nothing */
    c->base.stat = c_stat;
    c->base.read = c_read;
    c->base.create = c_create;
    c->base.edit = c_edit;
    c->base.remove = c_remove;
    c->base.rename = c_rename;
    c->base.list = c_list;
    c->base.usage = c_usage;
    c->base.free = c_free;
    c->base.versions = c_versions;
    c->base.version_get = c_version_get;
    c->base.version_content = c_version_content;
    c->base.redact = inner->redact ? c_redact : NULL;
    c->base.catch_up = inner->catch_up ? c_catch_up : NULL;
    c->base.walk = c_walk;
    c->base.memory_id = c_memory_id;
    c->base.touch = inner->touch ? c_touch : NULL;
    c->base.idle = inner->idle ? c_idle : NULL;
    c->base.times = inner->version >= 7 && inner->times ? c_times : NULL;
    c->base.version_count = inner->version_count ? c_version_count : NULL;
    c->base.import = inner->version >= 6 && inner->import ? mt_crypt_import : NULL;
    c->base.search = c_search;
    c->base.control = c_control;
    /* Above the layer a version's content is never replaced: only the
     * layer's own rekey reseals the inner store's versions. */
    c->base.version_reseal = NULL;
    /* The record is the layer's alone. */
    c->base.encryption = NULL;
    c->inner = inner;
    pthread_mutex_init(&c->checked_lock, NULL);
    pthread_mutex_init(&c->keys_lock, NULL);
    pthread_mutex_init(&c->rekey_lock, NULL);
    pthread_cond_init(&c->keys_idle, NULL);
    c->key = mt_crypt_key_ref(key);
    *out = &c->base;
    return 0;
}

/* Every regular file's path, from a walk of the inner store. */
typedef struct {
    char **paths;
    size_t n, cap;
} path_list;

static int collect_path(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    path_list *l = payload;
    char **grown;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        if (!(grown = realloc(l->paths, l->cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory walking the store");
        l->paths = grown;
    }
    if (!(l->paths[l->n] = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory walking the store");
    l->n++;
    return 0;
}

static void paths_free(path_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
}

/* The first bytes of a file: its header, without reading the rest. */
typedef struct {
    unsigned char head[MT_CRYPT_HEADER + MT_CRYPT_TAG];
    size_t len;
} head_read;

static int take_head(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    head_read *h = payload;
    size_t want = sizeof(h->head) - h->len;

    (void)off;
    (void)last;
    if (len > want)
        len = want;
    memcpy(h->head + h->len, data, len);
    h->len += len;
    return h->len == sizeof(h->head) ? 1 : 0;
}

/* The header of the file at rel, read without the rest of the file: 1 with
 * *hd and *size set, 0 when it has no header (written outside memtool), or
 * an error (MT_ENOTFOUND: removed meanwhile). */
static int file_header(mt_crypt_header *hd, uint64_t *size, mt_crypt *c, const char *rel)
{
    head_read h = {{0}, 0};
    int rc;

    if ((rc = c->inner->read(c->inner, size, rel, 0, take_head, &h)) < 0)
        return rc;
    return header_read(hd, h.head, h.len, rel) == 0 ? 1 : 0;
}

/* The first memory a walk meets, looked at for a header. */
typedef struct {
    mt_store *inner;
    mt_crypt_header *h;
    char *path;
    int found; /* 1 sealed, 2 not */
} probe_walk;

#define PROBE_DONE (-1003)

static int probe_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    probe_walk *p = payload;
    head_read h = {{0}, 0};
    uint64_t got;
    int rc;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    /* A file the store never reads (more than one hard link, a FIFO or a
     * device put there, a symlink), or one removed meanwhile, says nothing of
     * the store: the next one is asked. An open must not fail on what a view
     * of that one path would refuse. */
    if ((rc = p->inner->read(p->inner, &got, path, 0, take_head, &h)) < 0)
        return rc == MT_ENOTFOUND || rc == MT_EMULTILINK || rc == MT_EUNSUPPORTED ||
                       rc == MT_ESYMLINK || rc == MT_EISDIR
                   ? 0
                   : rc;
    if (header_read(p->h, h.head, h.len, path) == 0)
        p->found = 1;
    else {
        p->found = 2;
        if (!(p->path = strdup(path)))
            return mt_error_set(MT_ENOMEM, "out of memory");
    }
    return PROBE_DONE;
}

int mt_crypt_probe(mt_crypt_header *h, char **path, mt_store *inner)
{
    probe_walk p = {inner, h, NULL, 0};
    int rc;

    /* Files only: asking the history would make the file store's database
     * where there is none (history off). */
    *path = NULL;
    if (inner->version >= 7 && inner->first_head) {
        char head[MT_STORE_HEAD_MAX];
        size_t len;

        if ((rc = inner->first_head(inner, head, &len, path)) <= 0)
            return rc;
        return header_read(h, (const unsigned char *)head, len, *path) == 0 ? 1 : 2;
    }
    if (!inner->walk)
        return 0;
    if ((rc = inner->walk(inner, "", probe_one, &p)) < 0 && rc != PROBE_DONE) {
        free(p.path);
        return rc;
    }
    *path = p.path;
    return p.found;
}

/* The count of key id (from header hd) in out, added when new. */
static int status_key(mt_crypt_key_count **k, mt_crypt_status *out, const mt_crypt_header *hd)
{
    char id[17];
    size_t i;

    mt_crypt_hex(id, hd->key_id, MT_CRYPT_ID);
    for (i = 0; i < out->count && strcmp(out->keys[i].key_id, id) != 0; i++)
        ;
    if (i == out->count) {
        mt_crypt_key_count *grown = realloc(out->keys, (i + 1) * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory");
        out->keys = grown;
        memset(&out->keys[i], 0, sizeof(out->keys[i]));
        memcpy(out->keys[i].key_id, id, sizeof(id));
        out->keys[i].passphrase = hd->kdf == MT_CRYPT_KDF_PASS;
        out->count++;
    }
    *k = &out->keys[i];
    return 0;
}

/* How many versions a walk of the history asks for at a time. */
#define VERSIONS_PAGE 256

/* Every version the history keeps, newest first, by pages (a cursor on
 * the id, so versions recorded meanwhile are not met); fn returns 0 to go
 * on or a negative code to stop with it. */
typedef int (*version_fn)(void *payload, const mt_version *v);

static int each_version(mt_crypt *c, version_fn fn, void *payload)
{
    int64_t cursor = 0;
    int rc = 0;

    for (;;) {
        mt_log_query q;
        mt_version *v = NULL;
        size_t n = 0, i;

        memset(&q, 0, sizeof(q));
        q.before_id = cursor;
        q.limit = VERSIONS_PAGE;
        if ((rc = c->inner->versions(c->inner, &v, &n, &q)) < 0)
            return rc;
        for (i = 0; rc == 0 && i < n; i++) {
            cursor = v[i].id;
            rc = fn(payload, &v[i]);
        }
        mt_versions_free(v, n);
        if (rc < 0 || n < VERSIONS_PAGE)
            return rc;
    }
}

typedef struct {
    mt_crypt *c;
    mt_crypt_status *out;
} status_walk;

static int status_version(void *payload, const mt_version *v)
{
    status_walk *w = payload;
    mt_crypt *c = w->c;
    mt_crypt_status *out = w->out;
    mt_crypt_key_count *k;
    mt_crypt_header hd;
    char *data;
    size_t len;
    int rc;

    if (v->redacted || !v->content_sha256[0])
        return 0;
    if ((rc = c->inner->version_content(c->inner, &data, &len, v->id)) < 0)
        return rc == MT_ENOTFOUND ? 0 : rc; /* pruned or redacted meanwhile */
    out->versions++;
    if (header_read(&hd, (const unsigned char *)data, len, "(version)") < 0)
        out->versions_plain++;
    else if ((rc = status_key(&k, out, &hd)) == 0)
        k->versions++;
    free(data);
    return rc;
}

static int crypt_status(mt_store *st, mt_crypt_status *out)
{
    mt_crypt *c = (mt_crypt *)st;
    path_list l = {NULL, 0, 0};
    size_t i, k;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!mt_store_is_crypt(st))
        return mt_error_set(MT_EINVAL, "the store is not opened with encryption (--encrypt)");
    if ((rc = c->inner->walk(c->inner, "", collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        mt_crypt_key_count *kc;
        mt_crypt_header hd;
        uint64_t size;

        if ((rc = file_header(&hd, &size, c, l.paths[i])) < 0) {
            if (rc == MT_ENOTFOUND)
                continue; /* removed meanwhile */
            goto done;
        }
        out->files++;
        if (rc == 0) {
            out->plain++;
            continue;
        }
        if ((rc = status_key(&kc, out, &hd)) < 0)
            goto done;
        kc->files++;
        kc->bytes += minus(size, 1);
    }
    {
        status_walk w = {c, out};
        if ((rc = each_version(c, status_version, &w)) < 0)
            goto done;
    }
    /* Most files first, then most versions, then by id: the same store
     * always reads the same. */
    for (i = 1; i < out->count; i++)
        for (k = i; k > 0 && (out->keys[k].files > out->keys[k - 1].files ||
                              (out->keys[k].files == out->keys[k - 1].files &&
                               (out->keys[k].versions > out->keys[k - 1].versions ||
                                (out->keys[k].versions == out->keys[k - 1].versions &&
                                 strcmp(out->keys[k].key_id, out->keys[k - 1].key_id) < 0))));
             k--) {
            mt_crypt_key_count t = out->keys[k];
            out->keys[k] = out->keys[k - 1];
            out->keys[k - 1] = t;
        }
done:
    paths_free(&l);
    if (rc < 0)
        mt_crypt_status_dispose(out);
    return rc;
}

static int crypt_each(mt_store *st, mt_crypt_file_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    path_list l = {NULL, 0, 0};
    size_t i;
    int rc;

    if (!mt_store_is_crypt(st))
        return mt_error_set(MT_EINVAL, "the store is not opened with encryption (--encrypt)");
    if ((rc = c->inner->walk(c->inner, "", collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        mt_crypt_header hd;
        uint64_t size;
        char id[17] = "";
        int sealed;

        if ((sealed = file_header(&hd, &size, c, l.paths[i])) < 0) {
            if (sealed == MT_ENOTFOUND)
                continue; /* removed meanwhile */
            rc = sealed;
            goto done;
        }
        if (sealed)
            mt_crypt_hex(id, hd.key_id, MT_CRYPT_ID);
        if ((rc = cb(payload, l.paths[i], id, sealed && hd.kdf == MT_CRYPT_KDF_PASS)) != 0) {
            if (rc > 0)
                rc = mt_error_set(MT_ESTOPPED, "stopped");
            goto done;
        }
    }
done:
    paths_free(&l);
    return rc;
}

/* A rekey under way. */
typedef struct {
    mt_crypt *c;
    mt_crypt_key *new_key;
    mt_store_op *op;
    mt_rekey_cb cb;
    void *payload;
    mt_rekey_result *res;
    int first_code; /* of the first failure */
} rekey_run;

/* A store path, malloc'd (NULL for NULL): the core names it as requests do. */
static char *path_copy(const char *rel, int *oom)
{
    char *p;

    if (!rel)
        return NULL;
    if (!(p = strdup(rel)))
        *oom = 1;
    return p;
}

/* One file or version done: counted, a failure named (the message is
 * mt_error_last()'s), and told to the caller's callback. */
static int rekey_done(rekey_run *r, mt_rekey_kind kind, const char *rel, int64_t version,
                      uint64_t done, uint64_t total, int outcome)
{
    mt_rekey_result *res = r->res;
    mt_rekey_event e;
    char *message = NULL, *path;
    int oom = 0, stop;

    path = path_copy(rel, &oom);
    if (outcome < 0) {
        if (!(message = strdup(mt_error_last()->message)))
            oom = 1;
        if (!r->first_code)
            r->first_code = outcome;
        if (kind == MT_REKEY_FILE)
            res->files_failed++;
        else
            res->versions_failed++;
    } else if (kind == MT_REKEY_FILE) {
        (*(outcome ? &res->files : &res->files_kept))++;
    } else {
        (*(outcome ? &res->versions : &res->versions_kept))++;
    }
    if (oom) {
        free(path);
        free(message);
        return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
    }
    e.kind = kind;
    e.path = path;
    e.version = version;
    e.done = done;
    e.total = total;
    e.outcome = outcome;
    e.message = message;
    stop = r->cb && r->cb(r->payload, &e) != 0;
    if (outcome < 0 && res->nfailures < MT_REKEY_NAMED) {
        mt_rekey_failure *grown =
            res->nfailures % 16 ? res->failures
                                : realloc(res->failures, (res->nfailures + 16) * sizeof(*grown));
        if (!grown) {
            free(path);
            free(message);
            return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
        }
        res->failures = grown;
        grown[res->nfailures].kind = kind;
        grown[res->nfailures].path = path;
        grown[res->nfailures].version = version;
        grown[res->nfailures].code = outcome;
        grown[res->nfailures].message = message;
        res->nfailures++;
        path = message = NULL;
    }
    free(path);
    free(message);
    if (stop)
        return mt_error_set(MT_ESTOPPED, "stopped after %llu of %llu %s", (unsigned long long)done,
                            (unsigned long long)total,
                            kind == MT_REKEY_FILE ? "files" : "versions");
    return 0;
}

/* One file: 1 re-encrypted, 0 left as it was, or why not. */
static int rekey_file(rekey_run *r, const char *rel)
{
    mt_crypt *c = r->c;
    mt_store_op *op = r->op;
    edit_args a = {c, op, rel, NULL, NULL, NULL, r->new_key, 0, 0, NULL, NULL};
    char memory[24];
    mt_crypt_header hd;
    uint64_t size;
    int rc;

    /* Done by an earlier run: not even an edit. */
    if (file_header(&hd, &size, c, rel) == 1 && mt_crypt_key_reader(NULL, r->new_key, &hd) == 1)
        return 0;
    if ((rc = memory_at(c, memory, rel)) < 0)
        return rc;
    a.memory = rc == 1 ? memory : NULL;
    {
        int keep = op->keep_access, reseal = op->reseal;
        INNER_OP(op, NULL);
        /* A re-encryption is no use of the memory: expiry sees it as idle as
         * before. Nor is it a change of content: no version; the newest,
         * which holds the file's content, takes the new bytes with it. */
        op->keep_access = 1;
        op->reseal = 1;
        rc = c->inner->edit(c->inner, op, rel, edit_sealed, &a);
        op->keep_access = keep;
        op->reseal = reseal;
        INNER_DONE(op);
    }
    if (rc == MT_ENOTFOUND)
        return 0; /* removed meanwhile: nothing to re-encrypt */
    return rc < 0 ? rc : a.sealed;
}

static int rekey_files(rekey_run *r)
{
    path_list l = {NULL, 0, 0};
    size_t i;
    int rc;

    if ((rc = r->c->inner->walk(r->c->inner, "", collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++)
        if ((rc = rekey_done(r, MT_REKEY_FILE, l.paths[i], 0, i + 1, l.n,
                             rekey_file(r, l.paths[i]))) < 0)
            goto done;
done:
    paths_free(&l);
    return rc;
}

/* Whether a version's content is under key already (a read: no lock). */
static int version_under(mt_crypt *c, int64_t id, mt_crypt_key *key, const char *rel)
{
    mt_crypt_header hd;
    char *data;
    size_t len;
    int under = 0;

    if (c->inner->version_content(c->inner, &data, &len, id) == 0) {
        under = header_read(&hd, (const unsigned char *)data, len, rel) == 0 &&
                mt_crypt_key_reader(NULL, key, &hd) == 1;
        free(data);
    }
    return under;
}

/* One version: 1 re-encrypted, 0 left as it was, or why not. */
static int rekey_version(rekey_run *r, const mt_version *v)
{
    mt_crypt *c = r->c;
    size_t n = (v->path ? strlen(v->path) : 0) + 64;
    char *rel = NULL;
    edit_args a = {c, r->op, NULL, NULL, NULL, NULL, r->new_key, 0, 0, NULL, NULL};
    int rc;

    if (v->redacted || !v->content_sha256[0])
        return 0;
    if (!c->inner->version_reseal)
        return mt_error_set(MT_ENOSYS,
                            "version %lld: the store cannot replace a version's content (its "
                            "interface has no version_reseal), so it keeps its key",
                            (long long)v->id);
    if (!(rel = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
    if (v->path)
        snprintf(rel, n, "(version %lld of " MT_STORE_SHOWN_ROOT "/%s, %s)", (long long)v->id,
                 v->path, v->memory_id);
    else
        snprintf(rel, n, "(version %lld of %s)", (long long)v->id, v->memory_id);
    a.rel = rel;
    /* Done by an earlier run: seen in a read, so not even the write lock
     * is taken (a run again passes every version). The reseal checks again
     * under the lock, and says what it fails on. */
    if (version_under(c, v->id, r->new_key, rel)) {
        rc = 0;
        goto done;
    }
    rc = c->inner->version_reseal(c->inner, r->op, v->id, edit_sealed, &a);
    if (rc == MT_EINVAL && v->path && c->inner->catch_up) {
        /* Still the memory's current content to the history, though it
         * reads: its file was re-encrypted with history off, which the
         * history has not seen. Recorded as any change made with history
         * off is, the file's content is the current one, and this version
         * can go under the new key. */
        mt_store_op caught = *r->op;

        caught.history = 1;
        caught.expect_sha256 = NULL;
        caught.file_overhead = MT_CRYPT_OVERHEAD;
        if (c->inner->catch_up(c->inner, &caught, v->path) == 0) {
            a.sealed = a.unchanged = 0;
            rc = c->inner->version_reseal(c->inner, r->op, v->id, edit_sealed, &a);
        }
    }
    if (rc == MT_ENOTFOUND)
        rc = 0; /* pruned or redacted meanwhile */
    else if (rc == MT_EINVAL)
        rc = mt_error_set(MT_EINVAL,
                          "%s is its memory's current content, which changes only with the "
                          "memory's file, and the file was not re-encrypted",
                          rel);
    else if (rc == 0)
        rc = a.sealed;
done:
    free(rel);
    return rc;
}

typedef struct {
    rekey_run *r;
    uint64_t done, total;
} versions_walk;

static int rekey_one_version(void *payload, const mt_version *v)
{
    versions_walk *w = payload;

    w->done++;
    if (w->total < w->done)
        w->total = w->done; /* recorded since the count */
    return rekey_done(w->r, MT_REKEY_VERSION, v->path, v->id, w->done, w->total,
                      rekey_version(w->r, v));
}

static int rekey_run_all(rekey_run *r, versions_walk *w);

static int crypt_rekey(mt_store *st, mt_rekey_result *out, mt_crypt_key *new_key, mt_store_op *op,
                       mt_rekey_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    rekey_run r = {c, new_key, op, cb, payload, out, 0};
    versions_walk w = {&r, 0, 0};
    mt_crypt_key *gone[ALSO_MAX + 2]; /* the oldest of `also`, the old key, all of `also` */
    unsigned ngone = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!mt_store_is_crypt(st))
        return mt_error_set(MT_EINVAL, "the store is not opened with encryption (--encrypt)");
    /* Other threads of the handle go on reading and writing: what is
     * re-encrypted already they read with the new key meanwhile. */
    pthread_mutex_lock(&c->rekey_lock);
    pthread_mutex_lock(&c->keys_lock);
    if (c->nalso == ALSO_MAX) {
        unsigned i;
        gone[ngone++] = c->also[0];
        for (i = 1; i < ALSO_MAX; i++)
            c->also[i - 1] = c->also[i];
        c->nalso--;
    }
    c->also[c->nalso++] = mt_crypt_key_ref(new_key);
    /* Writes still sealing with the old key (begun before the last rekey's
     * switch; none begins with it any more) finish before the files are
     * looked at: what they wrote is then on disk for this rekey to
     * re-encrypt, before the switch below stops reading that key. Waited
     * for only at the switch, a write that ended after this rekey had
     * passed its file left it under a key no longer read. */
    while (c->writing_old)
        pthread_cond_wait(&c->keys_idle, &c->keys_lock);
    pthread_mutex_unlock(&c->keys_lock);
    rc = rekey_run_all(&r, &w);
    /* Everything is under the new key: from now on the store opens with it
     * only. Not before: a rekey stopped part way is run again with the old. */
    if (rc == 0)
        rc = mt_crypt_record_rekey(c->inner, new_key);
    pthread_mutex_lock(&c->keys_lock);
    /* Failed part way, the store is partly under the new key: the handle
     * goes on reading it (it stays among `also`) until a rekey succeeds. */
    if (rc == 0) {
        /* Everything is under the new key: write with it. The old key still
         * reads what a process that kept it wrote meanwhile, and what this
         * handle's writes begun before now seal with it (the next rekey
         * waits for them before it looks at the files). The key before
         * that is read no more: no write has used it since this rekey
         * began; nor are the keys of rekeys that failed, whose files this
         * one re-encrypted. Threads reading hold references: dropping a
         * key frees nothing they use. */
        gone[ngone++] = c->old;
        c->old = c->key;
        c->key = mt_crypt_key_ref(new_key);
        c->writing_old = c->writing_cur;
        c->writing_cur = 0;
        c->epoch++;
        while (c->nalso)
            gone[ngone++] = c->also[--c->nalso];
    }
    pthread_mutex_unlock(&c->keys_lock);
    pthread_mutex_unlock(&c->rekey_lock);
    while (ngone)
        mt_crypt_key_free(gone[--ngone]);
    return rc;
}

static int rekey_run_all(rekey_run *r, versions_walk *w)
{
    mt_crypt *c = r->c;
    mt_rekey_result *out = r->res;
    int rc;

    /* The files first: each one's re-encryption records a version under the
     * new key, and leaves the one before it to the history's turn. */
    if ((rc = rekey_files(r)) < 0)
        return rc;
    if (c->inner->version_count && c->inner->version_count(c->inner, &w->total) < 0)
        w->total = 0; /* only the progress's total */
    if ((rc = each_version(c, rekey_one_version, w)) < 0)
        return rc;
    if (out->files_failed || out->versions_failed)
        return mt_error_set(
            r->first_code,
            "%llu file%s and %llu version%s could not be re-encrypted (each "
            "named with why) and still need the key they are under; the rest "
            "was. Accept that key (--old-key-file), or delete or redact what "
            "is damaged, and run rekey again",
            (unsigned long long)out->files_failed, out->files_failed == 1 ? "" : "s",
            (unsigned long long)out->versions_failed, out->versions_failed == 1 ? "" : "s");
    return 0;
}

/* Requests beyond the store functions (store.h, `control`): the layer's
 * own, and the rest forwarded to the store it wraps. */
static int c_control(mt_store *st, int request, void *arg)
{
    mt_crypt *c = (mt_crypt *)st;
    mt_store_crypt_each *each = arg;
    mt_store_rekey *rekey = arg;

    if (!arg)
        return mt_error_set(MT_EINVAL, "a store's control needs its argument");
    switch (request) {
    case MT_STORE_CRYPT_STATUS:
        return crypt_status(st, arg);
    case MT_STORE_CRYPT_EACH:
        return crypt_each(st, each->cb, each->payload);
    case MT_STORE_CRYPT_REKEY:
        return crypt_rekey(st, rekey->out, rekey->new_key, rekey->op, rekey->cb, rekey->payload);
    case MT_STORE_LISTING:
        *(mt_store **)arg = crypt_listing(st);
        return 0;
    default:
        return mt_store_control(c->inner, request, arg);
    }
}

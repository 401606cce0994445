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
 * Nothing reaches the inner store unsealed: create, edit and a rename with
 * content (crypt_rename.c) hand it only what mt_crypt_seal() made. Nothing
 * unsealed reaches a caller: a file without the header, with a key not
 * given, or failing its tag is an MT_ECRYPT error naming the path.
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

int mt_store_is_crypt(const mt_store *st);
static int c_control(mt_store *st, int request, void *arg);

uint64_t mt_crypt_minus(uint64_t size, uint64_t files)
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

int mt_crypt_read_sealed(mt_crypt *c, char **out, size_t *len, const char *rel)
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

int mt_crypt_open_current(mt_crypt *c, char **plain, size_t *plain_len, const char *rel)
{
    mt_crypt_header h;
    char *sealed;
    size_t len;
    int rc, tries;

    /* The file is read, then the record asked: a rename and a create at rel
     * in between (by memtool) make them disagree, and a second read sees
     * the new file. */
    for (tries = 0; tries < 2; tries++) {
        if ((rc = mt_crypt_read_sealed(c, &sealed, &len, rel)) < 0)
            return rc;
        if ((rc = mt_crypt_unseal(plain, plain_len, &h, c, sealed, len, rel)) == 0 &&
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
        *size = mt_crypt_minus(*size, 1);
    return rc;
}

static int c_read(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                  void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    char *plain;
    size_t len, off = 0;
    int rc;

    if ((rc = mt_crypt_open_current(c, &plain, &len, path)) < 0)
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

    if (len < MT_CRYPT_HEADER + MT_CRYPT_TAG || memcmp(p, mt_crypt_magic, 4) != 0 ||
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
void mt_crypt_inner_op(mt_store_op *op)
{
    op->file_overhead = MT_CRYPT_OVERHEAD;
    op->track_ids = 1;
    op->memory_id_of = header_memory_id;
}

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
    if ((rc = mt_crypt_seal(&sealed, &slen, key, &h, NULL, data, len)) == 0) {
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

/* Before an edit, the memory the store has at rel: the file the edit reads
 * must hold that memory's content, as a view's must (check_memory). Asked
 * before the edit, not in its callback, which a SQL store runs inside its
 * own transaction. 1 with out filled, 0 when the store keeps none. */
int mt_crypt_memory_at(mt_crypt *c, char out[24], const char *rel)
{
    int rc;

    if (!c->inner->memory_id)
        return 0;
    rc = c->inner->memory_id(c->inner, out, rel);
    return rc == MT_ENOTFOUND ? 0 : rc; /* the edit says so in its own words */
}

/* The content the edit read is another memory's: files were swapped. */
static int edit_swapped(const mt_crypt_edit_args *a, const mt_crypt_header *h)
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

int mt_crypt_edit_sealed(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    mt_crypt_edit_args *a = payload;
    mt_crypt_header h;
    char *plain = NULL, *next = NULL;
    size_t plen, nlen = 0;
    int rc;

    *out = NULL;
    if (a->rekey) {
        /* Done by an earlier run: left as it is. */
        if ((rc = mt_crypt_header_read(&h, (const unsigned char *)data, len, a->rel)) < 0)
            return rc;
        if ((rc = mt_crypt_key_reader(NULL, a->rekey, &h)) < 0)
            return rc;
        if (rc == 1) {
            a->unchanged = 1;
            return dup_sealed(out, out_len, data, len);
        }
    }
    if ((rc = mt_crypt_unseal(&plain, &plen, &h, a->c, data, len, a->rel)) < 0)
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
        if ((rc = mt_crypt_seal(out, out_len, a->rekey, &h, NULL, plain, plen)) == 0)
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
        rc = mt_crypt_seal(out, out_len, a->key, &h, h.kdf == MT_CRYPT_KDF_PASS ? h.salt : NULL,
                           next, nlen);
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
    mt_crypt_edit_args a = {c, op, path, op->expect_sha256, cb, payload, NULL, 0, 0, NULL, NULL};
    char memory[24];
    int rc;

    if ((rc = mt_crypt_memory_at(c, memory, path)) < 0)
        return rc;
    a.memory = rc == 1 ? memory : NULL;
    {
        unsigned epoch;
        INNER_OP(op, NULL);
        a.key = mt_crypt_writer_take(st, &epoch);
        rc = c->inner->edit(c->inner, op, path, mt_crypt_edit_sealed, &a);
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

    if ((rc = mt_crypt_read_sealed(c, &sealed, &slen, rel)) < 0)
        return rc;
    if ((rc = mt_crypt_unseal(&plain, &plen, &h, c, sealed, slen, rel)) == 0) {
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
void mt_crypt_conflict_now(mt_crypt *c, mt_store_op *op, const char *rel)
{
    char *plain;
    size_t len;

    op->current_sha256[0] = '\0';
    if (mt_crypt_open_current(c, &plain, &len, rel) == 0) {
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
        mt_crypt_conflict_now(c, op, path);
    return rc;
}

static int c_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    mt_crypt *c = (mt_crypt *)st;
    char inner[65];
    int rc;

    if (op->rename_content) {
        if ((rc = mt_crypt_rename_content(c, op, from, to)) == 0)
            checked_forget(c);
        return rc;
    }
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
        mt_crypt_conflict_now(c, op, op->culprit ? to : from);
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
        out->entries[i].size = mt_crypt_minus(out->entries[i].size, out->entries[i].files);
    out->size = mt_crypt_minus(out->size, out->files);
    return 0;
}

static int c_usage(mt_store *st, mt_store_usage *out)
{
    mt_crypt *c = (mt_crypt *)st;
    int rc = c->inner->usage(c->inner, out);

    if (rc == 0)
        out->bytes = mt_crypt_minus(out->bytes, out->files);
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
    rc = mt_crypt_unseal(out, len, &h, c, sealed, slen, rel);
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
    v->content_size = mt_crypt_minus(v->content_size, v->content_size ? 1 : 0);
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

    mt_crypt_inner_op(op);
    return c->inner->catch_up(c->inner, op, path);
}

typedef struct {
    mt_walk_cb cb;
    void *payload;
} walk_args;

static int walk_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    walk_args *a = payload;

    return a->cb(a->payload, path, type, type == MT_NODE_FILE ? mt_crypt_minus(size, 1) : size);
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
    return mt_crypt_open_current(payload, plain, len, path);
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

int mt_crypt_seal_for(mt_crypt_key *key, char **out, size_t *out_len, const char *memory_id,
                      uint64_t generation, const char *plain, size_t len)
{
    mt_crypt_header h;

    memset(&h, 0, sizeof(h));
    snprintf(h.memory_id, sizeof(h.memory_id), "%s", memory_id);
    h.generation = generation;
    return mt_crypt_seal(out, out_len, key, &h, NULL, plain, len);
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
        return mt_crypt_status_of(st, arg);
    case MT_STORE_CRYPT_EACH:
        return mt_crypt_each(st, each->cb, each->payload);
    case MT_STORE_CRYPT_REKEY:
        return mt_crypt_rekey(st, rekey->out, rekey->new_key, rekey->op, rekey->cb, rekey->payload);
    case MT_STORE_LISTING:
        *(mt_store **)arg = c->inner;
        return 0;
    default:
        return mt_store_control(c->inner, request, arg);
    }
}

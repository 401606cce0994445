/* The encryption layer's internals, shared by its files (crypt*.c). */
#ifndef MT_STORE_CRYPT_IMPORT_H
#define MT_STORE_CRYPT_IMPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <memtool/store.h>

#include "crypt/crypt.h"

/* The largest file opened: content is authenticated whole, so it is read
 * whole; memory stays bounded whatever a file put there from outside holds. */
#define READ_MAX ((uint64_t)256 * 1024 * 1024)

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

/* A memory with its history into the store under the layer, every
 * version's content sealed on its way in (store.h, `import`). */
int mt_crypt_import(mt_store *st, mt_store_op *op, mt_store_import *in);

/* crypt.c: the store under the layer, and plain sealed as the layer seals a
 * file of memory_id (with key, a fresh nonce). */
mt_store *mt_crypt_inner(mt_store *st);
int mt_crypt_seal_for(mt_crypt_key *key, char **out, size_t *out_len, const char *memory_id,
                      uint64_t generation, const char *plain, size_t len);

/* The layer's writing key, held until mt_crypt_writer_drop (with *epoch):
 * a rekey of the handle waits for the writes still sealing with the key it
 * stops reading, so everything written is under a key the handle reads. */
mt_crypt_key *mt_crypt_writer_take(mt_store *st, unsigned *epoch);
void mt_crypt_writer_drop(mt_store *st, mt_crypt_key *key, unsigned epoch);

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
} mt_crypt_edit_args;

/* Run an inner change with mt_crypt_inner_op and the plaintext precondition taken
 * off (the layer checks it, or gives the inner store the ciphertext's). */
#define INNER_OP(op, inner_expect)                                                                 \
    const char *saved_expect_ = (op)->expect_sha256;                                               \
    mt_crypt_inner_op(op);                                                                         \
    (op)->expect_sha256 = (inner_expect)
#define INNER_DONE(op) (op)->expect_sha256 = saved_expect_

/* Every regular file's path, from a walk of the inner store. */
typedef struct {
    char **paths;
    size_t n, cap;
} mt_crypt_paths;

typedef int (*mt_crypt_version_fn)(void *payload, const mt_version *v);

/* The layer's files (crypt_seal.c): the header, the keys, sealing. */
int mt_crypt_header_read(mt_crypt_header *h, const unsigned char *p, size_t len, const char *rel);
int mt_crypt_seal(char **out, size_t *out_len, mt_crypt_key *key, mt_crypt_header *h,
                  const unsigned char *salt, const char *plain, size_t len);
int mt_crypt_unseal(char **plain, size_t *plain_len, mt_crypt_header *h, mt_crypt *c,
                    const char *data, size_t len, const char *rel);

/* The layer's store (crypt.c): sizes net of the overhead, the inner
 * change's op, the memory at a path, an edit's sealing callback. */
uint64_t mt_crypt_minus(uint64_t size, uint64_t files);
void mt_crypt_inner_op(mt_store_op *op);
int mt_crypt_memory_at(mt_crypt *c, char out[24], const char *rel);
int mt_crypt_edit_sealed(char **out, size_t *out_len, const char *data, size_t len, void *payload);

/* The inner store's file at rel, whole and sealed; opened (its memory
 * checked against the store's record); after the inner store's
 * MT_ECONFLICT, what the file holds now, as plaintext, in
 * op->current_sha256. */
int mt_crypt_read_sealed(mt_crypt *c, char **out, size_t *len, const char *rel);
int mt_crypt_open_current(mt_crypt *c, char **plain, size_t *plain_len, const char *rel);
void mt_crypt_conflict_now(mt_crypt *c, mt_store_op *op, const char *rel);
/* A rename with new content (crypt_rename.c; store.h, rename_content). */
int mt_crypt_rename_content(mt_crypt *c, mt_store_op *op, const char *from, const char *to);

/* What the layer tells of a store (crypt_status.c). */
int mt_crypt_collect_path(void *payload, const char *path, mt_node_type type, uint64_t size);
void mt_crypt_paths_free(mt_crypt_paths *l);
int mt_crypt_file_header(mt_crypt_header *hd, uint64_t *size, mt_crypt *c, const char *rel);
int mt_crypt_each_version(mt_crypt *c, mt_crypt_version_fn fn, void *payload);
/* The requests of the store's control (store.h): store paths throughout. */
int mt_crypt_status_of(mt_store *st, mt_crypt_status *out);
int mt_crypt_each(mt_store *st, mt_crypt_file_cb cb, void *payload);
int mt_crypt_rekey(mt_store *st, mt_rekey_result *out, mt_crypt_key *new_key, mt_store_op *op,
                   mt_rekey_cb cb, void *payload);

#endif

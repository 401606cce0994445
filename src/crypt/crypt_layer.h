/* The encryption layer's import (crypt_import.c), and what it needs of crypt.c. */
#ifndef MT_STORE_CRYPT_IMPORT_H
#define MT_STORE_CRYPT_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include <memtool/store.h>

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

#endif

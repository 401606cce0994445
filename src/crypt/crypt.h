/* Encryption at rest: the file format and the keys, shared by crypt.c and crypt_key.c. */
#ifndef MT_STORE_CRYPT_H
#define MT_STORE_CRYPT_H

#include <stddef.h>
#include <stdint.h>

#include <memtool/store.h>

/*
 * The header, 84 bytes, all of it the AEAD's associated data:
 *   0  magic "MTCR"            4  format version (1)     5  kdf (0 key file, 1 passphrase)
 *   6  two zero bytes          8  key id (8 bytes)      16  salt (16 bytes; zeros: key file)
 *  32  memory id (20 bytes: "mem_" and 16 hex digits)   52  generation (big-endian u64)
 *  60  nonce (24 bytes)
 * then the ciphertext and its 16-byte tag.
 */
#define MT_CRYPT_HEADER 84
#define MT_CRYPT_TAG    16
/* A sealed file's first 4 bytes. */
static const unsigned char mt_crypt_magic[4] = {'M', 'T', 'C', 'R'};
#define MT_CRYPT_FORMAT   1
#define MT_CRYPT_KEY      32
#define MT_CRYPT_ID       8
#define MT_CRYPT_SALT     16
#define MT_CRYPT_MEMID    20
#define MT_CRYPT_KDF_KEY  0
#define MT_CRYPT_KDF_PASS 1

/* A process meets few salts; past this many, a passphrase key drops its
 * oldest derivation (crypt_key.c). Named here so tests can go past it. */
#define MT_CRYPT_KEY_CACHE 8

typedef struct {
    unsigned char kdf;
    unsigned char key_id[MT_CRYPT_ID];
    unsigned char salt[MT_CRYPT_SALT];
    char memory_id[24]; /* NUL-terminated */
    uint64_t generation;
    unsigned char nonce[24];
} mt_crypt_header;

/* The key to write with: a copy of its material (the caller wipes it with
 * sodium_memzero after use), kdf, id and salt. A passphrase key keeps
 * `salt` when given (an edit keeps its file's salt, so no new derivation),
 * else uses the process's own. */
int mt_crypt_key_writer(unsigned char material[MT_CRYPT_KEY], mt_crypt_header *h, mt_crypt_key *key,
                        const unsigned char *salt);

/* The key that opens a file with header h: 1 with a copy of its material
 * in material (unless NULL: only asking; the caller wipes it), 0 when
 * neither key nor the keys it accepts is the one (a wrong key). */
int mt_crypt_key_reader(unsigned char *material, mt_crypt_key *key, const mt_crypt_header *h);

/* 8-byte id of key material, as 16 hex digits. */
void mt_crypt_id_of(unsigned char id[MT_CRYPT_ID], const unsigned char *material);
void mt_crypt_hex(char *out, const unsigned char *bytes, size_t n);

/* One more reference to key. */
mt_crypt_key *mt_crypt_key_ref(mt_crypt_key *key);

/* Whether key came from a passphrase. */
int mt_crypt_key_is_passphrase(const mt_crypt_key *key);

/* For tests, NULL otherwise: called at every decryption a crypt store makes,
 * so a test counts how often one migration or rekey opens each version. */
extern void (*mt_crypt_unseal_hook)(void);

/* The first memory of inner looked at: 1 sealed (*h its header), 2 not
 * (*path, malloc'd, its store path), 0 no memory. */
int mt_crypt_probe(mt_crypt_header *h, char **path, mt_store *inner);

/* The store's record that it is encrypted (crypt_record.c). settle: at a
 * wrap, check key against the record, or make the record (a new store; one
 * sealed before records were kept), or refuse a store of plain memories.
 * refuse: at an open without a key, MT_ECRYPT for an encrypted store.
 * rekey: the record names new_key. Each 0 for a store that keeps none. */
int mt_crypt_record_settle(mt_store *inner, mt_crypt_key *key);
int mt_crypt_record_refuse(mt_store *st);
/* For tests, 0 otherwise: set, the record is neither checked nor made, so
 * a test can reach beneath the layer (damage a file, read what is sealed)
 * or see what a key reads of a store whose record names another. */
extern int mt_crypt_record_off;
int mt_crypt_record_rekey(mt_store *inner, mt_crypt_key *new_key);

/* Whether st is an encryption layer. */
int mt_store_is_crypt(const mt_store *st);

#endif

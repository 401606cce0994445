/* SHA-256, the hash that names every memory's content and every version's.
 *
 * Every write hashes what it writes, so this is on the path of every change and the whole cost
 * of hashing a big file: OpenSSL's libcrypto uses the CPU's SHA instructions where it has them
 * (5-6x libsodium's portable code on 100 MB here). When libcrypto cannot give a digest (a broken
 * provider configuration), libsodium's code gives the same one, so hashing never fails. */
#ifndef MT_SHA256_H
#define MT_SHA256_H

#include <sodium.h>
#include <stddef.h>

typedef struct {
    void *evp; /* an EVP_MD_CTX, or NULL when libsodium's state is used instead */
    crypto_hash_sha256_state fallback;
    int failed;
} mt_sha256;

void mt_sha256_init(mt_sha256 *s);
void mt_sha256_update(mt_sha256 *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL, or MT_ERROR when libcrypto failed after
 * init chose it (out is then ""); frees what init took either way. */
int mt_sha256_final_hex(char out[65], mt_sha256 *s);

/* The binary digest of data in one step. */
void mt_sha256_digest(unsigned char md[32], const void *data, size_t len);
void mt_sha256_hex(char out[65], const void *data, size_t len);

#endif

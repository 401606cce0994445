/* SHA-256, the hash that names every memory's content and every version's.
 *
 * Every write hashes what it writes, so this is the whole cost of hashing a
 * big file: one-step hashes of 1 MiB and more use OpenSSL's libcrypto,
 * which uses the CPU's SHA instructions where it has them (5-6x libsodium's
 * portable code on 100 MB here, 4x on a 1.3 KB memory), loaded at its first
 * use; so do one-step hashes of 64 bytes and more once libsodium has hashed
 * 1 MiB in such ones in the process (a server's, a binding's: then loading
 * pays). Below that, and wherever libcrypto cannot be loaded, libsodium's
 * code. Loading libcrypto costs a process about 1.7 ms here, what libsodium
 * takes to hash about 600 KB, and most processes (every view, every small
 * write) never need it. Both give the same digest: a libcrypto whose
 * SHA256() is missing, fails, or disagrees with libsodium's on a probe at
 * loading is not used. Hashing never fails. */
#ifndef MT_SHA256_H
#define MT_SHA256_H

#include <sodium.h>
#include <stddef.h>

/* A digest fed piece by piece (libsodium's code: the pieces' total is not
 * known in advance). */
typedef struct {
    crypto_hash_sha256_state st;
} mt_sha256;

void mt_sha256_init(mt_sha256 *s);
void mt_sha256_update(mt_sha256 *s, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL. */
void mt_sha256_final_hex(char out[65], mt_sha256 *s);

/* The digest of data in one step. */
void mt_sha256_digest(unsigned char md[32], const void *data, size_t len);
void mt_sha256_hex(char out[65], const void *data, size_t len);

/* Whether hashes of 1 MiB and more come from libcrypto (it loaded). */
int mt_sha256_accelerated(void);

#endif

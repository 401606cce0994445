/* A libcrypto.so.3 whose SHA-256 cannot be used (tests/unit/test_sha256_fake.c):
 * built three ways, FAKE_CRYPTO_MISSING (no SHA256 at all), FAKE_CRYPTO_FAILS
 * (SHA256 right for small inputs, so it passes memtool's probe at loading,
 * and NULL from 1 MiB on, where memtool uses it) and FAKE_CRYPTO_WRONG
 * (SHA256 returns a digest that is not the input's). memtool must hash with
 * libsodium instead, and right. */
#include <stddef.h>
#include <string.h>

#include <sodium.h>

int mt_fake_crypto_marker(void);
int mt_fake_crypto_marker(void)
{
    return 3;
}

#if !defined(FAKE_CRYPTO_MISSING)
unsigned char *SHA256(const unsigned char *d, size_t n, unsigned char *md);
unsigned char *SHA256(const unsigned char *d, size_t n, unsigned char *md)
{
#if defined(FAKE_CRYPTO_FAILS)
    if (n >= (size_t)1 << 20)
        return NULL;
    crypto_hash_sha256(md, d, n);
    return md;
#else
    /* Plausible but wrong: the first bytes of the input, padded. */
    memset(md, 0x5a, 32);
    memcpy(md, d, n < 32 ? n : 32);
    return md;
#endif
}
#endif

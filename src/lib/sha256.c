#include "lib/sha256.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>

#include <memtool/store.h>

static void to_hex(char out[65], const unsigned char md[32])
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < 32; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[64] = '\0';
}

void mt_sha256_digest(unsigned char md[32], const void *data, size_t len)
{
    /* libsodium's hash wants a valid pointer even for no bytes; so may libcrypto. */
    static const unsigned char none[1];

    if (!data)
        data = none;
    if (!SHA256(data, len, md))
        crypto_hash_sha256(md, data, len);
}

void mt_sha256_hex(char out[65], const void *data, size_t len)
{
    unsigned char md[32];

    mt_sha256_digest(md, data, len);
    to_hex(out, md);
}

void mt_sha256_init(mt_sha256 *s)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(ctx);
        ctx = NULL;
    }
    s->evp = ctx;
    s->failed = 0;
    if (!ctx)
        crypto_hash_sha256_init(&s->fallback);
}

void mt_sha256_update(mt_sha256 *s, const void *data, size_t len)
{
    if (!len)
        return;
    /* The bytes pass only once, so a digest that fails half way cannot switch to the other
     * code: it is reported by final instead. */
    if (s->evp) {
        if (!EVP_DigestUpdate(s->evp, data, len))
            s->failed = 1;
    } else
        crypto_hash_sha256_update(&s->fallback, data, len);
}

int mt_sha256_final_hex(char out[65], mt_sha256 *s)
{
    unsigned char md[32];
    unsigned int n = 0;
    int failed = s->failed;

    out[0] = '\0';
    if (s->evp) {
        if (!EVP_DigestFinal_ex(s->evp, md, &n) || n != sizeof(md))
            failed = 1;
        EVP_MD_CTX_free(s->evp);
        s->evp = NULL;
    } else {
        crypto_hash_sha256_final(&s->fallback, md);
    }
    if (failed)
        return mt_error_set(MT_ERROR, "libcrypto failed to compute a SHA-256; check its "
                                      "configuration (OPENSSL_CONF)");
    to_hex(out, md);
    return 0;
}

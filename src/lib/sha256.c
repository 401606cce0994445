#include "lib/sha256.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include <openssl/sha.h>

#include "lib/dl.h"

/* Where libcrypto starts to pay for its loading (sha256.h). */
#define ACCEL_MIN (1024 * 1024)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static __typeof__(SHA256) *accel;

static void load(void)
{
    void *lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);

    if (lib && mt_dl_resolve(lib, "SHA256", &accel, sizeof(accel)) < 0)
        accel = NULL;
}

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
    /* Both codes want a valid pointer even for no bytes. */
    static const unsigned char none[1];

    if (!data)
        data = none;
    if (len >= ACCEL_MIN) {
        pthread_once(&load_once, load);
        if (accel && accel(data, len, md))
            return;
    }
    crypto_hash_sha256(md, data, len);
}

void mt_sha256_hex(char out[65], const void *data, size_t len)
{
    unsigned char md[32];

    mt_sha256_digest(md, data, len);
    to_hex(out, md);
}

int mt_sha256_accelerated(void)
{
    pthread_once(&load_once, load);
    return accel != NULL;
}

void mt_sha256_init(mt_sha256 *s)
{
    crypto_hash_sha256_init(&s->st);
}

void mt_sha256_update(mt_sha256 *s, const void *data, size_t len)
{
    if (len)
        crypto_hash_sha256_update(&s->st, data, len);
}

void mt_sha256_final_hex(char out[65], mt_sha256 *s)
{
    unsigned char md[32];

    crypto_hash_sha256_final(&s->st, md);
    to_hex(out, md);
}

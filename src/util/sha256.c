#include "util/sha256.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <openssl/sha.h>

#include "util/dl.h"

/* Where libcrypto starts to pay for its loading (sha256.h). */
#define ACCEL_MIN (1024 * 1024)
/* Below this libsodium is the faster, libcrypto's call costing more than
 * its speed saves (200 ns against 295 for 20 bytes here, 395 against 329
 * for 64). */
#define ACCEL_SMALL 64

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static __typeof__(SHA256) *accel;
/* What libsodium has hashed in one step in this process, in hashes of
 * ACCEL_SMALL bytes and more: past ACCEL_MIN the process is one that hashes
 * much (a server, a binding, a migration), and libcrypto's loading is paid
 * back by the hashes still to come. */
static _Atomic uint64_t hashed_small;

/*
 * The names libcrypto goes by whose SHA256() is the one called here: the
 * one-step `unsigned char *SHA256(const unsigned char *, size_t, unsigned
 * char *)`, NULL on failure, has had that signature in every OpenSSL since
 * 0.9.8, so each name below is ABI-compatible for this one call.
 */
static const char *const names[] = {
    "libcrypto.so.3",   /* OpenSSL 3: Debian 12, Ubuntu 22.04, Fedora 36, RHEL 9 and later */
    "libcrypto.so.1.1", /* OpenSSL 1.1: Debian 10 and 11, Ubuntu 18.04 to 20.04, RHEL 8 */
    "libcrypto.so",     /* the development link, present with the -dev package, any version */
};

/* Whether fn gives libsodium's digest of a few blocks (ends not on a block's
 * edge): a library that loads but hashes wrong must never name a content,
 * so it is checked once before any use. */
static int agrees(__typeof__(SHA256) *fn)
{
    unsigned char probe[200], got[32], want[32];
    size_t i;

    for (i = 0; i < sizeof(probe); i++)
        probe[i] = (unsigned char)(i * 7 + 1);
    crypto_hash_sha256(want, probe, sizeof(probe));
    return fn(probe, sizeof(probe), got) == got && memcmp(got, want, sizeof(want)) == 0;
}

/* The first name that loads is the one the system means: it is used if it
 * has SHA256() and that agrees with libsodium, else libsodium hashes all. */
static void load(void)
{
    __typeof__(SHA256) *fn = NULL;
    void *lib = NULL;
    size_t i;

    for (i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    /* Never closed when it loaded, even unused: a libcrypto may have set
     * handlers to run at exit that closing it would leave dangling. */
    if (lib && mt_dl_resolve(lib, "SHA256", &fn, sizeof(fn)) == 0 && agrees(fn))
        accel = fn;
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
    if (len >= ACCEL_MIN ||
        (len >= ACCEL_SMALL &&
         atomic_fetch_add_explicit(&hashed_small, len, memory_order_relaxed) + len >= ACCEL_MIN)) {
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

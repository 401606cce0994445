/* SHA-256 beside a libcrypto.so.3 that is there but cannot hash (run with
 * LD_LIBRARY_PATH at one of tests/unit/crypto_fake's builds, MT_FAKE_CRYPTO
 * naming which): it is loaded and found unusable, or (fails) taken and then
 * failing each big hash; every digest, 1 MiB and more included, is
 * libsodium's. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "util/sha256.h"

static void test_fake_loaded(void **state)
{
    void *lib;

    const char *mode = getenv("MT_FAKE_CRYPTO");

    (void)state;
    assert_non_null(mode);
    /* Only the fake that passes the probe is taken (and fails later). */
    assert_int_equal(mt_sha256_accelerated(), strcmp(mode, "fails") == 0);
    /* The fake is what was loaded: the test is not passing for want of one. */
    lib = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(lib);
    assert_non_null(dlsym(lib, "mt_fake_crypto_marker"));
    dlclose(lib);
}

static void test_digests_right(void **state)
{
    enum { BIG = 3 * 1024 * 1024 + 17 };
    static const size_t lens[] = {0, 3, 1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 65, BIG};
    unsigned char *data = malloc(BIG), md[crypto_hash_sha256_BYTES];
    char got[65], want[65];
    size_t i;

    (void)state;
    assert_non_null(data);
    memset(data, 'a', 1000000);
    mt_sha256_hex(got, data, 1000000);
    assert_string_equal(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    randombytes_buf(data, BIG);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        mt_sha256_hex(got, data, lens[i]);
        crypto_hash_sha256(md, data, lens[i]);
        sodium_bin2hex(want, sizeof(want), md, sizeof(md));
        assert_string_equal(got, want);
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_loaded),
        cmocka_unit_test(test_digests_right),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SHA-256 (src/util/sha256.c): the published test vectors, the same digest in one step and in
 * pieces of every size, and libcrypto's digest of big inputs the same as libsodium's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "util/sha256.h"

static void expect_hex(const char *data, size_t len, const char *want)
{
    char got[65];

    mt_sha256_hex(got, data, len);
    assert_string_equal(got, want);
}

/* Whether libcrypto is mapped into this process: only its loading for
 * SHA-256 brings it here (the library links neither it nor libpq). */
static int libcrypto_mapped(void)
{
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;

    assert_non_null(f);
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, "/libcrypto.so") != NULL;
    fclose(f);
    return found;
}

/* Small hashes are libsodium's until it has hashed 1 MiB in the process,
 * then libcrypto is loaded for them too; hashes under 64 bytes, which
 * libsodium does faster, never count. The digests never change. Runs
 * first: nothing before it may have hashed. */
static void test_small_hashes_load_later(void **state)
{
    enum { SMALL = 1300, TINY = 63, MIB = 1024 * 1024 };
    unsigned char data[SMALL], md[crypto_hash_sha256_BYTES];
    char one[65], sodium[65];
    size_t total = 0;

    (void)state;
    assert_false(libcrypto_mapped());
    randombytes_buf(data, sizeof(data));
    for (total = 0; total < 2 * MIB; total += TINY)
        mt_sha256_hex(one, data, TINY);
    assert_false(libcrypto_mapped());
    for (total = 0;;) {
        data[0] = (unsigned char)total;
        randombytes_buf(data + 1, sizeof(data) - 1);
        mt_sha256_hex(one, data, sizeof(data));
        crypto_hash_sha256(md, data, sizeof(data));
        sodium_bin2hex(sodium, sizeof(sodium), md, sizeof(md));
        assert_string_equal(one, sodium);
        total += sizeof(data);
        if (total >= MIB)
            break;
        assert_false(libcrypto_mapped());
    }
    assert_true(libcrypto_mapped());
    /* libcrypto3 comes with the build's libssl-dev: the fast code is there. */
    assert_true(mt_sha256_accelerated());
    randombytes_buf(data, sizeof(data));
    mt_sha256_hex(one, data, sizeof(data));
    crypto_hash_sha256(md, data, sizeof(data));
    sodium_bin2hex(sodium, sizeof(sodium), md, sizeof(md));
    assert_string_equal(one, sodium);
}

/* FIPS 180-2's examples, and the digest of no bytes (a NULL pointer with it too). */
static void test_vectors(void **state)
{
    static const char abc448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char *million = malloc(1000000);

    (void)state;
    expect_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_hex(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_hex(abc448, sizeof(abc448) - 1,
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    assert_non_null(million);
    memset(million, 'a', 1000000);
    expect_hex(million, 1000000,
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

/* Every length around the 64-byte block, fed in pieces of every size from 1 to 70, gives the
 * one-step digest, and that is libsodium's digest of the same bytes. */
static void test_pieces_and_libsodium(void **state)
{
    enum { MAX = 300 };
    unsigned char data[MAX], md[crypto_hash_sha256_BYTES];
    char one[65], pieces[65], sodium[65];
    size_t len, step, off;

    (void)state;
    randombytes_buf(data, sizeof(data));
    for (len = 0; len <= MAX; len++) {
        mt_sha256_hex(one, data, len);
        crypto_hash_sha256(md, data, len);
        sodium_bin2hex(sodium, sizeof(sodium), md, sizeof(md));
        assert_string_equal(one, sodium);
        for (step = 1; step <= 70; step += (len < 130 ? 1 : 23)) {
            mt_sha256 s;

            mt_sha256_init(&s);
            for (off = 0; off < len; off += step)
                mt_sha256_update(&s, data + off, len - off < step ? len - off : step);
            mt_sha256_final_hex(pieces, &s);
            assert_string_equal(pieces, one);
        }
    }
}

/* From 1 MiB on, the digest comes from libcrypto where it loads: the same
 * as libsodium's, at the edge and well past it, and in pieces. */
static void test_big(void **state)
{
    enum { BIG = 3 * 1024 * 1024 };
    unsigned char *data = malloc(BIG), md[crypto_hash_sha256_BYTES];
    char one[65], sodium[65], pieces[65];
    static const size_t lens[] = {1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 65, BIG};
    size_t i;

    (void)state;
    /* libcrypto3 comes with the build's libssl-dev: the fast code is there. */
    assert_true(mt_sha256_accelerated());
    assert_non_null(data);
    randombytes_buf(data, BIG);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        mt_sha256 s;

        mt_sha256_hex(one, data, lens[i]);
        crypto_hash_sha256(md, data, lens[i]);
        sodium_bin2hex(sodium, sizeof(sodium), md, sizeof(md));
        assert_string_equal(one, sodium);
        mt_sha256_init(&s);
        mt_sha256_update(&s, data, lens[i] / 3);
        mt_sha256_update(&s, data + lens[i] / 3, lens[i] - lens[i] / 3);
        mt_sha256_final_hex(pieces, &s);
        assert_string_equal(pieces, one);
    }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_hashes_load_later),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_pieces_and_libsodium),
        cmocka_unit_test(test_big),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}

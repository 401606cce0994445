/*
 * src/util/bytes.h: each 16-byte mask the same as a byte-by-byte look, for
 * every byte value at every place, and the copy and the lowest-bit helpers.
 * Built twice: as the library is (SSE2 on x86-64), and with -mno-sse2
 * (test_bytes_no_sse2), where only the portable helpers exist and the
 * callers' portable ways are run by the other *_no_sse2 tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/bytes.h"

static void test_copy_and_first(void **state)
{
    char s[48], d[48];

    (void)state;
    for (size_t i = 0; i < sizeof(s); i++)
        s[i] = (char)(i * 37 + 11);
    for (size_t at = 0; at + 16 <= sizeof(s); at++) {
        memset(d, 0, sizeof(d));
        mt_bytes_copy16(d + 1, s + at);
        assert_int_equal(d[0], 0);
        assert_memory_equal(d + 1, s + at, 16);
        for (size_t i = 17; i < sizeof(d); i++)
            assert_int_equal(d[i], 0);
    }
    for (unsigned bit = 0; bit < 16; bit++) {
        assert_int_equal(mt_bytes_first(1u << bit), bit);
        assert_int_equal(mt_bytes_first((1u << bit) | 0x8000u), bit);
        assert_int_equal(mt_bytes_first(0xFFFFu << bit), bit);
    }
}

#if defined(__SSE2__)
static unsigned ref_mask(const char *s, int (*pick)(unsigned char))
{
    unsigned m = 0;

    for (unsigned i = 0; i < 16; i++)
        m |= (unsigned)(pick((unsigned char)s[i]) != 0) << i;
    return m;
}

static int is_nl(unsigned char c)
{
    return c == '\n';
}

static int is_high(unsigned char c)
{
    return c >= 0x80;
}

static int is_json(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

/* Every byte value at every one of the 16 places, on a background of each
 * kind (plain, newlines, high bytes). */
static void test_masks(void **state)
{
    static const char backgrounds[] = {'a', '\n', (char)0xC3};
    char s[16];

    (void)state;
    for (size_t b = 0; b < sizeof(backgrounds); b++) {
        for (unsigned at = 0; at < 16; at++) {
            for (unsigned v = 0; v < 256; v++) {
                memset(s, backgrounds[b], sizeof(s));
                s[at] = (char)v;
                assert_int_equal(mt_bytes_eq16(s, '\n'), ref_mask(s, is_nl));
                assert_int_equal(mt_bytes_high16(s), ref_mask(s, is_high));
                assert_int_equal(mt_bytes_json16(s), ref_mask(s, is_json));
            }
        }
    }
}

/* The count over many blocks (past the 255 a byte's counter holds), the
 * high-byte flag, and the flag of other bytes a JSON string escapes. */
static void test_count(void **state)
{
    enum { BLOCKS = 600 };
    static char s[BLOCKS * 16];
    static const char escaped[] = {'"', '\\', '\t', 0, 0x1f};
    unsigned high, other;
    size_t want = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(s); i++) {
        s[i] = (char)(i % 3 == 0 || i % 16 == 5 ? '\n' : 'x');
        want += s[i] == '\n';
    }
    assert_int_equal(mt_bytes_count_eq(&high, NULL, s, BLOCKS, '\n'), want);
    assert_int_equal(high, 0);
    assert_int_equal(mt_bytes_count_eq(&high, &other, s, BLOCKS, '\n'), want);
    assert_int_equal(high, 0);
    assert_int_equal(other, 0); /* the newlines counted are not "other" */
    assert_int_equal(mt_bytes_count_eq(&high, NULL, s, 0, '\n'), 0);
    for (size_t e = 0; e < sizeof(escaped); e++) {
        size_t at = 16 * (BLOCKS - 1) + e;
        char was;

        while (s[at] == '\n') /* in the last block, in place of an 'x' */
            at++;
        was = s[at];
        s[at] = escaped[e];
        assert_int_equal(mt_bytes_count_eq(&high, &other, s, BLOCKS, '\n'), want);
        assert_int_not_equal(other, 0);
        assert_int_equal(high, 0);
        s[at] = was;
    }
    s[sizeof(s) - 1] = (char)0x80;
    assert_int_equal(mt_bytes_count_eq(&high, &other, s, BLOCKS, '\n'), want);
    assert_int_not_equal(high, 0);
    assert_int_equal(other, 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_and_first),
#if defined(__SSE2__)
        cmocka_unit_test(test_masks),
        cmocka_unit_test(test_count),
#endif
    };

#if defined(MT_TEST_NO_SSE2) && defined(__SSE2__)
    /* The build meant to run the portable ways would run the SSE2 ones. */
    return 1;
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}

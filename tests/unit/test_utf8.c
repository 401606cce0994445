/* Strict UTF-8 decoding and the one-U+FFFD-per-bad-byte display rule (SPEC section 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/buf.h"
#include "util/utf8.h"

#define FFFD   "\xEF\xBF\xBD"
#define LIT(s) s, (sizeof(s) - 1)

static void expect_decode(const char *s, size_t len, size_t want_n, uint32_t want_cp, int line)
{
    uint32_t cp = 0xDEADBEEF;
    size_t n = mt_utf8_decode(&cp, (const unsigned char *)s, len);

    if (n != want_n)
        fail_msg("line %d: decode length %zu, want %zu", line, n, want_n);
    if (want_n != 0 && cp != want_cp)
        fail_msg("line %d: code point U+%04X, want U+%04X", line, (unsigned)cp, (unsigned)want_cp);
}

#define DECODES(lit, n, cp) expect_decode(LIT(lit), n, cp, __LINE__)
#define REJECTS(lit)        expect_decode(LIT(lit), 0, 0, __LINE__)

static void test_decode_valid(void **state)
{
    (void)state;
    DECODES("A", 1, 0x41);
    DECODES("\0", 1, 0);
    DECODES("\x7F", 1, 0x7F);
    DECODES("\xC2\x80", 2, 0x80);
    DECODES("\xC3\xA9", 2, 0xE9);
    DECODES("\xDF\xBF", 2, 0x7FF);
    DECODES("\xE0\xA0\x80", 3, 0x800);
    DECODES("\xE2\x82\xAC", 3, 0x20AC);
    DECODES("\xED\x9F\xBF", 3, 0xD7FF);
    DECODES("\xEE\x80\x80", 3, 0xE000);
    DECODES("\xEF\xBC\x8E", 3, 0xFF0E);
    DECODES("\xEF\xBF\xBD", 3, 0xFFFD);
    DECODES("\xEF\xBF\xBF", 3, 0xFFFF);
    DECODES("\xF0\x90\x80\x80", 4, 0x10000);
    DECODES("\xF0\x9F\x98\x80", 4, 0x1F600);
    DECODES("\xF4\x8F\xBF\xBF", 4, 0x10FFFF);
    /* Only the first code point is read. */
    DECODES("ab", 1, 0x61);
    DECODES("\xC3\xA9x", 2, 0xE9);
}

static void test_decode_overlong(void **state)
{
    (void)state;
    REJECTS("\xC0\x80");
    REJECTS("\xC0\xAE");
    REJECTS("\xC0\xAF");
    REJECTS("\xC1\x9C");
    REJECTS("\xC1\xBF");
    REJECTS("\xE0\x80\x80");
    REJECTS("\xE0\x80\xAE");
    REJECTS("\xE0\x9F\xBF");
    REJECTS("\xF0\x80\x80\xAE");
    REJECTS("\xF0\x8F\xBF\xBF");
    /* The old five- and six-byte forms. */
    REJECTS("\xF8\x80\x80\x80\xAE");
    REJECTS("\xFC\x80\x80\x80\x80\xAE");
}

static void test_decode_surrogates_and_range(void **state)
{
    (void)state;
    REJECTS("\xED\xA0\x80");
    REJECTS("\xED\xAD\xBF");
    REJECTS("\xED\xB0\x80");
    REJECTS("\xED\xBF\xBF");
    REJECTS("\xED\xA0\xBD\xED\xB8\x80"); /* CESU-8 pair */
    REJECTS("\xF4\x90\x80\x80");
    REJECTS("\xF5\x80\x80\x80");
    REJECTS("\xF7\xBF\xBF\xBF");
    REJECTS("\xFE");
    REJECTS("\xFF");
}

static void test_decode_truncated_and_stray(void **state)
{
    uint32_t cp;

    (void)state;
    REJECTS("");
    REJECTS("\x80");
    REJECTS("\xBF");
    REJECTS("\x80\x80");
    REJECTS("\xC2");
    REJECTS("\xC2\x41");
    REJECTS("\xC2\xC2\x80");
    REJECTS("\xE2\x82");
    REJECTS("\xE2\x28\xA1");
    REJECTS("\xE2\x82\x41");
    REJECTS("\xF0\x9F\x98");
    REJECTS("\xF0\x9F\x98\x41");
    /* The length bounds the read even when more bytes follow. */
    assert_int_equal(mt_utf8_decode(&cp, (const unsigned char *)"\xC3\xA9", 1), 0);
    assert_int_equal(mt_utf8_decode(&cp, (const unsigned char *)"\xE2\x82\xAC", 2), 0);
    assert_int_equal(mt_utf8_decode(&cp, (const unsigned char *)"\xF0\x9F\x98\x80", 3), 0);
}

static void expect_sanitize(const char *s, size_t len, const char *want, size_t want_len, int line)
{
    mt_buf b = MT_BUF_INIT;

    if (mt_utf8_sanitize(&b, s, len) != 0)
        fail_msg("line %d: sanitize failed", line);
    if (b.len != want_len || (want_len > 0 && memcmp(b.ptr, want, want_len) != 0))
        fail_msg("line %d: sanitize gave %zu bytes, want %zu", line, b.len, want_len);
    mt_buf_dispose(&b);
}

#define SANITIZES(lit, want) expect_sanitize(LIT(lit), LIT(want), __LINE__)

static void test_sanitize(void **state)
{
    (void)state;
    SANITIZES("", "");
    SANITIZES("hello", "hello");
    SANITIZES("a\0b", "a\0b");
    SANITIZES("a\xff"
              "b",
              "a" FFFD "b");
    SANITIZES("\xff", FFFD);
    SANITIZES("\x80", FFFD);
    SANITIZES("caf\xC3\xA9", "caf\xC3\xA9");
    SANITIZES("\xE2\x82\xAC", "\xE2\x82\xAC");
    SANITIZES("\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80");
    SANITIZES(FFFD, FFFD);
    /* One U+FFFD per bad byte, whatever the bytes were meant to be. */
    SANITIZES("\xC0\xAE", FFFD FFFD);
    SANITIZES("\xE0\x80\xAE", FFFD FFFD FFFD);
    SANITIZES("\xED\xA0\x80", FFFD FFFD FFFD);
    SANITIZES("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD);
    SANITIZES("\xE2\x82", FFFD FFFD);
    SANITIZES("\xE2\x82x", FFFD FFFD "x");
    SANITIZES("\xF0\x9F\x98", FFFD FFFD FFFD);
    /* A broken sequence does not swallow the valid one after it. */
    SANITIZES("\xE2\xE2\x82\xAC", FFFD "\xE2\x82\xAC");
    SANITIZES("\x80\xC3\xA9\xC2", FFFD "\xC3\xA9" FFFD);
    SANITIZES("a\r\nb\x7F", "a\r\nb\x7F");
}

static void test_sanitize_appends(void **state)
{
    mt_buf b = MT_BUF_INIT;

    (void)state;
    assert_int_equal(mt_buf_puts(&b, "x:"), 0);
    assert_int_equal(mt_utf8_sanitize(&b, LIT("a\xff")), 0);
    assert_int_equal(mt_utf8_sanitize(&b, LIT("\xC3\xA9")), 0);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.ptr, "x:a" FFFD "\xC3\xA9", 8);
    assert_int_equal(b.ptr[b.len], '\0');
    mt_buf_dispose(&b);
}

static void test_width(void **state)
{
    (void)state;
    assert_int_equal(mt_utf8_width(LIT("")), 0);
    assert_int_equal(mt_utf8_width(LIT("abc")), 3);
    assert_int_equal(mt_utf8_width(LIT("a\0b")), 3);
    assert_int_equal(mt_utf8_width(LIT("\xC3\xA9")), 1);
    assert_int_equal(mt_utf8_width(LIT("\xE2\x82\xAC")), 1);
    assert_int_equal(mt_utf8_width(LIT("\xF0\x9F\x98\x80")), 1);
    assert_int_equal(mt_utf8_width(LIT("\xE7\xAC\x94\xE8\xAE\xB0.md")), 5);
    assert_int_equal(mt_utf8_width(LIT("a\xff"
                                       "b")),
                     3);
    assert_int_equal(mt_utf8_width(LIT("\xC0\xAE")), 2);
    assert_int_equal(mt_utf8_width(LIT("\xED\xA0\x80")), 3);
    assert_int_equal(mt_utf8_width(LIT("\xF4\x90\x80\x80")), 4);
    assert_int_equal(mt_utf8_width(LIT("\xE2\x82")), 2);
    assert_int_equal(mt_utf8_width(LIT("\xE2\x82\xAC"
                                       "x")),
                     2);
}

static void test_prefix(void **state)
{
    (void)state;
    assert_int_equal(mt_utf8_prefix(LIT("h\xC3\xA9llo"), 0), 0);
    assert_int_equal(mt_utf8_prefix(LIT("h\xC3\xA9llo"), 1), 1);
    assert_int_equal(mt_utf8_prefix(LIT("h\xC3\xA9llo"), 2), 3);
    assert_int_equal(mt_utf8_prefix(LIT("h\xC3\xA9llo"), 5), 6);
    assert_int_equal(mt_utf8_prefix(LIT("h\xC3\xA9llo"), 100), 6);
    assert_int_equal(mt_utf8_prefix(LIT(""), 3), 0);
    assert_int_equal(mt_utf8_prefix(LIT("\xE2\x82\xAC\xE2\x82\xAC"), 1), 3);
    assert_int_equal(mt_utf8_prefix(LIT("\xF0\x9F\x98\x80x"), 1), 4);
    assert_int_equal(mt_utf8_prefix(LIT("a\xff\xff"
                                        "b"),
                                    2),
                     2);
    assert_int_equal(mt_utf8_prefix(LIT("a\xff\xff"
                                        "b"),
                                    3),
                     3);
    /* A truncated sequence is bad bytes, each shown as one U+FFFD. */
    assert_int_equal(mt_utf8_prefix(LIT("\xE2\x82"), 1), 1);
    assert_int_equal(mt_utf8_prefix(LIT("\xE2\x82"), 2), 2);
    assert_int_equal(mt_utf8_prefix(LIT("\xED\xA0\x80"), 2), 2);
}

/* Width, prefix and sanitize must agree on any bytes, or a cut result could
 * count differently from what it shows. */
static void test_agreement_random(void **state)
{
    static const unsigned char pool[] = {'a',  '\n', 0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xC2,
                                         0xC3, 0xA9, 0xE0, 0xE2, 0x82, 0xAC, 0xED, 0xA0,
                                         0xF0, 0x90, 0x9F, 0xF4, 0x8F, 0xF5, 0xFF};
    unsigned char s[24];
    uint32_t seed = 12345;

    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        size_t width;
        mt_buf b = MT_BUF_INIT;

        seed = seed * 1103515245u + 12345u;
        len = (seed >> 16) % sizeof(s);
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            s[i] = pool[(seed >> 16) % sizeof(pool)];
        }
        width = mt_utf8_width((const char *)s, len);
        assert_int_equal(mt_utf8_sanitize(&b, (const char *)s, len), 0);
        /* The output is valid UTF-8 with exactly `width` code points. */
        {
            size_t i = 0;
            size_t count = 0;
            uint32_t cp;

            while (i < b.len) {
                size_t n = mt_utf8_decode(&cp, (const unsigned char *)b.ptr + i, b.len - i);

                assert_true(n > 0);
                i += n;
                count++;
            }
            assert_int_equal(count, width);
        }
        assert_int_equal(mt_utf8_prefix((const char *)s, len, width), len);
        for (size_t k = 0; k <= width; k++) {
            size_t p = mt_utf8_prefix((const char *)s, len, k);
            mt_buf pb = MT_BUF_INIT;

            assert_int_equal(mt_utf8_width((const char *)s, p), k);
            assert_int_equal(mt_utf8_sanitize(&pb, (const char *)s, p), 0);
            assert_true(pb.len <= b.len);
            if (pb.len > 0)
                assert_memory_equal(pb.ptr, b.ptr, pb.len);
            mt_buf_dispose(&pb);
        }
        mt_buf_dispose(&b);
    }
}

/* The ASCII run, found 16 and 8 bytes a step: a byte above 0x7f at every
 * offset of texts of every length around the steps. */
static void test_ascii_run_blocks(void **state)
{
    char s[80];
    (void)state;
    for (size_t len = 0; len < sizeof(s); len++) {
        memset(s, 'a', len);
        assert_int_equal(mt_utf8_ascii_run(s, len), len);
        for (size_t at = 0; at < len; at++) {
            s[at] = (char)(0x80 + at % 0x80);
            assert_int_equal(mt_utf8_ascii_run(s, len), at);
            s[at] = 'a';
        }
    }
}

/* A cut never splits a valid sequence, whatever its length and wherever the
 * limit falls in it; bad bytes are single units and may be cut anywhere. */
static void test_cut(void **state)
{
    static const char *const seqs[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
    char s[16];
    (void)state;
    assert_int_equal(mt_utf8_cut(LIT("abc"), 3), 3);
    assert_int_equal(mt_utf8_cut(LIT("abc"), 10), 3);
    assert_int_equal(mt_utf8_cut(LIT("abc"), 2), 2);
    assert_int_equal(mt_utf8_cut(LIT("abc"), 0), 0);
    for (size_t k = 0; k < 3; k++) {
        size_t n = strlen(seqs[k]);

        /* "ab", the sequence, "z": a limit inside the sequence cuts before it. */
        memcpy(s, "ab", 2);
        memcpy(s + 2, seqs[k], n);
        s[2 + n] = 'z';
        for (size_t max = 2; max < 2 + n; max++)
            assert_int_equal(mt_utf8_cut(s, 3 + n, max), 2);
        assert_int_equal(mt_utf8_cut(s, 3 + n, 2 + n), 2 + n);
        /* At the start too. */
        for (size_t max = 0; max < n; max++)
            assert_int_equal(mt_utf8_cut(s + 2, 1 + n, max), 0);
        /* A truncated sequence is bad bytes: cut where the limit says. */
        for (size_t max = 3; max <= 1 + n; max++)
            assert_int_equal(mt_utf8_cut(s, 1 + n, max), max);
    }
    assert_int_equal(mt_utf8_cut(LIT("a\xff\xff\xff\xff"), 3), 3);
    assert_int_equal(mt_utf8_cut(LIT("a\x80\x80\x80\x80"), 4), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_valid),
        cmocka_unit_test(test_decode_overlong),
        cmocka_unit_test(test_decode_surrogates_and_range),
        cmocka_unit_test(test_decode_truncated_and_stray),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_sanitize_appends),
        cmocka_unit_test(test_width),
        cmocka_unit_test(test_ascii_run_blocks),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_agreement_random),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

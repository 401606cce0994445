/* Lines, numbered lines and sizes (SPEC section 2 and view's sizes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util/buf.h"
#include "util/lines.h"

static void test_line_count(void **state)
{
    (void)state;
    assert_int_equal(mt_text_line_count("", 0), 0);
    assert_int_equal(mt_text_line_count("a", 1), 1);
    assert_int_equal(mt_text_line_count("a\n", 2), 1);
    assert_int_equal(mt_text_line_count("a\nb\n", 4), 2);
    assert_int_equal(mt_text_line_count("a\nb", 3), 2);
    assert_int_equal(mt_text_line_count("\n", 1), 1);
    assert_int_equal(mt_text_line_count("\n\n", 2), 2);
    assert_int_equal(mt_text_line_count("a\r\nb\r\n", 6), 2);
}

/* Counted 16 bytes a step: newlines at every offset of a block, and texts
 * of every length around the steps, agree with a count byte by byte. */
static void test_line_count_blocks(void **state)
{
    unsigned seed = 777;
    char s[100];
    (void)state;
    for (int round = 0; round < 5000; round++) {
        size_t len = (size_t)(round % 100), naive = 0, i;
        int ascii = 1, plain = 1, got, got_plain;
        static const char escaped[] = {'"', '\\', '\t', '\r', 1, 0x1f, 0};

        for (i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            s[i] = (seed >> 16) % 5 ? (char)('a' + (seed >> 20) % 26) : '\n';
            if (round % 3 == 0 && (seed >> 24) % 64 == 0)
                s[i] = (char)0xe9; /* not ASCII, anywhere in the text */
            if (round % 3 == 1 && (seed >> 24) % 64 == 0)
                s[i] = escaped[(seed >> 8) % sizeof(escaped)]; /* JSON escapes it */
            naive += s[i] == '\n';
            ascii &= (unsigned char)s[i] < 0x80;
            plain &= s[i] == '\n' || (s[i] != '"' && s[i] != '\\' && (unsigned char)s[i] >= 0x20);
        }
        if (len > 0 && s[len - 1] != '\n')
            naive++;
        assert_int_equal(mt_text_line_count(s, len), naive);
        assert_int_equal(mt_text_line_count_ascii(s, len, &got, NULL), naive);
        assert_int_equal(got, ascii);
        assert_int_equal(mt_text_line_count_ascii(s, len, &got, &got_plain), naive);
        assert_int_equal(got, ascii);
        assert_int_equal(got_plain, plain);
    }
    /* Long runs of newlines: far more than a byte's count per position. */
    {
        size_t len = 255 * 16 * 3 + 37;
        char *big = malloc(len);

        assert_non_null(big);
        memset(big, '\n', len);
        assert_int_equal(mt_text_line_count(big, len), len);
        big[len - 1] = 'x';
        assert_int_equal(mt_text_line_count(big, len), len);
        free(big);
    }
}

static void test_line_at_and_start(void **state)
{
    const char *t = "ab\ncd\n\nef";
    size_t len = strlen(t);
    (void)state;
    assert_int_equal(mt_text_line_at(t, len, 0), 1);
    assert_int_equal(mt_text_line_at(t, len, 2), 1); /* the newline belongs to its line */
    assert_int_equal(mt_text_line_at(t, len, 3), 2);
    assert_int_equal(mt_text_line_at(t, len, 6), 3);
    assert_int_equal(mt_text_line_at(t, len, 7), 4);
    assert_int_equal(mt_text_line_at(t, len, len), 4);
    assert_int_equal(mt_text_line_start(t, len, 1), 0);
    assert_int_equal(mt_text_line_start(t, len, 2), 3);
    assert_int_equal(mt_text_line_start(t, len, 3), 6);
    assert_int_equal(mt_text_line_start(t, len, 4), 7);
    assert_int_equal(mt_text_line_start(t, len, 5), len);
    assert_int_equal(mt_text_line_start("a\n", 2, 2), 2);
}

static void test_number_lines(void **state)
{
    mt_buf b = MT_BUF_INIT;
    const char *t = "one\ntwo\n\xff\n";
    (void)state;
    assert_int_equal(mt_text_number_lines(&b, t, strlen(t), 1, 3, SIZE_MAX), 0);
    assert_string_equal(b.ptr, "\n     1\tone\n     2\ttwo\n     3\t\xEF\xBF\xBD");
    mt_buf_truncate(&b, 0);
    assert_int_equal(mt_text_number_lines(&b, t, strlen(t), 2, 2, SIZE_MAX), 0);
    assert_string_equal(b.ptr, "\n     2\ttwo");
    /* Cut by code points, not bytes: "\xC3\xA9" is one. */
    mt_buf_truncate(&b, 0);
    t = "ab\xC3\xA9"
        "cd\nxy";
    assert_int_equal(mt_text_number_lines(&b, t, strlen(t), 1, 2, 3), 0);
    assert_string_equal(b.ptr,
                        "\n     1\tab\xC3\xA9\xE2\x80\xA6 [line cut: 6 bytes in all]\n     2\txy");
    mt_buf_dispose(&b);
}

static void test_line_prefix(void **state)
{
    static const struct {
        size_t n;
        const char *s;
    } cases[] = {{1, "\n     1\t"},        {42, "\n    42\t"}, {999999, "\n999999\t"},
                 {1000000, "\n1000000\t"}, {0, "\n     0\t"},  {123456789, "\n123456789\t"}};
    char out[32];
    size_t i, n;
    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        n = mt_text_line_prefix(out, cases[i].n);
        out[n] = '\0';
        assert_string_equal(out, cases[i].s);
    }
}

/* Counting up in place gives what formatting each number gives, across every
 * carry and the growth from 6 digits to 7. */
static void test_prefix_counting(void **state)
{
    mt_text_prefix p;
    char want[32];
    size_t line, n;
    (void)state;
    mt_text_prefix_start(&p, 0);
    for (line = 0; line <= 1100000; line++) {
        n = mt_text_line_prefix(want, line);
        assert_int_equal(p.len, n);
        assert_int_equal(p.line, line);
        assert_memory_equal(p.text, want, n);
        mt_text_prefix_next(&p);
    }
    mt_text_prefix_start(&p, 9999999);
    mt_text_prefix_next(&p);
    n = mt_text_line_prefix(want, 10000000);
    assert_int_equal(p.len, n);
    assert_memory_equal(p.text, want, n);
}

static void test_format_size(void **state)
{
    static const struct {
        uint64_t n;
        const char *s;
    } cases[] = {
        {0, "0B"},
        {1, "1B"},
        {1023, "1023B"},
        {1024, "1.0K"},
        {1075, "1.0K"},
        {1076, "1.1K"},
        {1280, "1.3K"},
        {1536, "1.5K"},
        {4096, "4.0K"},
        {1048524, "1023.9K"},
        {1048525, "1.0M"},
        {1048575, "1.0M"},
        {1048576, "1.0M"},
        {1572864, "1.5M"},
        {1073741824, "1.0G"},
        {1099511627776ULL, "1.0T"},
        {1125899906842624ULL, "1024.0T"},
        {UINT64_MAX, "16777216.0T"},
    };
    char out[32];
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mt_text_format_size(out, cases[i].n);
        assert_string_equal(out, cases[i].s);
    }
}

static void test_parse_size(void **state)
{
    uint64_t v = 7;
    (void)state;
    assert_int_equal(mt_text_parse_size(&v, "0"), 0);
    assert_int_equal(v, 0);
    assert_int_equal(mt_text_parse_size(&v, "1048576"), 0);
    assert_int_equal(v, 1048576);
    assert_int_equal(mt_text_parse_size(&v, "1K"), 0);
    assert_int_equal(v, 1024);
    assert_int_equal(mt_text_parse_size(&v, "100m"), 0);
    assert_int_equal(v, 104857600);
    assert_int_equal(mt_text_parse_size(&v, "2G"), 0);
    assert_int_equal(v, 2147483648ULL);
    assert_int_equal(mt_text_parse_size(&v, "18446744073709551615"), 0);
    assert_true(v == UINT64_MAX);
    v = 7;
    /* Overflow, signs, spaces, other suffixes, trailing text: all refused, v untouched. */
    assert_int_equal(mt_text_parse_size(&v, "18446744073709551616"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, "17179869184G"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, "-1"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, "+1"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, " 1"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, "1T"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, "1KB"), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, ""), MT_EINVAL);
    assert_int_equal(mt_text_parse_size(&v, NULL), MT_EINVAL);
    assert_int_equal(v, 7);
}

static void test_format_count(void **state)
{
    char out[32];
    (void)state;
    mt_text_format_count(out, 0);
    assert_string_equal(out, "0");
    mt_text_format_count(out, 999);
    assert_string_equal(out, "999");
    mt_text_format_count(out, 1000);
    assert_string_equal(out, "1,000");
    mt_text_format_count(out, 999999);
    assert_string_equal(out, "999,999");
    mt_text_format_count(out, 1048576);
    assert_string_equal(out, "1,048,576");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_count),        cmocka_unit_test(test_line_count_blocks),
        cmocka_unit_test(test_line_at_and_start), cmocka_unit_test(test_number_lines),
        cmocka_unit_test(test_line_prefix),       cmocka_unit_test(test_prefix_counting),
        cmocka_unit_test(test_format_size),       cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_format_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

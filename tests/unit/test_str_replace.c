/* str_replace on the inputs that used to be slow or huge (SPEC section 3):
 * the match finders on their own, with their comparisons counted instead of
 * timed, and the whole command on the worst cases, with exact results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util/buf.h"
#include "util/lines.h"

#define KIB 1024

/* Bytes of `unit` repeated to n bytes (the last copy may be cut). */
static char *repeat(const char *unit, size_t n)
{
    size_t u = strlen(unit), i;
    char *s = malloc(n + 1);

    assert_non_null(s);
    for (i = 0; i < n; i++)
        s[i] = unit[i % u];
    s[n] = '\0';
    return s;
}

/* The offsets mt_text_find_all reports. */
typedef struct {
    size_t *at;
    size_t n, cap;
} offsets;

static int collect(size_t offset, void *payload)
{
    offsets *o = payload;

    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->at = realloc(o->at, o->cap * sizeof(*o->at));
        assert_non_null(o->at);
    }
    o->at[o->n++] = offset;
    return 0;
}

static size_t find_all(offsets *o, const char *data, size_t len, size_t from, const char *needle,
                       size_t nlen)
{
    size_t steps = 0;

    o->n = 0;
    assert_int_equal(mt_text_find_all(data, len, from, needle, nlen, collect, o, &steps), 0);
    /* The promise of Knuth-Morris-Pratt that tests can hold without a clock. */
    assert_true(steps <= 2 * (len - from) + 2 * nlen);
    return steps;
}

/* Every text over {a, b} up to 10 bytes and every needle up to 4: the same
 * matches, overlapping ones included, as trying each offset. */
static void test_find_all_small(void **state)
{
    char text[16], needle[8];
    offsets o = {NULL, 0, 0};
    size_t tlen, nlen, tbits, nbits, i, j, from;
    (void)state;

    for (tlen = 0; tlen <= 10; tlen++) {
        for (tbits = 0; tbits < (1u << tlen); tbits++) {
            for (i = 0; i < tlen; i++)
                text[i] = (char)('a' + ((tbits >> i) & 1));
            for (nlen = 1; nlen <= 4; nlen++) {
                for (nbits = 0; nbits < (1u << nlen); nbits++) {
                    for (i = 0; i < nlen; i++)
                        needle[i] = (char)('a' + ((nbits >> i) & 1));
                    for (from = 0; from <= tlen; from += 3) {
                        size_t want = 0, first = tlen;
                        find_all(&o, text, tlen, from, needle, nlen);
                        for (i = from; i + nlen <= tlen; i++) {
                            if (memcmp(text + i, needle, nlen) != 0)
                                continue;
                            if (first == tlen)
                                first = i;
                            assert_true(want < o.n);
                            assert_int_equal(o.at[want], i);
                            want++;
                        }
                        assert_int_equal(o.n, want);
                        assert_int_equal(mt_text_find(text, tlen, from, needle, nlen), first);
                    }
                }
            }
        }
    }
    for (j = 0; j < 2; j++) /* a needle longer than the text */
        assert_int_equal(mt_text_find("ab", 2, j, "abc", 3), 2);
    free(o.at);
}

/* A callback's non-zero value stops the pass and comes back. */
static int stop_at_second(size_t offset, void *payload)
{
    size_t *seen = payload;
    (void)offset;
    return ++*seen == 2 ? 7 : 0;
}

static void test_find_all_stops(void **state)
{
    size_t seen = 0;
    (void)state;
    assert_int_equal(mt_text_find_all("aaaa", 4, 0, "a", 1, stop_at_second, &seen, NULL), 7);
    assert_int_equal(seen, 2);
}

/* The worst cases for restarting a search after each match, each at most
 * 2 * (len + nlen) comparisons: the same numbers that took minutes. */
static void test_find_all_worst_cases(void **state)
{
    offsets o = {NULL, 0, 0};
    char *text, *needle;
    size_t i;
    (void)state;

    /* 512 KiB of 'a', 256 KiB of 'a': a match at every one of 256 Ki + 1 offsets. */
    text = repeat("a", 512 * KIB);
    needle = repeat("a", 256 * KIB);
    find_all(&o, text, 512 * KIB, 0, needle, 256 * KIB);
    assert_int_equal(o.n, 256 * KIB + 1);
    for (i = 0; i < o.n; i++)
        assert_int_equal(o.at[i], i);
    assert_int_equal(mt_text_find(text, 512 * KIB, 0, needle, 256 * KIB), 0);
    assert_int_equal(mt_text_find(text, 512 * KIB, 1, needle, 256 * KIB), 1);

    /* A long periodic prefix and a mismatching last byte: no match at all. */
    needle[256 * KIB - 1] = 'b';
    find_all(&o, text, 512 * KIB, 0, needle, 256 * KIB);
    assert_int_equal(o.n, 0);
    assert_int_equal(mt_text_find(text, 512 * KIB, 0, needle, 256 * KIB), 512 * KIB);
    free(text);
    free(needle);

    /* "abab...": a match at every even offset. */
    text = repeat("ab", 512 * KIB);
    needle = repeat("ab", 128 * KIB);
    find_all(&o, text, 512 * KIB, 0, needle, 128 * KIB);
    assert_int_equal(o.n, (512 - 128) * KIB / 2 + 1);
    for (i = 0; i < o.n; i++)
        assert_int_equal(o.at[i], 2 * i);

    /* ... and the same with its last byte changed, which every offset almost matches. */
    needle[128 * KIB - 1] = 'a';
    find_all(&o, text, 512 * KIB, 0, needle, 128 * KIB);
    assert_int_equal(o.n, 0);
    assert_int_equal(mt_text_find(text, 512 * KIB, 0, needle, 128 * KIB), 512 * KIB);
    free(text);
    free(needle);
    free(o.at);
}

/* Cutting keeps whole characters and counts a bad byte as one. */
static void test_put_cut(void **state)
{
    mt_buf b = MT_BUF_INIT;
    (void)state;

    assert_int_equal(mt_text_put_cut(&b, "abc", 3, 3), 0);
    assert_string_equal(b.ptr, "abc");
    mt_buf_truncate(&b, 0);
    assert_int_equal(mt_text_put_cut(&b, "abcd", 4, 3), 1);
    assert_string_equal(b.ptr, "abc\xE2\x80\xA6");
    mt_buf_truncate(&b, 0);
    /* U+1F600 is one code point of four bytes: never split. */
    assert_int_equal(mt_text_put_cut(&b, "a\xF0\x9F\x98\x80z", 6, 2), 1);
    assert_string_equal(b.ptr, "a\xF0\x9F\x98\x80\xE2\x80\xA6");
    mt_buf_truncate(&b, 0);
    assert_int_equal(mt_text_put_cut(&b, "\xF0\x9F\x98\x80\xF0\x9F\x98\x80", 8, 2), 0);
    assert_string_equal(b.ptr, "\xF0\x9F\x98\x80\xF0\x9F\x98\x80");
    mt_buf_truncate(&b, 0);
    /* A bad byte shows as U+FFFD and counts one; a sequence cut short is bad bytes. */
    assert_int_equal(mt_text_put_cut(&b, "\xFF\xFFxy", 4, 3), 1);
    assert_string_equal(b.ptr, "\xEF\xBF\xBD\xEF\xBF\xBDx\xE2\x80\xA6");
    mt_buf_truncate(&b, 0);
    assert_int_equal(mt_text_put_cut(&b, "ab\xF0\x9F", 4, 3), 1);
    assert_string_equal(b.ptr, "ab\xEF\xBF\xBD\xE2\x80\xA6");
    mt_buf_dispose(&b);
}

static void write_file(const mt_test_store *ts, const char *rel, const char *data, size_t len)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", ts->root, rel);
    assert_non_null(f = fopen(path, "wb"));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Run str_replace on /memories/f.txt; old_str and new_str hold no '"' or '\'
 * and their newlines are escaped here. Returns the text (malloc'd). */
static char *replace(mt_memory *mem, int *is_error, const char *old_str, const char *new_str)
{
    mt_buf json = MT_BUF_INIT;
    const char *s[2] = {old_str, new_str};
    char *text;
    int i;

    assert_int_equal(
        mt_buf_puts(&json, "{\"command\":\"str_replace\",\"path\":\"/memories/f.txt\""), 0);
    for (i = 0; i < 2; i++) {
        const char *p;
        assert_int_equal(mt_buf_puts(&json, i ? ",\"new_str\":\"" : ",\"old_str\":\""), 0);
        for (p = s[i]; *p; p++)
            assert_int_equal(*p == '\n' ? mt_buf_puts(&json, "\\n") : mt_buf_putc(&json, *p), 0);
        assert_int_equal(mt_buf_putc(&json, '"'), 0);
    }
    assert_int_equal(mt_buf_putc(&json, '}'), 0);
    text = mt_test_call(mem, is_error, json.ptr);
    mt_buf_dispose(&json);
    return text;
}

static void expect_replace(mt_memory *mem, const char *old_str, const char *new_str, int is_error,
                           const char *want)
{
    int err;
    char *got = replace(mem, &err, old_str, new_str);

    assert_string_equal(got, want);
    assert_int_equal(err, is_error);
    free(got);
}

/* What the SPEC says an old_str of `unit` repeated to `bytes` is echoed
 * as: its first 200 code points, then the mark of the cut. */
static char *cut_echo(const char *before, const char *unit, size_t bytes, const char *after)
{
    mt_buf b = MT_BUF_INIT;
    char *a200 = repeat(unit, 200);
    char count[32];
    size_t len;

    mt_text_format_count(count, bytes);
    assert_int_equal(mt_buf_printf(&b, "%s%s\xE2\x80\xA6` [old_str cut: %s bytes in all]%s", before,
                                   a200, count, after),
                     0);
    free(a200);
    return mt_buf_detach(&b, &len);
}

/* The command on the cases that took minutes of CPU under the file's lock,
 * and answered with the whole of a 256 KiB old_str. */
static void test_worst_cases(void **state)
{
    mt_test_store ts;
    char *text, *old_str, *want;
    size_t i;
    (void)state;

    mt_test_store_init(&ts, NULL);

    /* 512 KiB of 'a' and 256 KiB of 'a': 256 Ki + 1 overlapping matches, all on line 1. */
    text = repeat("a", 512 * KIB);
    write_file(&ts, "f.txt", text, 512 * KIB);
    old_str = repeat("a", 256 * KIB);
    want = cut_echo("No replacement was performed. Multiple occurrences of old_str `", "a",
                    256 * KIB, " in lines: 1. Please ensure it is unique");
    expect_replace(ts.mem, old_str, "x", 1, want);
    free(want);

    /* The same with a mismatching last byte: no match. */
    old_str[256 * KIB - 1] = 'b';
    want = cut_echo("No replacement was performed, old_str `", "a", 256 * KIB,
                    " did not appear verbatim in /memories/f.txt.");
    expect_replace(ts.mem, old_str, "x", 1, want);
    free(want);
    free(old_str);
    free(text);

    /* "abab...": every even offset matches. */
    text = repeat("ab", 512 * KIB);
    write_file(&ts, "f.txt", text, 512 * KIB);
    old_str = repeat("ab", 128 * KIB);
    want = cut_echo("No replacement was performed. Multiple occurrences of old_str `", "ab",
                    128 * KIB, " in lines: 1. Please ensure it is unique");
    expect_replace(ts.mem, old_str, "x", 1, want);
    free(want);

    /* ... and with its last byte changed, which every even offset almost matches. */
    old_str[128 * KIB - 1] = 'a';
    want = cut_echo("No replacement was performed, old_str `", "ab", 128 * KIB,
                    " did not appear verbatim in /memories/f.txt.");
    expect_replace(ts.mem, old_str, "x", 1, want);
    free(want);
    free(old_str);
    free(text);

    /* 500 lines of 1,000 'a': 501 matches on every line, 100 lines listed. */
    text = repeat("a", 500 * 1001);
    for (i = 1000; i < 500 * 1001; i += 1001)
        text[i] = '\n';
    write_file(&ts, "f.txt", text, 500 * 1001);
    free(text);
    {
        mt_buf lines = MT_BUF_INIT;
        char *a300 = repeat("a", 300);

        assert_int_equal(mt_buf_puts(&lines, " in lines: 1"), 0);
        for (i = 2; i <= 100; i++)
            assert_int_equal(mt_buf_printf(&lines, ", %zu", i), 0);
        assert_int_equal(mt_buf_puts(&lines, " and 400 more lines. Please ensure it is unique"), 0);
        want = cut_echo("No replacement was performed. Multiple occurrences of old_str `", "a", 300,
                        lines.ptr);
        expect_replace(ts.mem, a300, "x", 1, want);
        free(want);
        free(a300);
        mt_buf_dispose(&lines);
    }
    mt_test_store_free(&ts);
}

/* The list of lines stops at 100 and says how many more there are. */
static void test_line_list_cap(void **state)
{
    static const struct {
        size_t lines;
        const char *tail;
    } cases[] = {{100, ""}, {101, " and 1 more line"}, {150, " and 50 more lines"}};
    mt_test_store ts;
    size_t i, line, len;
    (void)state;

    mt_test_store_init(&ts, NULL);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mt_buf b = MT_BUF_INIT;
        char *text = repeat("xa\n", 3 * cases[i].lines), *want;

        write_file(&ts, "f.txt", text, 3 * cases[i].lines);
        assert_int_equal(
            mt_buf_puts(&b, "No replacement was performed. Multiple occurrences of old_str `a` "
                            "in lines: 1"),
            0);
        for (line = 2; line <= cases[i].lines && line <= 100; line++)
            assert_int_equal(mt_buf_printf(&b, ", %zu", line), 0);
        assert_int_equal(mt_buf_printf(&b, "%s. Please ensure it is unique", cases[i].tail), 0);
        want = mt_buf_detach(&b, &len);
        expect_replace(ts.mem, "a", "b", 1, want);
        free(want);
        free(text);
    }
    mt_test_store_free(&ts);
}

/* An old_str of 200 code points is echoed whole; one more and it is cut,
 * after a whole character. */
static void test_echo_cap(void **state)
{
    mt_test_store ts;
    mt_buf old_str = MT_BUF_INIT, want = MT_BUF_INIT;
    size_t i;
    (void)state;

    mt_test_store_init(&ts, NULL);
    write_file(&ts, "f.txt", "text\n", 5);
    for (i = 0; i < 199; i++)
        assert_int_equal(mt_buf_putc(&old_str, 'q'), 0);
    assert_int_equal(mt_buf_puts(&old_str, "\xE2\x82\xAC"), 0); /* U+20AC, 200th */
    assert_int_equal(mt_buf_printf(&want,
                                   "No replacement was performed, old_str `%s` did not appear "
                                   "verbatim in /memories/f.txt.",
                                   old_str.ptr),
                     0);
    expect_replace(ts.mem, old_str.ptr, "x", 1, want.ptr);

    mt_buf_truncate(&want, 0);
    assert_int_equal(mt_buf_printf(&want,
                                   "No replacement was performed, old_str `%s\xE2\x80\xA6` "
                                   "[old_str cut: 205 bytes in all] did not appear verbatim in "
                                   "/memories/f.txt.",
                                   old_str.ptr),
                     0);
    assert_int_equal(mt_buf_puts(&old_str, "\xE2\x82\xAC"), 0); /* the 201st: 205 bytes */
    expect_replace(ts.mem, old_str.ptr, "x", 1, want.ptr);
    mt_buf_dispose(&old_str);
    mt_buf_dispose(&want);
    mt_test_store_free(&ts);
}

/* Each line of the snippet stops at 500 code points; view still shows it whole. */
static void test_snippet_cap(void **state)
{
    mt_test_store ts;
    mt_buf file = MT_BUF_INIT, want = MT_BUF_INIT;
    char *e500 = repeat("\xC3\xA9", 1000), *big = repeat("b", 600 * KIB), *got;
    int err;
    (void)state;

    mt_test_store_init(&ts, NULL);
    /* Line 2: 500 'é', shown whole; line 3: 501, cut; line 4: 600 KiB, cut. */
    assert_int_equal(mt_buf_printf(&file, "x\n%s\n%s\xC3\xA9\n%s\n", e500, e500, big), 0);
    write_file(&ts, "f.txt", file.ptr, file.len);
    assert_int_equal(
        mt_buf_printf(&want,
                      "The memory file has been edited. Here is the snippet showing the change "
                      "(with line numbers):\n     1\ty\n     2\t%s\n     3\t%s\xE2\x80\xA6 [line "
                      "cut: 1,002 bytes in all]\n     4\t%.500s\xE2\x80\xA6 [line cut: 614,400 "
                      "bytes in all]",
                      e500, e500, big),
        0);
    expect_replace(ts.mem, "x\n", "y\n", 0, want.ptr);

    /* The cut is the snippet's alone: view shows the line as it is. */
    got = mt_test_call(ts.mem, &err,
                       "{\"command\":\"view\",\"path\":\"/memories/f.txt\",\"view_range\":[3,3]}");
    assert_int_equal(err, 0);
    mt_buf_truncate(&want, 0);
    assert_int_equal(mt_buf_printf(&want,
                                   "Here's the content of /memories/f.txt with line numbers:\n"
                                   "     3\t%s\xC3\xA9",
                                   e500),
                     0);
    assert_string_equal(got, want.ptr);
    free(got);
    free(e500);
    free(big);
    mt_buf_dispose(&file);
    mt_buf_dispose(&want);
    mt_test_store_free(&ts);
}

/* The snippet as SPEC words it, the slow way: the new file cut into its
 * lines, four either side of those the new text is on. */
static void snippet_want(mt_buf *want, const char *d, size_t len, size_t at, size_t ins)
{
    size_t n = 0, s = 1, e, first, last, line, i, start[256];

    for (i = 0; i < at; i++)
        s += d[i] == '\n';
    e = s;
    for (i = at; ins && i < at + ins - 1; i++)
        e += d[i] == '\n';
    for (i = 0; i < len; i++)
        if (i == 0 || d[i - 1] == '\n')
            start[n++] = i;
    first = s > 4 ? s - 4 : 1;
    last = e + 4 < n ? e + 4 : n;
    assert_int_equal(mt_buf_puts(want, "The memory file has been edited. Here is the snippet "
                                       "showing the change (with line numbers):"),
                     0);
    for (line = first; line <= last; line++) {
        size_t from = start[line - 1], to = line < n ? start[line] - 1 : len;
        if (last - first + 1 > 40 && line == first + 20) {
            assert_int_equal(mt_buf_printf(want,
                                           "\n[snippet cut: lines %zu to %zu not shown; view "
                                           "them with view_range]",
                                           first + 20, last - 20),
                             0);
            line = last - 20;
            continue;
        }
        if (to > from && d[to - 1] == '\n')
            to--;
        assert_int_equal(mt_buf_printf(want, "\n%6zu\t%.*s", line, (int)(to - from), d + from), 0);
    }
}

/* Random files of short lines, with and without a last newline, and random
 * new text at every place: the snippet's lines are those the slow way finds. */
static void test_snippet_lines_random(void **state)
{
    mt_test_store ts;
    mt_buf file = MT_BUF_INIT, want = MT_BUF_INIT, now = MT_BUF_INIT;
    char ins[128];
    unsigned seed = 7;
    int round, cut = 0, unended = 0;
    (void)state;

    mt_test_store_init(&ts, NULL);
    for (round = 0; round < 1500; round++) {
        size_t before = (seed = seed * 1103515245u + 12345u) >> 16 & 31;
        size_t after = (seed = seed * 1103515245u + 12345u) >> 16 & 31;
        size_t k, nins = (seed = seed * 1103515245u + 12345u) >> 16 & (round % 10 ? 15 : 127);
        char *got;
        int err;

        mt_buf_truncate(&file, 0);
        mt_buf_truncate(&now, 0);
        mt_buf_truncate(&want, 0);
        for (k = 0; k < before + 1 + after; k++) {
            seed = seed * 1103515245u + 12345u;
            assert_int_equal(mt_buf_putc(&file, k == before      ? '#'
                                                : seed >> 16 & 1 ? 'a'
                                                                 : '\n'),
                             0);
        }
        for (k = 0; k < nins; k++) {
            seed = seed * 1103515245u + 12345u;
            ins[k] = seed >> 16 & 1 ? 'x' : '\n';
        }
        ins[nins] = '\0';
        write_file(&ts, "f.txt", file.ptr, file.len);
        assert_int_equal(mt_buf_put(&now, file.ptr, before), 0);
        assert_int_equal(mt_buf_put(&now, ins, nins), 0);
        assert_int_equal(mt_buf_put(&now, file.ptr + before + 1, after), 0);
        snippet_want(&want, now.ptr ? now.ptr : "", now.len, before, nins);
        got = replace(ts.mem, &err, "#", ins);
        assert_int_equal(err, 0);
        if (strcmp(got, want.ptr) != 0)
            fail_msg("round %d, file '%s', new text '%s':\ngot  %s\nwant %s", round, file.ptr, ins,
                     got, want.ptr);
        cut += strstr(want.ptr, "[snippet cut") != NULL;
        unended += now.len > 0 && now.ptr[now.len - 1] != '\n';
        free(got);
    }
    /* The rounds met both kinds of snippet and both kinds of file end. */
    assert_true(cut > 10 && cut < 1500);
    assert_true(unended > 100 && unended < 1400);
    mt_buf_dispose(&file);
    mt_buf_dispose(&want);
    mt_buf_dispose(&now);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_all_small),
        cmocka_unit_test(test_find_all_stops),
        cmocka_unit_test(test_find_all_worst_cases),
        cmocka_unit_test(test_put_cut),
        cmocka_unit_test(test_worst_cases),
        cmocka_unit_test(test_line_list_cap),
        cmocka_unit_test(test_echo_cap),
        cmocka_unit_test(test_snippet_cap),
        cmocka_unit_test(test_snippet_lines_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

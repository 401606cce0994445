/* Search text: words, folding, CJK pairs, the query language and matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <memtool/store.h>

#include "search/words.h"

/* strcat without its hazards: the tests' buffers are sized for what they build. */
static void append(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(dst), k = strlen(s);

    assert_true(n + k < cap);
    memcpy(dst + n, s, k + 1);
}

/* The index text of s: its folded words, each followed by a space. */
static char *index_of_n(const char *s, size_t len)
{
    mt_buf b = MT_BUF_INIT;
    size_t n;

    assert_int_equal(mt_search_index_text(&b, s, len), 0);
    return mt_buf_detach(&b, &n);
}

static char *index_of(const char *s)
{
    return index_of_n(s, strlen(s));
}

static void expect_index(const char *text, const char *want, int line)
{
    char *got = index_of(text);

    if (strcmp(got, want) != 0)
        fail_msg("line %d: words of \"%s\" are \"%s\", want \"%s\"", line, text, got, want);
    free(got);
}

#define WORDS(text, want) expect_index(text, want, __LINE__)

static void test_words_ascii(void **state)
{
    (void)state;
    WORDS("", "");
    WORDS("   ...  ", "");
    WORDS("Hello, World!", "hello world ");
    WORDS("deploy.sh --dry-run", "deploy sh dry run ");
    WORDS("v1.2.3 x86_64 0xFF", "v1 2 3 x86 64 0xff ");
    WORDS("snake_case camelCase", "snake case camelcase ");
    WORDS("line1\nline2\r\nline3", "line1 line2 line3 ");
}

static void test_words_folding(void **state)
{
    (void)state;
    /* Latin accents, ligatures and sharp s */
    WORDS("Café naïve Ærø straße", "cafe naive aero strasse ");
    WORDS("Łódź Škoda œuvre ĲSSEL", "lodz skoda oeuvre ijssel ");
    /* a combining accent folds away like a precomposed one */
    WORDS("cafe\xCC\x81", "cafe ");
    /* German in capitals, with the capital sharp s */
    WORDS("GRÜẞE", "grusse ");
    /* Cyrillic: case, and ё as е */
    WORDS("Привет, Ёлка! ВОДА", "привет елка вода ");
    /* Greek: case and tonos, final sigma */
    WORDS("Άλφα ΛΌΓΟΣ λόγος", "αλφα λογοσ λογοσ ");
    /* fullwidth ASCII */
    WORDS("ＡＢＣ１２３", "abc123 ");
}

static void test_words_cjk(void **state)
{
    (void)state;
    /* runs become overlapping pairs; a lone character stays itself */
    WORDS("日本語", "日本 本語 ");
    WORDS("東京", "東京 ");
    WORDS("猫", "猫 ");
    WORDS("日本語のテキスト", "日本 本語 語の のテ テキ キス スト ");
    /* punctuation and other scripts end a run */
    WORDS("中文。English混合", "中文 english 混合 ");
    WORDS("한국어 텍스트", "한국 국어 텍스 스트 ");
    WORDS("私は memtool を使う", "私は memtool を使 使う ");
}

static void test_words_separators(void **state)
{
    (void)state;
    WORDS("a—b “quoted” c…d", "a b quoted c d ");
    WORDS("emoji\xF0\x9F\x98\x80here", "emoji here ");
    /* invalid UTF-8 separates words, never crashes */
    WORDS("ab\xFF\xFE"
          "cd\xC3",
          "ab cd ");
    {
        char *got = index_of_n("nul\0byte", 8);

        assert_string_equal(got, "nul byte ");
        free(got);
    }
}

static int collect(void *payload, const mt_search_word *w)
{
    char *out = payload;
    size_t n = strlen(out);

    snprintf(out + n, 256 - n, "%.*s@%zu-%zu ", (int)w->len, w->word, w->start, w->end);
    return 0;
}

static void test_words_offsets(void **state)
{
    char out[256] = "";
    const char *s = "Ab 日本語 é";

    (void)state;
    assert_int_equal(mt_search_words(s, strlen(s), collect, out), 0);
    /* 日 starts at 3, 本 at 6, 語 at 9 (3 bytes each); é is two bytes at 13 */
    assert_string_equal(out, "ab@0-2 日本@3-9 本語@6-12 e@13-15 ");
}

/* Each ASCII byte between two letters, and ASCII next to what is not: where
 * a word of ASCII begins, ends and goes on is as for any other character. */
static void test_words_every_ascii(void **state)
{
    char text[4], out[256], want[64];
    int c;

    (void)state;
    for (c = 0; c < 0x80; c++) {
        int word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

        text[0] = 'x';
        text[1] = (char)c;
        text[2] = 'Y';
        out[0] = '\0';
        assert_int_equal(mt_search_words(text, 3, collect, out), 0);
        if (word)
            snprintf(want, sizeof(want), "x%cy@0-3 ", (char)(c >= 'A' && c <= 'Z' ? c + 0x20 : c));
        else
            snprintf(want, sizeof(want), "x@0-1 y@2-3 ");
        if (strcmp(out, want) != 0)
            fail_msg("byte 0x%02x: words \"%s\", want \"%s\"", (unsigned)c, out, want);
    }
    {
        static const char *const cases[][2] = {
            /* a combining mark goes on the word, and ASCII after it too */
            {"e\xCC\x81tE", "ete@0-5 "},
            /* accented letters within and around ASCII */
            {"\xC3\x89t\xC3\xa9S", "etes@0-6 "},
            /* CJK ends an ASCII word, and ASCII ends a CJK run */
            {"ab\xE7\x8C\xAB", "ab@0-2 \xE7\x8C\xAB@2-5 "},
            {"\xE7\x8C\xAB\xE7\x8A\xACz", "\xE7\x8C\xAB\xE7\x8A\xAC@0-6 z@6-7 "},
            /* invalid UTF-8 between ASCII */
            {"a\x80Z", "a@0-1 z@2-3 "},
        };
        size_t i;

        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            out[0] = '\0';
            assert_int_equal(mt_search_words(cases[i][0], strlen(cases[i][0]), collect, out), 0);
            if (strcmp(out, cases[i][1]) != 0)
                fail_msg("\"%s\": words \"%s\", want \"%s\"", cases[i][0], out, cases[i][1]);
        }
    }
}

static void test_words_long(void **state)
{
    char text[300], *got, want[MT_SEARCH_WORD_MAX + 2];

    (void)state;
    memset(text, 'x', 200);
    text[200] = '\0';
    memset(want, 'x', MT_SEARCH_WORD_MAX);
    want[MT_SEARCH_WORD_MAX] = ' ';
    want[MT_SEARCH_WORD_MAX + 1] = '\0';
    got = index_of(text);
    assert_string_equal(got, want);
    free(got);
    /* a cut never splits a character: 40 two-byte letters fold to 80 bytes */
    text[0] = '\0';
    for (int i = 0; i < 40; i++)
        memcpy(text + 2 * i, "\xD0\x96", 3); /* Ж */
    got = index_of(text);
    assert_int_equal(strlen(got), MT_SEARCH_WORD_MAX + 1);
    free(got);
}

static int stop_at_second(void *payload, const mt_search_word *w)
{
    int *n = payload;

    (void)w;
    return ++*n == 2 ? 7 : 0;
}

static void test_words_stop(void **state)
{
    int n = 0;

    (void)state;
    assert_int_equal(mt_search_words("a b c", 5, stop_at_second, &n), 7);
    assert_int_equal(n, 2);
}

/* The query language, rendered for FTS5 and for PostgreSQL. */
static void expect_query(const char *query, const char *fts5, const char *tsq, int line)
{
    mt_search_query *q;
    mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
    int rc = mt_search_query_parse(&q, query, strlen(query));

    if (rc < 0)
        fail_msg("line %d: %s: %s", line, query, mt_error_last()->message);
    assert_int_equal(mt_search_fts5_match(&a, q), 0);
    assert_int_equal(mt_search_tsquery(&b, q), 0);
    if (strcmp(a.ptr, fts5) != 0 || strcmp(b.ptr, tsq) != 0)
        fail_msg("line %d: %s gives %s and %s, want %s and %s", line, query, a.ptr, b.ptr, fts5,
                 tsq);
    mt_buf_dispose(&a);
    mt_buf_dispose(&b);
    mt_search_query_free(q);
}

#define QUERY(q, fts5, tsq) expect_query(q, fts5, tsq, __LINE__)

static void test_query_forms(void **state)
{
    (void)state;
    QUERY("deploy", "\"deploy\"", "('deploy')");
    QUERY("  Deploy   Script ", "\"deploy\" AND \"script\"", "('deploy') & ('script')");
    QUERY("\"start up script\"", "\"start up script\"", "('start' <-> 'up' <-> 'script')");
    QUERY("deplo*", "\"deplo\"*", "('deplo':*)");
    QUERY("\"start up*\"", "\"start up\"*", "('start' <-> 'up':*)");
    /* punctuation inside a word makes a phrase of its parts */
    QUERY("e-mail", "\"e mail\"", "('e' <-> 'mail')");
    QUERY("Café", "\"cafe\"", "('cafe')");
    QUERY("ПРИВЕТ", "\"привет\"", "('привет')");
    /* CJK: the pairs as a phrase; a lone character as a prefix of a pair */
    QUERY("日本語", "\"日本 本語\"", "('日本' <-> '本語')");
    QUERY("猫", "\"猫\"*", "('猫':*)");
    /* a bare word runs into a quote: the quote starts a phrase */
    QUERY("a\"b c\"", "\"a\" AND \"b c\"", "('a') & ('b' <-> 'c')");
    /* terms with no words are dropped, when others remain */
    QUERY("-- deploy", "\"deploy\"", "('deploy')");
}

/* Exclusion (-word, NOT word) and OR, as FTS5 and tsquery expressions; OR
 * binds tighter than the implied AND, and the exclusions come last. */
static void test_query_operators(void **state)
{
    (void)state;
    QUERY("deploy -staging", "\"deploy\" NOT \"staging\"", "('deploy') & !('staging')");
    QUERY("deploy NOT staging", "\"deploy\" NOT \"staging\"", "('deploy') & !('staging')");
    QUERY("-staging deploy", "\"deploy\" NOT \"staging\"", "('deploy') & !('staging')");
    QUERY("a OR b", "(\"a\" OR \"b\")", "(('a') | ('b'))");
    QUERY("x a OR b OR c y", "\"x\" AND (\"a\" OR \"b\" OR \"c\") AND \"y\"",
          "('x') & (('a') | ('b') | ('c')) & ('y')");
    QUERY("a OR \"b c\" -\"d e\" NOT f*", "(\"a\" OR \"b c\") NOT \"d e\" NOT \"f\"*",
          "(('a') | ('b' <-> 'c')) & !('d' <-> 'e') & !('f':*)");
    /* in lower case, and inside a word, they are words */
    QUERY("deploy or not", "\"deploy\" AND \"or\" AND \"not\"", "('deploy') & ('or') & ('not')");
    QUERY("e-mail ORDER NOTES", "\"e mail\" AND \"order\" AND \"notes\"",
          "('e' <-> 'mail') & ('order') & ('notes')");
}

/* Whether text matches query, as the scan and the hit's check decide. */
static int matches(const char *query, const char *text)
{
    mt_search_query *q;
    mt_search_matches m;
    int found;

    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    assert_int_equal(mt_search_match(&m, q, text, strlen(text), 20), 0);
    found = m.found;
    mt_search_matches_dispose(&m);
    mt_search_query_free(q);
    return found;
}

static void test_query_operator_matching(void **state)
{
    (void)state;
    assert_true(matches("deploy -staging", "deploy to prod"));
    assert_false(matches("deploy -staging", "deploy to staging"));
    assert_false(matches("deploy NOT \"to staging\"", "deploy to staging"));
    assert_true(matches("deploy NOT \"to staging\"", "deploy staging to"));
    assert_true(matches("release OR deploy", "a release"));
    assert_true(matches("release OR deploy", "a deploy"));
    assert_false(matches("x release OR deploy", "a deploy"));
    assert_true(matches("x release OR deploy", "x deploy"));
    assert_false(matches("release OR deploy -prod", "deploy prod"));
}

static void expect_refused(const char *query, size_t len, const char *words, int line)
{
    mt_search_query *q = (void *)1;
    int rc = mt_search_query_parse(&q, query, len);

    if (rc != MT_EINVAL || q != NULL)
        fail_msg("line %d: \"%s\" was not refused (%d)", line, query, rc);
    if (!strstr(mt_error_last()->message, words))
        fail_msg("line %d: \"%s\": message \"%s\" does not say \"%s\"", line, query,
                 mt_error_last()->message, words);
}

#define REFUSED(q, words) expect_refused(q, strlen(q), words, __LINE__)

static void test_query_errors(void **state)
{
    char big[MT_SEARCH_QUERY_MAX + 2];
    char many[200] = "";

    (void)state;
    REFUSED("", "empty");
    REFUSED("   ", "no letters or digits");
    REFUSED("!!! ---", "no letters or digits");
    REFUSED("\"open phrase", "not closed");
    REFUSED("*", "must follow a word");
    REFUSED("\"*\"", "must follow a word");
    REFUSED("a*b", "only end a word");
    REFUSED("*abc", "only end a word");
    REFUSED("\"a* b\"", "only end a word");
    REFUSED("bad\xFFutf8", "UTF-8");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    REFUSED(big, "at most");
    for (int i = 0; i <= MT_SEARCH_TERMS_MAX; i++)
        append(many, sizeof(many), "w ");
    REFUSED(many, "at most 16");
    expect_refused(NULL, 0, "empty", __LINE__);
    REFUSED("-staging", "only excludes");
    REFUSED("NOT staging -prod", "only excludes");
    REFUSED("OR deploy", "OR must stand between");
    REFUSED("deploy OR", "OR must be followed");
    REFUSED("deploy OR OR x", "OR must stand between");
    REFUSED("deploy OR -x", "cannot follow OR");
    REFUSED("deploy -x OR y", "OR must stand between");
    REFUSED("deploy NOT", "exclusion must be followed");
    REFUSED("deploy -!!!", "exclusion must be followed");
    REFUSED("deploy NOT -x", "cannot follow OR or another exclusion");
}

static void test_query_phrase_limit(void **state)
{
    char phrase[200] = "\"";
    mt_search_query *q;

    (void)state;
    for (int i = 0; i < MT_SEARCH_PHRASE_MAX; i++)
        append(phrase, sizeof(phrase), "w ");
    append(phrase, sizeof(phrase), "\"");
    assert_int_equal(mt_search_query_parse(&q, phrase, strlen(phrase)), 0);
    assert_int_equal(q->terms[0].count, MT_SEARCH_PHRASE_MAX);
    mt_search_query_free(q);
    phrase[strlen(phrase) - 1] = '\0';
    append(phrase, sizeof(phrase), "w\"");
    REFUSED(phrase, "at most 32 words");
}

/* Matching: lines, occurrences, the first match. */
static mt_search_matches match(const char *query, const char *text, size_t max_lines)
{
    mt_search_query *q;
    mt_search_matches m;

    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    assert_int_equal(mt_search_match(&m, q, text, strlen(text), max_lines), 0);
    mt_search_query_free(q);
    return m;
}

static void test_match_lines(void **state)
{
    const char *text = "alpha\nthe deploy script\n\nDeploying now\nnothing\ndeploy again deploy\n";
    mt_search_matches m;

    (void)state;
    m = match("deploy", text, 10);
    assert_int_equal(m.line_count, 2);
    assert_int_equal(m.lines[0], 2);
    assert_int_equal(m.lines[1], 6);
    assert_int_equal(m.occurrences, 3);
    assert_true(m.found);
    assert_int_equal(m.first_start, 10);
    assert_int_equal(m.first_end, 16);
    mt_search_matches_dispose(&m);

    m = match("deploy*", text, 10);
    assert_int_equal(m.line_count, 3);
    assert_int_equal(m.lines[1], 4);
    assert_int_equal(m.occurrences, 4);
    mt_search_matches_dispose(&m);

    /* a phrase across a line break counts on the line it starts */
    m = match("\"deploy script\"", "a deploy\nscript b\n", 10);
    assert_int_equal(m.line_count, 1);
    assert_int_equal(m.lines[0], 1);
    assert_int_equal(m.first_start, 2);
    assert_int_equal(m.first_end, 15);
    mt_search_matches_dispose(&m);

    m = match("absent", text, 10);
    assert_false(m.found);
    assert_int_equal(m.line_count, 0);
    assert_int_equal(m.occurrences, 0);
    mt_search_matches_dispose(&m);
}

static void test_match_line_cap(void **state)
{
    char text[4000] = "";
    mt_search_matches m;

    (void)state;
    for (int i = 0; i < 100; i++)
        append(text, sizeof(text), i % 2 ? "x\n" : "hit\n");
    m = match("hit", text, 5);
    assert_int_equal(m.line_count, 5);
    assert_true(m.more_lines);
    assert_int_equal(m.lines[0], 1);
    assert_int_equal(m.lines[4], 9);
    assert_int_equal(m.occurrences, 50);
    mt_search_matches_dispose(&m);
    /* a phrase found later that starts on an earlier line keeps the lines sorted */
    m = match("b \"a b c\"", "a\nb\nc\n", 5);
    assert_int_equal(m.line_count, 2);
    assert_int_equal(m.lines[0], 1);
    assert_int_equal(m.lines[1], 2);
    mt_search_matches_dispose(&m);
}

static void test_match_cjk_and_accents(void **state)
{
    mt_search_matches m;

    (void)state;
    m = match("日本語", "これは日本語の文章です\n", 3);
    assert_true(m.found);
    /* これは is 9 bytes; 日本語 ends 9 bytes later */
    assert_int_equal(m.first_start, 9);
    assert_int_equal(m.first_end, 18);
    mt_search_matches_dispose(&m);
    m = match("本", "日本\n本当\n", 3);
    /* 本 begins the pair 本当; in 日本 it ends a pair and is not found */
    assert_int_equal(m.line_count, 1);
    assert_int_equal(m.lines[0], 2);
    mt_search_matches_dispose(&m);
    m = match("cafe", "Le Café\n", 3);
    assert_true(m.found);
    assert_int_equal(m.first_start, 3);
    assert_int_equal(m.first_end, 8);
    mt_search_matches_dispose(&m);
    m = match("ёлка", "ЕЛКА\n", 3);
    assert_true(m.found);
    mt_search_matches_dispose(&m);
}

/* The tsvector literal: each word once, quoted, with its positions; the
 * bounds a tsvector has (a word's 256 positions, none past 16383). */
static void test_tsvector(void **state)
{
    mt_buf b = MT_BUF_INIT, words = MT_BUF_INIT;
    const char *p;
    int i;

    (void)state;
    assert_int_equal(mt_search_tsvector(&b, "b a b ", 6), 0);
    assert_true(strcmp(b.ptr, "'b':1,3 'a':2 ") == 0 || strcmp(b.ptr, "'a':2 'b':1,3 ") == 0);
    mt_buf_truncate(&b, 0);
    assert_int_equal(mt_search_tsvector(&b, "", 0), 0);
    assert_int_equal(b.len, 0);
    /* 300 of x: its first 256 positions; then y at 16383, however far past */
    for (i = 0; i < 300; i++)
        assert_int_equal(mt_buf_puts(&words, "x "), 0);
    for (i = 300; i < 17000; i++)
        assert_int_equal(mt_buf_puts(&words, i == 16999 ? "y " : "z "), 0);
    assert_int_equal(mt_search_tsvector(&b, words.ptr, words.len), 0);
    assert_non_null(p = strstr(b.ptr, "'x':1,2,3,"));
    assert_non_null(strstr(p, ",255,256 "));
    assert_null(strstr(p, ",257"));
    assert_non_null(strstr(b.ptr, "'y':16383 "));
    assert_non_null(p = strstr(b.ptr, "'z':301,302,"));
    assert_null(strstr(p, ",557"));
    mt_buf_dispose(&b);
    mt_buf_dispose(&words);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_ascii),
        cmocka_unit_test(test_tsvector),
        cmocka_unit_test(test_words_folding),
        cmocka_unit_test(test_words_cjk),
        cmocka_unit_test(test_words_separators),
        cmocka_unit_test(test_words_offsets),
        cmocka_unit_test(test_words_long),
        cmocka_unit_test(test_words_stop),
        cmocka_unit_test(test_words_every_ascii),
        cmocka_unit_test(test_query_forms),
        cmocka_unit_test(test_query_operators),
        cmocka_unit_test(test_query_operator_matching),
        cmocka_unit_test(test_query_errors),
        cmocka_unit_test(test_query_phrase_limit),
        cmocka_unit_test(test_match_lines),
        cmocka_unit_test(test_match_line_cap),
        cmocka_unit_test(test_match_cjk_and_accents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

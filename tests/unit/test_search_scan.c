/* Search by scanning (search/scan.h): counting terms as FTS5 counts phrase
 * instances, and BM25's shape: more occurrences rank higher, a longer text
 * lower, a rarer term weighs more. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/scan.h"

static mt_search_query *parse(const char *s)
{
    mt_search_query *q = NULL;

    assert_int_equal(mt_search_query_parse(&q, s, strlen(s)), 0);
    return q;
}

static mt_search_scan_doc scan(const mt_search_query *q, const char *text)
{
    mt_search_scan_doc d;

    assert_int_equal(mt_search_scan_text(&d, q, text, strlen(text)), 0);
    return d;
}

static void test_counts(void **state)
{
    mt_search_query *q = parse("\"a a\" dep* Grüße 検 \"the end\"");
    mt_search_scan_doc d;

    (void)state;
    d = scan(q, "a a a, deploy; Deployment GRUSSE the\nend 日本語の検索");
    /* a a a: the phrase ends at the second and at the third word. */
    assert_int_equal(d.freq[0], 2);
    assert_int_equal(d.freq[1], 2);
    assert_int_equal(d.freq[2], 1);
    assert_int_equal(d.freq[3], 1); /* a lone CJK character: the pairs it begins */
    assert_int_equal(d.freq[4], 1); /* a line break is no word */
    /* a a a deploy deployment grusse the end, then 日本 本語 語の の検 検索 */
    assert_int_equal(d.words, 13);
    assert_true(mt_search_scan_matches(&d, q));
    d = scan(q, "a a deploy grusse the end");
    assert_false(mt_search_scan_matches(&d, q));
    assert_int_equal(d.freq[3], 0);
    d = scan(q, "");
    assert_int_equal(d.words, 0);
    assert_false(mt_search_scan_matches(&d, q));
    mt_search_query_free(q);
}

static void test_refused(void **state)
{
    mt_search_query *q = parse("word");
    mt_search_scan_doc d;
    size_t count = q->count;

    (void)state;
    q->count = 0;
    assert_int_equal(mt_search_scan_text(&d, q, "word", 4), MT_EINVAL);
    q->count = MT_SEARCH_TERMS_MAX + 1;
    assert_int_equal(mt_search_scan_text(&d, q, "word", 4), MT_EINVAL);
    q->count = count;
    q->terms[0].count = 0;
    assert_int_equal(mt_search_scan_text(&d, q, "word", 4), MT_EINVAL);
    q->terms[0].count = 1;
    mt_search_query_free(q);
}

static void test_bm25_shape(void **state)
{
    mt_search_query *q = parse("cache");
    mt_search_query *two = parse("cache rare");
    mt_search_scan_stats st;
    mt_search_scan_doc once, five, long_once, other, both;
    double s_once, s_five, s_long;

    (void)state;
    memset(&st, 0, sizeof(st));
    once = scan(q, "the cache once here");
    five = scan(q, "cache cache cache cache cache");
    long_once = scan(q, "the cache once here and then many more words that say nothing else");
    other = scan(q, "nothing at all");
    mt_search_scan_count(&st, &once, q);
    mt_search_scan_count(&st, &five, q);
    mt_search_scan_count(&st, &long_once, q);
    mt_search_scan_count(&st, &other, q);
    assert_int_equal(st.docs, 4);
    assert_int_equal(st.holding[0], 3);
    s_once = mt_search_scan_bm25(&st, &once, q);
    s_five = mt_search_scan_bm25(&st, &five, q);
    s_long = mt_search_scan_bm25(&st, &long_once, q);
    assert_true(s_five > s_once);
    assert_true(s_once > s_long);
    assert_true(s_long > 0);
    assert_true(mt_search_scan_bm25(&st, &other, q) == 0);
    /* One term is scored without its IDF, the same for every text, as the
     * indexed stores score it: BM25's other factor alone. */
    assert_int_equal(st.words, 25);
    assert_true(s_five == (5 * (1.2 + 1)) / (5 + 1.2 * (1 - 0.75 + 0.75 * 5.0 / (25.0 / 4))));
    assert_true(s_five > 1);
    {
        /* With two terms, each in 3 of 4 texts, the IDFs are below zero:
         * FTS5's floor, not less. */
        mt_search_query *again = parse("cache the");
        mt_search_scan_stats st2;
        mt_search_scan_doc d;

        memset(&st2, 0, sizeof(st2));
        d = scan(again, "the cache once here");
        mt_search_scan_count(&st2, &d, again);
        d = scan(again, "the cache again");
        mt_search_scan_count(&st2, &d, again);
        d = scan(again, "the cache");
        mt_search_scan_count(&st2, &d, again);
        d = scan(again, "nothing at all");
        mt_search_scan_count(&st2, &d, again);
        d = scan(again, "the cache");
        assert_true(mt_search_scan_bm25(&st2, &d, again) > 0);
        assert_true(mt_search_scan_bm25(&st2, &d, again) < 1e-5);
        mt_search_query_free(again);
    }

    /* A term in one text of many weighs more than one in most. */
    memset(&st, 0, sizeof(st));
    both = scan(two, "cache rare");
    mt_search_scan_count(&st, &both, two);
    for (int i = 0; i < 9; i++) {
        mt_search_scan_doc d = scan(two, "cache and more");
        mt_search_scan_count(&st, &d, two);
    }
    assert_int_equal(st.holding[0], 10);
    assert_int_equal(st.holding[1], 1);
    assert_true(mt_search_scan_bm25(&st, &both, two) > 1);
    assert_true(isfinite(mt_search_scan_bm25(&st, &both, two)));
    mt_search_query_free(q);
    mt_search_query_free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bm25_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

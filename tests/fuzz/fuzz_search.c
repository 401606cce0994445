/*
 * Search text: the query parser, its two renderings and the matcher, on any
 * bytes. Input: a query, a NUL byte, then a memory's text. Invariants: every
 * word is valid UTF-8 of at most MT_SEARCH_WORD_MAX bytes whose range lies in
 * the text, in order; a parsed query renders with balanced quotes and
 * parentheses; matches lie in the text, their lines ascending and real; a
 * scan (search/scan.h) counts every word and, term by term, the occurrences
 * the matcher finds, and scores a match above nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "search/scan.h"
#include "search/words.h"

typedef struct {
    size_t len, last_start, words;
} words_state;

static int check_word(void *payload, const mt_search_word *w)
{
    words_state *s = payload;

    FUZZ_CHECK(w->len > 0 && w->len <= MT_SEARCH_WORD_MAX, "a word of %zu bytes", w->len);
    FUZZ_CHECK(fuzz_utf8_valid(w->word, w->len), "a word that is not UTF-8");
    FUZZ_CHECK(memchr(w->word, ' ', w->len) == NULL, "a word with a space");
    FUZZ_CHECK(w->start < w->end && w->end <= s->len, "a word at %zu-%zu of %zu", w->start, w->end,
               s->len);
    FUZZ_CHECK(w->start >= s->last_start, "words out of order");
    s->last_start = w->start;
    s->words++;
    return 0;
}

static size_t count(const char *s, size_t len, char c)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += s[i] == c;
    return n;
}

/* The scan agrees with the matcher, and a match scores above nothing in any
 * collection that holds it. */
static void check_scan(const mt_search_query *q, const char *text, size_t len, size_t words,
                       uint64_t occurrences)
{
    mt_search_scan_doc d, empty;
    mt_search_scan_stats st;
    uint64_t sum = 0;
    double score;
    size_t i;

    FUZZ_CHECK(mt_search_scan_text(&d, q, text, len) == 0, "the scan failed");
    FUZZ_CHECK(d.words == words, "the scan counted %llu words, not %zu",
               (unsigned long long)d.words, words);
    for (i = 0; i < q->count; i++) {
        FUZZ_CHECK(d.freq[i] <= d.words, "term %zu occurs %llu times in %llu words", i,
                   (unsigned long long)d.freq[i], (unsigned long long)d.words);
        if (!q->flags || !(q->flags[i] & MT_SEARCH_NOT))
            sum += d.freq[i];
    }
    /* The matcher shows the terms to find of a text the query matches as a
     * whole (its clauses, its exclusions), and nothing of any other. */
    if (!mt_search_scan_matches(&d, q))
        sum = 0;
    FUZZ_CHECK(sum == occurrences, "the scan found %llu occurrences, the matcher %llu",
               (unsigned long long)sum, (unsigned long long)occurrences);
    memset(&st, 0, sizeof(st));
    memset(&empty, 0, sizeof(empty));
    mt_search_scan_count(&st, &d, q);
    mt_search_scan_count(&st, &empty, q);
    score = mt_search_scan_bm25(&st, &d, q);
    FUZZ_CHECK(score == score && score >= 0, "a score of %g", score);
    FUZZ_CHECK(!mt_search_scan_matches(&d, q) || score > 0, "a match scores %g", score);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *nul = memchr(in, '\0', size);
    size_t qlen = nul ? (size_t)(nul - in) : size;
    const char *text = nul ? nul + 1 : "";
    size_t tlen = nul ? size - qlen - 1 : 0, i, lines, groups;
    words_state ws = {tlen, 0, 0};
    mt_search_query *q = NULL;
    mt_search_matches m;
    mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;

    mt_search_words(text, tlen, check_word, &ws);
    if (mt_search_query_parse(&q, in, qlen) < 0) {
        FUZZ_CHECK(q == NULL, "a refused query came back");
        return 0;
    }
    FUZZ_CHECK(q->count > 0 && q->count <= MT_SEARCH_TERMS_MAX, "%zu terms", q->count);
    FUZZ_CHECK(mt_search_fts5_match(&a, q) == 0 && mt_search_tsquery(&b, q) == 0, "no rendering");
    FUZZ_CHECK(count(a.ptr, a.len, '"') == 2 * q->count, "FTS5 quotes unbalanced: %s", a.ptr);
    /* A pair for each term, and one for each clause of terms joined by OR. */
    for (i = 0, groups = 0; i < q->count; i++)
        groups += q->flags && (q->flags[i] & MT_SEARCH_OR) &&
                  (i == 0 || !(q->flags[i - 1] & MT_SEARCH_OR));
    FUZZ_CHECK(count(b.ptr, b.len, '(') == q->count + groups &&
                   count(b.ptr, b.len, ')') == q->count + groups,
               "tsquery parentheses unbalanced: %s", b.ptr);
    FUZZ_CHECK(count(a.ptr, a.len, '(') == groups && count(a.ptr, a.len, ')') == groups,
               "FTS5 parentheses unbalanced: %s", a.ptr);
    if (mt_search_match(&m, q, text, tlen, 8) == 0) {
        lines = 1 + count(text, tlen, '\n');
        for (i = 0; i < m.line_count; i++) {
            FUZZ_CHECK(m.lines[i] >= 1 && m.lines[i] <= lines, "line %u of %zu", m.lines[i], lines);
            FUZZ_CHECK(i == 0 || m.lines[i - 1] < m.lines[i], "lines not ascending");
        }
        FUZZ_CHECK(!m.found || (m.first_start < m.first_end && m.first_end <= tlen),
                   "a match at %zu-%zu of %zu", m.first_start, m.first_end, tlen);
        FUZZ_CHECK(m.found == (m.occurrences > 0), "found without occurrences");
        check_scan(q, text, tlen, ws.words, m.occurrences);
        mt_search_matches_dispose(&m);
    }
    mt_buf_dispose(&a);
    mt_buf_dispose(&b);
    mt_search_query_free(q);
    return 0;
}

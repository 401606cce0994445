/* Search by scanning: matching and BM25 without an index (see scan.h). */
#include "search/scan.h"

#include <string.h>

#include <sodium.h>

#include "search/bm25.h"

typedef struct {
    char word[MT_SEARCH_WORD_MAX + 8];
    size_t len;
} ring_word;

typedef struct {
    const mt_search_query *q;
    mt_search_scan_doc *out;
    size_t lens[MT_SEARCH_TERMS_MAX][MT_SEARCH_PHRASE_MAX];
    ring_word ring[MT_SEARCH_PHRASE_MAX]; /* the last words seen: a phrase ends at the newest */
} scan_state;

static int same(const ring_word *w, const char *word, size_t n, int prefix)
{
    return (prefix ? w->len >= n : w->len == n) && memcmp(w->word, word, n) == 0;
}

static int scan_word(void *payload, const mt_search_word *w)
{
    scan_state *s = payload;
    uint64_t seen = ++s->out->words;
    ring_word *r = &s->ring[(seen - 1) % MT_SEARCH_PHRASE_MAX];
    size_t i, j;

    memcpy(r->word, w->word, w->len);
    r->len = w->len;
    for (i = 0; i < s->q->count; i++) {
        const mt_search_term *t = &s->q->terms[i];

        if (t->count > seen)
            continue;
        /* The newest word first: most terms fail there. */
        for (j = t->count; j > 0; j--) {
            const ring_word *x = &s->ring[(seen - t->count + j - 1) % MT_SEARCH_PHRASE_MAX];

            if (!same(x, t->words[j - 1], s->lens[i][j - 1], t->prefix && j == t->count))
                break;
        }
        if (j == 0)
            s->out->freq[i]++;
    }
    return 0;
}

int mt_search_scan_text(mt_search_scan_doc *out, const mt_search_query *q, const char *text,
                        size_t len)
{
    scan_state s;
    size_t i, j;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&s, 0, sizeof(s));
    if (!q || q->count == 0 || q->count > MT_SEARCH_TERMS_MAX) {
        rc = mt_error_set(MT_EINVAL, "a search needs 1 to %d terms", MT_SEARCH_TERMS_MAX);
        goto done;
    }
    for (i = 0; i < q->count; i++) {
        if (q->terms[i].count == 0 || q->terms[i].count > MT_SEARCH_PHRASE_MAX) {
            rc = mt_error_set(MT_EINVAL, "a search term has 1 to %d words", MT_SEARCH_PHRASE_MAX);
            goto done;
        }
        for (j = 0; j < q->terms[i].count; j++)
            s.lens[i][j] = strlen(q->terms[i].words[j]);
    }
    s.q = q;
    s.out = out;
    rc = mt_search_words(text, len, scan_word, &s);
done:
    /* The ring holds the text's last words. */
    sodium_memzero(s.ring, sizeof(s.ring));
    if (rc < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int mt_search_scan_matches(const mt_search_scan_doc *d, const mt_search_query *q)
{
    return q->count > 0 && q->count <= MT_SEARCH_TERMS_MAX && mt_search_query_eval(q, d->freq);
}

void mt_search_scan_count(mt_search_scan_stats *s, const mt_search_scan_doc *d,
                          const mt_search_query *q)
{
    size_t i;

    s->docs++;
    s->words += d->words;
    for (i = 0; i < q->count && i < MT_SEARCH_TERMS_MAX; i++)
        if (d->freq[i])
            s->holding[i]++;
}

double mt_search_scan_bm25(const mt_search_scan_stats *s, const mt_search_scan_doc *d,
                           const mt_search_query *q)
{
    double score = 0, avgdl;
    size_t i, n = q->count < MT_SEARCH_TERMS_MAX ? q->count : MT_SEARCH_TERMS_MAX;

    if (s->docs == 0 || s->words == 0)
        return 0;
    avgdl = (double)s->words / (double)s->docs;
    /* One term: its weight alone, as mt_rank() leaves it out. */
    if (n == 1)
        return mt_bm25_tf((double)d->freq[0], (double)d->words, avgdl);
    for (i = 0; i < n; i++)
        score += mt_bm25_idf((double)s->docs, (double)s->holding[i]) *
                 mt_bm25_tf((double)d->freq[i], (double)d->words, avgdl);
    return score;
}

/* Search text: words, queries and where they match (see words.h). */
#include "search/words.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <memtool/store.h>

#include "util/utf8.h"

typedef enum { C_SEP, C_WORD, C_CJK, C_MARK } char_class;

static int in(uint32_t cp, uint32_t lo, uint32_t hi)
{
    return cp >= lo && cp <= hi;
}

/* Scripts written without spaces between words: Han, kana, Hangul (and the
 * iteration marks that belong with them). */
static int is_cjk(uint32_t cp)
{
    return in(cp, 0x1100, 0x11ff) || in(cp, 0x3005, 0x3007) || in(cp, 0x3040, 0x309f) ||
           in(cp, 0x30a1, 0x30fa) || in(cp, 0x30fc, 0x30ff) || in(cp, 0x3100, 0x318f) ||
           in(cp, 0x31f0, 0x31ff) || in(cp, 0x3400, 0x4dbf) || in(cp, 0x4e00, 0x9fff) ||
           in(cp, 0xa960, 0xa97f) || in(cp, 0xac00, 0xd7af) || in(cp, 0xf900, 0xfaff) ||
           in(cp, 0xff66, 0xff9f) || in(cp, 0x20000, 0x3134f);
}

static char_class classify(uint32_t cp)
{
    if (cp < 0x80)
        return (in(cp, '0', '9') || in(cp, 'a', 'z') || in(cp, 'A', 'Z')) ? C_WORD : C_SEP;
    if (is_cjk(cp))
        return C_CJK;
    /* Combining marks fold away: "e" + U+0301 is the word "e", like "é". */
    if (in(cp, 0x300, 0x36f) || in(cp, 0x1ab0, 0x1aff) || in(cp, 0x1dc0, 0x1dff) ||
        in(cp, 0x20d0, 0x20ff) || in(cp, 0xfe00, 0xfe0f) || in(cp, 0xfe20, 0xfe2f))
        return C_MARK;
    /* Latin-1 punctuation and signs, general punctuation through the symbol
     * blocks, CJK punctuation, private use, fullwidth punctuation, emoji. */
    if (in(cp, 0x80, 0xbf) || cp == 0xd7 || cp == 0xf7 || in(cp, 0x2000, 0x2bff) ||
        in(cp, 0x2e00, 0x2e7f) || in(cp, 0x3000, 0x303f) || cp == 0x30a0 || cp == 0x30fb ||
        in(cp, 0xe000, 0xf8ff) || in(cp, 0xfe10, 0xfe1f) || in(cp, 0xfe30, 0xfe6f) ||
        in(cp, 0xff00, 0xff0f) || in(cp, 0xff1a, 0xff20) || in(cp, 0xff3b, 0xff40) ||
        in(cp, 0xff5b, 0xff65) || in(cp, 0xfff0, 0xffff) || in(cp, 0x1f000, 0x1faff) ||
        cp >= 0xe0000)
        return C_SEP;
    return C_WORD;
}

/* Latin-1 letters U+00C0..U+00FF without case or accents (× and ÷ never get here). */
static const char *const latin1[64] = {
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",
    "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "ss",
    "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",
    "d", "n", "o", "o", "o", "o", "o",  "",  "o", "u", "u", "u", "u", "y", "th", "y"};

/* Latin Extended-A, U+0100..U+017F, the same way: 1 is "ij", 2 is "oe". */
static const char latin_ext_a[] =
    "aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiii11jjkkkllllllllll"
    "nnnnnnnnnoooooo22rrrrrrsssssssstttttt"
    "uuuuuuuuuuuuwwyyyzzzzzzs";
_Static_assert(sizeof(latin_ext_a) == 0x80 + 1, "one letter for each of U+0100..U+017F");

static size_t put_cp(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The bytes of s, without its NUL: a word is built without one. */
static size_t put_str(char *out, const char *s)
{
    size_t n;

    for (n = 0; s[n]; n++)
        out[n] = s[n];
    return n;
}

/* A word character folded into out (at most 4 bytes); returns its length. */
static size_t fold(char *out, uint32_t cp)
{
    char c;

    /* Latin, Greek and Cyrillic capitals are 0x20 below their small letters. */
    if (in(cp, 'A', 'Z') || in(cp, 0x391, 0x3a9) || in(cp, 0x410, 0x42f))
        cp += 0x20;
    else if (in(cp, 0xc0, 0xff))
        return put_str(out, latin1[cp - 0xc0]);
    else if (in(cp, 0x100, 0x17f)) {
        c = latin_ext_a[cp - 0x100];
        return put_str(out, c == '1' ? "ij" : c == '2' ? "oe" : (char[]){c, 0});
    } else if (cp == 0x1e9e)
        return put_str(out, "ss");
    else if (in(cp, 0xff10, 0xff19) || in(cp, 0xff21, 0xff3a) || in(cp, 0xff41, 0xff5a))
        cp = (cp - 0xff00 + 0x20) | (in(cp, 0xff21, 0xff3a) ? 0x20 : 0);
    else if (in(cp, 0x386, 0x3ce) || cp == 0x390 || cp == 0x3b0) {
        switch (cp) {
        case 0x386:
        case 0x3ac:
            cp = 0x3b1;
            break;
        case 0x388:
        case 0x3ad:
            cp = 0x3b5;
            break;
        case 0x389:
        case 0x3ae:
            cp = 0x3b7;
            break;
        case 0x38a:
        case 0x3af:
        case 0x3aa:
        case 0x3ca:
        case 0x390:
            cp = 0x3b9;
            break;
        case 0x38c:
        case 0x3cc:
            cp = 0x3bf;
            break;
        case 0x38e:
        case 0x3cd:
        case 0x3ab:
        case 0x3cb:
        case 0x3b0:
            cp = 0x3c5;
            break;
        case 0x38f:
        case 0x3ce:
            cp = 0x3c9;
            break;
        case 0x3c2:
            cp = 0x3c3;
            break;
        default:
            break;
        }
    } else if (cp == 0x401 || cp == 0x451)
        cp = 0x435;
    else if (in(cp, 0x400, 0x40f))
        cp += 0x50;
    return put_cp(out, cp);
}

typedef struct {
    mt_search_word_cb cb;
    void *payload;
    char word[MT_SEARCH_WORD_MAX + 8];
    size_t len, start, end;
    int open;
    /* the CJK run: its last character, and whether a pair was made */
    char prev[4];
    size_t prev_len, prev_start, prev_end;
    int in_run, paired;
} words_state;

static int emit(words_state *s, const char *w, size_t len, size_t start, size_t end)
{
    mt_search_word word = {w, len, start, end};

    return s->cb(s->payload, &word);
}

static int end_word(words_state *s)
{
    int rc = 0;

    if (s->open && s->len > 0)
        rc = emit(s, s->word, s->len, s->start, s->end);
    s->open = 0;
    s->len = 0;
    return rc;
}

static int end_run(words_state *s)
{
    int rc = 0;

    if (s->in_run && !s->paired)
        rc = emit(s, s->prev, s->prev_len, s->prev_start, s->prev_end);
    s->in_run = 0;
    s->paired = 0;
    return rc;
}

/* A word cut at MT_SEARCH_WORD_MAX bytes, never inside a character. */
static void add_folded(words_state *s, const char *f, size_t n)
{
    size_t i, step;

    for (i = 0; i < n; i += step) {
        step = 1;
        while (i + step < n && ((unsigned char)f[i + step] & 0xc0) == 0x80)
            step++;
        if (s->len + step > MT_SEARCH_WORD_MAX)
            return;
        memcpy(s->word + s->len, f + i, step);
        s->len += step;
    }
}

static int ascii_word(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

int mt_search_words(const char *text, size_t len, mt_search_word_cb cb, void *payload)
{
    words_state s;
    const unsigned char *t = (const unsigned char *)text;
    size_t i = 0, n, f;
    uint32_t cp;
    char folded[8], pair[8];
    int rc = 0;

    memset(&s, 0, sizeof(s));
    s.cb = cb;
    s.payload = payload;
    while (i < len) {
        if (t[i] < 0x80) {
            /* ASCII, most text, a byte at a time: what classify and fold say of it */
            if (!ascii_word(t[i])) {
                if ((rc = end_word(&s)) != 0 || (rc = end_run(&s)) != 0)
                    goto done;
                i++;
                continue;
            }
            if ((rc = end_run(&s)) != 0)
                goto done;
            if (!s.open) {
                s.open = 1;
                s.start = i;
            }
            do {
                if (s.len < MT_SEARCH_WORD_MAX)
                    s.word[s.len++] = (char)(t[i] | 0x20); /* digits have the bit */
                i++;
            } while (i < len && ascii_word(t[i]));
            s.end = i;
            continue;
        }
        if (!(n = mt_utf8_decode(&cp, t + i, len - i))) {
            if ((rc = end_word(&s)) != 0 || (rc = end_run(&s)) != 0)
                goto done;
            i++;
            continue;
        }
        switch (classify(cp)) {
        case C_WORD:
            if ((rc = end_run(&s)) != 0)
                goto done;
            if (!s.open) {
                s.open = 1;
                s.start = i;
            }
            f = fold(folded, cp);
            add_folded(&s, folded, f);
            s.end = i + n;
            break;
        case C_MARK:
            if (s.open)
                s.end = i + n;
            break;
        case C_CJK:
            if ((rc = end_word(&s)) != 0)
                goto done;
            if (s.in_run) {
                memcpy(pair, s.prev, s.prev_len);
                memcpy(pair + s.prev_len, text + i, n);
                if ((rc = emit(&s, pair, s.prev_len + n, s.prev_start, i + n)) != 0)
                    goto done;
                s.paired = 1;
            }
            s.in_run = 1;
            memcpy(s.prev, text + i, n);
            s.prev_len = n;
            s.prev_start = i;
            s.prev_end = i + n;
            break;
        default:
            if ((rc = end_word(&s)) != 0 || (rc = end_run(&s)) != 0)
                goto done;
            break;
        }
        i += n;
    }
    if ((rc = end_word(&s)) == 0)
        rc = end_run(&s);
done:
    /* The last word and character seen: the text may be a decrypted memory. */
    sodium_memzero(&s, sizeof(s));
    return rc;
}

static int index_word(void *payload, const mt_search_word *w)
{
    mt_buf *out = payload;
    int rc;

    if ((rc = mt_buf_put(out, w->word, w->len)) < 0)
        return rc;
    return mt_buf_putc(out, ' ');
}

int mt_search_index_text(mt_buf *out, const char *text, size_t len)
{
    return mt_search_words(text, len, index_word, out);
}

/* Queries. */

typedef struct {
    mt_search_term *term;
    int oom, too_many;
} term_state;

static int term_word(void *payload, const mt_search_word *w)
{
    term_state *s = payload;
    mt_search_term *t = s->term;
    char **words, *copy;

    if (t->count == MT_SEARCH_PHRASE_MAX) {
        s->too_many = 1;
        return 1;
    }
    if (!(words = realloc(t->words, (t->count + 1) * sizeof(*words))) ||
        !(copy = malloc(w->len + 1))) {
        if (words)
            t->words = words;
        s->oom = 1;
        return 1;
    }
    t->words = words;
    memcpy(copy, w->word, w->len);
    copy[w->len] = '\0';
    t->words[t->count++] = copy;
    return 0;
}

static void term_dispose(mt_search_term *t)
{
    size_t i;

    for (i = 0; i < t->count; i++)
        free(t->words[i]);
    free(t->words);
    memset(t, 0, sizeof(*t));
}

void mt_search_query_free(mt_search_query *q)
{
    size_t i;

    if (!q)
        return;
    for (i = 0; i < q->count; i++)
        term_dispose(&q->terms[i]);
    free(q->terms);
    free(q->flags);
    free(q);
}

static int lone_cjk(const char *w)
{
    uint32_t cp;
    size_t n = strlen(w), k = mt_utf8_decode(&cp, (const unsigned char *)w, n);

    return k && k == n && is_cjk(cp);
}

/* One term from query[start, end): words (a phrase when more than one), a
 * trailing * making the last a prefix, flags its MT_SEARCH_* flags. *added
 * is 0 when the text has no words (punctuation alone: no term). */
static int add_term(mt_search_query *q, const char *text, size_t len, int prefix,
                    unsigned char flags, int *added)
{
    mt_search_term t = {NULL, 0, prefix}, *terms;
    term_state s = {&t, 0, 0};
    unsigned char *f;
    int rc = 0;

    *added = 0;
    mt_search_words(text, len, term_word, &s);
    if (s.oom) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if (s.too_many) {
        rc = mt_error_set(MT_EINVAL, "a phrase in a query has at most %d words",
                          MT_SEARCH_PHRASE_MAX);
        goto done;
    }
    if (t.count == 0) {
        if (prefix)
            rc = mt_error_set(MT_EINVAL, "a * in a query must follow a word, as in deploy*");
        goto done;
    }
    if (q->count == MT_SEARCH_TERMS_MAX) {
        rc = mt_error_set(MT_EINVAL, "a query has at most %d words, phrases and prefixes",
                          MT_SEARCH_TERMS_MAX);
        goto done;
    }
    /* Text in these scripts is indexed in pairs: a lone character is the
     * start of a pair, or a pair of its own. */
    if (lone_cjk(t.words[t.count - 1]))
        t.prefix = 1;
    if (!(terms = realloc(q->terms, (q->count + 1) * sizeof(*terms)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    q->terms = terms;
    if (!(f = realloc(q->flags, q->count + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    q->flags = f;
    q->flags[q->count] = flags;
    q->terms[q->count++] = t;
    t.words = NULL;
    t.count = 0;
    *added = 1;
done:
    term_dispose(&t);
    return rc;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A * is a prefix only at the end of a word; anywhere else it is refused
 * rather than silently read as a separator. */
static int star_check(const char *s, size_t len)
{
    const char *star = memchr(s, '*', len);

    if (star && star != s + len - 1)
        return mt_error_set(MT_EINVAL, "a * in a query may only end a word, as in deploy*");
    return 0;
}

/* Whether query[i, len) starts with the operator word op, standing alone. */
static int operator_at(const char *query, size_t i, size_t len, const char *op)
{
    size_t n = strlen(op);

    return len - i >= n && memcmp(query + i, op, n) == 0 &&
           (i + n == len || is_space(query[i + n]) || query[i + n] == '"');
}

int mt_search_query_parse(mt_search_query **out, const char *query, size_t len)
{
    mt_search_query *q = NULL;
    size_t i = 0, j, k, found = 0;
    uint32_t cp;
    int rc = 0, prefix, quoted, negate = 0, or_next = 0, added;

    *out = NULL;
    if (!query || len == 0) {
        rc = mt_error_set(MT_EINVAL, "the query is empty: give the words to search for");
        goto done;
    }
    if (len > MT_SEARCH_QUERY_MAX) {
        rc = mt_error_set(MT_EINVAL, "the query is %zu bytes; at most %d are searched", len,
                          MT_SEARCH_QUERY_MAX);
        goto done;
    }
    for (k = 0; k < len; k += j) {
        if (!(j = mt_utf8_decode(&cp, (const unsigned char *)query + k, len - k))) {
            rc = mt_error_set(MT_EINVAL, "the query is not valid UTF-8");
            goto done;
        }
    }
    if (!(q = calloc(1, sizeof(*q)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    while (i < len) {
        if (is_space(query[i])) {
            i++;
            continue;
        }
        /* Operators are written in capitals, as in FTS5 and web search:
         * "or" and "not" in lower case are words to find. */
        if (operator_at(query, i, len, "OR")) {
            if (q->count == 0 || or_next || negate || (q->flags[q->count - 1] & MT_SEARCH_NOT)) {
                rc = mt_error_set(MT_EINVAL, "OR must stand between two words to find, as in "
                                             "deploy OR release");
                goto done;
            }
            or_next = 1;
            i += 2;
            continue;
        }
        if (operator_at(query, i, len, "NOT") ||
            (query[i] == '-' && i + 1 < len && !is_space(query[i + 1]) && query[i + 1] != '-')) {
            if (or_next || negate) {
                rc = mt_error_set(MT_EINVAL, "an excluded word (-word or NOT word) cannot "
                                             "follow OR or another exclusion");
                goto done;
            }
            negate = 1;
            i += query[i] == '-' ? 1 : 3;
            continue;
        }
        quoted = query[i] == '"';
        if (quoted) {
            for (j = i + 1; j < len && query[j] != '"'; j++)
                ;
            if (j == len) {
                rc = mt_error_set(MT_EINVAL,
                                  "a quote in the query is not closed: end the phrase with \"");
                goto done;
            }
            i++;
            for (k = j; k > i && is_space(query[k - 1]); k--)
                ;
        } else {
            /* a bare word ends at a space, or where a quote starts the next term */
            for (j = i; j < len && !is_space(query[j]) && query[j] != '"'; j++)
                ;
            k = j;
        }
        if ((rc = star_check(query + i, k - i)) < 0)
            goto done;
        prefix = k > i && query[k - 1] == '*';
        if ((rc = add_term(q, query + i, k - i - (prefix ? 1 : 0), prefix,
                           negate ? MT_SEARCH_NOT : 0, &added)) < 0)
            goto done;
        if (!added && (negate || or_next)) {
            rc = mt_error_set(MT_EINVAL, "%s must be followed by a word, as in %s",
                              negate ? "an exclusion" : "OR",
                              negate ? "deploy -staging" : "deploy OR release");
            goto done;
        }
        if (added && or_next)
            q->flags[q->count - 2] |= MT_SEARCH_OR;
        if (added && !negate)
            found++;
        negate = or_next = 0;
        i = quoted ? j + 1 : j;
    }
    if (or_next || negate) {
        rc = mt_error_set(MT_EINVAL, "%s must be followed by a word, as in %s",
                          negate ? "an exclusion" : "OR",
                          negate ? "deploy -staging" : "deploy OR release");
        goto done;
    }
    if (q->count == 0) {
        rc = mt_error_set(MT_EINVAL, "the query has no letters or digits to search for");
        goto done;
    }
    if (found == 0) {
        rc = mt_error_set(MT_EINVAL, "the query only excludes words: give a word to find too, "
                                     "as in deploy -staging");
        goto done;
    }
    *out = q;
    q = NULL;
done:
    mt_search_query_free(q);
    return rc;
}

/* Whether term i is excluded, and whether it is joined by OR to the next. */
static int is_not(const mt_search_query *q, size_t i)
{
    return q->flags && (q->flags[i] & MT_SEARCH_NOT);
}

static int is_or(const mt_search_query *q, size_t i)
{
    return q->flags && (q->flags[i] & MT_SEARCH_OR) && i + 1 < q->count;
}

int mt_search_query_eval(const mt_search_query *q, const uint64_t *freq)
{
    size_t i;
    int clause = 0, any = 0;

    for (i = 0; i < q->count; i++) {
        if (is_not(q, i)) {
            if (freq[i])
                return 0;
            continue;
        }
        clause |= freq[i] != 0;
        if (is_or(q, i))
            continue;
        if (!clause)
            return 0;
        clause = 0;
        any = 1;
    }
    return any;
}

/* The query as a boolean expression: each term by term(), clauses of terms
 * joined by OR in parentheses, clauses joined by `and`, the excluded terms
 * after `not_` (FTS5's binary NOT; tsquery's & !). */
typedef int (*term_fn)(mt_buf *out, const mt_search_term *t);

static int expression(mt_buf *out, const mt_search_query *q, term_fn term, const char *and_,
                      const char *or_, const char *not_)
{
    size_t i;
    int rc = 0, first = 1, in_or = 0;

    for (i = 0; i < q->count && rc == 0; i++) {
        if (is_not(q, i))
            continue;
        if (!in_or && !first)
            rc = mt_buf_puts(out, and_);
        if (rc == 0 && !in_or && is_or(q, i))
            rc = mt_buf_putc(out, '(');
        if (rc == 0)
            rc = term(out, &q->terms[i]);
        first = 0;
        in_or = is_or(q, i);
        if (rc == 0 && in_or)
            rc = mt_buf_puts(out, or_);
        else if (rc == 0 && i > 0 && is_or(q, i - 1))
            rc = mt_buf_putc(out, ')');
    }
    for (i = 0; i < q->count && rc == 0; i++)
        if (is_not(q, i) && (rc = mt_buf_puts(out, not_)) == 0)
            rc = term(out, &q->terms[i]);
    return rc;
}

static int fts5_term(mt_buf *out, const mt_search_term *t)
{
    size_t j;
    int rc = mt_buf_putc(out, '"');

    for (j = 0; j < t->count && rc == 0; j++)
        rc = mt_buf_printf(out, "%s%s", j ? " " : "", t->words[j]);
    if (rc == 0)
        rc = mt_buf_puts(out, t->prefix ? "\"*" : "\"");
    return rc;
}

static int tsquery_term(mt_buf *out, const mt_search_term *t)
{
    size_t j;
    int rc = mt_buf_putc(out, '(');

    for (j = 0; j < t->count && rc == 0; j++)
        rc = mt_buf_printf(out, "%s'%s'%s", j ? " <-> " : "", t->words[j],
                           t->prefix && j + 1 == t->count ? ":*" : "");
    if (rc == 0)
        rc = mt_buf_putc(out, ')');
    return rc;
}

int mt_search_fts5_match(mt_buf *out, const mt_search_query *q)
{
    return expression(out, q, fts5_term, " AND ", " OR ", " NOT ");
}

int mt_search_tsquery(mt_buf *out, const mt_search_query *q)
{
    return expression(out, q, tsquery_term, " & ", " | ", " & !");
}

/* Matching, for showing hits. */

typedef struct {
    char word[MT_SEARCH_WORD_MAX + 8];
    size_t len, start, end;
    uint32_t line;
} ring_word;

typedef struct {
    const mt_search_query *q;
    const char *text;
    size_t max_lines;
    mt_search_matches *m;
    ring_word ring[MT_SEARCH_PHRASE_MAX];
    size_t seen; /* words so far */
    size_t pos;  /* newlines before this offset are counted */
    uint32_t line;
    uint64_t freq[MT_SEARCH_TERMS_MAX];
    size_t *ranges; /* mt_search_occurrences: start and end of each, up to max_ranges */
    size_t nranges, max_ranges;
} match_state;

static int same(const ring_word *w, const char *word, int prefix)
{
    size_t n = strlen(word);

    return prefix ? w->len >= n && memcmp(w->word, word, n) == 0
                  : w->len == n && memcmp(w->word, word, n) == 0;
}

static int add_line(match_state *s, uint32_t line)
{
    mt_search_matches *m = s->m;
    size_t i;

    for (i = 0; i < m->line_count && m->lines[i] < line; i++)
        ;
    if (i < m->line_count && m->lines[i] == line)
        return 0;
    if (m->line_count == s->max_lines) {
        m->more_lines = 1;
        if (i == m->line_count)
            return 0;
        m->line_count--; /* the last one makes room for an earlier line */
    }
    memmove(m->lines + i + 1, m->lines + i, (m->line_count - i) * sizeof(*m->lines));
    m->lines[i] = line;
    m->line_count++;
    return 0;
}

static int match_word(void *payload, const mt_search_word *w)
{
    match_state *s = payload;
    ring_word *r = &s->ring[s->seen % MT_SEARCH_PHRASE_MAX];
    const char *nl;
    size_t i, j;

    while (s->pos < w->start && (nl = memchr(s->text + s->pos, '\n', w->start - s->pos))) {
        s->line++;
        s->pos = (size_t)(nl - s->text) + 1;
    }
    s->pos = w->start;
    memcpy(r->word, w->word, w->len);
    r->len = w->len;
    r->start = w->start;
    r->end = w->end;
    r->line = s->line;
    s->seen++;
    for (i = 0; i < s->q->count; i++) {
        const mt_search_term *t = &s->q->terms[i];
        const ring_word *first;

        if (t->count > s->seen)
            continue;
        for (j = 0; j < t->count; j++) {
            const ring_word *x = &s->ring[(s->seen - t->count + j) % MT_SEARCH_PHRASE_MAX];

            if (!same(x, t->words[j], t->prefix && j + 1 == t->count))
                break;
        }
        if (j < t->count)
            continue;
        if (i < MT_SEARCH_TERMS_MAX)
            s->freq[i]++;
        /* An excluded term is no match to show: it only unmakes one. */
        if (is_not(s->q, i))
            continue;
        first = &s->ring[(s->seen - t->count) % MT_SEARCH_PHRASE_MAX];
        if (s->ranges && s->nranges < s->max_ranges) {
            s->ranges[2 * s->nranges] = first->start;
            s->ranges[2 * s->nranges++ + 1] = w->end;
        }
        if (!s->m)
            continue;
        s->m->occurrences++;
        if (!s->m->found || first->start < s->m->first_start) {
            s->m->found = 1;
            s->m->first_start = first->start;
            s->m->first_end = w->end;
        }
        add_line(s, first->line);
    }
    return 0;
}

int mt_search_match(mt_search_matches *out, const mt_search_query *q, const char *text, size_t len,
                    size_t max_lines)
{
    match_state *s;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (max_lines == 0)
        max_lines = 1;
    if (!(s = calloc(1, sizeof(*s))) || !(out->lines = calloc(max_lines, sizeof(*out->lines)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    s->q = q;
    s->text = text;
    s->max_lines = max_lines;
    s->m = out;
    s->line = 1;
    if ((rc = mt_search_words(text, len, match_word, s)) == 0 &&
        !mt_search_query_eval(q, s->freq)) {
        /* Not a match as a whole (an excluded term, a clause missing): the
         * memory changed since the store answered. */
        out->found = 0;
        out->line_count = 0;
        out->more_lines = 0;
        out->occurrences = 0;
    }
done:
    if (s)
        sodium_memzero(s, sizeof(*s)); /* its ring holds the text's last words */
    free(s);
    if (rc < 0)
        mt_search_matches_dispose(out);
    return rc;
}

void mt_search_matches_dispose(mt_search_matches *m)
{
    free(m->lines);
    memset(m, 0, sizeof(*m));
}

int mt_search_occurrences(size_t *ranges, size_t *count, size_t max, const mt_search_query *q,
                          const char *text, size_t len)
{
    match_state *s;
    int rc;

    *count = 0;
    if (!(s = calloc(1, sizeof(*s))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    s->q = q;
    s->text = text;
    s->line = 1;
    s->ranges = ranges;
    s->max_ranges = max;
    rc = mt_search_words(text, len, match_word, s);
    *count = s->nranges;
    sodium_memzero(s, sizeof(*s)); /* its ring holds the text's last words */
    free(s);
    return rc;
}

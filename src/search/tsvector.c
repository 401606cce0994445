/*
 * A memory's words as a PostgreSQL tsvector literal (see words.h).
 *
 * Why not to_tsvector('simple', words) on the server: its parser would cut
 * memtool's words again by its own rules, which depend on the database's
 * encoding and locale (in SQL_ASCII every byte of a Cyrillic or CJK word is
 * a separator), and it fails the whole statement when a memory holds more
 * than 1 MB of distinct words. The literal names each word exactly as
 * memtool cut it, with its positions, within what a tsvector can hold:
 *   - a position is at most 16383 (the server clamps larger ones there);
 *   - a word keeps at most 256 positions;
 *   - the whole takes at most TSV_BYTES as the server stores it (each word's
 *     bytes, padded to 2, then 2 bytes for each position and 2 for their
 *     count; the server refuses more than 1 MB): words and positions past
 *     that are left out, so a memory with that many distinct words is indexed
 *     by those that came first.
 */
#include "search/words.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TSV_POS_MAX   16383
#define TSV_POSITIONS 256
#define TSV_BYTES     (1000 * 1000) /* under the server's 1 MB - 1 */

typedef struct {
    uint32_t off;   /* of the word in the words text */
    uint32_t len;   /* 0: an empty slot */
    uint32_t first; /* its positions: a chain through pos_next */
    uint32_t last;
    uint32_t npos;
} tsv_word;

typedef struct {
    const char *text;
    tsv_word *slots;
    size_t cap, used;   /* slots (a power of two), words in them */
    uint16_t *pos;      /* every position kept, chained per word */
    uint32_t *pos_next; /* the next position of the same word (UINT32_MAX: none) */
    size_t pos_len, pos_cap;
    size_t bytes; /* as the server would store what is kept so far */
} tsv_state;

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static tsv_word *slot_of(tsv_state *s, tsv_word *slots, size_t cap, const char *w, size_t n)
{
    size_t i = (size_t)hash(w, n) & (cap - 1);

    while (slots[i].len && (slots[i].len != n || memcmp(s->text + slots[i].off, w, n) != 0))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int grow_slots(tsv_state *s)
{
    size_t cap = s->cap ? 2 * s->cap : 1024, i;
    tsv_word *slots = calloc(cap, sizeof(*slots));

    if (!slots)
        return mt_error_set(MT_ENOMEM, "out of memory indexing a memory");
    for (i = 0; i < s->cap; i++)
        if (s->slots[i].len)
            *slot_of(s, slots, cap, s->text + s->slots[i].off, s->slots[i].len) = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

static int add_pos(tsv_state *s, tsv_word *w, uint16_t p)
{
    if (s->pos_len == s->pos_cap) {
        size_t cap = s->pos_cap ? 2 * s->pos_cap : 1024;
        uint16_t *pos = realloc(s->pos, cap * sizeof(*pos));
        uint32_t *next;

        if (pos)
            s->pos = pos;
        if (!pos || !(next = realloc(s->pos_next, cap * sizeof(*next))))
            return mt_error_set(MT_ENOMEM, "out of memory indexing a memory");
        s->pos_next = next;
        s->pos_cap = cap;
    }
    s->pos[s->pos_len] = p;
    s->pos_next[s->pos_len] = UINT32_MAX;
    if (w->npos)
        s->pos_next[w->last] = (uint32_t)s->pos_len;
    else
        w->first = (uint32_t)s->pos_len;
    w->last = (uint32_t)s->pos_len++;
    w->npos++;
    return 0;
}

/* One word at position p: new words until the byte budget is spent, and
 * positions while the word has room and p is still a position of its own. */
static int add_word(tsv_state *s, size_t off, size_t n, size_t p)
{
    uint16_t at = (uint16_t)(p < TSV_POS_MAX ? p : TSV_POS_MAX);
    tsv_word *w;
    int rc;

    if (2 * (s->used + 1) > s->cap && (rc = grow_slots(s)) < 0)
        return rc;
    w = slot_of(s, s->slots, s->cap, s->text + off, n);
    if (!w->len) {
        /* its bytes (padded), the count of its positions and its first */
        size_t need = n + 1 + 2 + 2;

        if (s->bytes + need > TSV_BYTES)
            return 0;
        w->off = (uint32_t)off;
        w->len = (uint32_t)n;
        w->npos = 0;
        s->bytes += need - 2;
        s->used++;
    }
    if (w->npos == TSV_POSITIONS || (w->npos && s->pos[w->last] == at) || s->bytes + 2 > TSV_BYTES)
        return 0;
    s->bytes += 2;
    return add_pos(s, w, at);
}

static int put_word(mt_buf *out, const tsv_state *s, const tsv_word *w)
{
    const char *t = s->text + w->off;
    uint32_t i, k;
    int rc = 0;

    if ((rc = mt_buf_putc(out, '\'')) < 0)
        return rc;
    /* memtool's words are letters and digits; quoted anyway, as the syntax wants */
    for (i = 0; i < w->len && rc == 0; i++) {
        if (t[i] == '\'' || t[i] == '\\')
            rc = mt_buf_putc(out, t[i]);
        if (rc == 0)
            rc = mt_buf_putc(out, t[i]);
    }
    if (rc == 0)
        rc = mt_buf_putc(out, '\'');
    for (k = w->first, i = 0; i < w->npos && rc == 0; i++, k = s->pos_next[k])
        rc = mt_buf_printf(out, "%c%u", i ? ',' : ':', (unsigned)s->pos[k]);
    if (rc == 0)
        rc = mt_buf_putc(out, ' ');
    return rc;
}

int mt_search_tsvector(mt_buf *out, const char *words, size_t len)
{
    tsv_state s;
    size_t i = 0, j, p = 0;
    int rc = 0;

    memset(&s, 0, sizeof(s));
    s.text = words;
    if (len > UINT32_MAX)
        len = UINT32_MAX;
    while (i < len) {
        for (j = i; j < len && words[j] != ' '; j++)
            ;
        if (j > i && (rc = add_word(&s, i, j - i, ++p)) < 0)
            goto done;
        i = j + 1;
    }
    for (i = 0; i < s.cap && rc == 0; i++)
        if (s.slots[i].len)
            rc = put_word(out, &s, &s.slots[i]);
done:
    free(s.slots);
    free(s.pos);
    free(s.pos_next);
    return rc;
}

/* Search: the store finds and ranks, the library shows where (lines, a snippet). */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/memory.h"
#include "search/words.h"
#include "core/search_tool.h"
#include "util/utf8.h"

#define LINES_MAX     20
#define LIMIT_MAX     100
#define CONTEXT_CHARS 60   /* code points shown on each side of the match */
#define MARKS_MAX     4096 /* occurrences a hit's shown lines may mark */

void mt_search_hits_free(mt_search_hit *hits, size_t count)
{
    size_t i;

    for (i = 0; hits && i < count; i++) {
        free(hits[i].path);
        free(hits[i].lines);
        free(hits[i].before);
        free(hits[i].match);
        free(hits[i].after);
    }
    free(hits);
}

/* s[0, len) as valid UTF-8 on one line: newlines and tabs become spaces. */
static int show(char **out, const char *s, size_t len, const char *lead, const char *tail)
{
    mt_buf b = MT_BUF_INIT;
    size_t i, n;

    if (mt_buf_puts(&b, lead) < 0 || mt_utf8_sanitize(&b, s, len) < 0 || mt_buf_puts(&b, tail) < 0)
        goto oom;
    for (i = 0; i < b.len; i++)
        if (b.ptr[i] == '\n' || b.ptr[i] == '\r' || b.ptr[i] == '\t')
            b.ptr[i] = ' ';
    if (!(*out = mt_buf_detach(&b, &n)))
        goto oom;
    return 0;
oom:
    mt_buf_dispose(&b);
    return mt_error_set(MT_ENOMEM, "out of memory");
}

/* The last `chars` code points of s[0, len), never splitting a character. */
static size_t tail_start(const char *s, size_t len, size_t chars)
{
    size_t i = len;

    while (i > 0 && chars > 0) {
        i--;
        while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
            i--;
        chars--;
    }
    return i;
}

static int snippet(mt_search_hit *h, const char *text, size_t len, size_t start, size_t end)
{
    const char *nl;
    size_t ls = start, le, from, to;
    int rc;

    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    nl = memchr(text + end, '\n', len - end);
    le = nl ? (size_t)(nl - text) : len;
    from = ls + tail_start(text + ls, start - ls, CONTEXT_CHARS);
    to = end + mt_utf8_prefix(text + end, le - end, CONTEXT_CHARS);
    if ((rc = show(&h->before, text + from, start - from, from > ls ? "..." : "", "")) < 0 ||
        (rc = show(&h->match, text + start, end - start, "", "")) < 0 ||
        (rc = show(&h->after, text + end, to - end, "", to < le ? "..." : "")) < 0)
        return rc;
    return 0;
}

/* Where the query occurs in the memory now: 1 with h filled, 0 when it no
 * longer does (changed since the index was brought up to date). */
static int locate(mt_search_hit *h, mt_memory *m, const mt_search_query *q)
{
    mt_search_matches found;
    char *text = NULL;
    size_t len = 0;
    int rc;

    /* A file over the size limit (put there from outside) is found, but not
     * read whole to show where: memory stays bounded by the limits. */
    if ((rc = mt_memory_read(&text, &len, m, h->path)) == MT_ELIMIT)
        return 1;
    if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
        return 0;
    if (rc < 0)
        return rc;
    if ((rc = mt_search_match(&found, q, text, len, LINES_MAX)) < 0)
        goto done;
    if (!found.found) {
        rc = 0;
        goto done;
    }
    h->lines = found.lines;
    h->line_count = found.line_count;
    h->more_lines = found.more_lines;
    h->matches = found.occurrences;
    found.lines = NULL;
    {
        size_t ls = found.first_start;
        uint32_t line = 1;
        const char *p = text;

        while ((p = memchr(p, '\n', (size_t)(text + ls - p)))) {
            line++;
            p++;
        }
        h->line = line;
    }
    if ((rc = snippet(h, text, len, found.first_start, found.first_end)) == 0)
        rc = 1;
done:
    mt_search_matches_dispose(&found);
    sodium_memzero(text, len); /* from an encrypted store: the memory, decrypted */
    free(text);
    return rc;
}

/* Whether a hit at path was already shown (its score then made the new
 * one's: the ranks of one answer compare) or left out: a store asked again
 * answers with what it answered before. */
static int seen(mt_search_hit *hits, size_t k, char *const *dropped, size_t nd, const char *path,
                double score)
{
    size_t i;

    for (i = 0; i < k; i++) {
        if (strcmp(hits[i].path, path) == 0) {
            hits[i].score = score;
            return 1;
        }
    }
    for (i = 0; i < nd; i++)
        if (strcmp(dropped[i], path) == 0)
            return 1;
    return 0;
}

/* Best first, then by path: the stores' own order. */
static int by_rank(const void *pa, const void *pb)
{
    const mt_search_hit *a = pa, *b = pb;

    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return strcmp(a->path, b->path);
}

int mt_memory_search(mt_search_hit **out, size_t *count, mt_memory *m, const char *query,
                     const mt_search_options *opts)
{
    mt_search_query *q = NULL;
    mt_store_hit *found = NULL;
    mt_search_hit *hits = NULL;
    const char *path = opts && opts->path ? opts->path : "/memories";
    size_t limit = opts && opts->limit ? opts->limit : 10, n = 0, i, k = 0, ask, nd = 0;
    char **dropped = NULL, *p = NULL;
    mt_node_type type;
    uint64_t size;
    char *rel = NULL;
    int rc;

    if (!out || !count || !m || !query)
        return mt_error_set(MT_EINVAL, "mt_memory_search needs out pointers, a handle and a query");
    *out = NULL;
    *count = 0;
    if (limit > LIMIT_MAX) {
        rc = mt_error_set(MT_EINVAL, "a search shows at most %d hits, not %zu", LIMIT_MAX, limit);
        goto done;
    }
    if ((rc = mt_search_query_parse(&q, query, strlen(query))) < 0 ||
        (rc = mt_memory_rel(&rel, path)) < 0)
        goto done;
    q->max_size = m->opts.max_file_size;
    if (!m->store->search || m->store->version < 5) {
        rc = mt_error_set(MT_ENOSYS,
                          "this store cannot search: its interface (version %u) "
                          "has no search function",
                          m->store->version);
        goto done;
    }
    if ((rc = m->store->stat(m->store, &type, &size, rel)) < 0) {
        if (rc == MT_ENOTFOUND)
            rc = mt_error_set(rc, "%.300s does not exist: search beneath a directory that does",
                              path);
        goto done;
    }
    if (type != MT_NODE_DIR) {
        rc = mt_error_set(MT_ENOTDIR, "%.300s is a file: search beneath a directory", path);
        goto done;
    }
    if (!(hits = calloc(limit, sizeof(*hits)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    /* A hit whose memory is gone or no longer matches (changed since the
     * store answered) is left out, and the store asked for as many more as
     * were left out: each round asks for more than the last one got, so a
     * search shows as many as it may (limit) or all there are. */
    for (ask = limit;; ask = limit + nd) {
        if ((rc = m->store->search(m->store, &found, &n, q, rel, ask)) < 0)
            goto done;
        for (i = 0; i < n && k < limit; i++) {
            mt_search_hit *h = &hits[k];

            if ((rc = mt_memory_request_path(&p, found[i].path)) < 0)
                goto done;
            if (seen(hits, k, dropped, nd, p, found[i].score)) {
                free(p);
                p = NULL;
                continue;
            }
            h->path = p;
            p = NULL;
            h->score = found[i].score;
            if ((rc = locate(h, m, q)) < 0)
                goto done;
            if (rc == 1) {
                k++;
                continue;
            }
            if (nd % 16 == 0) {
                char **grown = realloc(dropped, (nd + 16) * sizeof(*dropped));

                if (!grown) {
                    rc = mt_error_set(MT_ENOMEM, "out of memory");
                    goto done;
                }
                dropped = grown;
            }
            dropped[nd++] = h->path;
            memset(h, 0, sizeof(*h));
        }
        mt_store_hits_free(found, n);
        found = NULL;
        if (k == limit || n < ask)
            break;
    }
    qsort(hits, k, sizeof(*hits), by_rank);
    rc = 0;
done:
    if (rc < 0) {
        /* hits[k] may hold a hit being located */
        mt_search_hits_free(hits, k < limit ? k + 1 : k);
        hits = NULL;
        k = 0;
    }
    if (k == 0) {
        free(hits);
        hits = NULL;
    }
    *out = hits;
    *count = k;
    mt_store_hits_free(found, n);
    for (i = 0; i < nd; i++)
        free(dropped[i]);
    free(dropped);
    free(p);
    mt_search_query_free(q);
    free(rel);
    return rc;
}

/* s[0, len) as valid UTF-8 on one line, appended to out. */
static int put_plain(mt_buf *out, const char *s, size_t len)
{
    size_t from = out->len, i;

    if (mt_utf8_sanitize(out, s, len) < 0)
        return MT_ENOMEM;
    for (i = from; i < out->len; i++)
        if (out->ptr[i] == '\n' || out->ptr[i] == '\r' || out->ptr[i] == '\t')
            out->ptr[i] = ' ';
    return 0;
}

/* Line `line` of the hit, text[ls, le), as "\n  N: ..." with each occurrence
 * of the query's terms on it marked (r: the n occurrences in the whole
 * text, absolute byte ranges in the order they end): from CONTEXT_CHARS
 * before the first to as many after its end (a phrase may run onto the next
 * line, as the snippet does), further on when an occurrence runs past;
 * "..." where cut. A line none starts on (the cap of occurrences reached)
 * shows its start. */
static int put_line(mt_buf *out, const char *text, size_t len, size_t ls, size_t le, uint32_t line,
                    const size_t *r, size_t n, const char *open, const char *close)
{
    size_t first = n, from, to, stop, at, i;
    const char *nl;

    for (i = 0; i < n; i++)
        if (r[2 * i] >= ls && r[2 * i] < le && (first == n || r[2 * i] < r[2 * first]))
            first = i;
    if (first == n) {
        to = ls + mt_utf8_prefix(text + ls, le - ls, 2 * CONTEXT_CHARS);
        if (mt_buf_printf(out, "\n  %u: ", line) < 0 || put_plain(out, text + ls, to - ls) < 0 ||
            (to < le && mt_buf_puts(out, "...") < 0))
            return MT_ENOMEM;
        return 0;
    }
    from = ls + tail_start(text + ls, r[2 * first] - ls, CONTEXT_CHARS);
    at = r[2 * first + 1];
    nl = memchr(text + at, '\n', len - at);
    stop = nl ? (size_t)(nl - text) : len;
    to = at + mt_utf8_prefix(text + at, stop - at, CONTEXT_CHARS);
    if (mt_buf_printf(out, "\n  %u: %s", line, from > ls ? "..." : "") < 0)
        return MT_ENOMEM;
    for (at = from, i = 0; i < n; i++) {
        size_t st = r[2 * i], e = r[2 * i + 1];

        /* those on the line shown, past the one before (a prefix in a phrase) */
        if (st < at || st >= to)
            continue;
        if (e > to)
            to = e;
        if (put_plain(out, text + at, st - at) < 0 || mt_buf_puts(out, open) < 0 ||
            put_plain(out, text + st, e - st) < 0 || mt_buf_puts(out, close) < 0)
            return MT_ENOMEM;
        at = e;
    }
    if (put_plain(out, text + at, to - at) < 0 || (to < stop && mt_buf_puts(out, "...") < 0))
        return MT_ENOMEM;
    return 0;
}

/* The header's list of lines: those shown. */
static int put_header(mt_buf *out, const mt_search_hit *h, const uint32_t *lines, size_t n)
{
    size_t k;

    if (mt_buf_puts(out, h->path) < 0)
        return MT_ENOMEM;
    for (k = 0; k < n; k++)
        if (mt_buf_printf(out, "%s%u", k ? ", " : n > 1 ? " (lines " : " (line ", lines[k]) < 0)
            return MT_ENOMEM;
    if (n && mt_buf_puts(out, h->more_lines ? ", ...)" : ")") < 0)
        return MT_ENOMEM;
    return 0;
}

/* One hit: every line it lists, read from the memory as it is now; when it
 * cannot be read again (gone, over the size limit), the snippet the search
 * kept, and the header lists that line alone. */
static int hit_text(mt_buf *out, mt_memory *m, const mt_search_query *q, const mt_search_hit *h,
                    const char *open, const char *close)
{
    mt_buf body = MT_BUF_INIT;
    uint32_t *shown = NULL, line = 1;
    char *text = NULL;
    size_t len = 0, ls = 0, le, k = 0, n = 0, *r = NULL, nr = 0;
    const char *nl;
    int rc = 0;

    if (h->line_count == 0 || (rc = mt_memory_read(&text, &len, m, h->path)) < 0) {
        if (h->line_count && rc == MT_ENOMEM)
            goto done;
        rc = put_header(out, h, h->match ? &h->line : NULL, h->match ? 1 : 0);
        if (rc == 0 && h->match &&
            mt_buf_printf(out, "\n  %u: %s%s%s%s%s", h->line, h->before, open, h->match, close,
                          h->after) < 0)
            rc = MT_ENOMEM;
        goto done;
    }
    if (!(shown = calloc(h->line_count, sizeof(*shown))) ||
        !(r = malloc(2 * MARKS_MAX * sizeof(*r)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = mt_search_occurrences(r, &nr, MARKS_MAX, q, text, len)) < 0)
        goto done;
    while (k < h->line_count && ls <= len) {
        nl = memchr(text + ls, '\n', len - ls);
        le = nl ? (size_t)(nl - text) : len;
        if (line == h->lines[k]) {
            if ((rc = put_line(&body, text, len, ls, le, line, r, nr, open, close)) < 0)
                goto done;
            shown[n++] = line;
            k++;
        }
        if (!nl)
            break;
        ls = le + 1;
        line++;
    }
    if ((rc = put_header(out, h, shown, n)) == 0 && body.len &&
        mt_buf_put(out, body.ptr, body.len) < 0)
        rc = MT_ENOMEM;
done:
    if (text)
        sodium_memzero(text, len); /* from an encrypted store: the memory, decrypted */
    free(text);
    if (body.ptr)
        sodium_memzero(body.ptr, body.len);
    mt_buf_dispose(&body);
    free(shown);
    free(r);
    return rc < 0 ? mt_error_set(MT_ENOMEM, "out of memory") : 0;
}

int mt_search_hits_text(mt_buf *out, mt_memory *m, const char *query, const mt_search_hit *hits,
                        size_t n, const char *open, const char *close)
{
    mt_search_query *q = NULL;
    size_t i;
    int rc;

    if ((rc = mt_search_query_parse(&q, query, strlen(query))) < 0)
        return rc;
    for (i = 0; i < n && rc == 0; i++) {
        if (i && mt_buf_putc(out, '\n') < 0)
            rc = mt_error_set(MT_ENOMEM, "out of memory");
        else
            rc = hit_text(out, m, q, &hits[i], open, close);
    }
    mt_search_query_free(q);
    return rc;
}

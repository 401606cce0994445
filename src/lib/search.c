/* Search: the store finds and ranks, the library shows where (lines, a snippet). */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "memory.h"
#include "search/text.h"
#include "utf8.h"

#define LINES_MAX     20
#define LIMIT_MAX     100
#define CONTEXT_CHARS 60 /* code points shown on each side of the match */

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

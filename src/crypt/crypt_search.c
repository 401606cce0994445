/*
 * Search in an encrypted store. An index would hold the memories' words in
 * the clear (the inner store's would hold sealed bytes, which match
 * nothing), so there is none: each search walks the files beneath its path
 * once, opens each, counts the query's terms in it (search/scan.h) and wipes
 * the plaintext before the next file. Nothing is written anywhere; the cost
 * is a full read and decryption of what is searched, every time.
 *
 * BM25 needs the collection's statistics (how many files hold each term,
 * their average length), known only when the walk ends, so a matching
 * file's path and term counts are kept until then and scored at the end:
 * memory grows with the files that match, never with the corpus.
 */
#include "crypt/crypt_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "search/scan.h"
#include "machinery/search_index.h"

typedef struct {
    char *path;
    mt_search_scan_doc doc;
    double score;
} found_file;

typedef struct {
    mt_crypt_open_fn open;
    void *payload;
    const mt_search_query *q;
    mt_search_scan_stats stats;
    found_file *found;
    size_t n, cap;
} scan_run;

/* The file's own error, saying why a search met it. */
static int file_error(int rc)
{
    char msg[1024];

    if (rc == MT_ENOMEM)
        return rc;
    snprintf(msg, sizeof(msg), "%s", mt_error_last()->message);
    return mt_error_set(rc,
                        "%s (a search of an encrypted store opens every memory beneath the path "
                        "it searches)",
                        msg);
}

static int keep(scan_run *r, const char *path, const mt_search_scan_doc *doc)
{
    found_file *grown;

    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        if (!(grown = realloc(r->found, r->cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory searching");
        r->found = grown;
    }
    if (!(r->found[r->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    r->found[r->n].doc = *doc;
    r->found[r->n].score = 0;
    r->n++;
    return 0;
}

static int scan_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    scan_run *r = payload;
    mt_search_scan_doc doc;
    char *plain = NULL;
    size_t len = 0;
    int rc;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    if ((rc = r->open(r->payload, &plain, &len, path)) < 0) {
        /* Removed, or replaced by a directory, since the walk saw it: not a
         * memory beneath path any more, as for the indexed stores. */
        if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
            return 0;
        return file_error(rc);
    }
    /* The indexed stores index no more of a memory than the query's max
     * size (their own default without one). */
    {
        uint64_t cap = r->q->max_size ? r->q->max_size : MT_SEARCH_INDEX_CAP;
        rc = mt_search_scan_text(&doc, r->q, plain, (uint64_t)len < cap ? len : (size_t)cap);
    }
    sodium_memzero(plain, len);
    free(plain);
    if (rc < 0)
        return rc;
    mt_search_scan_count(&r->stats, &doc, r->q);
    if (!mt_search_scan_matches(&doc, r->q))
        return 0;
    return keep(r, path, &doc);
}

/* Best first; equal scores by path, bytewise, as the indexed stores order them. */
static int by_rank(const void *a, const void *b)
{
    const found_file *x = a, *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->path, y->path);
}

int mt_crypt_search(mt_store_hit **out, size_t *count, mt_store *inner, mt_crypt_open_fn open,
                    void *payload, const mt_search_query *q, const char *path, size_t limit)
{
    scan_run r;
    mt_store_hit *hits = NULL;
    size_t i, n = 0;
    int rc;

    *out = NULL;
    *count = 0;
    memset(&r, 0, sizeof(r));
    r.open = open;
    r.payload = payload;
    r.q = q;
    if (limit == 0) {
        rc = mt_error_set(MT_EINVAL, "a search needs a limit of at least 1");
        goto done;
    }
    if (!q || q->count == 0 || q->count > MT_SEARCH_TERMS_MAX) {
        rc = mt_error_set(MT_EINVAL, "a search needs 1 to %d terms", MT_SEARCH_TERMS_MAX);
        goto done;
    }
    if ((rc = inner->walk(inner, path, scan_one, &r)) < 0)
        goto done;
    for (i = 0; i < r.n; i++)
        r.found[i].score = mt_search_scan_bm25(&r.stats, &r.found[i].doc, q);
    if (r.n)
        qsort(r.found, r.n, sizeof(*r.found), by_rank);
    n = r.n < limit ? r.n : limit;
    if (n && !(hits = calloc(n, sizeof(*hits)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching");
        n = 0;
        goto done;
    }
    for (i = 0; i < n; i++) {
        hits[i].path = r.found[i].path;
        hits[i].score = r.found[i].score;
        r.found[i].path = NULL;
    }
    *out = hits;
    *count = n;
    rc = 0;
done:
    for (i = 0; i < r.n; i++)
        free(r.found[i].path);
    free(r.found);
    return rc;
}

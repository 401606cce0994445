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

#include "machinery/scan_rank.h"

typedef struct {
    mt_crypt_open_fn open;
    void *payload;
    mt_scan_rank rank;
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

static int scan_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    scan_run *r = payload;
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
    rc = mt_scan_rank_add(&r->rank, path, plain, len);
    sodium_memzero(plain, len);
    free(plain);
    return rc;
}

int mt_crypt_search(mt_store_hit **out, size_t *count, mt_store *inner, mt_crypt_open_fn open,
                    void *payload, const mt_search_query *q, const char *path, size_t limit)
{
    scan_run r = {open, payload, {0}};
    int rc;

    *out = NULL;
    *count = 0;
    if ((rc = mt_scan_rank_start(&r.rank, q, limit)) == 0 &&
        (rc = inner->walk(inner, path, scan_one, &r)) == 0)
        rc = mt_scan_rank_hits(out, count, &r.rank, limit);
    mt_scan_rank_dispose(&r.rank);
    return rc;
}

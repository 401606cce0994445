/*
 * Search in the SQL store: an index (search_docs, db.h) brought up to date
 * by each search, so a change never pays for it. A memory's stamp is its
 * content's SHA-256 (nodes.sha256): a file whose row in search_docs is
 * missing or names another SHA-256 is indexed again from its content row,
 * and a row whose file is gone (deleted, renamed) is forgotten. A rename
 * indexes the file again under its new path: its content is read from the
 * store, as any other's. Of a file over the handle's max file size only that
 * much is indexed, and its row says so (its SHA-256 and the size indexed):
 * a handle with another limit indexes it again, to its own.
 *
 * The catch-up runs in write transactions under the tenant's write lock (the
 * lock of any change, so nothing changes the files within one): a pass
 * forgets the gone rows, then indexes the stale files in path order, each
 * transaction at most BATCH_DOCS of them or BATCH_BYTES of words, from where
 * the last one stopped. A change may come between two transactions and make
 * stale what an earlier one indexed, so only a transaction that makes a
 * whole pass by itself (nothing gone left, nothing stale left in the range)
 * answers the query: the answer comes from an index that matched the files
 * at that instant. A pass that took several transactions is followed by
 * another, which finds only what changed meanwhile (mostly nothing: one
 * short transaction). From the MAX_PASSES-th on, a pass is made in one
 * transaction however long, so a search ends even while changes keep
 * coming. A driver that records when nothing changed (search_fresh) lets a
 * search first look in a read snapshot: when the record is there, the query
 * is answered in that same snapshot, taking no lock and waiting for no
 * change; only a search with something to catch up takes the write lock.
 * The words are cut by memtool (search/words.h), the same for every
 * store; the driver says how the database holds them and how a query is
 * written (db.h).
 */
#include "db/db_core.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/words.h"
#include "machinery/search_index.h"

/* A transaction is ended once this much was indexed in it, or this many
 * memories; gone rows are forgotten FORGET_BATCH at a time. */
#define BATCH_BYTES  (16 * 1024 * 1024)
#define BATCH_DOCS   64
#define FORGET_BATCH 512
#define MAX_PASSES   3

/* How long a search waits for the tenant's write lock, held by a change. */
#define SEARCH_WAIT_MS 10000

typedef struct {
    char *path;
    char sha256[65];
    int indexed; /* it has a row (of other words) */
    int64_t size;
} stale_doc;

typedef struct {
    const char *path; /* searched beneath ("" everything) */
    char *lo, *hi;
    const char *query; /* the driver's form of it */
    size_t query_len;
    size_t limit;
    int64_t cap;   /* the most of a file indexed */
    char mark[24]; /* after the SHA-256 in the row of a file over cap */
    /* Where the pass stands: */
    char *after; /* where the next batch of stale files starts ("" the first) */
    int forgotten;
    unsigned passes; /* ended without an answer */
    size_t written;  /* memories indexed or forgotten, for mt_search_index_hook */
    int left_out;    /* a file of this pass had no content row to index */
    stale_doc docs[BATCH_DOCS];
    size_t ndocs;
    mt_store_hit *hits;
    size_t nhits;
} search_run;

static void docs_clear(search_run *r)
{
    size_t i;

    for (i = 0; i < r->ndocs; i++)
        free(r->docs[i].path);
    r->ndocs = 0;
}

static void hits_clear(search_run *r)
{
    mt_store_hits_free(r->hits, r->nhits);
    r->hits = NULL;
    r->nhits = 0;
}

static int stale_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    search_run *r = payload;
    stale_doc *d;

    if (ncols < 4 || cols[0].type != MT_DB_TEXT || cols[1].type != MT_DB_TEXT)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    if (r->ndocs == BATCH_DOCS)
        return 1;
    d = &r->docs[r->ndocs];
    if (!(d->path = strdup(cols[0].p)))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    snprintf(d->sha256, sizeof(d->sha256), "%s", cols[1].p);
    d->indexed = cols[2].i != 0;
    d->size = cols[3].i;
    r->ndocs++;
    return 0;
}

static int words_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    mt_buf *words = payload;

    if (ncols < 1 || (cols[0].type != MT_DB_BLOB && cols[0].type != MT_DB_TEXT))
        return mt_error_set(MT_EIO, "a content row of the store is damaged");
    return mt_search_index_text(words, cols[0].p ? cols[0].p : "", cols[0].len);
}

/* Index one file: its words, from at most r->cap bytes of its content,
 * recorded with the SHA-256 they came from. *bytes: what it took; *left_out
 * set when it has no content to index. */
static int index_one(mt_db *db, const search_run *r, const stale_doc *d, size_t *bytes,
                     int *left_out)
{
    mt_buf words = MT_BUF_INIT, form = MT_BUF_INIT;
    const mt_buf *bound = &words;
    char stamp[sizeof(d->sha256) + sizeof(r->mark)];
    mt_db_value piece[4] = {mt_db_text(db->tenant), mt_db_text(d->sha256), mt_db_int(1),
                            mt_db_int(r->cap)};
    int64_t n;
    int rc = 0;

    *bytes = 0;
    snprintf(stamp, sizeof(stamp), "%s%s", d->sha256, d->size > r->cap ? r->mark : "");
    if ((n = mt_db_exec(db, MT_DB_CONTENT_PIECE, piece, 4, words_row, &words)) < 0) {
        rc = (int)n;
        goto done;
    }
    /* No content row: the store was damaged outside memtool. The file is
     * left out (a view of it reports the damage), and tried at each search. */
    if (n == 0) {
        *left_out = 1;
        goto done;
    }
    if (db->drv->search_words) {
        if ((rc = db->drv->search_words(&form, words.ptr ? words.ptr : "", words.len)) < 0)
            goto done;
        bound = &form;
    }
    {
        mt_db_value a[4] = {mt_db_text(db->tenant),
                            mt_db_text(d->path),
                            mt_db_text(stamp),
                            {MT_DB_TEXT, 0, bound->ptr ? bound->ptr : "", bound->len, 0}};
        n = mt_db_exec(db, d->indexed ? MT_DB_SEARCH_SET : MT_DB_SEARCH_PUT, a, 4, NULL, NULL);
        if (n < 0)
            rc = (int)n;
    }
    *bytes = words.len;
done:
    mt_buf_dispose(&words);
    mt_buf_dispose(&form);
    return rc;
}

static int hit_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    search_run *r = payload;
    mt_store_hit *h;

    if (ncols < 2 || cols[0].type != MT_DB_TEXT)
        return mt_error_set(MT_EIO, "a row of the search index is damaged");
    if (r->nhits == r->limit)
        return 1;
    h = &r->hits[r->nhits];
    if (!(h->path = strdup(cols[0].p)))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    h->score = cols[1].type == MT_DB_REAL  ? cols[1].d
               : cols[1].type == MT_DB_INT ? (double)cols[1].i
                                           : 0;
    r->nhits++;
    return 0;
}

static int find(mt_db *db, search_run *r)
{
    mt_db_value a[6] = {mt_db_text(db->tenant),
                        mt_db_text(r->path),
                        mt_db_text(r->lo),
                        mt_db_text(r->hi),
                        {MT_DB_TEXT, 0, r->query, r->query_len, 0},
                        mt_db_int((int64_t)r->limit)};
    int64_t n;

    if (!(r->hits = calloc(r->limit, sizeof(*r->hits))))
        return mt_error_set(MT_ENOMEM, "out of memory searching");
    n = mt_db_exec(db, MT_DB_SEARCH_FIND, a, 6, hit_row, r);
    return n < 0 ? (int)n : 0;
}

static void written(search_run *r, size_t n)
{
    r->written += n;
    if (mt_search_index_hook && n)
        mt_search_index_hook(r->written, 0);
}

/*
 * One transaction's work on the pass: forget gone rows, index stale files,
 * as much as one transaction may (all of it once MAX_PASSES passes ended
 * without an answer); 1 when this transaction made the whole pass, and so
 * also found the answer.
 */
static int step(mt_db *db, search_run *r)
{
    mt_db_value a[8] = {mt_db_text(db->tenant), mt_db_text(r->path),     mt_db_text(r->lo),
                        mt_db_text(r->hi),      mt_db_int(FORGET_BATCH), mt_db_int(BATCH_DOCS),
                        mt_db_int(r->cap),      mt_db_text(r->mark)};
    mt_db_value fresh[2] = {mt_db_text(db->tenant), mt_db_int(r->cap)};
    int whole = r->passes >= MAX_PASSES, began = !r->forgotten && !*r->after, more;
    size_t i, bytes, total = 0;
    int64_t n;
    int rc;

    /* Nothing changed since a search found the whole index up to date (a
     * search may have found it so since fresh_read looked): it still is,
     * here too, and this transaction sees no change come. */
    if (began && db->drv->search_fresh) {
        if ((n = mt_db_exec(db, MT_DB_SEARCH_FRESH, fresh, 2, NULL, NULL)) < 0)
            return (int)n;
        if (n > 0)
            return (rc = find(db, r)) < 0 ? rc : 1;
        r->left_out = 0;
    }

    while (!r->forgotten) {
        if ((n = mt_db_exec(db, MT_DB_SEARCH_FORGET, a, 5, NULL, NULL)) < 0)
            return (int)n;
        written(r, (size_t)n);
        if (n < FORGET_BATCH)
            r->forgotten = 1;
        else if (!whole)
            return 0; /* more of them: in the next transaction */
    }
    do {
        a[4] = mt_db_text(r->after);
        if ((n = mt_db_exec(db, MT_DB_SEARCH_STALE_UPTO, a, 8, stale_row, r)) < 0)
            return (int)n;
        for (i = 0; i < r->ndocs && (whole || total < BATCH_BYTES); i++) {
            if ((rc = index_one(db, r, &r->docs[i], &bytes, &r->left_out)) < 0)
                return rc;
            total += bytes;
            written(r, 1);
        }
        if (i > 0) {
            char *after = strdup(r->docs[i - 1].path);

            if (!after)
                return mt_error_set(MT_ENOMEM, "out of memory searching");
            free(r->after);
            r->after = after;
        }
        more = i < r->ndocs || r->ndocs == BATCH_DOCS;
        docs_clear(r);
        if (more && !whole)
            return 0;
    } while (more);
    if (!began) {
        /* What an earlier transaction of this pass indexed may have
         * changed since: a pass again, from the start. */
        char *start = strdup("");

        if (!start)
            return mt_error_set(MT_ENOMEM, "out of memory searching");
        free(r->after);
        r->after = start;
        r->forgotten = 0;
        r->passes++;
        return 0;
    }
    /* The whole index matched the files in this transaction: said so, for
     * the searches after it, unless a file was left out (tried again by
     * each search, in case its content comes back). */
    if (db->drv->search_fresh && !*r->path && !r->left_out &&
        (n = mt_db_exec(db, MT_DB_SEARCH_FRESH_SET, fresh, 2, NULL, NULL)) < 0)
        return (int)n;
    if ((rc = find(db, r)) < 0)
        return rc;
    return 1;
}

/*
 * Answer from a read snapshot when the driver's record says nothing changed
 * since the index was last whole: the record and the index are read in one
 * snapshot, so a change committed after it is not seen by either. 1 when
 * answered, 0 when the search must catch up first.
 */
static int fresh_read(mt_db *db, search_run *r)
{
    mt_db_value fresh[2] = {mt_db_text(db->tenant), mt_db_int(r->cap)};
    int64_t n;
    int rc, answered = 0;

    if ((rc = db->drv->begin_read(db->conn)) < 0)
        goto done;
    if ((n = mt_db_exec(db, MT_DB_SEARCH_FRESH, fresh, 2, NULL, NULL)) <= 0) {
        rc = (int)n;
        goto done;
    }
    if ((rc = find(db, r)) < 0 || (rc = db->drv->commit(db->conn)) < 0)
        goto done;
    answered = 1;
done:
    if (!answered) {
        db->drv->rollback(db->conn);
        hits_clear(r);
    }
    /* A conflict (never on SQLite) is for the write transactions to settle. */
    return answered ? 1 : rc == MT_DB_RETRY ? 0 : rc;
}

/* Run step in a write transaction, again when the database asks. */
static int step_txn(mt_db *db, search_run *r)
{
    const mt_db_driver *drv = db->drv;
    char *after = NULL;
    int rc = 0, tries, forgotten = r->forgotten;
    unsigned passes = r->passes;
    size_t count = r->written;

    for (tries = 0;; tries++) {
        if (!(after = strdup(r->after)))
            return mt_error_set(MT_ENOMEM, "out of memory searching");
        if ((rc = drv->begin_write(db->conn, db->tenant, SEARCH_WAIT_MS)) == 0) {
            rc = step(db, r);
            if (rc >= 0) {
                int c = drv->commit(db->conn);
                if (c < 0)
                    rc = c;
            }
            if (rc < 0)
                drv->rollback(db->conn);
        }
        docs_clear(r);
        if (rc >= 0)
            break;
        /* Nothing of it stands: start it again from where it started. */
        hits_clear(r);
        free(r->after);
        r->after = after;
        after = NULL;
        r->forgotten = forgotten;
        r->passes = passes;
        r->written = count;
        if (rc != MT_DB_RETRY)
            break;
        if (tries + 1 >= MT_DB_RETRIES) {
            rc = mt_error_set(MT_EBUSY, "the search kept conflicting with changes: try again");
            break;
        }
    }
    free(after);
    if (rc >= 0 && mt_search_index_hook)
        mt_search_index_hook(r->written, 1);
    return rc;
}

int mt_db_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                 const char *path, size_t limit)
{
    mt_db *db = (mt_db *)st;
    search_run r;
    mt_buf query = MT_BUF_INIT;
    int rc, acquired = 0;

    *out = NULL;
    *count = 0;
    memset(&r, 0, sizeof(r));
    r.path = path;
    r.limit = limit;
    /* What a content row's substr takes (an INTEGER: PostgreSQL's is 32 bits). */
    r.cap = !q->max_size              ? MT_SEARCH_INDEX_CAP
            : q->max_size < INT32_MAX ? (int64_t)q->max_size
                                      : INT32_MAX;
    snprintf(r.mark, sizeof(r.mark), "<%lld", (long long)r.cap);
    if (!db->drv->search_query) {
        rc = mt_error_set(MT_ENOSYS, "the %s store cannot search", db->drv->name);
        goto done;
    }
    if (limit == 0) {
        rc = mt_error_set(MT_EINVAL, "a search needs a limit of at least 1");
        goto done;
    }
    if ((rc = db->drv->search_query(&query, q)) < 0 || (rc = mt_db_beneath(&r.lo, &r.hi, path)) < 0)
        goto done;
    r.query = query.ptr ? query.ptr : "";
    r.query_len = query.len;
    if (!(r.after = strdup(""))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching");
        goto done;
    }
    if ((rc = mt_db_acquire(db)) < 0)
        goto done;
    acquired = 1;
    rc = db->drv->search_fresh ? fresh_read(db, &r) : 0;
    while (rc == 0)
        rc = step_txn(db, &r);
    if (rc < 0)
        goto done;
    rc = 0;
    *out = r.hits;
    *count = r.nhits;
    r.hits = NULL;
    r.nhits = 0;
done:
    if (acquired)
        mt_db_release(db);
    hits_clear(&r);
    free(r.after);
    free(r.lo);
    free(r.hi);
    mt_buf_dispose(&query);
    return rc;
}

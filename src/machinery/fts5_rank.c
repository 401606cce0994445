/* memtool's FTS5 ranking function (see fts5_rank.h). */
#include "machinery/fts5_rank.h"

#include <limits.h>
#include <string.h>

#include <sqlite3.h>

#include <memtool/store.h>

#include "search/bm25.h"

/* What a query computes once: the table's mean row length, and for several
 * phrases each one's IDF (freq: per row, each phrase's count). */
typedef struct {
    int phrases;
    double avgdl;
    double *idf;
    double *freq;
    sqlite3 *db;
    sqlite3_int64 rows;  /* the rows ranked so far */
    sqlite3_stmt *sizes; /* the cursor along %_docsize, once prepared */
    int where;           /* SIZES_BEFORE its first row, on a row (SIZES_ROW), SIZES_END */
    sqlite3_int64 at;    /* the id of its row, when on one */
    int sizes_off;       /* 1: every length from xColumnSize */
    int checked;         /* 1: a length read so agreed with xColumnSize */
} rank_data;

/*
 * A row's length in tokens. FTS5's xColumnSize looks each row up in the
 * table's %_docsize: for a word most memories hold, a third of the ranking.
 * The matches of a query come in rowid order, so once a query has ranked a
 * few rows (a rare word never pays for this) the lengths are read by one
 * cursor stepping along %_docsize beside them, in the query's own
 * transaction, and sought again only across a gap. Its first length is
 * checked against xColumnSize: a table kept another way (no %_docsize, a
 * format not understood) ranks by xColumnSize alone.
 */
#define SIZES_AFTER 32 /* rows looked up before the cursor is made */
#define SIZES_STEP  4  /* a gap in rowids up to which stepping beats seeking */
enum { SIZES_BEFORE, SIZES_ROW, SIZES_END }; /* where the cursor is */

static void rank_data_free(void *p)
{
    rank_data *d = p;

    sqlite3_finalize(d->sizes);
    sqlite3_free(d);
}

/* The sum of the varints of a %_docsize row: one per column. */
static int sizes_decode(sqlite3_int64 *out, const unsigned char *p, int n)
{
    sqlite3_uint64 sum = 0, v;
    int i;

    while (n > 0) {
        v = 0;
        for (i = 0; i < 8 && i < n; i++) {
            v = (v << 7) | (p[i] & 0x7f);
            if (!(p[i] & 0x80))
                break;
        }
        if (i == 8 && n > 8)
            v = (v << 8) | p[8];
        else if (i == n)
            return -1;
        sum += v;
        p += i + 1;
        n -= i + 1;
    }
    if (sum > (sqlite3_uint64)INT_MAX)
        return -1;
    *out = (sqlite3_int64)sum;
    return 0;
}

static int sizes_move(rank_data *d, sqlite3_int64 id)
{
    int rc;

    /* Forwards by a small gap: step; else seek (id - at cannot overflow
     * once at <= id, taken unsigned). */
    if (d->where != SIZES_ROW || d->at > id ||
        (sqlite3_uint64)id - (sqlite3_uint64)d->at > SIZES_STEP) {
        sqlite3_reset(d->sizes);
        sqlite3_bind_int64(d->sizes, 1, id);
        d->where = SIZES_BEFORE;
    }
    while (d->where == SIZES_BEFORE || (d->where == SIZES_ROW && d->at < id)) {
        if ((rc = sqlite3_step(d->sizes)) != SQLITE_ROW) {
            d->where = SIZES_END;
            return rc == SQLITE_DONE ? SQLITE_OK : rc;
        }
        d->where = SIZES_ROW;
        d->at = sqlite3_column_int64(d->sizes, 0);
    }
    return SQLITE_OK;
}

static int row_tokens(int *out, rank_data *d, const Fts5ExtensionApi *api, Fts5Context *fts)
{
    sqlite3_int64 id = api->xRowid(fts), tokens;
    int rc, slow;

    if (d->sizes_off || ++d->rows <= SIZES_AFTER)
        return api->xColumnSize(fts, -1, out);
    if (!d->sizes) {
        /* The one table memtool ranks (fts5_rank.h), named in full: no
         * temporary table of the same name is read in its place. */
        if (sqlite3_prepare_v2(d->db,
                               "SELECT id, sz FROM main.search_words_docsize WHERE id >= ?1 "
                               "ORDER BY id",
                               -1, &d->sizes, NULL) != SQLITE_OK) {
            d->sizes_off = 1;
            return api->xColumnSize(fts, -1, out);
        }
        d->where = SIZES_END;
    }
    if ((rc = sizes_move(d, id)) != SQLITE_OK)
        return rc;
    if (d->where != SIZES_ROW || d->at != id ||
        sizes_decode(&tokens, sqlite3_column_blob(d->sizes, 1), sqlite3_column_bytes(d->sizes, 1)) <
            0)
        return api->xColumnSize(fts, -1, out);
    if (!d->checked) {
        if ((rc = api->xColumnSize(fts, -1, &slow)) != SQLITE_OK)
            return rc;
        d->checked = 1;
        d->sizes_off = slow != tokens;
        if (d->sizes_off) {
            *out = slow;
            return SQLITE_OK;
        }
    }
    *out = (int)tokens;
    return SQLITE_OK;
}

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *p)
{
    (void)api;
    (void)fts;
    (*(sqlite3_int64 *)p)++;
    return SQLITE_OK;
}

static int rank_data_get(rank_data **out, const Fts5ExtensionApi *api, Fts5Context *fts,
                         sqlite3_context *ctx)
{
    rank_data *d = api->xGetAuxdata(fts, 0);
    sqlite3_int64 rows = 0, tokens = 0, hits;
    int phrases, i, rc = SQLITE_OK;
    size_t size;

    if (d)
        goto done;
    if ((phrases = api->xPhraseCount(fts)) < 1) {
        rc = SQLITE_ERROR;
        goto done;
    }
    size = sizeof(*d) + 2 * (size_t)phrases * sizeof(double);
    if (!(d = sqlite3_malloc64(size))) {
        rc = SQLITE_NOMEM;
        goto done;
    }
    memset(d, 0, size);
    d->phrases = phrases;
    d->idf = (double *)(d + 1);
    d->freq = d->idf + phrases;
    d->db = sqlite3_context_db_handle(ctx);
    if ((rc = api->xRowCount(fts, &rows)) != SQLITE_OK ||
        (rc = api->xColumnTotalSize(fts, -1, &tokens)) != SQLITE_OK)
        goto done;
    d->avgdl = (double)tokens / (double)rows;
    /* One phrase's IDF scales every row alike: it is not needed, and its
     * count is most of the work for a phrase or a prefix. */
    for (i = 0; phrases > 1 && i < phrases; i++) {
        hits = 0;
        if ((rc = api->xQueryPhrase(fts, i, &hits, count_row)) != SQLITE_OK)
            goto done;
        d->idf[i] = mt_bm25_idf((double)rows, (double)hits);
    }
    /* The query owns it from here, even when this fails (it frees it). */
    rc = api->xSetAuxdata(fts, d, rank_data_free);
    if (rc != SQLITE_OK)
        d = NULL;
done:
    if (rc != SQLITE_OK && d && api->xGetAuxdata(fts, 0) != d)
        rank_data_free(d);
    *out = rc == SQLITE_OK ? d : NULL;
    return rc;
}

/* The arithmetic is bm25()'s (search/bm25.h): the one-phrase value is
 * exactly the factor bm25() multiplies by the IDF. */
static void rank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
                 sqlite3_value **val)
{
    rank_data *d;
    double score = 0.0, dl;
    int insts = 0, tokens = 0, i, phrase, col, off, rc;

    (void)nval;
    (void)val;
    if ((rc = rank_data_get(&d, api, fts, ctx)) != SQLITE_OK ||
        (rc = api->xInstCount(fts, &insts)) != SQLITE_OK)
        goto done;
    memset(d->freq, 0, (size_t)d->phrases * sizeof(double));
    /* One phrase: every instance is its own (a common word has a hundred
     * in a memory, each an xInst call otherwise). */
    if (d->phrases == 1)
        d->freq[0] = (double)insts;
    else
        for (i = 0; i < insts; i++) {
            if ((rc = api->xInst(fts, i, &phrase, &col, &off)) != SQLITE_OK)
                goto done;
            d->freq[phrase] += 1.0;
        }
    if ((rc = row_tokens(&tokens, d, api, fts)) != SQLITE_OK)
        goto done;
    dl = (double)tokens;
    if (d->phrases == 1)
        score = mt_bm25_tf(d->freq[0], dl, d->avgdl);
    else
        for (i = 0; i < d->phrases; i++)
            score += d->idf[i] * mt_bm25_tf(d->freq[i], dl, d->avgdl);
done:
    if (rc == SQLITE_OK)
        sqlite3_result_double(ctx, -1.0 * score);
    else
        sqlite3_result_error_code(ctx, rc);
}

int mt_fts5_rank_register(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    fts5_api *fts = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &s, NULL) != SQLITE_OK) {
        rc = mt_error_set(MT_EIO, "search: this SQLite has no FTS5: %s", sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_pointer(s, 1, &fts, "fts5_api_ptr", NULL);
    if (sqlite3_step(s) != SQLITE_ROW || !fts || fts->iVersion < 2) {
        rc = mt_error_set(MT_EIO, "search: this SQLite's FTS5 has no interface for functions");
        goto done;
    }
    if (fts->xCreateFunction(fts, "mt_rank", NULL, rank, NULL) != SQLITE_OK)
        rc = mt_error_set(MT_EIO, "search: cannot register its ranking: %s", sqlite3_errmsg(db));
done:
    sqlite3_finalize(s);
    return rc;
}

int mt_fts5_prefixes_missing(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    int rc;

    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                           "name = 'search_words' AND instr(sql, ?1) = 0",
                           -1, &s, NULL) != SQLITE_OK ||
        sqlite3_bind_text(s, 1, MT_FTS5_PREFIXES, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
        rc = mt_error_set(MT_EIO, "search: cannot read the index's schema: %s", sqlite3_errmsg(db));
        goto done;
    }
    rc = sqlite3_column_int(s, 0) > 0;
done:
    sqlite3_finalize(s);
    return rc;
}

/* memtool's FTS5 ranking function (see fts5_rank.h). */
#include "fts5_rank.h"

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
} rank_data;

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *p)
{
    (void)api;
    (void)fts;
    (*(sqlite3_int64 *)p)++;
    return SQLITE_OK;
}

static int rank_data_get(rank_data **out, const Fts5ExtensionApi *api, Fts5Context *fts)
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
    rc = api->xSetAuxdata(fts, d, sqlite3_free);
    if (rc != SQLITE_OK)
        d = NULL;
done:
    if (rc != SQLITE_OK && d && api->xGetAuxdata(fts, 0) != d)
        sqlite3_free(d);
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
    if ((rc = rank_data_get(&d, api, fts)) != SQLITE_OK ||
        (rc = api->xInstCount(fts, &insts)) != SQLITE_OK)
        goto done;
    memset(d->freq, 0, (size_t)d->phrases * sizeof(double));
    for (i = 0; i < insts; i++) {
        if ((rc = api->xInst(fts, i, &phrase, &col, &off)) != SQLITE_OK)
            goto done;
        d->freq[phrase] += 1.0;
    }
    if ((rc = api->xColumnSize(fts, -1, &tokens)) != SQLITE_OK)
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

/*
 * Contents counted by the versions that hold them, and pruning: versions
 * over a memory's cap or older than the days limit, with their contents.
 */
#include "machinery/hist_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

/* Step a statement of one SHA-256 that returns no rows; -1 on failure. */
static int step_sha(mt_hist *h, int which, const char *sha)
{
    sqlite3_stmt *s = mt_hist_stmt(h, which);

    sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
}

/* One reference fewer to a content; the content goes with its last (a
 * statement for it only then, as the database stores do). */
int mt_hist_drop_content(mt_hist *h, const char *sha)
{
    if (step_sha(h, S_CONTENT_UNREF, sha) < 0 || step_sha(h, S_REFS_DROP, sha) < 0)
        return mt_hist_db_error(h, "cannot drop content");
    if (sqlite3_changes(h->db) == 0)
        return 0;
    if (step_sha(h, S_CONTENT_DROP, sha) < 0)
        return mt_hist_db_error(h, "cannot drop content");
    if (sqlite3_changes(h->db) > 0)
        h->dropped = 1;
    return 0;
}

int mt_hist_content_ref(mt_hist *h, const char *sha)
{
    if (step_sha(h, S_CONTENT_REF, sha) < 0)
        return mt_hist_db_error(h, "cannot keep content");
    return sqlite3_changes(h->db) > 0;
}

int mt_hist_content_keep(mt_hist *h, const char *sha, const char *data, size_t len)
{
    sqlite3_stmt *s;
    int rc;

    /* Kept already: only its count changes, never its row. */
    if ((rc = mt_hist_content_ref(h, sha)) != 0)
        return rc < 0 ? rc : 0;
    if (step_sha(h, S_REFS_NEW, sha) < 0)
        return mt_hist_db_error(h, "cannot keep content");
    s = mt_hist_stmt(h, S_CONTENT_PUT);
    sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(s, 2, len ? data : "", len, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot keep content");
}

/* Run a DELETE ... RETURNING sha256 and drop each content it freed. Its
 * rows all come at the first step, before the deletes are done: collect,
 * then drop. */
static int drop_returned(mt_hist *h, sqlite3_stmt *s)
{
    char(*shas)[65] = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0, step;

    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *sha = (const char *)sqlite3_column_text(s, 0);
        if (!sha)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            void *p = realloc(shas, ncap * sizeof(*shas));
            if (!p) {
                rc = mt_error_set(MT_ENOMEM, "out of memory pruning the history");
                break;
            }
            shas = p;
            cap = ncap;
        }
        snprintf(shas[n++], 65, "%s", sha);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = mt_hist_db_error(h, "cannot prune");
    for (i = 0; rc == 0 && i < n; i++)
        rc = mt_hist_drop_content(h, shas[i]);
    free(shas);
    return rc;
}

/* Whether a prune by days is due: at most once a minute per handle. */
int mt_hist_days_due(mt_hist *h)
{
    return mt_hist_now_ms() - h->last_days_run >= 60000;
}

int mt_hist_max_id(mt_hist *h, int64_t *out)
{
    sqlite3_stmt *s = mt_hist_stmt(h, S_MAX_ID);
    int step = sqlite3_step(s);

    *out = step == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return step == SQLITE_ROW ? 0 : mt_hist_db_error(h, "cannot read the newest version");
}

/* Run one of the prune's DELETE ... RETURNING statements (?1 a, ?2 b) and
 * drop the contents it freed. */
static int prune_by(mt_hist *h, const char *text, int64_t a, int64_t b)
{
    sqlite3_stmt *s = NULL;
    int rc;

    if (sqlite3_prepare_v2(h->db, text, -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot prune");
    sqlite3_bind_int64(s, 1, a);
    sqlite3_bind_int64(s, 2, b);
    rc = drop_returned(h, s);
    sqlite3_finalize(s);
    return rc;
}

/*
 * Versions older than `days` before `now` go, except each memory's newest
 * (a live memory's is its current content), in work that grows with what
 * changed since the last prune, not with the whole history (a scan of every
 * version was 5 ms of each one-shot write in a history of 100,000).
 *
 * meta keeps how far the last prune got: every version older than
 * 'expired_before' is gone or was its memory's newest then, and
 * 'expiry_seen' was the newest id + 1 then. So a prune deletes
 *   - among versions from expired_before to the cut (by the index on
 *     `at`), those that are not their memory's newest, and
 *   - among the versions of memories that have one since expiry_seen, those
 *     older than the cut that are no longer the newest (a memory left alone
 *     past the cut, then changed).
 * Without a record (a new or upgraded database) the first prune looks at
 * every version older than the cut, once.
 */
int mt_hist_prune_days_at(mt_hist *h, unsigned days, int64_t now)
{
    static const char *const q_state =
        "SELECT (SELECT value FROM meta WHERE key = 'expired_before'),"
        "  (SELECT value FROM meta WHERE key = 'expiry_seen')";
    static const char *const q_range =
        "DELETE FROM versions WHERE at >= ?1 AND at < ?2 AND EXISTS (SELECT 1 FROM versions n "
        "WHERE n.memory_id = versions.memory_id AND n.id > versions.id) RETURNING sha256";
    /* Written so that the memories come from the newest versions by id,
     * not from a DISTINCT over the index of all of them. */
    static const char *const q_touched =
        "DELETE FROM versions WHERE id IN (SELECT o.id FROM versions o WHERE o.memory_id IN "
        "(SELECT memory_id FROM versions WHERE id >= ?1) AND o.at < ?2 AND EXISTS (SELECT 1 "
        "FROM versions n WHERE n.memory_id = o.memory_id AND n.id > o.id)) RETURNING sha256";
    static const char *const q_keep =
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('expired_before', ?1), "
        "('expiry_seen', ?2)";
    sqlite3_stmt *s = NULL;
    int64_t cut = now - (int64_t)days * MS_PER_DAY, before = 0, seen = 0, newest = 0;
    int known = 0, rc = 0;

    if (sqlite3_prepare_v2(h->db, q_state, -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW)
        goto fail;
    known = sqlite3_column_type(s, 0) != SQLITE_NULL && sqlite3_column_type(s, 1) != SQLITE_NULL;
    before = known ? sqlite3_column_int64(s, 0) : 0;
    seen = known ? sqlite3_column_int64(s, 1) : 0;
    sqlite3_finalize(s);
    s = NULL;
    if ((rc = mt_hist_max_id(h, &newest)) < 0)
        goto done;

    if (!known)
        before = INT64_MIN;
    if (before < cut && (rc = prune_by(h, q_range, before, cut)) < 0)
        goto done;
    if (known && seen <= newest && (rc = prune_by(h, q_touched, seen, cut)) < 0)
        goto done;
    /* A cut earlier than the last (more days now) is where the record
     * holds from: versions between the two stay, and are looked at again. */
    if (sqlite3_prepare_v2(h->db, q_keep, -1, &s, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(s, 1, cut);
    sqlite3_bind_int64(s, 2, newest + 1);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto fail;
    goto done;
fail:
    rc = mt_hist_db_error(h, "cannot prune");
done:
    sqlite3_finalize(s);
    return rc;
}

/* A change's prune by days, as it commits (when due). */
int mt_hist_prune_days(mt_hist *h, unsigned days)
{
    if (!days || !mt_hist_days_due(h))
        return 0;
    h->last_days_run = mt_hist_now_ms();
    return mt_hist_prune_days_at(h, days, h->last_days_run);
}

/* A memory over its cap by the slack loses its oldest versions. */
int mt_hist_prune_memory(mt_hist *h, const char *memory_id, unsigned keep)
{
    sqlite3_stmt *s;
    int64_t cut;
    int rc, step;

    if (!keep)
        return 0;
    s = mt_hist_stmt(h, S_NTH_NEWEST);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)keep + PRUNE_SLACK(keep) - 1);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE)
        return 0;
    if (step != SQLITE_ROW)
        return mt_hist_db_error(h, "cannot count versions");
    /* Over: keep the newest `keep`. */
    s = mt_hist_stmt(h, S_NTH_NEWEST);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)keep);
    if (sqlite3_step(s) != SQLITE_ROW)
        return mt_hist_db_error(h, "cannot count versions");
    cut = sqlite3_column_int64(s, 0);
    s = mt_hist_stmt(h, S_PRUNE);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, cut);
    rc = drop_returned(h, s);
    sqlite3_reset(s);
    return rc;
}

int mt_hist_prune(mt_hist *h, const char *memory_id, unsigned keep)
{
    int rc;

    if (h->mode != H_LOGGED)
        return mt_hist_prune_memory(h, memory_id, keep);
    /* The change's last record carries the cap, and the load prunes after
     * it: where a transaction would have, and after no other record of the
     * change (a version found on the disk, a move). */
    if (h->change_recs && strcmp(h->last_mem, memory_id) == 0) {
        mt_hist_rec_set_keep(h->change.ptr + h->last_rec, keep);
        return 0;
    }
    /* Not the memory this change just recorded: pruned in a transaction. */
    if ((rc = mt_hist_escalate(h)) < 0)
        return rc;
    return mt_hist_prune_memory(h, memory_id, keep);
}

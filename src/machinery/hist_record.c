/*
 * Recording versions, and the ids of memories: a path's memory found,
 * refreshed and tracked across renames.
 */
#include "machinery/hist_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

void mt_hist_seen_forget(mt_hist *h)
{
    free(h->seen_path);
    h->seen_path = NULL;
}

/* Best effort: without memory for the path, the next find asks SQLite. */
void mt_hist_seen_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m)
{
    mt_hist_seen_forget(h);
    if (!(h->seen_path = strdup(path)))
        return;
    h->seen_found = found;
    if (found)
        h->seen = *m;
    else
        memset(&h->seen, 0, sizeof(h->seen));
}

int mt_hist_find(mt_hist *h, mt_hist_mem *out, const char *path)
{
    sqlite3_stmt *s;
    const char *text;
    int step;

    memset(out, 0, sizeof(*out));
    if (h->seen_path && strcmp(h->seen_path, path) == 0) {
        if (h->seen_found)
            *out = h->seen;
        return h->seen_found;
    }
    /* What this handle appended and the database does not have yet. */
    if (h->mode == H_LOGGED) {
        struct over *o = mt_hist_over_find(h, path);
        if (o) {
            if (o->found)
                *out = o->m;
            mt_hist_seen_set(h, path, o->found, out);
            return o->found;
        }
    }
    s = mt_hist_stmt(h, S_FIND);
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        sqlite3_reset(s);
        mt_hist_seen_set(h, path, 0, NULL);
        return 0;
    }
    if (step != SQLITE_ROW)
        return mt_hist_db_error(h, "cannot look up a memory");
    snprintf(out->id, sizeof(out->id), "%s", (const char *)sqlite3_column_text(s, 0));
    text = (const char *)sqlite3_column_text(s, 1);
    snprintf(out->sha256, sizeof(out->sha256), "%s", text ? text : "");
    out->size = (uint64_t)sqlite3_column_int64(s, 2);
    out->fp.ino = (uint64_t)sqlite3_column_int64(s, 3);
    out->fp.size = out->size;
    out->fp.mtime_ns = sqlite3_column_int64(s, 4);
    out->fp.ctime_ns = sqlite3_column_int64(s, 5);
    sqlite3_reset(s);
    mt_hist_seen_set(h, path, 1, out);
    return 1;
}

void mt_hist_new_memory_id(char id[24])
{
    unsigned char r[8];
    char hex[17];

    randombytes_buf(r, sizeof(r));
    sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
    snprintf(id, 24, "mem_%s", hex);
}

int mt_hist_record(mt_hist *h, int64_t *out_id, const mt_hist_event *e)
{
    mt_hist_rec r;
    mt_hist_mem was, now;
    int found = 0, rc;

    *out_id = 0;
    memset(&r, 0, sizeof(r));
    /* The memory: named, the one at the path (or the rename's source), or new. */
    if (e->memory_id) {
        snprintf(r.memory_id, sizeof(r.memory_id), "%s", e->memory_id);
    } else if ((found = mt_hist_find(h, &was, e->previous ? e->previous : e->path)) < 0) {
        return found;
    } else if (found && !was.sha256[0] && !e->data) {
        /* Recorded only as which memory is there (a change with history
         * off): no content of it to refer to, so no version; the record
         * follows the change. */
        if (e->op == MT_VERSION_DELETED)
            return mt_hist_track_drop(h, e->path);
        return e->previous ? mt_hist_track_move(h, e->previous, e->path) : 0;
    } else if (found) {
        memcpy(r.memory_id, was.id, sizeof(r.memory_id));
        memcpy(r.sha256, was.sha256, sizeof(r.sha256));
        r.size = was.size;
    } else if (e->op == MT_VERSION_CREATED) {
        mt_hist_new_memory_id(r.memory_id);
    } else {
        return 0; /* nothing known of it: nothing to record */
    }
    r.op = e->op;
    r.path = e->path;
    r.previous = e->previous;
    r.actor = e->actor ? e->actor : "library";
    r.at = mt_hist_now_ms();
    if (e->op == MT_VERSION_DELETED) {
        r.sha256[0] = '\0';
        r.size = 0;
    } else {
        if (e->data) {
            if (e->sha256)
                memcpy(r.sha256, e->sha256, sizeof(r.sha256));
            else
                mt_hist_sha256(r.sha256, e->data, e->len);
            r.size = e->len;
            r.data = e->data;
            r.len = e->len;
        }
        if (e->fp) {
            r.has_fp = 1;
            r.fp = *e->fp;
        }
    }
    /* A big content goes straight into the database: through the log it
     * would be copied into the change's buffer, written to the log, and
     * read back and written again by the load its size calls for at once. */
    if (h->mode == H_LOGGED && r.len >= LOG_BATCH_BYTES && (rc = mt_hist_escalate(h)) < 0)
        return rc;
    if (h->mode == H_LOGGED) {
        size_t at = h->change.len;
        r.id = h->next_id;
        r.days = h->days;
        /* No cap on versions unless mt_hist_prune puts it on (keep). */
        if ((rc = mt_hist_rec_encode(&h->change, &r)) < 0)
            return rc;
        h->last_rec = at;
        memcpy(h->last_mem, r.memory_id, sizeof(h->last_mem));
        h->next_id++;
        h->change_recs++;
        *out_id = r.id;
    } else {
        if ((rc = mt_hist_apply_rec(h, &r, NULL)) < 0)
            return rc;
        *out_id = sqlite3_last_insert_rowid(h->db);
    }
    /* What S_FIND would read back now. */
    memset(&now, 0, sizeof(now));
    if (e->op != MT_VERSION_DELETED) {
        snprintf(now.id, sizeof(now.id), "%s", r.memory_id);
        snprintf(now.sha256, sizeof(now.sha256), "%s", r.sha256);
        now.size = now.fp.size = r.size;
        if (r.has_fp) {
            now.fp.ino = r.fp.ino;
            now.fp.mtime_ns = r.fp.mtime_ns;
            now.fp.ctime_ns = r.fp.ctime_ns;
        }
    }
    if (h->mode == H_LOGGED &&
        (((e->op == MT_VERSION_DELETED || e->previous) &&
          (rc = mt_hist_over_set(h, e->previous ? e->previous : e->path, 0, NULL, 0)) < 0) ||
         (e->op != MT_VERSION_DELETED &&
          (rc = mt_hist_over_set(h, e->path, 1, &now, r.has_fp)) < 0)))
        return rc;
    mt_hist_seen_set(h, e->path, e->op != MT_VERSION_DELETED, &now);
    return 0;
}

static const char *const lazy_sql[L_COUNT] = {
    [L_PUT] = "INSERT OR REPLACE INTO memories(path, id, sha256, size) VALUES (?1, ?2, NULL, 0)",
    [L_DROP] = "DELETE FROM memories WHERE path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0')",
    [L_MOVE] = "UPDATE memories SET path = ?2 || substr(path, length(?1) + 1) "
               "WHERE path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0')",
    [L_ELSEWHERE] = "SELECT 1 FROM memories WHERE id = ?1 AND path <> ?2 LIMIT 1",
    [L_LOOKUP] = "SELECT id FROM memories WHERE path = ?1 AND "
                 "EXISTS (SELECT 1 FROM meta WHERE key = 'ids')",
    [L_EXACT] = "SELECT 1 FROM meta WHERE key = 'ids'",
    [L_MARK] = "INSERT OR REPLACE INTO meta VALUES ('ids', 'exact')",
};

static sqlite3_stmt *lazy_stmt(mt_hist *h, int which)
{
    return mt_hist_lazy(h, which, lazy_sql[which]);
}

/* Run a statement of the record of ids on one or two paths. */
static int track_run(mt_hist *h, int which, const char *a, const char *b)
{
    sqlite3_stmt *s;
    int step;

    if ((step = mt_hist_escalate(h)) < 0)
        return step;
    mt_hist_seen_forget(h);
    if (!(s = lazy_stmt(h, which)))
        return mt_hist_db_error(h, "cannot record which memory is where");
    sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    sqlite3_reset(s);
    return step == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot record which memory is where");
}

int mt_hist_track_put(mt_hist *h, const char *path, const char *id)
{
    return track_run(h, L_PUT, path, id);
}

int mt_hist_track_drop(mt_hist *h, const char *path)
{
    return track_run(h, L_DROP, path, NULL);
}

int mt_hist_track_move(mt_hist *h, const char *from, const char *to)
{
    int rc;

    /* A record left at the destination (what was there went outside
     * memtool) would collide with what moves in. */
    if ((rc = track_run(h, L_DROP, to, NULL)) < 0)
        return rc;
    return track_run(h, L_MOVE, from, to);
}

/* One step of a lazy statement on the database itself (a logged change
 * goes into a transaction first), with up to two text parameters: 1 on a
 * row, 0 when done, or the error, saying what it could not do. */
static int lazy_step(mt_hist *h, int which, const char *a, const char *b, const char *what)
{
    sqlite3_stmt *s;
    int step;

    if ((step = mt_hist_escalate(h)) < 0)
        return step;
    if (!(s = lazy_stmt(h, which)))
        return mt_hist_db_error(h, what);
    if (a)
        sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    sqlite3_reset(s);
    if (step == SQLITE_ROW)
        return 1;
    return step == SQLITE_DONE ? 0 : mt_hist_db_error(h, what);
}

int mt_hist_id_elsewhere(mt_hist *h, const char *id, const char *path)
{
    return lazy_step(h, L_ELSEWHERE, id, path, "cannot look up a memory");
}

int mt_hist_ids_exact(mt_hist *h)
{
    return lazy_step(h, L_EXACT, NULL, NULL, "cannot read the history's settings");
}

int mt_hist_ids_mark_exact(mt_hist *h)
{
    int rc = lazy_step(h, L_MARK, NULL, NULL, "cannot write the history's settings");

    return rc < 0 ? rc : 0;
}

int mt_hist_lookup_id(mt_hist *h, char out[24], const char *path)
{
    sqlite3_stmt *s = lazy_stmt(h, L_LOOKUP);
    int step;

    if (!s)
        return mt_hist_db_error(h, "cannot look up a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        snprintf(out, 24, "%s", (const char *)sqlite3_column_text(s, 0));
    /* Reset at once: a statement left on a row holds a read transaction. */
    sqlite3_reset(s);
    if (step == SQLITE_ROW)
        return 1;
    return step == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot look up a memory");
}

int mt_hist_refresh(mt_hist *h, const char *path, const mt_hist_fp *fp)
{
    sqlite3_stmt *s = NULL;
    mt_hist_mem m;
    int rc = 0;

    /*
     * A logged change: the new look goes into this handle's overlay only,
     * not the log (it is no version) nor a transaction (which would cost
     * the change what the log saves, and a view's access, which moves the
     * file's change time, makes this the usual case). The change goes on
     * to record its own version of the file, with the look it leaves; a
     * look not recorded so is only found again, by another handle or after
     * the next load, and the file hashed again.
     */
    if (h->mode == H_LOGGED) {
        if ((rc = mt_hist_find(h, &m, path)) <= 0)
            return rc;
        m.fp.ino = fp->ino;
        m.fp.mtime_ns = fp->mtime_ns;
        m.fp.ctime_ns = fp->ctime_ns;
        if ((rc = mt_hist_over_set(h, path, 1, &m, 1)) < 0)
            return rc;
        mt_hist_seen_set(h, path, 1, &m);
        return 0;
    }
    mt_hist_seen_forget(h);
    if (sqlite3_prepare_v2(
            h->db, "UPDATE memories SET ino = ?2, mtime_ns = ?3, ctime_ns = ?4 WHERE path = ?1", -1,
            &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot record a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)fp->ino);
    sqlite3_bind_int64(s, 3, fp->mtime_ns);
    sqlite3_bind_int64(s, 4, fp->ctime_ns);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = mt_hist_db_error(h, "cannot record a memory");
    sqlite3_finalize(s);
    return rc;
}

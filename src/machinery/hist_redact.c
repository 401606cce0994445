/*
 * Changing a version after the fact: redaction, re-encryption, and the
 * search words of a path erased; each leaves no copy of what went.
 */
#include "machinery/hist_internal.h"
#include "machinery/search_index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

/* Commit a change that erased content (h->dropped). The change stands
 * either way; but while a reader keeps the write-ahead log from being
 * emptied the erased bytes are still in it, and the caller's promise is not
 * kept: MT_EBUSY, saying what was done, what the log still holds and what
 * to run again. */
static int commit_erased(mt_hist *h, const char *what, const char *held, const char *again)
{
    int rc;

    if ((rc = mt_hist_commit(h, NULL)) < 0)
        return rc;
    if (!h->truncate_due)
        return 0;
    return mt_error_set(MT_EBUSY,
                        "%s, but another process was reading the history, so its write-ahead "
                        "log (.memtool/history.db-wal) still holds %s: run %s again once that "
                        "process is done, which empties the log",
                        what, held, again);
}

int mt_hist_redact(mt_hist *h, int64_t id, int scrub_later)
{
    char what[64];
    sqlite3_stmt *s = NULL;
    char sha[65] = "", *path = NULL;
    int rc, step;

    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    /* Current content: the newest version of a memory that is live. */
    if (sqlite3_prepare_v2(h->db,
                           "SELECT v.sha256, v.redacted, (SELECT max(id) FROM versions WHERE "
                           "memory_id = v.memory_id) = v.id AND EXISTS (SELECT 1 FROM memories "
                           "WHERE id = v.memory_id), v.path FROM versions v WHERE v.id = ?1",
                           -1, &s, NULL) != SQLITE_OK) {
        rc = mt_hist_db_error(h, "cannot redact");
        goto fail;
    }
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, id);
        goto fail;
    }
    if (step != SQLITE_ROW) {
        rc = mt_hist_db_error(h, "cannot redact");
        goto fail;
    }
    if (sqlite3_column_int(s, 2)) {
        rc = mt_error_set(MT_EINVAL,
                          "version %" PRId64 " is the memory's current content, which cannot be "
                          "redacted: change or delete the memory first, then redact this version",
                          id);
        goto fail;
    }
    if (sqlite3_column_text(s, 0))
        snprintf(sha, sizeof(sha), "%s", (const char *)sqlite3_column_text(s, 0));
    if (sqlite3_column_text(s, 3) && !(path = strdup((const char *)sqlite3_column_text(s, 3)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory redacting a version");
        goto fail;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (sqlite3_prepare_v2(h->db,
                           "UPDATE versions SET path = NULL, previous_path = NULL, sha256 = NULL, "
                           "redacted = 1 WHERE id = ?1",
                           -1, &s, NULL) != SQLITE_OK ||
        (sqlite3_bind_int64(s, 1, id), sqlite3_step(s)) != SQLITE_DONE) {
        rc = mt_hist_db_error(h, "cannot redact");
        goto fail;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (*sha && (rc = mt_hist_drop_content(h, sha)) < 0)
        goto fail;
    /* The search index in this database may hold the version's words: the
     * memory indexed at its path when it was current (a search since then
     * may not have caught up), or the terms FTS5 keeps of replaced words. */
    if ((rc = mt_search_index_erase(h->db, path, !scrub_later)) < 0)
        goto fail;
    free(path);
    /* The path is gone too: its pages are rewritten, so truncate the log
     * (or let the run's last redaction do it). */
    if (scrub_later)
        return mt_hist_commit(h, NULL);
    h->dropped = 1;
    snprintf(what, sizeof(what), "version %" PRId64 " was redacted", id);
    return commit_erased(h, what, "the erased pages", "the same redaction");
fail:
    sqlite3_finalize(s);
    mt_hist_rollback(h);
    free(path);
    return rc;
}

/* The content a reseal starts from: a copy, since the callback runs while
 * other statements of the connection step. */
typedef struct {
    char sha[65];
    char *data;
    size_t len;
    int skip;    /* redacted, or a deletion: no content */
    int current; /* the memory's current content */
} reseal_from;

static int reseal_load(mt_hist *h, reseal_from *f, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, step;

    /* Current content: the newest version of a live memory that holds it. */
    if (sqlite3_prepare_v2(h->db,
                           "SELECT v.op, v.redacted, v.sha256, c.data, (SELECT max(id) FROM "
                           "versions WHERE memory_id = v.memory_id) = v.id AND EXISTS (SELECT 1 "
                           "FROM memories WHERE id = v.memory_id AND sha256 = v.sha256) "
                           "FROM versions v LEFT JOIN contents c ON c.sha256 = v.sha256 "
                           "WHERE v.id = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, id);
    } else if (step != SQLITE_ROW) {
        rc = mt_hist_db_error(h, "cannot read a version");
    } else if (sqlite3_column_int(s, 1) || sqlite3_column_int(s, 0) == MT_VERSION_DELETED ||
               sqlite3_column_type(s, 2) == SQLITE_NULL) {
        f->skip = 1;
    } else if (sqlite3_column_type(s, 3) == SQLITE_NULL) {
        rc = mt_error_set(MT_EIO, "history database: the content of version %" PRId64 " is missing",
                          id);
    } else {
        size_t n = (size_t)sqlite3_column_bytes(s, 3);

        snprintf(f->sha, sizeof(f->sha), "%s", (const char *)sqlite3_column_text(s, 2));
        f->current = sqlite3_column_int(s, 4);
        if (!(f->data = malloc(n + 1))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory reading a version");
        } else {
            char sha[65];
            if (n)
                memcpy(f->data, sqlite3_column_blob(s, 3), n);
            f->data[n] = '\0';
            f->len = n;
            mt_hist_sha256(sha, f->data, n);
            if (strcmp(sha, f->sha) != 0)
                rc = mt_error_set(MT_EIO,
                                  "history database: the content of version %" PRId64
                                  " is damaged (its SHA-256 does not match)",
                                  id);
        }
    }
    sqlite3_finalize(s);
    return rc;
}

int mt_hist_reseal(mt_hist *h, int64_t id, mt_edit_cb cb, void *payload)
{
    char what[64];
    reseal_from f = {"", NULL, 0, 0, 0};
    sqlite3_stmt *s = NULL;
    char *out = NULL, sha[65];
    size_t out_len = 0;
    int rc;

    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    if ((rc = reseal_load(h, &f, id)) < 0 || f.skip ||
        (rc = cb(&out, &out_len, f.data, f.len, payload)) < 0)
        goto fail;
    if (!out && !(out = calloc(1, 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto fail;
    }
    mt_hist_sha256(sha, out, out_len);
    if (strcmp(sha, f.sha) == 0)
        goto fail; /* the same bytes: nothing to change */
    if (f.current) {
        rc = mt_error_set(MT_EINVAL,
                          "version %" PRId64 " is its memory's current content, which changes "
                          "only with the memory's file",
                          id);
        goto fail;
    }
    if ((rc = mt_hist_content_keep(h, sha, out, out_len)) < 0)
        goto fail;
    if (sqlite3_prepare_v2(h->db, "UPDATE versions SET sha256 = ?2, size = ?3 WHERE id = ?1", -1,
                           &s, NULL) != SQLITE_OK) {
        rc = mt_hist_db_error(h, "cannot replace a version's content");
        goto fail;
    }
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, sha, 64, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)out_len);
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = mt_hist_db_error(h, "cannot replace a version's content");
        goto fail;
    }
    sqlite3_finalize(s);
    s = NULL;
    /* The old content goes with its last version, erased as a redaction's. */
    if ((rc = mt_hist_drop_content(h, f.sha)) < 0)
        goto fail;
    free(out);
    free(f.data);
    snprintf(what, sizeof(what), "version %" PRId64 " was re-encrypted", id);
    return commit_erased(h, what, "the old ciphertext", "the rekey");
fail:
    sqlite3_finalize(s);
    mt_hist_rollback(h);
    free(out);
    free(f.data);
    return rc;
}

int mt_hist_reseal_current(mt_hist *h, const char *path, const char *data, size_t len,
                           const char *sha, const mt_hist_fp *fp)
{
    mt_hist_mem m;
    sqlite3_stmt *s = NULL;
    int64_t id = 0;
    int found, rc;

    /* Straight into the database: the log's records only append versions. */
    if ((rc = mt_hist_escalate(h)) < 0)
        return rc;
    mt_hist_seen_forget(h);
    if ((found = mt_hist_find(h, &m, path)) < 0)
        return found;
    if (!found || !m.sha256[0])
        return 1;
    if (strcmp(m.sha256, sha) == 0)
        return 0; /* the same bytes: nothing to change */
    if (sqlite3_prepare_v2(h->db,
                           "SELECT id FROM versions WHERE memory_id = ?1 AND id = (SELECT max(id) "
                           "FROM versions WHERE memory_id = ?1) AND op != ?2 AND NOT redacted "
                           "AND sha256 = ?3",
                           -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot read a version");
    sqlite3_bind_text(s, 1, m.id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, MT_VERSION_DELETED);
    sqlite3_bind_text(s, 3, m.sha256, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_DONE)
        rc = mt_hist_db_error(h, "cannot read a version");
    sqlite3_finalize(s);
    s = NULL;
    if (rc < 0)
        return rc;
    if (!id)
        return 1;
    if ((rc = mt_hist_content_keep(h, sha, data, len)) < 0)
        return rc;
    if (sqlite3_prepare_v2(h->db, "UPDATE versions SET sha256 = ?2, size = ?3 WHERE id = ?1", -1,
                           &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot replace a version's content");
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)len);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0
                                        : mt_hist_db_error(h, "cannot replace a version's content");
    sqlite3_finalize(s);
    s = NULL;
    if (rc < 0)
        return rc;
    if (sqlite3_prepare_v2(h->db,
                           "UPDATE memories SET sha256 = ?2, size = ?3, ino = ?4, mtime_ns = ?5, "
                           "ctime_ns = ?6 WHERE path = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot record a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)len);
    if (fp) {
        sqlite3_bind_int64(s, 4, (int64_t)fp->ino);
        sqlite3_bind_int64(s, 5, fp->mtime_ns);
        sqlite3_bind_int64(s, 6, fp->ctime_ns);
    }
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot record a memory");
    sqlite3_finalize(s);
    if (rc < 0)
        return rc;
    mt_hist_seen_forget(h);
    /* The old content goes with its last version, erased as a redaction's. */
    return mt_hist_drop_content(h, m.sha256);
}

int mt_hist_scrub_words(mt_hist *h, const char *path)
{
    char what[1000];
    int rc;

    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    if ((rc = mt_search_index_erase(h->db, path, 1)) < 0) {
        mt_hist_rollback(h);
        return rc;
    }
    /* The index's pages that held the words are rewritten: empty the log. */
    h->dropped = 1;
    snprintf(what, sizeof(what), "the words of %.900s were erased from the search index", path);
    return commit_erased(h, what, "them", "the same command");
}

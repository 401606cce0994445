/*
 * Reading the history: versions listed and got, contents, counts.
 */
#include "machinery/hist_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

int mt_hist_each(mt_hist *h, const char *path, mt_hist_each_cb cb, void *payload)
{
    sqlite3_stmt *s = NULL;
    int rc, step;

    if ((rc = mt_hist_escalate(h)) < 0)
        return rc;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT path, id, sha256, size, ino, mtime_ns, ctime_ns FROM memories "
                           "WHERE (?1 = '' OR path = ?1 OR "
                           "(path > ?1 || '/' AND path < ?1 || '0')) ORDER BY path",
                           -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot list memories");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        mt_hist_mem m;
        const char *text = (const char *)sqlite3_column_text(s, 2);

        memset(&m, 0, sizeof(m));
        snprintf(m.id, sizeof(m.id), "%s", (const char *)sqlite3_column_text(s, 1));
        snprintf(m.sha256, sizeof(m.sha256), "%s", text ? text : "");
        m.size = m.fp.size = (uint64_t)sqlite3_column_int64(s, 3);
        m.fp.ino = (uint64_t)sqlite3_column_int64(s, 4);
        m.fp.mtime_ns = sqlite3_column_int64(s, 5);
        m.fp.ctime_ns = sqlite3_column_int64(s, 6);
        if ((rc = cb(payload, (const char *)sqlite3_column_text(s, 0), &m)) < 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = mt_hist_db_error(h, "cannot list memories");
    sqlite3_finalize(s);
    return rc;
}

static char *dup_column(sqlite3_stmt *s, int col, int *oom)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    char *d;

    if (!t)
        return NULL;
    if (!(d = strdup(t)))
        *oom = 1;
    return d;
}

#define VERSION_COLUMNS                                                                            \
    "SELECT id, memory_id, op, path, previous_path, actor, at, sha256, size, redacted FROM "       \
    "versions "

/* A text column into a fixed field, cut to fit, "" for NULL: snprintf's
 * formatting was a sixth of a long log's time. */
static void copy_column(char *out, size_t size, sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    size_t n = t ? (size_t)sqlite3_column_bytes(s, col) : 0;

    if (n >= size)
        n = size - 1;
    if (n)
        memcpy(out, t, n);
    out[n] = '\0';
}

static int version_row(mt_version *v, sqlite3_stmt *s)
{
    int oom = 0;

    memset(v, 0, sizeof(*v));
    v->id = sqlite3_column_int64(s, 0);
    copy_column(v->memory_id, sizeof(v->memory_id), s, 1);
    v->operation = (mt_version_op)sqlite3_column_int(s, 2);
    v->path = dup_column(s, 3, &oom);
    v->previous_path = dup_column(s, 4, &oom);
    v->actor = dup_column(s, 5, &oom);
    v->created_at = sqlite3_column_int64(s, 6);
    copy_column(v->content_sha256, sizeof(v->content_sha256), s, 7);
    v->content_size = (uint64_t)sqlite3_column_int64(s, 8);
    v->redacted = sqlite3_column_int(s, 9);
    if (oom || !v->actor) {
        mt_version_dispose(v);
        return mt_error_set(MT_ENOMEM, "out of memory reading the history");
    }
    return 0;
}

int mt_hist_versions(mt_hist *h, mt_version **out, size_t *count, const mt_log_query *q)
{
    sqlite3_stmt *s = NULL;
    mt_version *v = NULL;
    size_t n = 0, limit = q->limit ? q->limit : 100;
    int rc = 0, step;

    *out = NULL;
    *count = 0;
#define FILTER                                                                                     \
    "(?1 IS NULL OR ?1 = '' OR memory_id IN (SELECT memory_id FROM versions WHERE "                \
    "  path = ?1 OR (path > ?1 || '/' AND path < ?1 || '0'))) "                                    \
    "AND (?3 = 0 OR op = ?3) AND (?4 IS NULL OR actor = ?4) AND (?5 = 0 OR at >= ?5) "             \
    "AND (?6 = 0 OR at <= ?6) AND (?7 = 0 OR id < ?7) ORDER BY id DESC LIMIT ?8"
    /* One memory's by its index: an "IS NULL OR" keeps the planner off it. */
    if (!(s = q->memory_id
                  ? mt_hist_lazy(h, L_VERSIONS_OF,
                                 VERSION_COLUMNS "WHERE memory_id = ?2 AND " FILTER)
                  : mt_hist_lazy(h, L_VERSIONS, VERSION_COLUMNS "WHERE ?2 IS NULL AND " FILTER)))
        return mt_hist_db_error(h, "cannot list versions");
#undef FILTER
    if (q->path)
        sqlite3_bind_text(s, 1, q->path, -1, SQLITE_STATIC);
    if (q->memory_id)
        sqlite3_bind_text(s, 2, q->memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, (int)q->operation);
    if (q->actor)
        sqlite3_bind_text(s, 4, q->actor, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, q->since);
    sqlite3_bind_int64(s, 6, q->until);
    sqlite3_bind_int64(s, 7, q->before_id);
    sqlite3_bind_int64(s, 8, (int64_t)(limit > INT64_MAX ? INT64_MAX : limit));
    if (!(v = calloc(limit < 1024 ? limit : 1024, sizeof(*v)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory reading the history");
        goto done;
    }
    {
        size_t cap = limit < 1024 ? limit : 1024;
        while ((step = sqlite3_step(s)) == SQLITE_ROW) {
            if (n == cap) {
                mt_version *p = realloc(v, cap * 2 * sizeof(*v));
                if (!p) {
                    rc = mt_error_set(MT_ENOMEM, "out of memory reading the history");
                    goto done;
                }
                v = p;
                cap *= 2;
            }
            if ((rc = version_row(&v[n], s)) < 0)
                goto done;
            n++;
        }
        if (step != SQLITE_DONE)
            rc = mt_hist_db_error(h, "cannot list versions");
    }
done:
    sqlite3_reset(s); /* kept for the next list; the reset ends this read */
    if (rc < 0) {
        mt_versions_free(v, n);
        return rc;
    }
    *out = v;
    *count = n;
    return 0;
}

int mt_hist_version(mt_hist *h, mt_version *out, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int rc, step;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(h->db, VERSION_COLUMNS "WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        rc = version_row(out, s);
    else if (step == SQLITE_DONE)
        rc = mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", id);
    else
        rc = mt_hist_db_error(h, "cannot read a version");
    sqlite3_finalize(s);
    return rc;
}

int mt_hist_content(mt_hist *h, char **out, size_t *len, int64_t id)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, step;

    *out = NULL;
    *len = 0;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT v.op, v.redacted, c.data, v.sha256 FROM versions v "
                           "LEFT JOIN contents c ON c.sha256 = v.sha256 WHERE v.id = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", id);
    } else if (step != SQLITE_ROW) {
        rc = mt_hist_db_error(h, "cannot read a version");
    } else if (sqlite3_column_int(s, 1)) {
        rc =
            mt_error_set(MT_ENOTFOUND, "version %" PRId64 " was redacted: its content is gone", id);
    } else if (sqlite3_column_int(s, 0) == MT_VERSION_DELETED) {
        rc = mt_error_set(MT_ENOTFOUND,
                          "version %" PRId64 " records a deletion: it has no content (try the "
                          "version before it)",
                          id);
    } else if (sqlite3_column_type(s, 2) == SQLITE_NULL) {
        rc = mt_error_set(MT_EIO, "history database: the content of version %" PRId64 " is missing",
                          id);
    } else {
        int n = sqlite3_column_bytes(s, 2);
        const void *data = sqlite3_column_blob(s, 2);
        char sha[65];

        if (!(*out = malloc((size_t)n + 1))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory reading a version");
        } else {
            if (n)
                memcpy(*out, data, (size_t)n);
            (*out)[n] = '\0';
            *len = (size_t)n;
            /* What comes back is what was kept: a damaged database says so. */
            mt_hist_sha256(sha, *out, *len);
            if (strcmp(sha, (const char *)sqlite3_column_text(s, 3)) != 0) {
                free(*out);
                *out = NULL;
                *len = 0;
                rc = mt_error_set(MT_EIO,
                                  "history database: the content of version %" PRId64
                                  " is damaged (its SHA-256 does not match)",
                                  id);
            }
        }
    }
    sqlite3_finalize(s);
    return rc;
}

int mt_hist_count(mt_hist *h, uint64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;

    *out = 0;
    if (sqlite3_prepare_v2(h->db, "SELECT count(*) FROM versions", -1, &s, NULL) != SQLITE_OK)
        return mt_hist_db_error(h, "cannot count versions");
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(s, 0);
    else
        rc = mt_hist_db_error(h, "cannot count versions");
    sqlite3_finalize(s);
    return rc;
}

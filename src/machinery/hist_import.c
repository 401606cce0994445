/*
 * A memory brought into a history database whole (hist_import.h). The rows
 * are those mt_hist_record writes, but with the time, actor, paths and
 * redaction of the version given rather than of a change made now; its
 * content and the live memory's row are kept as mt_hist_record keeps them.
 */
#include "machinery/hist_import.h"

#include <sqlite3.h>

static int db_fail(sqlite3 *db, sqlite3_stmt *s, const char *what)
{
    int code = sqlite3_errcode(db);
    int rc = code == SQLITE_BUSY || code == SQLITE_LOCKED ? MT_EBUSY
             : code == SQLITE_NOMEM                       ? MT_ENOMEM
                                                          : MT_EIO;

    rc = mt_error_set(rc, "history database: %s: %s", what, sqlite3_errmsg(db));
    sqlite3_finalize(s);
    return rc;
}

static int prepare(sqlite3_stmt **s, sqlite3 *db, const char *sql, const char *what)
{
    *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) != SQLITE_OK)
        return db_fail(db, *s, what);
    return 0;
}

int mt_hist_import_present(mt_hist *h, const char *memory_id)
{
    sqlite3 *db = mt_hist_sqlite(h);
    sqlite3_stmt *s;
    int rc, step;

    if ((rc = prepare(&s, db, "SELECT 1 FROM versions WHERE memory_id = ?1 LIMIT 1",
                      "cannot look up a memory")) < 0)
        return rc;
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return db_fail(db, s, "cannot look up a memory");
    sqlite3_finalize(s);
    return step == SQLITE_ROW;
}

int mt_hist_import_version(mt_hist *h, int64_t *out_id, const char *memory_id, const mt_version *v,
                           const char *sha, uint64_t size)
{
    sqlite3 *db = mt_hist_sqlite(h);
    sqlite3_stmt *s;
    int rc;

    if ((rc = prepare(&s, db,
                      "INSERT INTO versions(memory_id, op, path, previous_path, actor, at, "
                      "sha256, size, redacted, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                      "?10)",
                      "cannot record a version")) < 0)
        return rc;
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, (int)v->operation);
    /* A redacted version keeps only its size, as mt_hist_redact leaves it. */
    if (!v->redacted) {
        sqlite3_bind_text(s, 3, v->path, -1, SQLITE_STATIC);
        if (v->previous_path)
            sqlite3_bind_text(s, 4, v->previous_path, -1, SQLITE_STATIC);
        if (sha && v->operation != MT_VERSION_DELETED)
            sqlite3_bind_text(s, 7, sha, -1, SQLITE_STATIC);
    }
    sqlite3_bind_text(s, 5, v->actor, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, v->created_at);
    sqlite3_bind_int64(s, 8, v->operation == MT_VERSION_DELETED ? 0 : (int64_t)size);
    sqlite3_bind_int(s, 9, v->redacted ? 1 : 0);
    /* The id given, kept; NULL: the rowid's next (the largest plus one). */
    if (v->id > 0)
        sqlite3_bind_int64(s, 10, v->id);
    if (sqlite3_step(s) != SQLITE_DONE)
        return db_fail(db, s, "cannot record a version");
    sqlite3_finalize(s);
    *out_id = sqlite3_last_insert_rowid(db);
    return 0;
}

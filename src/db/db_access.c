/*
 * The SQL store's record of last access (store.h, MT_ACCESS_GRAIN_MS): the
 * nodes' `accessed` column. Every change of a file sets it in the change's
 * own transaction. A view's touch reads it first, in a read snapshot that
 * takes no lock, and writes only when it is more than a grain old: then in
 * a write transaction of its own, under the tenant's write lock like any
 * change (so a removal of idle files sees it or the touch finds the file
 * gone), committed without waiting for the disk.
 */
#include "db/db_core.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a touch that must write waits for the tenant's write lock. */
#define TOUCH_WAIT_MS 5000

int64_t mt_db_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mt_db_accessed_now(mt_db_txn *t, const char *path, int modified)
{
    int64_t now = mt_db_now_ms();
    mt_db_value a[4] = {mt_db_text(t->db->tenant), mt_db_text(path), mt_db_int(now),
                        modified ? mt_db_int(now) : mt_db_null()};
    int64_t n = mt_db_exec(t->db, MT_DB_NODE_ACCESS_SET, a, 4, NULL, NULL);

    return n < 0 ? (int)n : 0;
}

typedef struct {
    const char *path;
    int kind; /* 0: nothing there */
    int64_t at;
} accessed_args;

static int accessed_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    accessed_args *a = payload;

    if (ncols < 2)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    a->kind = cols[0].i == MT_NODE_DIR ? MT_NODE_DIR : MT_NODE_FILE;
    a->at = cols[1].type == MT_DB_INT ? cols[1].i : 0;
    return 0;
}

static int accessed_get(mt_db *db, accessed_args *a)
{
    mt_db_value v[2] = {mt_db_text(db->tenant), mt_db_text(a->path)};
    int64_t n;

    a->kind = 0;
    a->at = 0;
    n = mt_db_exec(db, MT_DB_NODE_ACCESSED, v, 2, accessed_row, a);
    return n < 0 ? (int)n : 0;
}

int mt_db_accessed(mt_db *db, int64_t *out, const char *path)
{
    accessed_args a = {path, 0, 0};
    int rc = accessed_get(db, &a);

    *out = a.at;
    return rc;
}

static int accessed_read(mt_db *db, void *arg)
{
    return accessed_get(db, arg);
}

/* The write of a touch: one transaction, re-run when the database asks. */
static int touch_write(mt_db *db, int64_t *recorded, const char *path, int64_t now_ms)
{
    const mt_db_driver *drv = db->drv;
    mt_db_value v[4] = {mt_db_text(db->tenant), mt_db_text(path), mt_db_int(now_ms),
                        mt_db_int(now_ms - MT_ACCESS_GRAIN_MS)};
    int rc, tries;

    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    for (tries = 0; tries < MT_DB_RETRIES; tries++) {
        accessed_args a = {path, 0, 0};
        int64_t n;

        if (drv->unsynced && (rc = drv->unsynced(db->conn, 1)) < 0)
            break;
        if ((rc = drv->begin_write(db->conn, db->tenant, TOUCH_WAIT_MS)) < 0)
            goto undo;
        *recorded = now_ms;
        if ((n = mt_db_exec(db, MT_DB_NODE_ACCESS_TOUCH, v, 4, NULL, NULL)) < 0) {
            rc = (int)n;
        } else if (n == 0) {
            /* Another view wrote it meanwhile, or the file went. */
            if ((rc = accessed_get(db, &a)) == 0 && a.kind != MT_NODE_FILE)
                rc = mt_store_path_error(a.kind ? MT_EISDIR : MT_ENOTFOUND, "cannot touch", path);
            *recorded = a.at;
        }
        if (rc == 0)
            rc = drv->commit(db->conn);
        if (rc < 0)
            drv->rollback(db->conn);
    undo:
        if (drv->unsynced)
            drv->unsynced(db->conn, 0);
        if (rc != MT_DB_RETRY)
            break;
    }
    if (rc == MT_DB_RETRY)
        rc = mt_error_set(MT_EBUSY, "the touch kept conflicting with changes");
    mt_db_release(db);
    return rc;
}

int mt_db_touch(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms)
{
    mt_db *db = (mt_db *)st;
    accessed_args a = {path, 0, 0};
    int64_t at = 0;
    int rc;

    if (!recorded)
        recorded = &at;
    if (!*path)
        return mt_store_path_error(MT_EISDIR, "cannot touch", path);
    if ((rc = mt_db_read(db, accessed_read, &a)) < 0)
        return rc;
    if (a.kind != MT_NODE_FILE)
        return mt_store_path_error(a.kind ? MT_EISDIR : MT_ENOTFOUND, "cannot touch", path);
    *recorded = a.at;
    if (a.at >= now_ms - MT_ACCESS_GRAIN_MS)
        return 0; /* recorded within the grain: nothing to write */
    return touch_write(db, recorded, path, now_ms);
}

typedef struct {
    const char *path;
    mt_idle_cb cb;
    void *payload;
} idle_args;

static int idle_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    idle_args *a = payload;

    if (ncols < 4 || cols[0].type != MT_DB_TEXT)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    return a->cb(a->payload, cols[0].p, cols[1].i > 0 ? (uint64_t)cols[1].i : 0,
                 cols[2].type == MT_DB_INT ? cols[2].i : 0,
                 cols[3].type == MT_DB_INT ? cols[3].i : 0);
}

static int idle_in(mt_db *db, void *arg)
{
    idle_args *a = arg;
    char *lo = NULL, *hi = NULL;
    mt_db_node n;
    int64_t k;
    int rc;

    if (!*a->path) {
        mt_db_value v[1] = {mt_db_text(db->tenant)};
        k = mt_db_exec(db, MT_DB_FILES_ACCESSED_ALL, v, 1, idle_row, a);
        return k < 0 ? (int)k : 0;
    }
    if ((rc = mt_db_node_get(db, &n, a->path)) < 0)
        return rc;
    if (rc == 0)
        return mt_store_path_error(MT_ENOTFOUND, "cannot look at", a->path);
    if ((rc = mt_db_beneath(&lo, &hi, a->path)) < 0)
        return rc;
    {
        mt_db_value v[4] = {mt_db_text(db->tenant), mt_db_text(a->path), mt_db_text(lo),
                            mt_db_text(hi)};
        k = mt_db_exec(db, MT_DB_FILES_ACCESSED, v, 4, idle_row, a);
    }
    free(lo);
    free(hi);
    return k < 0 ? (int)k : 0;
}

int mt_db_idle(mt_store *st, const char *path, mt_idle_cb cb, void *payload)
{
    idle_args a = {path, cb, payload};

    return mt_db_read((mt_db *)st, idle_in, &a);
}

static int count_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    *(uint64_t *)payload = ncols > 0 && cols[0].i > 0 ? (uint64_t)cols[0].i : 0;
    return 0;
}

static int count_in(mt_db *db, void *arg)
{
    mt_db_value v[1] = {mt_db_text(db->tenant)};
    int64_t k = mt_db_exec(db, MT_DB_VERSIONS_COUNT, v, 1, count_row, arg);

    return k < 0 ? (int)k : 0;
}

int mt_db_version_count(mt_store *st, uint64_t *out)
{
    *out = 0;
    return mt_db_read((mt_db *)st, count_in, out);
}

/* A memory's times as they were elsewhere (store.h, `times`): one write
 * transaction under the tenant's write lock, re-run when the database asks. */
int mt_db_times(mt_store *st, const char *path, int64_t accessed_ms, int64_t modified_ms)
{
    mt_db *db = (mt_db *)st;
    const mt_db_driver *drv = db->drv;
    mt_db_value v[4] = {mt_db_text(db->tenant), mt_db_text(path), mt_db_int(accessed_ms),
                        modified_ms > 0 ? mt_db_int(modified_ms) : mt_db_null()};
    int rc, tries;

    if (!*path)
        return mt_store_path_error(MT_EISDIR, "cannot set the times of", path);
    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    for (tries = 0; tries < MT_DB_RETRIES; tries++) {
        accessed_args a = {path, 0, 0};
        int64_t n;

        if ((rc = drv->begin_write(db->conn, db->tenant, TOUCH_WAIT_MS)) < 0)
            goto next;
        if ((n = mt_db_exec(db, MT_DB_NODE_ACCESS_SET, v, 4, NULL, NULL)) < 0)
            rc = (int)n;
        else if (n == 0 && (rc = accessed_get(db, &a)) == 0)
            rc = mt_store_path_error(a.kind ? MT_EISDIR : MT_ENOTFOUND, "cannot set the times of",
                                     path);
        if (rc == 0)
            rc = drv->commit(db->conn);
        if (rc < 0)
            drv->rollback(db->conn);
    next:
        if (rc != MT_DB_RETRY)
            break;
    }
    if (rc == MT_DB_RETRY)
        rc = mt_error_set(MT_EBUSY, "setting the times of %s kept conflicting with changes", path);
    mt_db_release(db);
    return rc;
}

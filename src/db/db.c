/*
 * The SQL store (db.h): opening a store on a driver, the handle's one
 * connection (made again in a forked child), the transactions of changes
 * and reads, and the usage counter.
 */
#include "db/db_core.h"
#include "machinery/usage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "util/path.h"

int mt_db_acquire(mt_db *db)
{
    int rc;

    pthread_mutex_lock(&db->lock);
    if (db->conn && db->pid != getpid()) {
        /* Inherited across fork(): the parent's, not ours to use or close. */
        db->drv->abandon(db->conn);
        db->conn = NULL;
    }
    if (!db->conn) {
        if ((rc = db->drv->connect(&db->conn, db->cfg, db->tenant)) < 0) {
            db->conn = NULL;
            pthread_mutex_unlock(&db->lock);
            return rc;
        }
        db->pid = getpid();
    }
    return 0;
}

void mt_db_release(mt_db *db)
{
    pthread_mutex_unlock(&db->lock);
}

int64_t mt_db_exec(mt_db *db, mt_db_stmt id, const mt_db_value *args, size_t nargs, mt_db_row_cb cb,
                   void *payload)
{
    return db->drv->exec(db->conn, id, args, nargs, cb, payload);
}

static int usage_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    mt_db_txn *t = payload;

    if (ncols < 6)
        return mt_error_set(MT_EIO, "the store's usage row is damaged");
    t->usage.bytes = cols[0].i > 0 ? (uint64_t)cols[0].i : 0;
    t->usage.files = cols[1].i > 0 ? (uint64_t)cols[1].i : 0;
    t->usage.dirs = cols[2].i > 0 ? (uint64_t)cols[2].i : 0;
    t->next_version = cols[3].i > 0 ? cols[3].i : 1;
    t->expired_before = cols[4].i;
    t->expiry_seen = cols[5].i > 0 ? cols[5].i : 0;
    t->sealed = ncols > 6 && cols[6].i != 0;
    t->unrecorded = ncols > 7 && cols[7].i != 0;
    return 0;
}

static int usage_get(mt_db *db, mt_db_txn *t)
{
    mt_db_value arg = mt_db_text(db->tenant);
    int64_t n;

    if ((n = mt_db_exec(db, MT_DB_USAGE_GET, &arg, 1, usage_row, t)) < 0)
        return (int)n;
    if (n == 0)
        return mt_error_set(MT_EIO,
                            "the store has no usage row for tenant %s: it was damaged "
                            "outside memtool; restore it from a backup",
                            db->tenant);
    return 0;
}

static int usage_put(mt_db *db, const mt_db_txn *t)
{
    mt_db_value a[8] = {mt_db_text(db->tenant),
                        mt_db_int((int64_t)t->usage.bytes),
                        mt_db_int((int64_t)t->usage.files),
                        mt_db_int((int64_t)t->usage.dirs),
                        mt_db_int(t->next_version),
                        mt_db_int(t->expired_before),
                        mt_db_int(t->expiry_seen),
                        mt_db_int(t->unrecorded)};
    int64_t n = mt_db_exec(db, MT_DB_USAGE_SET, a, 8, NULL, NULL);

    return n < 0 ? (int)n : 0;
}

int mt_db_change(mt_db *db, mt_store_op *op, mt_db_change_fn fn, void *arg)
{
    const mt_db_driver *drv = db->drv;
    int rc, tries;

    if (db->read_only)
        return mt_store_read_only_error();
    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    for (tries = 0;; tries++) {
        mt_db_txn t;

        memset(&t, 0, sizeof(t));
        t.db = db;
        t.op = op;
        op->version = 0;
        op->history_error = NULL;
        if ((rc = drv->begin_write(db->conn, db->tenant, op->lock_timeout_ms)) < 0)
            goto retry;
        /* A handle without the key writes only while the store is plain. */
        if ((rc = usage_get(db, &t)) < 0 ||
            (op->plain && t.sealed && (rc = mt_store_sealed_error()) < 0) ||
            (rc = fn(&t, arg)) < 0 || (rc = mt_db_prune_days(&t)) < 0) {
            drv->rollback(db->conn);
            goto retry;
        }
        /* A change history does not see: the mark a catch-up looks for. */
        if (!op->history && !t.files_kept)
            t.unrecorded = 1;
        if ((rc = usage_put(db, &t)) < 0) {
            drv->rollback(db->conn);
            goto retry;
        }
        if ((rc = drv->commit(db->conn)) < 0) {
            drv->rollback(db->conn);
            goto retry;
        }
        /* The change stands either way; only one that promised the erasure
         * says it is not finished. */
        if (t.dropped && drv->scrub && drv->scrub(db->conn) < 0 && t.scrub_what)
            rc = mt_error_set(MT_EBUSY, "%s", t.scrub_what);
        break;
    retry:
        if (rc != MT_DB_RETRY)
            break;
        if (tries + 1 >= MT_DB_RETRIES) {
            rc = mt_error_set(MT_EBUSY,
                              "the change kept conflicting with others (%d tries): "
                              "try again",
                              MT_DB_RETRIES);
            break;
        }
    }
    if (rc < 0)
        op->version = 0;
    mt_db_release(db);
    return rc;
}

int mt_db_read(mt_db *db, mt_db_read_fn fn, void *arg)
{
    int rc, tries;

    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    for (tries = 0; tries < MT_DB_RETRIES; tries++) {
        if ((rc = db->drv->begin_read(db->conn)) == 0) {
            rc = fn(db, arg);
            if (rc >= 0) {
                int c = db->drv->commit(db->conn);
                if (c < 0)
                    rc = c;
            }
            if (rc < 0)
                db->drv->rollback(db->conn);
        }
        if (rc != MT_DB_RETRY)
            break;
    }
    if (rc == MT_DB_RETRY)
        rc = mt_error_set(MT_EBUSY, "the read kept conflicting with changes: try again");
    mt_db_release(db);
    return rc;
}

int mt_db_read_one(mt_db *db, mt_db_read_fn fn, void *arg)
{
    int rc;

    if (!db->drv->ready_single)
        return mt_db_read(db, fn, arg);
    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    if ((rc = db->drv->ready_single(db->conn)) == 0)
        rc = fn(db, arg);
    mt_db_release(db);
    /* A statement the server could not run just now (a conflict): a read
     * transaction retries it as any read's. */
    return rc == MT_DB_RETRY ? mt_db_read(db, fn, arg) : rc;
}

static int node_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    mt_db_node *n = payload;

    if (ncols < 4)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    n->kind = cols[0].i == MT_NODE_DIR ? MT_NODE_DIR : MT_NODE_FILE;
    snprintf(n->memory_id, sizeof(n->memory_id), "%s", cols[1].type == MT_DB_TEXT ? cols[1].p : "");
    snprintf(n->sha256, sizeof(n->sha256), "%s", cols[2].type == MT_DB_TEXT ? cols[2].p : "");
    n->size = cols[3].i > 0 ? (uint64_t)cols[3].i : 0;
    return 0;
}

int mt_db_node_get(mt_db *db, mt_db_node *out, const char *path)
{
    mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_text(path)};
    int64_t n;

    memset(out, 0, sizeof(*out));
    if ((n = mt_db_exec(db, MT_DB_NODE_GET, a, 2, node_row, out)) < 0)
        return (int)n;
    return n > 0;
}

int mt_db_beneath(char **lo, char **hi, const char *path)
{
    size_t n = strlen(path);

    *lo = malloc(n + 2);
    *hi = malloc(n + 2);
    if (!*lo || !*hi) {
        free(*lo);
        free(*hi);
        *lo = *hi = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    memcpy(*lo, path, n);
    memcpy(*hi, path, n);
    /* '0' follows '/' in byte order: everything beneath lies between. */
    (*lo)[n] = '/';
    (*hi)[n] = '0';
    (*lo)[n + 1] = (*hi)[n + 1] = '\0';
    return 0;
}

int mt_db_quota(mt_db_txn *t, const char *rel, int64_t bytes, int64_t files, int64_t dirs)
{
    return mt_store_quota(t->op, &t->usage, rel, bytes, files, dirs);
}

void mt_db_account(mt_db_txn *t, int64_t bytes, int64_t files, int64_t dirs)
{
    t->usage.bytes = mt_store_usage_add(t->usage.bytes, bytes);
    t->usage.files = mt_store_usage_add(t->usage.files, files);
    t->usage.dirs = mt_store_usage_add(t->usage.dirs, dirs);
}

static int refs_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    int64_t *refs = payload;

    if (ncols < 1)
        return mt_error_set(MT_EIO, "a content's count of references is damaged");
    *refs = cols[0].i;
    return 0;
}

int mt_db_content_ref(mt_db_txn *t, const char *sha, const char *data, size_t len)
{
    mt_db_value a[3] = {mt_db_text(t->db->tenant), mt_db_text(sha), mt_db_int(1)};
    int round_trips = t->db->drv->round_trips, kept;
    int64_t refs = 0, n;

    if (round_trips) {
        /* Counted, the count made if missing, and read: one round trip. */
        if ((n = mt_db_exec(t->db, MT_DB_REFS_ADD, a, 3, refs_row, &refs)) < 0)
            return (int)n;
        if (n != 1)
            return mt_error_set(MT_EIO, "counting a reference to the content %s changed no row",
                                sha);
        kept = refs > 1;
    } else {
        if ((n = mt_db_exec(t->db, MT_DB_CONTENT_REF, a, 3, NULL, NULL)) < 0)
            return (int)n;
        kept = n > 0;
    }
    /* Kept already: only its count changes, never its row. */
    if (kept)
        return 0;
    /* (A count made just now goes with the change's rollback.) */
    if (!data)
        return mt_error_set(MT_EIO, "the content %s is missing from the store", sha);
    if (!round_trips && (n = mt_db_exec(t->db, MT_DB_REFS_NEW, a, 2, NULL, NULL)) < 0)
        return (int)n;
    a[2] = mt_db_blob(data, len);
    n = mt_db_exec(t->db, MT_DB_CONTENT_PUT, a, 3, NULL, NULL);
    return n < 0 ? (int)n : 0;
}

int mt_db_content_unref(mt_db_txn *t, const char *sha)
{
    mt_db_value a[3] = {mt_db_text(t->db->tenant), mt_db_text(sha), mt_db_int(-1)};
    int64_t refs = 1, n;

    if (!sha || !*sha)
        return 0;
    if (!t->op->history) {
        /* Without history a content is mostly its one node's, and goes with
         * it: the count is deleted if it is the last, else lowered. */
        if ((n = mt_db_exec(t->db, MT_DB_REFS_LAST, a, 2, NULL, NULL)) == 0)
            return (n = mt_db_exec(t->db, MT_DB_CONTENT_REF, a, 3, NULL, NULL)) < 0 ? (int)n : 0;
    } else if (t->db->drv->round_trips) {
        /* With history the memory's versions mostly keep it: lowered and
         * read in one round trip, dropped only when that was the last. */
        if ((n = mt_db_exec(t->db, MT_DB_REFS_TAKE, a, 3, refs_row, &refs)) <= 0 || refs > 0)
            return n < 0 ? (int)n : 0;
        n = mt_db_exec(t->db, MT_DB_REFS_DROP, a, 2, NULL, NULL);
    } else if ((n = mt_db_exec(t->db, MT_DB_CONTENT_REF, a, 3, NULL, NULL)) >= 0) {
        n = mt_db_exec(t->db, MT_DB_REFS_DROP, a, 2, NULL, NULL);
    }
    if (n < 0)
        return (int)n;
    /* The content goes with its count: a statement only then. */
    if (n > 0 && (n = mt_db_exec(t->db, MT_DB_CONTENT_DROP, a, 2, NULL, NULL)) < 0)
        return (int)n;
    return 0;
}

static int usage_read(mt_db *db, void *arg)
{
    mt_db_txn t;
    int rc;

    memset(&t, 0, sizeof(t));
    if ((rc = usage_get(db, &t)) < 0)
        return rc;
    *(mt_store_usage *)arg = t.usage;
    return 0;
}

static int db_usage(mt_store *st, mt_store_usage *out)
{
    memset(out, 0, sizeof(*out));
    return mt_db_read((mt_db *)st, usage_read, out);
}

static void look_forget(mt_db *db);

/* The tenant's encryption record: read, or put and read back. */
typedef struct {
    const char *put;
    int replace;
    char *got;
} record_args;

static int record_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    record_args *a = payload;

    if (ncols < 1 || cols[0].type == MT_DB_NULL)
        return 0;
    if (!(a->got = malloc(cols[0].len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(a->got, cols[0].p, cols[0].len);
    a->got[cols[0].len] = '\0';
    return 0;
}

static int record_get(mt_db *db, void *arg)
{
    record_args *a = arg;
    mt_db_value v = mt_db_text(db->tenant);
    int64_t n;

    free(a->got); /* a try before was rolled back */
    a->got = NULL;
    n = mt_db_exec(db, MT_DB_CRYPT_GET, &v, 1, record_row, a);
    return n < 0 ? (int)n : 0;
}

static int record_put(mt_db_txn *t, void *arg)
{
    record_args *a = arg;
    int if_empty = a->replace == MT_STORE_RECORD_IF_EMPTY;
    mt_db_value v[3] = {mt_db_text(t->db->tenant), mt_db_text(a->put), mt_db_int(if_empty)};
    int64_t n = mt_db_exec(t->db, a->replace == 1 ? MT_DB_CRYPT_SET : MT_DB_CRYPT_CLAIM, v,
                           a->replace == 1 ? 2 : 3, NULL, NULL);
    int rc;

    t->files_kept = 1; /* the record only */

    if (n < 0)
        return (int)n;
    if ((rc = record_get(t->db, a)) < 0)
        return rc;
    /* Not claimed, and nobody else's: a file was there first. */
    return if_empty && !a->got
               ? mt_error_set(MT_ECONFLICT, "the store gained a memory while it was being "
                                            "made encrypted")
               : 0;
}

static int db_encryption(mt_store *st, char **out, const char *put, int replace,
                         unsigned lock_timeout_ms)
{
    mt_db *db = (mt_db *)st;
    record_args a = {put, replace, NULL};
    mt_store_op op;
    int rc;

    if (!out)
        return mt_error_set(MT_EINVAL, "the encryption record needs an out pointer");
    *out = NULL;
    if (put && (!*put || strlen(put) > MT_STORE_RECORD_MAX || strchr(put, '\n')))
        return mt_error_set(MT_EINVAL, "an encryption record is one line of 1 to %d bytes",
                            MT_STORE_RECORD_MAX);
    if (!put && (db->looked & 1)) {
        /* As the open saw it, asked once. */
        db->looked &= ~1;
        if (db->look_record && !(a.got = strdup(db->look_record)))
            return mt_error_set(MT_ENOMEM, "out of memory");
        *out = a.got;
        return a.got != NULL;
    }
    if (!put)
        rc = mt_db_read(db, record_get, &a);
    else {
        /* No history, no limits: the change touches the usage row only. */
        mt_store_op_init(&op);
        op.lock_timeout_ms = lock_timeout_ms;
        rc = mt_db_change(db, &op, record_put, &a);
    }
    if (rc < 0) {
        free(a.got);
        return rc;
    }
    if (put && !a.got)
        return mt_error_set(MT_EIO, "the store's encryption record was not kept");
    *out = a.got;
    return put ? 0 : a.got != NULL;
}

static void db_free(mt_store *st)
{
    mt_db *db = (mt_db *)st;

    if (!db)
        return;
    if (db->conn) {
        if (db->pid == getpid())
            db->drv->close(db->conn);
        else
            db->drv->abandon(db->conn);
    }
    if (db->drv->cfg_free)
        db->drv->cfg_free(db->cfg);
    pthread_mutex_destroy(&db->lock);
    look_forget(db);
    free(db->tenant);
    free(db);
}

static void look_forget(mt_db *db)
{
    free(db->look_record);
    free(db->look_path);
    db->look_record = db->look_path = NULL;
    db->look_len = 0;
    db->looked = 0;
}

static char *text_dup(const mt_db_value *v)
{
    char *p;

    if (v->type == MT_DB_NULL || !(p = malloc(v->len + 1)))
        return NULL;
    memcpy(p, v->p, v->len);
    p[v->len] = '\0';
    return p;
}

static int look_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    mt_db *db = payload;

    look_forget(db);
    if (ncols < 3)
        return mt_error_set(MT_EIO, "the store's usage row is damaged");
    if ((cols[0].type != MT_DB_NULL && !(db->look_record = text_dup(&cols[0]))) ||
        (cols[1].type != MT_DB_NULL && !(db->look_path = text_dup(&cols[1]))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    db->look_len = cols[2].len < sizeof(db->look_head) ? cols[2].len : sizeof(db->look_head);
    if (db->look_len)
        memcpy(db->look_head, cols[2].p, db->look_len);
    db->looked = 3;
    return 0;
}

static int look_read(mt_db *db, void *arg)
{
    mt_db_value v = mt_db_text(db->tenant);
    int64_t n = mt_db_exec(db, MT_DB_OPEN_LOOK, &v, 1, look_row, db);

    (void)arg;
    return n < 0 ? (int)n : 0;
}

/* The first memory's head, as the open saw it (or, asked again, now). */
static int db_first_head(mt_store *st, char *head, size_t *len, char **path)
{
    mt_db *db = (mt_db *)st;
    int rc;

    *path = NULL;
    *len = 0;
    if (!(db->looked & 2) && (rc = mt_db_read(db, look_read, NULL)) < 0)
        return rc;
    db->looked &= ~2;
    if (!db->look_path)
        return 0;
    if (!(*path = strdup(db->look_path)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(head, db->look_head, db->look_len);
    *len = db->look_len;
    return 1;
}

static int ensure_tenant(mt_db *db)
{
    mt_db_value arg = mt_db_text(db->tenant);
    int64_t n;
    int rc;

    /* Found with one statement on its own: an open then neither waits
     * for the write lock nor pays a change's round trips (5 on PostgreSQL
     * before; now 1). The same statement brings what the encryption layer
     * asks at an open (db_encryption, db_first_head). */
    int64_t found = -1;

    if (db->drv->ready_single && db->drv->ready_single(db->conn) == 0 &&
        (found = mt_db_exec(db, MT_DB_OPEN_LOOK, &arg, 1, look_row, db)) == 1)
        return 0;
    /* A read names a tenant that is there (looked up in a read snapshot,
     * so that a failure is told as itself); the default one is the store's. */
    if ((db->flags & MT_DB_OPEN_EXISTING) && strcmp(db->tenant, MT_DB_DEFAULT_TENANT) != 0) {
        if ((rc = db->drv->begin_read(db->conn)) < 0)
            return rc;
        n = mt_db_exec(db, MT_DB_USAGE_GET, &arg, 1, NULL, NULL);
        db->drv->rollback(db->conn);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return mt_error_set(MT_ENOTFOUND,
                                "no tenant '%s' in the store: check --tenant (a tenant is made by "
                                "its first write)",
                                db->tenant);
        return 0;
    }
    /* A tenant's row is made once, before its first change: the write lock
     * of PostgreSQL is that row's lock. */
    if ((rc = db->drv->begin_write(db->conn, db->tenant, 5000)) < 0)
        return rc;
    if ((n = mt_db_exec(db, MT_DB_USAGE_ENSURE, &arg, 1, NULL, NULL)) < 0 ||
        (rc = (int)n, n = db->drv->commit(db->conn)) < 0) {
        db->drv->rollback(db->conn);
        return (int)n;
    }
    /* A row this open made (here, or PostgreSQL's begin_write), or none
     * there at its look: the tenant held nothing and no record then. */
    look_forget(db);
    if (rc == 1 || found == 0)
        db->looked = 3;
    return 0;
}

int mt_db_store_read_only(mt_store *st)
{
    return ((mt_db *)st)->read_only;
}

int mt_db_store_open(mt_store **out, const mt_db_driver *drv, void *cfg, const char *tenant,
                     unsigned flags)
{
    mt_db *db = NULL;
    int rc, tries;

    *out = NULL;
    if (!tenant || !*tenant)
        tenant = MT_DB_DEFAULT_TENANT;
    if (sodium_init() < 0) {
        rc = mt_error_set(MT_ERROR, "libsodium failed to start");
        goto fail;
    }
    if ((rc = mt_store_tenant_check(tenant)) < 0)
        goto fail;
    if (!(db = calloc(1, sizeof(*db)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory opening the store");
        goto fail;
    }
    db->drv = drv;
    db->cfg = cfg;
    db->flags = flags;
    cfg = NULL;
    pthread_mutex_init(&db->lock, NULL);
    if (!(db->tenant = strdup(tenant))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory opening the store");
        goto fail;
    }
    db->base.version = MT_STORE_VERSION;
    db->base.stat = mt_db_stat;
    db->base.read = mt_db_read_file;
    db->base.create = mt_db_create;
    db->base.edit = mt_db_edit;
    db->base.remove = mt_db_remove;
    db->base.rename = mt_db_rename;
    db->base.list = mt_db_list;
    db->base.usage = db_usage;
    db->base.free = db_free;
    db->base.versions = mt_db_versions;
    db->base.version_get = mt_db_version_get;
    db->base.version_content = mt_db_version_content;
    db->base.redact = mt_db_redact;
    db->base.catch_up = mt_db_catch_up;
    db->base.walk = mt_db_walk;
    db->base.touch = mt_db_touch;
    db->base.times = mt_db_times;
    db->base.idle = mt_db_idle;
    db->base.version_count = mt_db_version_count;
    db->base.memory_id = mt_db_memory_id;
    db->base.version_reseal = mt_db_version_reseal;
    db->base.search = drv->search_query ? mt_db_search : NULL;
    db->base.import = mt_db_import;
    db->base.encryption = db_encryption;
    db->base.first_head = db_first_head;
    if ((rc = mt_db_acquire(db)) < 0)
        goto fail;
    db->read_only = drv->read_only && drv->read_only(db->conn);
    for (tries = 0; tries < MT_DB_RETRIES; tries++)
        if ((rc = ensure_tenant(db)) != MT_DB_RETRY)
            break;
    mt_db_release(db);
    if (rc < 0)
        goto fail;
    *out = &db->base;
    return 0;
fail:
    if (db)
        db_free(&db->base);
    else if (cfg && drv->cfg_free)
        drv->cfg_free(cfg);
    return rc == MT_DB_RETRY ? mt_error_set(MT_EBUSY, "the store was busy: try again") : rc;
}

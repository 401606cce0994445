/* The SQL store's internals, shared by db*.c (not by the drivers). */
#ifndef MT_STORE_DB_CORE_H
#define MT_STORE_DB_CORE_H

#include <pthread.h>
#include <sys/types.h>

#include "db/db.h"
#include "machinery/history.h"

/*
 * One store handle: one connection, used by one thread at a time under
 * `lock` (SQL connections are not for concurrent use; the changes of many
 * threads are serialised by the database's write lock anyway).
 */
typedef struct {
    mt_store base;
    const mt_db_driver *drv;
    void *cfg;
    char *tenant;
    pthread_mutex_t lock;
    mt_db_conn *conn;      /* NULL until connected, or after a fork */
    pid_t pid;             /* the process that made conn */
    int64_t last_days_run; /* when versions past the days limit were last pruned */
    unsigned flags;        /* MT_DB_OPEN_* it was opened with */
    /* The database cannot be written (the driver's read_only): reads work,
     * and what a read writes (a record of access, the search index) goes to
     * the driver's copy in memory; every change fails. */
    int read_only;
    /* What the open saw (MT_DB_OPEN_LOOK), for the encryption layer's one
     * look at it: the record, and the first file's path and head. */
    int looked; /* 1 until the layer has asked */
    char *look_record, *look_path;
    char look_head[MT_STORE_HEAD_MAX];
    size_t look_len;
} mt_db;

/* A change in progress: the usage row as it will be written back. */
typedef struct {
    mt_db *db;
    mt_store_op *op;
    mt_store_usage usage;
    int64_t next_version;
    /* How far the prune by days got (mt_db_prune_days): every version made
     * before expired_before is gone or was its memory's newest then, and
     * expiry_seen was next_version then (0: no prune yet). */
    int64_t expired_before, expiry_seen;
    /* The usage row's mark: a change made with history off may be
     * unrecorded (mt_db_change sets it, a catch-up of every file clears it). */
    int unrecorded;
    /* The change leaves every file as it was (a redaction, the encryption
     * record): made with history off, it is no change history missed. */
    int files_kept;
    int dropped; /* content was erased (prune, redact): scrub after the commit */
    /* a scrub that cannot finish fails the change (a redaction's promise),
     * its message then `scrub_what` */
    const char *scrub_what;
    int sealed; /* the tenant had an encryption record when the change began */
} mt_db_txn;

/* A node row. */
typedef struct {
    int kind; /* 0: nothing there; MT_NODE_FILE, MT_NODE_DIR */
    char memory_id[24];
    char sha256[65];
    uint64_t size;
} mt_db_node;

/* Take the handle (mutex, a connection of this process); release it. */
int mt_db_acquire(mt_db *db);
void mt_db_release(mt_db *db);

/* Run a statement on the handle's connection; args[0] must be the tenant. */
int64_t mt_db_exec(mt_db *db, mt_db_stmt id, const mt_db_value *args, size_t nargs, mt_db_row_cb cb,
                   void *payload);

/* Run fn as one change: the write transaction, the usage row read and
 * written back, re-run on MT_DB_RETRY, rolled back on any failure. */
typedef int (*mt_db_change_fn)(mt_db_txn *t, void *arg);
int mt_db_change(mt_db *db, mt_store_op *op, mt_db_change_fn fn, void *arg);

/* Run fn in one read transaction (a snapshot), the handle acquired. */
typedef int (*mt_db_read_fn)(mt_db *db, void *arg);
int mt_db_read(mt_db *db, mt_db_read_fn fn, void *arg);
/* A read of one statement (fn runs exactly one): on a driver with
 * ready_single, that statement on its own, its own snapshot (on PostgreSQL
 * one round trip where a read transaction takes three); else mt_db_read. */
int mt_db_read_one(mt_db *db, mt_db_read_fn fn, void *arg);

/* The node at path: 1 found (filled), 0 none, or an error. */
int mt_db_node_get(mt_db *db, mt_db_node *out, const char *path);

/* The directories above path's last component: 0 when all are there; a
 * file on the way is MT_ENOTDIR; with `missing`, those not there are
 * counted (the first at offset *first of path), else MT_ENOTFOUND. */
int mt_db_parents(mt_db *db, const char *path, const char *what, unsigned *missing, size_t *first);

/* Bounds of the paths strictly beneath path: lo = path "/", hi = path "0"
 * (malloc'd, both freed with free). */
int mt_db_beneath(char **lo, char **hi, const char *path);

/* Whether the limits of op allow adding these; fills op's refusal. */
int mt_db_quota(mt_db_txn *t, const char *rel, int64_t bytes, int64_t files, int64_t dirs);
void mt_db_account(mt_db_txn *t, int64_t bytes, int64_t files, int64_t dirs);

/* Make the missing directories of path, from offset `first` (of
 * mt_db_parents) to its parent; a file's node (db_tree.c). */
int mt_db_make_parents(mt_db_txn *t, const char *path, size_t first);
int mt_db_put_file(mt_db_txn *t, const char *path, const char *memory_id, const char *sha,
                   uint64_t size);

/* Content rows: one more reference (the row made with data when new), one
 * fewer (the row deleted with its last). */
int mt_db_content_ref(mt_db_txn *t, const char *sha, const char *data, size_t len);
int mt_db_content_unref(mt_db_txn *t, const char *sha);

/* History (db_history.c): a version of the change, in its transaction;
 * sha NULL for a deletion. Sets op->version. */
/* Before a memory's next version: record, as "external", a content the
 * memory came to hold while history was off (none when its newest version
 * already holds sha). */
/* Whether the tenant's mark says a change made with history off may be
 * unrecorded (1) or not (0), in one statement, outside any change. */
int mt_db_gap_any(mt_db *db);
int mt_db_gap(mt_db_txn *t, const char *path, const char *memory_id, const char *sha,
              uint64_t size);
int mt_db_record(mt_db_txn *t, mt_version_op what, const char *path, const char *previous,
                 const char *memory_id, const char *sha, uint64_t size);
/* The memory's versions cut back to op->history_keep (with a slack). */
int mt_db_prune_memory(mt_db_txn *t, const char *memory_id);
/* Versions past op->history_days go, at most once a minute per handle. */
int mt_db_prune_days(mt_db_txn *t);

/* Expiry (db_access.c): the clock of every recorded time; a file's
 * accessed (and with `modified` its modified) set to now in a change; a
 * file's recorded last access. */
int64_t mt_db_now_ms(void);
int mt_db_accessed_now(mt_db_txn *t, const char *path, int modified);
int mt_db_accessed(mt_db *db, int64_t *out, const char *path);

/* The store functions, by file. */
int mt_db_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *path);
int mt_db_read_file(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                    void *payload);
int mt_db_create(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len);
int mt_db_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload);
int mt_db_remove(mt_store *st, mt_store_op *op, const char *path);
int mt_db_rename(mt_store *st, mt_store_op *op, const char *from, const char *to);
int mt_db_walk(mt_store *st, const char *path, mt_walk_cb cb, void *payload);
int mt_db_memory_id(mt_store *st, char out[24], const char *path);
int mt_db_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
               size_t max_entries);
int mt_db_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *q);
int mt_db_version_get(mt_store *st, mt_version *out, int64_t id);
int mt_db_version_content(mt_store *st, char **out, size_t *len, int64_t id);
int mt_db_redact(mt_store *st, mt_store_op *op, int64_t id);
/* A re-encryption's scrub_what: the old ciphertext outlives it in the log. */
#define MT_DB_RESEAL_BUSY                                                                          \
    "the content was re-encrypted, but another process was reading the store, so its "             \
    "write-ahead log still holds the old ciphertext: run the rekey again once that process is "    \
    "done, which empties the log"
/* What a search index holds of the memory at path or of the content sha,
 * erased: those rows are deleted, to be indexed again from the memories by
 * the next search, and an index that keeps deleted words until it merges
 * (SQLite's FTS5) is merged (merge 0: left to a later call). Within the
 * caller's transaction. */
int mt_db_search_erase(mt_db *db, const char *path, const char *sha, int merge);
/* A memory's newest version: its id, operation and content digest. */
typedef struct {
    int found;
    int64_t id, op;
    char sha[65];
} mt_db_version_head;
int mt_db_version_head_get(mt_db_txn *t, mt_db_version_head *out, const char *memory_id);
int mt_db_version_reseal(mt_store *st, mt_store_op *op, int64_t id, mt_edit_cb cb, void *payload);
int mt_db_catch_up(mt_store *st, mt_store_op *op, const char *path);
int mt_db_touch(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms);
int mt_db_times(mt_store *st, const char *path, int64_t accessed_ms, int64_t modified_ms);
int mt_db_idle(mt_store *st, const char *path, mt_idle_cb cb, void *payload);
int mt_db_version_count(mt_store *st, uint64_t *out);
int mt_db_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                 const char *path, size_t limit);
int mt_db_import(mt_store *st, mt_store_op *op, mt_store_import *in);

#endif

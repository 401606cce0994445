/*
 * The SQL store: the store interface (memtool/store.h) implemented once, in
 * db*.c, on top of a small driver per database (db_sqlite.c, db_pg.c).
 *
 * Compatibility: after its first commit this interface changes only by
 * additions (new statement ids appended before MT_DB_STMT_COUNT, new
 * optional driver functions at the end of mt_db_driver). Changes:
 *   - first version.
 *   - MT_DB_NODES_ALL appended (a listing of the root).
 *   - MT_DB_NODES_MOVE_BENEATH cuts where the server counts (no cut parameter).
 *   - MT_DB_NODES_COUNT and MT_DB_CONTENT_SIZE removed (nothing used them).
 *   - MT_DB_VERSION_NEWEST appended (a memory's newest version, in one statement).
 *   - schema 2: nodes.accessed; MT_DB_NODE_ACCESSED ... MT_DB_VERSIONS_COUNT
 *     appended (expiry); the optional driver function `unsynced`.
 *   - schema 3: search_docs; MT_DB_SEARCH_FORGET ... MT_DB_SEARCH_FIND
 *     appended (search), MT_DB_REAL columns; the optional driver functions
 *     `search_query` and `search_words`.
 *   - MT_DB_READ_WHOLE appended, and the optional driver function
 *     `ready_single` (a small file's read as one statement on its own).
 *   - MT_DB_VERSION_RESEAL appended (a version's content replaced: rekey).
 *   - MT_DB_SEARCH_STALE_UPTO appended (a search indexes each file up to the
 *     handle's max file size); MT_DB_SEARCH_STALE is no longer run.
 *   - MT_DB_SEARCH_FRESH and _FRESH_SET appended, and the optional driver
 *     field `search_fresh` (a search skips its catch-up when nothing changed).
 *   - MT_DB_SEARCH_FRESH is also run in a read transaction (begin_read), the
 *     query after it in the same one: a driver's record must be read in the
 *     snapshot of the rows it vouches for.
 *   - schema 4: content_refs; MT_DB_CONTENT_REF counts there, MT_DB_CONTENT_PUT
 *     makes only the contents row and MT_DB_CONTENT_DROP deletes one that has
 *     no count; MT_DB_REFS_NEW and MT_DB_REFS_DROP appended.
 *   - MT_DB_REFS_ADD, MT_DB_REFS_TAKE and MT_DB_REFS_LAST appended: a count
 *     changed and read (or dropped) in one statement, where it took two or
 *     three (DML with RETURNING hands back rows as a query does); the
 *     optional driver field `round_trips` says when ADD and TAKE are run.
 *   - the optional driver function `read_only` (a store on a read-only mount).
 *   - MT_DB_SEARCH_ERASE and MT_DB_SEARCH_MERGE appended: a redaction takes
 *     the version's words out of the search index (a driver whose index keeps
 *     no replaced words leaves MERGE without a text: it is not run).
 *
 * The division of work:
 *   - the core (db*.c) owns the semantics: paths as rows, the usage row and
 *     the limits, versions, listing order. It speaks dialect-neutral SQL with
 *     numbered parameters ?1 ... ?N, ?1 always the tenant;
 *   - a driver owns the connection: opening it and creating or checking the
 *     schema (its own DDL), transactions and locking, running one statement
 *     with bound values and handing back rows, mapping its errors to
 *     mt_error_code with a message set by mt_error_set.
 *
 * Threads: the core serialises every use of one connection with a mutex, so
 * a driver's functions are never called concurrently on one mt_db_conn.
 *
 * Processes: a connection is never used by a process other than the one
 * that made it. The core remembers getpid() at connect; in a forked child it
 * calls `abandon` on the inherited connection (which must not touch the
 * parent's server session, socket or locks: libpq must not PQfinish, which
 * would send Terminate on the shared socket) and connects again.
 *   - MT_DB_VERSIONS_OF appended (one memory's versions by its index).
 *   - MT_DB_GAP_ANY appended: a catch-up looks in a read before it takes the
 *     write lock (one statement, where each file was one). Schema 7: the
 *     usage row's mark `unrecorded` (MT_DB_USAGE_GET's eighth column,
 *     MT_DB_USAGE_SET's ?8), which MT_DB_GAP_ANY reads.
 */
/*
 * The schema, the same tables and columns in every dialect (a driver writes
 * its own DDL; paths compare by bytes: COLLATE "C" in PostgreSQL):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)   ('schema', '1')
 *   usage(tenant TEXT PRIMARY KEY, bytes INT8, files INT8, dirs INT8, next_version INT8,
 *         expired_before INT8, expiry_seen INT8 (schema 5, both default 0),
 *         encryption TEXT NULL (schema 6: the tenant's encryption record, store.h),
         unrecorded INT8 (schema 7, default 0: 1 once a change is made with history off,
         0 again when a catch-up of every file has recorded it; upgraded rows 1))
 *   nodes(tenant TEXT, path TEXT, kind INT (1 file, 2 dir), memory_id TEXT NULL,
 *         sha256 TEXT NULL, size INT8, accessed INT8, modified INT8 (schema 2),
 *         PRIMARY KEY (tenant, path))
 *   contents(tenant TEXT, sha256 TEXT, data BLOB, PRIMARY KEY (tenant, sha256))
 *   content_refs(tenant TEXT, sha256 TEXT, refs INT8, PRIMARY KEY (tenant, sha256))
 *         (schema 4; before it, refs was a column of contents)
 *   versions(tenant TEXT, id INT8, memory_id TEXT, op INT, path TEXT NULL,
 *            previous_path TEXT NULL, actor TEXT, at INT8, sha256 TEXT NULL, size INT8,
 *            redacted INT, PRIMARY KEY (tenant, id))
 *   search_docs(tenant TEXT, path TEXT, sha256 TEXT, words, PRIMARY KEY (tenant, path))
 *         (schema 3)
 *   indexes: versions(tenant, memory_id, id), versions(tenant, path, id),
 *         versions(tenant, at) (schema 5)
 *
 * A directory is a node of kind 2 with NULL memory_id and sha256 and size 0;
 * the root "" is no row. A file's `accessed` is its last access in ms since
 * the epoch (store.h, MT_ACCESS_GRAIN_MS), set by every change of the file
 * in the change's transaction and by a view's touch; `modified` its last
 * create or edit; schema 1 had neither (an
 * upgrade sets both to the time of the upgrade). A file's content is one contents row per (tenant,
 * SHA-256), and its content_refs row's refs counts the nodes and versions
 * that name it. The count is a row of its own so that a content's row is
 * written once, when it is first kept: SQLite writes a changed row whole,
 * a big content's overflow pages and all, whenever the change alters the
 * row's size, as a count's does on its way from 1 to 2 or back (one of the
 * same size it rewrites where its bytes differ), and every change of a file
 * with history gains or loses references.
 *
 * search_docs is the search index (db_search.c): the words of each file as
 * they were when its content had that sha256, in the driver's own form
 * (SQLite: the words as text under an FTS5 table; PostgreSQL: a tsvector
 * with a GIN index). Nothing else refers to it; a search brings it up to
 * date with nodes before it answers, so a change never writes it.
 */
#ifndef MT_STORE_DB_H
#define MT_STORE_DB_H

#include <stddef.h>
#include <stdint.h>

#include <memtool/store.h>

#include "contract/store_contract.h"
#include "util/buf.h"

/* A driver's error that is worth running the whole change again for (a
 * serialization failure or a deadlock, 40001 / 40P01): the core rolls back
 * and re-runs the change up to MT_DB_RETRIES times, then reports MT_EBUSY.
 * Never leaves the core. */
#define MT_DB_RETRY   (-1000)
#define MT_DB_RETRIES 5

/* The default tenant, for a NULL or empty name. */
#define MT_DB_DEFAULT_TENANT "default"

/* The schema version the core speaks (meta 'schema'). A driver refuses a
 * database whose version is newer, and creates this one in an empty one. */
#define MT_DB_SCHEMA_VERSION 7

typedef enum {
    MT_DB_NULL = 0,
    MT_DB_INT = 1,
    MT_DB_TEXT = 2,
    MT_DB_BLOB = 3,
    MT_DB_REAL = 4 /* columns only (a search's score): d */
} mt_db_type;

/*
 * A parameter or a column. Parameters: text and blobs need not be
 * NUL-terminated (len counts the bytes). Columns: valid only during the row
 * callback; a text column is NUL-terminated (p[len] == 0); a blob column's p
 * may be NULL when len is 0.
 */
typedef struct {
    mt_db_type type;
    int64_t i; /* MT_DB_INT */
    const char *p;
    size_t len; /* MT_DB_TEXT, MT_DB_BLOB */
    double d;   /* MT_DB_REAL */
} mt_db_value;

static inline mt_db_value mt_db_int(int64_t i)
{
    mt_db_value v = {MT_DB_INT, i, NULL, 0, 0};
    return v;
}

/* NULL text is SQL NULL. */
mt_db_value mt_db_text(const char *s);

static inline mt_db_value mt_db_blob(const char *p, size_t len)
{
    mt_db_value v = {MT_DB_BLOB, 0, p, len, 0};
    return v;
}

static inline mt_db_value mt_db_null(void)
{
    mt_db_value v = {MT_DB_NULL, 0, NULL, 0, 0};
    return v;
}

/* One row: return 0 for the next, 1 to stop (no error), or a negative code
 * to stop and fail the statement with it. */
typedef int (*mt_db_row_cb)(void *payload, const mt_db_value *cols, size_t ncols);

/*
 * The statements of the core. Each has a dialect-neutral text in mt_db_sql
 * (db_sql.c), ?1 the tenant. Columns come back as: INT8/INT columns
 * MT_DB_INT, TEXT columns MT_DB_TEXT, the data column (and substr of it)
 * MT_DB_BLOB, NULL as MT_DB_NULL. Append only.
 */
typedef enum {
    /* usage(tenant, bytes, files, dirs, next_version) */
    MT_DB_USAGE_ENSURE, /* (tenant): the tenant's row, made if missing */
    MT_DB_USAGE_GET,    /* (tenant) -> bytes, files, dirs, next_version, expired_before,
                           expiry_seen, encrypted (1 when the tenant has an encryption record),
                           unrecorded */
    MT_DB_USAGE_SET,    /* (tenant, bytes, files, dirs, next_version, expired_before,
                           expiry_seen, unrecorded) */
    /* nodes(tenant, path, kind, memory_id, sha256, size) */
    MT_DB_NODE_GET,             /* (tenant, path) -> kind, memory_id, sha256, size */
    MT_DB_NODE_PUT,             /* (tenant, path, kind, memory_id, sha256, size): insert */
    MT_DB_NODE_SET,             /* (tenant, path, sha256, size, at): new content, its
                                 * accessed and modified = at unless at is NULL */
    MT_DB_NODE_DELETE,          /* (tenant, path) */
    MT_DB_NODES_BENEATH,        /* (tenant, lo, hi) -> path, kind, memory_id, sha256, size;
                                   lo < path < hi, ordered by path */
    MT_DB_NODES_DELETE_BENEATH, /* (tenant, lo, hi) */
    MT_DB_NODE_MOVE,            /* (tenant, from, to) */
    MT_DB_NODES_MOVE_BENEATH,   /* (tenant, lo, hi, to_prefix): path becomes to_prefix ||
                                   what follows lo's path ("d" of lo "d/"), its '/' first */
    /* contents(tenant, sha256, data), content_refs(tenant, sha256, refs) */
    MT_DB_CONTENT_REF,   /* (tenant, sha256, delta): content_refs' refs += delta; changes 0
                            when missing */
    MT_DB_CONTENT_PUT,   /* (tenant, sha256, data): a new contents row (its count made by
                            MT_DB_REFS_NEW) */
    MT_DB_CONTENT_DROP,  /* (tenant, sha256): delete the contents row when it has no
                            content_refs row */
    MT_DB_CONTENT_PIECE, /* (tenant, sha256, start (1-based), len) -> substr(data, start, len) */
    /* versions(tenant, id, memory_id, op, path, previous_path, actor, at, sha256, size,
       redacted) */
    MT_DB_VERSION_PUT,      /* (tenant, id, memory_id, op, path, previous_path, actor, at, sha256,
                               size) */
    MT_DB_VERSION_GET,      /* (tenant, id) -> id, memory_id, op, path, previous_path, actor, at,
                               sha256, size, redacted (the "version columns") */
    MT_DB_VERSIONS_QUERY,   /* (tenant, path, lo, hi, memory_id, op, actor, since, until,
                               before_id, limit) -> version columns, newest first. A NULL
                               (or 0 for op, since, until, before_id) filter is off; path
                               (NULL or "" off) keeps the memories that ever had a version
                               with path = ?2 OR ?3 < path < ?4 */
    MT_DB_VERSION_REDACT,   /* (tenant, id): path, previous_path, sha256 NULL, redacted 1 */
    MT_DB_VERSION_NTH,      /* (tenant, memory_id, n) -> id of the memory's n-th newest version
                               (0 the newest) */
    MT_DB_VERSIONS_UPTO,    /* (tenant, memory_id, id) -> id, sha256 of its versions <= id */
    MT_DB_VERSIONS_EXPIRED, /* (tenant, from_at, before_at) -> id, sha256 of the versions
                               made from from_at to before before_at that are not their
                               memory's newest (by an index of versions by time) */
    MT_DB_VERSION_DELETE,   /* (tenant, id) */
    MT_DB_CONTENT_GET,      /* (tenant, sha256) -> data */
    MT_DB_NODE_OF_MEMORY,   /* (tenant, memory_id) -> path of the live node holding it */
    MT_DB_NODES_ALL,        /* (tenant) -> path, kind, memory_id, sha256, size, by path */
    MT_DB_VERSION_NEWEST,   /* (tenant, memory_id) -> op, sha256 of its newest version */
    /* Expiry (schema 2). */
    MT_DB_NODE_ACCESSED,     /* (tenant, path) -> kind, accessed */
    MT_DB_NODE_ACCESS_SET,   /* (tenant, path, at, modified): a file's accessed = at, and
                                modified unless NULL */
    MT_DB_NODE_ACCESS_TOUCH, /* (tenant, path, at, stale): accessed = at where it is < stale */
    MT_DB_FILES_ACCESSED, /* (tenant, path, lo, hi) -> path, size, accessed, modified of the files
                             at path or lo < path < hi, by path */
    MT_DB_FILES_ACCESSED_ALL, /* (tenant) -> path, size, accessed, modified of every
                                 file, by path */
    MT_DB_VERSIONS_COUNT,     /* (tenant) -> count of versions */
    /* Search (schema 3): "in range" is path = ?2, lo ?3 < path < hi ?4, or everything
       when ?2 is "". */
    MT_DB_SEARCH_FORGET, /* (tenant, path, lo, hi, limit): delete at most limit search_docs
                            in range that name no file */
    MT_DB_SEARCH_STALE,  /* (tenant, path, lo, hi, after, limit) -> path, sha256, indexed
                            (0/1) of the files in range after `after` whose search_docs
                            row is missing or of another sha256, by path */
    MT_DB_SEARCH_PUT,    /* (tenant, path, sha256, words): a new search_docs row */
    MT_DB_SEARCH_SET,    /* (tenant, path, sha256, words): a row's new words */
    MT_DB_SEARCH_FIND,   /* (tenant, path, lo, hi, query, limit) -> path, score (REAL,
                            higher is better) of the rows in range matching query, best
                            first, then by path. No neutral text: each driver that
                            searches writes its own */
    /* A whole read in one statement, outside any transaction (see read_single). */
    MT_DB_READ_WHOLE, /* (tenant, path, whole) -> kind, size, data (NULL when size > whole
                         or the content is missing) */
    /* Re-encrypting the history. */
    MT_DB_VERSION_RESEAL,    /* (tenant, id, sha256, size): a version's content replaced */
    MT_DB_SEARCH_STALE_UPTO, /* (tenant, path, lo, hi, after, limit, cap, mark) -> path,
                                sha256, indexed (0/1), size: MT_DB_SEARCH_STALE where
                                the row of a file over cap bytes (only its first cap bytes
                                indexed) holds its sha256 followed by mark */
    /* Only for a driver with search_fresh set: */
    MT_DB_SEARCH_FRESH,     /* (tenant, cap) -> one row when no file of the tenant changed
                               and no search_docs row was written since a search found its
                               whole index up to date for cap; none otherwise (also when
                               the driver cannot vouch for it). In a read transaction or a
                               write one */
    MT_DB_SEARCH_FRESH_SET, /* (tenant, cap): the tenant's whole index is up to date, for cap */
    /* Counts of references (schema 4). */
    MT_DB_REFS_NEW,  /* (tenant, sha256): a new content_refs row with refs 1 */
    MT_DB_REFS_DROP, /* (tenant, sha256): delete the content_refs row when refs <= 0 */
    /* Expiry's progress (schema 5). */
    MT_DB_VERSIONS_SUPERSEDED, /* (tenant, from_id, before_at) -> id, sha256 of the versions
                                  made before before_at, of memories with a version of
                                  id >= from_id, that are not their memory's newest */
    /* A count changed and read in one statement. */
    MT_DB_REFS_ADD,  /* (tenant, sha256, delta) -> refs: refs += delta, the row made with
                        refs = delta when missing */
    MT_DB_REFS_TAKE, /* (tenant, sha256, delta) -> refs: refs += delta; no row when missing */
    MT_DB_REFS_LAST, /* (tenant, sha256): delete the content_refs row when refs <= 1 */
    /* A redaction's search index. */
    MT_DB_SEARCH_ERASE, /* (tenant, path, sha256): delete the search_docs rows at path or
                           of the sha256 (either may be NULL) */
    MT_DB_SEARCH_MERGE, /* (tenant): rewrite the index so nothing of a deleted row stays in
                           it (SQLite: FTS5's merge of every segment); a driver without a
                           text for it needs none */
    /* The record that the tenant is encrypted (schema 6). */
    MT_DB_CRYPT_GET,   /* (tenant) -> encryption (NULL: none) */
    MT_DB_CRYPT_CLAIM, /* (tenant, record, if_empty): encryption = record where there is none
                          (and, if_empty, the tenant holds no file) */
    MT_DB_CRYPT_SET,   /* (tenant, record): encryption = record */
    MT_DB_OPEN_LOOK,   /* (tenant) -> encryption, the first file's path and the first
                          100 bytes of its content (NULL, NULL: no file), from the
                          tenant's usage row (none: no row) */
    MT_DB_VERSIONS_OF, /* MT_DB_VERSIONS_QUERY's, memory_id given: one memory's, by its index */
    MT_DB_GAP_ANY,     /* (tenant) -> a row when the tenant's mark says a change made with
                          history off may be unrecorded */
    MT_DB_STMT_COUNT
} mt_db_stmt;

/* The dialect-neutral texts, indexed by mt_db_stmt. */
extern const char *const mt_db_sql[MT_DB_STMT_COUNT];

/* A driver's connection, opaque to the core. */
typedef struct mt_db_conn mt_db_conn;

typedef struct {
    const char *name; /* "SQLite", "PostgreSQL": for messages */

    /* The driver's own texts for statements its dialect writes differently,
     * indexed by mt_db_stmt; NULL (or a NULL entry) uses mt_db_sql. */
    const char *const *sql;

    /* Connect with the driver's configuration (what its public open function
     * was given), creating the schema in an empty database and refusing one
     * that is not memtool's or is newer (MT_EINVAL, a one-line message naming
     * the problem and the fix). */
    int (*connect)(mt_db_conn **out, void *cfg, const char *tenant);
    /* Close a connection this process made. */
    void (*close)(mt_db_conn *c);
    /* Forget a connection inherited from the parent across fork(): free what
     * this process holds without acting on the session, socket or locks. */
    void (*abandon)(mt_db_conn *c);
    /* Free the configuration (with the store). */
    void (*cfg_free)(void *cfg);

    /* The transaction of one change: wait at most lock_timeout_ms for the
     * tenant's write lock (MT_EBUSY when it ran out; 0 means do not wait). */
    int (*begin_write)(mt_db_conn *c, const char *tenant, unsigned lock_timeout_ms);
    /* A read-only snapshot (stat, read, list, versions). */
    int (*begin_read)(mt_db_conn *c);
    int (*commit)(mt_db_conn *c);
    /* Never fails from the core's view; a connection it could not roll back
     * is the driver's to reset. */
    void (*rollback)(mt_db_conn *c);

    /*
     * Run statement `id` with nargs bound values, each row to cb (may be NULL
     * when no rows are wanted). Returns the number of rows changed by an
     * INSERT, UPDATE or DELETE, or of rows given to cb by a SELECT (>= 0), or
     * a negative mt_error_code (or MT_DB_RETRY), or the callback's negative
     * code.
     */
    int64_t (*exec)(mt_db_conn *c, mt_db_stmt id, const mt_db_value *args, size_t nargs,
                    mt_db_row_cb cb, void *payload);

    /* After a committed change that removed content (redact, prune): make sure
     * no copy stays on disk (SQLite: checkpoint the log and truncate it). NULL:
     * nothing to do. A failure is reported but the change stands. */
    int (*scrub)(mt_db_conn *c);

    /* Since schema 2, optional: the transaction begun next commits without
     * waiting for the disk (on 1; 0 puts the durability back). A view's
     * record of access is worth no sync: lost in a crash, the memory only
     * looks idler by one grain's worth of views. */
    int (*unsynced)(mt_db_conn *c, int on);

    /* Since schema 3, optional (a NULL search_query: the store cannot
     * search). What the search statements bind: a parsed query as
     * MT_DB_SEARCH_FIND's query, and a memory's words (mt_search_index_text's,
     * len bytes) as MT_DB_SEARCH_PUT's and _SET's words; a NULL search_words
     * binds the words as they are. */
    int (*search_query)(mt_buf *out, const mt_search_query *q);
    int (*search_words)(mt_buf *out, const char *words, size_t len);

    /* Optional: make the connection ready for one statement run on its own,
     * outside any transaction (a statement is then its own snapshot). A
     * whole-file read is then one statement: on PostgreSQL one round trip
     * instead of four (begin, node, content, commit). */
    int (*ready_single)(mt_db_conn *c);

    /* Optional: the database records, in the transactions that make them
     * (triggers), that a tenant's files changed since its index was last
     * whole, and runs MT_DB_SEARCH_FRESH and _FRESH_SET: a search that finds
     * nothing changed answers from a read snapshot, skipping its check of
     * every file and the write lock. */
    int search_fresh;

    /* Optional: each statement is a round trip to a server. The core then
     * changes and reads a content's count of references in one statement
     * (MT_DB_REFS_ADD, _TAKE: DML with RETURNING), where a database in the
     * process runs the plain statements they replace faster (SQLite builds
     * a table for the rows RETURNING hands back). */
    int round_trips;

    /* Optional: the connection is to a copy in memory of a database that
     * cannot be written (a read-only mount): changes are refused before they
     * begin; a read's own writes (access, search index) stay in the copy. */
    int (*read_only)(mt_db_conn *c);
} mt_db_driver;

/* mt_db_store_open's flags. */
#define MT_DB_OPEN_EXISTING 1u /* a tenant with no row is MT_ENOTFOUND, not made */

/*
 * Make an mt_store (version 3) on a driver, for one tenant (NULL or "" the
 * default; checked like a path component). Connects at once, so a bad
 * database is reported here. Takes ownership of cfg, even on failure.
 */
int mt_db_store_open(mt_store **out, const mt_db_driver *drv, void *cfg, const char *tenant,
                     unsigned flags);

/* Whether a store mt_db_store_open made cannot be written (driver's read_only). */
int mt_db_store_read_only(mt_store *st);

/* The database stores' openers with flags (MT_STORE_OPEN_EXISTING), and
 * *read_only (may be NULL) set when the store cannot be written. */
int mt_store_sqlite_open_with(mt_store **out, int *read_only, const char *path, const char *tenant,
                              mt_durability durability, unsigned flags);
int mt_store_pg_open_with(mt_store **out, const char *conninfo, const char *tenant, unsigned flags);

#endif

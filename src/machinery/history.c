/*
 * The history database (history.h).
 *
 * Write-ahead log with synchronous=NORMAL: a commit costs no fsync, so a
 * write with history costs little more than one without; a process that dies
 * loses nothing committed. A power cut may lose the newest versions, never a
 * memory's content (the file holds that, synced as the durability says), and
 * the next look at the file records what it holds as a change by "external".
 *
 * Content that goes (a redaction, versions pruned) must be gone from the disk,
 * not left in a free page or the log: secure_delete overwrites freed pages
 * with zeros, and the transaction that removed content ends with a checkpoint
 * that truncates the log, so no frame holding the old pages stays in it.
 *
 * A plain store's changes do not write the database: their versions are
 * appended to the history's own log (hist_log.h) and loaded in batches, one
 * transaction for many versions (a transaction's begin and commit were
 * about as much as the write of a memory at durability none). Every
 * transaction loads the log first, so versions keep the changes' order and
 * whatever reads or prunes the database sees them all; a redaction, which
 * is one, leaves the log truncated.
 */
#include "machinery/history.h"
#include "machinery/hist_log.h"
#include "machinery/search_index.h"
#include "util/sha256.h"
#include "machinery/sqlite_wal.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

/* 2: versions may wait in history.log (hist_log.h) before they are here. A
 * memtool that knows only 1 would not load them and would record its own
 * versions before them, so it must refuse the database: it does, as it
 * refuses any schema but its own.
 * 3: a content's count of references is a row of content_refs, no longer a
 * column of its contents row (whose change rewrote all of the content). A
 * memtool that knows only 2 would not keep the counts there, so it refuses
 * the database as it refuses any schema but its own. A database of schema 1
 * or 2 is brought to 3 at its first open by this memtool (upgrade_schema).
 * 4: versions are indexed by time, and meta records how far the prune by
 * days got (prune_days_at). A memtool that knows only 3 would prune
 * without keeping that record, which a later prune trusts, so it refuses
 * the database. A database of schema 1 to 3 is brought to 4 at its first
 * open. */
#define SCHEMA_VERSION 4
#define BUSY_MS        10000
/* Prune a memory's versions only when it is this far over its cap: one
 * prune, and its checkpoint, per so many writes. */
#define PRUNE_SLACK(keep) ((keep) / 10 + 1)
#define MS_PER_DAY        86400000LL
/* The log of versions is loaded into the database at the first change that
 * finds this many records in it, or this many bytes. */
#define LOG_BATCH       256
#define LOG_BATCH_BYTES (1024 * 1024)
#define LOG_NAME        MT_HIST_LOG

enum {
    S_FIND,
    S_CONTENT_PUT,
    S_CONTENT_REF,
    S_REFS_NEW,
    S_CONTENT_UNREF,
    S_REFS_DROP,
    S_CONTENT_DROP,
    S_VERSION_PUT,
    S_MEMORY_PUT,
    S_MEMORY_GONE,
    S_NTH_NEWEST,
    S_PRUNE,
    S_MAX_ID,
    S_BEGIN,
    S_COMMIT,
    S_COUNT
};

/*
 * A write touches as few pages as it can, since each page is a frame in the
 * log: a version (its row and two indexes), its content's count, and the
 * memory's row. Contents are counted (content_refs: the versions that hold
 * them) rather than looked up through an index of versions by SHA-256, and
 * the count is a row of its own: a content's row is written once, when it
 * is first kept (a change of a column of a row rewrites the whole row, a
 * big content's overflow pages and all). Memories are the live ones only,
 * keyed by path, the key every change looks up.
 */
static const char *const sql[S_COUNT] = {
    [S_FIND] = "SELECT id, sha256, size, ino, mtime_ns, ctime_ns FROM memories WHERE path = ?1",
    /* A content row left by a damaged count is the same bytes (its key is their SHA-256). */
    [S_CONTENT_PUT] = "INSERT INTO contents(sha256, data) VALUES (?1, ?2) "
                      "ON CONFLICT(sha256) DO NOTHING",
    [S_CONTENT_REF] = "UPDATE content_refs SET refs = refs + 1 WHERE sha256 = ?1",
    [S_REFS_NEW] = "INSERT INTO content_refs(sha256, refs) VALUES (?1, 1)",
    [S_CONTENT_UNREF] = "UPDATE content_refs SET refs = refs - 1 WHERE sha256 = ?1",
    [S_REFS_DROP] = "DELETE FROM content_refs WHERE sha256 = ?1 AND refs <= 0",
    /* Content without a count is no version's. */
    [S_CONTENT_DROP] = "DELETE FROM contents WHERE sha256 = ?1 AND "
                       "NOT EXISTS (SELECT 1 FROM content_refs WHERE sha256 = ?1)",
    [S_VERSION_PUT] = "INSERT INTO versions(id, memory_id, op, path, previous_path, actor, at, "
                      "sha256, size) VALUES (?9, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_MEMORY_PUT] = "INSERT OR REPLACE INTO memories(path, id, sha256, size, ino, mtime_ns, "
                     "ctime_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_MEMORY_GONE] = "DELETE FROM memories WHERE path = ?1",
    [S_NTH_NEWEST] =
        "SELECT id FROM versions WHERE memory_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2",
    [S_PRUNE] = "DELETE FROM versions WHERE memory_id = ?1 AND id <= ?2 RETURNING sha256",
    [S_MAX_ID] = "SELECT coalesce(max(id), 0) FROM versions",
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
};

/* Version ids are rowids without AUTOINCREMENT (which costs a page a write):
 * never reused all the same, since the newest version is never deleted (the
 * prunes keep each memory's newest) and a new id is the largest plus one. */
static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS contents(sha256 TEXT PRIMARY KEY, data BLOB NOT NULL) "
    "  WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS content_refs(sha256 TEXT PRIMARY KEY, refs INTEGER NOT NULL) "
    "  WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS memories(path TEXT PRIMARY KEY, id TEXT NOT NULL, sha256 TEXT, "
    "  size INTEGER NOT NULL, ino INTEGER, mtime_ns INTEGER, ctime_ns INTEGER) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS versions(id INTEGER PRIMARY KEY, "
    "  memory_id TEXT NOT NULL, op INTEGER NOT NULL, path TEXT, previous_path TEXT, "
    "  actor TEXT NOT NULL, at INTEGER NOT NULL, sha256 TEXT, size INTEGER NOT NULL, "
    "  redacted INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS versions_memory ON versions(memory_id, id);"
    "CREATE INDEX IF NOT EXISTS versions_path ON versions(path, id);"
    "CREATE INDEX IF NOT EXISTS versions_at ON versions(at);"
    "INSERT OR IGNORE INTO meta VALUES ('schema', '4');";

/* Statements of the record of ids alone (mt_hist_track_put...), prepared at
 * their first use: most handles never need them, and an open's statements
 * are part of every one-shot command's time. */
enum { L_PUT, L_DROP, L_MOVE, L_ELSEWHERE, L_LOOKUP, L_EXACT, L_MARK, L_COUNT };

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

struct mt_hist {
    struct mt_hist *next; /* every open history of this process (the registry) */
    unsigned forks;       /* the forks counted when it was opened */
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    sqlite3_stmt *lazy[L_COUNT]; /* NULL until first used */
    int dirfd;             /* the directory the path names: SQLite opens its log by it later */
    int dropped;           /* this transaction removed content: truncate the log at commit */
    int read_only;         /* a copy in memory of a store that cannot be written */
    int truncate_due;      /* a truncation readers kept from finishing: tried at each commit */
    int64_t last_days_run; /* when versions older than the days limit were last pruned */
    /* The memory at one path as this transaction last found or recorded it:
     * a change looks its path up three times (settling, recording, the
     * prune), and one SQLite query answers all three. */
    char *seen_path;
    int seen_found;
    mt_hist_mem seen;
    void (*on_close)(void *payload); /* see mt_hist_on_close */
    void *on_close_payload;
    /*
     * The log of versions not yet loaded (hist_log.h), for the handle a
     * store's changes use (mt_hist_log_attach). A change in `logged` mode
     * appends its versions to the log at commit, in one write; the
     * database then lags the log, and `over` holds what this handle's
     * appends made of each path they touched since the log was last
     * loaded. That is all the log holds while the store's shared slot
     * names this handle (`owner` == `token`): any other process that
     * appends or loads writes its own token there, and this handle loads
     * the log again before its next append.
     */
    volatile uint64_t *owner; /* the slot, in the store's shared state */
    uint64_t token;           /* this handle's (random, never 0) */
    int logfd;                /* the log, opened at its first use; -1 before */
    dev_t log_dev;            /* and the file it is, */
    ino_t log_ino;            /* to tell it from what the name holds */
    int mode;                 /* H_IDLE, H_LOGGED or H_SQL: what the change in progress is */
    int synced;               /* over and next_id are right (the log is this handle's appends) */
    int log_loaded;           /* this transaction loaded the log: empty it once committed */
    int64_t next_id;          /* the id of the next version appended */
    uint64_t log_end;         /* the log's size after this handle's last append */
    unsigned pending;         /* records appended since the log was last loaded */
    unsigned change_recs;     /* records of the change in progress, in `change` */
    mt_buf change;            /* those records, appended at commit */
    size_t last_rec;          /* where the last of them starts in `change` */
    char last_mem[24];        /* and the memory it is a version of */
    uint32_t days;            /* the change's cap on age, carried by its records */
    struct over *over;        /* paths touched by appends since the last load */
    size_t over_n, over_cap;
};

enum { H_IDLE, H_LOGGED, H_SQL };

struct over {
    uint64_t hash;
    char *path;
    int found;
    int has_fp; /* m.fp was recorded (a load writes it, or NULLs) */
    mt_hist_mem m;
};

static void seen_forget(mt_hist *h)
{
    free(h->seen_path);
    h->seen_path = NULL;
}

/* Best effort: without memory for the path, the next find asks SQLite. */
static void seen_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m)
{
    seen_forget(h);
    if (!(h->seen_path = strdup(path)))
        return;
    h->seen_found = found;
    if (found)
        h->seen = *m;
    else
        memset(&h->seen, 0, sizeof(h->seen));
}

/*
 * After a fork the child holds copies of its parent's SQLite connections,
 * and SQLite keeps one record per database file and process (its locks and
 * its shared-memory mapping): a connection the child opens to the same file
 * would share the inherited record, whose locks the child does not hold, and
 * the locking between the processes breaks (seen as a hang under load). So
 * every open history is registered, and before the first open in a child the
 * inherited ones are closed: that releases only the child's view (POSIX locks
 * are per process) and, with the log kept (PERSIST_WAL), deletes nothing.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static mt_hist *registry;
static unsigned forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void registry_prepare(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void registry_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void registry_child(void)
{
    forks++;
    pthread_mutex_unlock(&registry_lock);
}

static void watch_forks(void)
{
    pthread_atfork(registry_prepare, registry_parent, registry_child);
}

static void hist_free(mt_hist *h);
static void over_clear(mt_hist *h);

/* Close what a parent left this process; called with the registry locked. */
static void drop_inherited(void)
{
    mt_hist **p = &registry;

    while (*p) {
        mt_hist *h = *p;
        if (h->forks != forks) {
            *p = h->next;
            hist_free(h);
        } else {
            p = &h->next;
        }
    }
}

static int db_error(mt_hist *h, const char *what)
{
    int code = sqlite3_errcode(h->db);
    int rc = code == SQLITE_BUSY || code == SQLITE_LOCKED ? MT_EBUSY
             : code == SQLITE_NOMEM                       ? MT_ENOMEM
                                                          : MT_EIO;

    return mt_error_set(rc, "history database: %s: %s", what, sqlite3_errmsg(h->db));
}

static sqlite3_stmt *stmt(mt_hist *h, int which)
{
    sqlite3_stmt *s = h->st[which];

    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mt_hist_sha256(char out[65], const char *data, size_t len)
{
    mt_sha256_hex(out, data, len);
}

/* The schema the database says it has; 0 when it has none yet. */
static int schema_version(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    int version = 0;

    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema'", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return version;
}

/*
 * Schema 1 or 2 to 3, and 3 to 4, in one transaction. 3: each content's
 * count moves from its row to content_refs, and the column goes (which
 * rewrites every content once, here rather than at each later change of a
 * count); schema 1 differs from 2 only in having no log yet. 4: the index
 * of versions by time (the first prune by days after it looks at every
 * version once, as it finds no record of an earlier one). The version is
 * read again under the write lock: another process opening the database at
 * the same time may have upgraded it already, and then there is nothing to
 * do.
 */
static int upgrade_schema(sqlite3 *db, int *version)
{
    char *msg = NULL;
    int rc = 0;

    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    *version = schema_version(db);
    if ((*version == 1 || *version == 2) &&
        sqlite3_exec(db,
                     "CREATE TABLE content_refs(sha256 TEXT PRIMARY KEY, refs INTEGER NOT NULL) "
                     "  WITHOUT ROWID;"
                     "INSERT INTO content_refs(sha256, refs) SELECT sha256, refs FROM contents;"
                     "ALTER TABLE contents DROP COLUMN refs;"
                     "UPDATE meta SET value = '3' WHERE key = 'schema';",
                     NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (*version >= 1 && *version <= 3 &&
        sqlite3_exec(db,
                     "CREATE INDEX IF NOT EXISTS versions_at ON versions(at);"
                     "UPDATE meta SET value = '4' WHERE key = 'schema';",
                     NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    *version = schema_version(db);
    return 0;
fail:
    rc = mt_error_set(sqlite3_errcode(db) == SQLITE_BUSY ? MT_EBUSY : MT_EIO,
                      "history database: cannot upgrade it from schema %d to %d: %s", *version,
                      SCHEMA_VERSION, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int mt_hist_open(mt_hist **out, int dirfd, const char *name, mt_durability durability)
{
    return mt_hist_open_with(out, dirfd, name, durability, 0);
}

int mt_hist_open_with(mt_hist **out, int dirfd, const char *name, mt_durability durability,
                      int read_only)
{
    char path[64];
    mt_hist *h = NULL;
    char *msg = NULL;
    int rc = 0, i, fd;

    *out = NULL;
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium failed to start");
    pthread_once(&forks_once, watch_forks);
    pthread_mutex_lock(&registry_lock);
    drop_inherited();
    pthread_mutex_unlock(&registry_lock);
    if (!(h = calloc(1, sizeof(*h))))
        return mt_error_set(MT_ENOMEM, "out of memory opening the history");
    h->dirfd = -1;
    h->logfd = -1;
    while (!h->token)
        randombytes_buf(&h->token, sizeof(h->token));
    if (read_only && dirfd < 0) {
        h->read_only = 1;
        if ((rc = mt_sqlite_open_copy(&h->db, NULL)) < 0)
            goto done;
        goto opened;
    }
    /* SQLite wants a path and resolves it once, at open, to the directory's
     * real path: given by the descriptor the store opened (confined), and
     * checked after the open to be that very directory. Its files must be
     * plain files or missing: SQLite opens them without following links. */
    {
        static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
        struct stat sb, dir, db_dir;
        char file[80];
        const char *real;
        size_t k;

        for (k = 0; k < sizeof(suffix) / sizeof(suffix[0]); k++) {
            snprintf(file, sizeof(file), "%s%s", name, suffix[k]);
            if (fstatat(dirfd, file, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)) {
                rc = mt_error_set(MT_EIO,
                                  "history database: %s is not a plain file; move it away "
                                  "(memtool recreates the history)",
                                  file);
                goto done;
            }
        }
        fd = h->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 || fstat(fd, &dir) < 0) {
            rc = mt_error_set(MT_EIO, "cannot open the history: %s", strerror(errno));
            goto done;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", fd, name);

        if (read_only) {
            /* No database yet: an empty history. */
            int none = fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
            h->read_only = 1;
            if ((rc = mt_sqlite_open_copy(&h->db, none ? NULL : path)) < 0)
                goto done;
            goto opened;
        }
        /* Private whatever the umask: the database holds every version of
         * every memory (a created file is 0600, a looser one made so). */
        if ((rc = mt_sqlite_make_private(fd, name, 1)) < 0) {
            rc = mt_error_set(MT_EIO, "cannot open the history: %s", strerror(-rc));
            goto done;
        }
        if (sqlite3_open_v2(path, &h->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
            rc = h->db ? db_error(h, "cannot open it") : MT_ENOMEM;
            goto done;
        }
        real = sqlite3_db_filename(h->db, "main");
        if (!real || !*real || !strrchr(real, '/')) {
            rc = mt_error_set(MT_EIO, "history database: SQLite gave no file name");
            goto done;
        }
        {
            size_t n = (size_t)(strrchr(real, '/') - real);
            char *d = strndup(real, n ? n : 1);
            int same = d && stat(d, &db_dir) == 0 && db_dir.st_dev == dir.st_dev &&
                       db_dir.st_ino == dir.st_ino;
            free(d);
            if (!same) {
                rc = mt_error_set(MT_EIO, "history database: the store's own directory was "
                                          "replaced while it was opened");
                goto done;
            }
        }
    }
opened:
    sqlite3_busy_timeout(h->db, BUSY_MS);
    /* At durability "none" the store leaves everything to the kernel, and
     * so does its history (no sync even at a checkpoint; a power cut may
     * then damage it, and memtool says so and starts a new one). Otherwise
     * a commit is not synced but a checkpoint is, and checkpoints are made
     * rare (every 1,000 pages, about 200 changes) so that their two syncs
     * cost a change little.
     *
     * The log is emptied when the last connection closes (a journal size
     * limit of any size does that, after the checkpoint every last close
     * makes): a log left full is read whole by the next process to open the
     * database, to rebuild its index, which was most of a one-shot `memtool
     * log` (1,128 reads of frames before this). */
    if (mt_sqlite_setup_wal(h->db,
                            durability == MT_DURABILITY_NONE
                                ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                                : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                            &msg, BUSY_MS) != SQLITE_OK ||
        sqlite3_exec(h->db,
                     "PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY; "
                     "PRAGMA journal_size_limit=4194304; PRAGMA wal_autocheckpoint=1000;",
                     NULL, NULL, &msg) != SQLITE_OK) {
        rc = mt_error_set(MT_EIO, "history database: cannot set it up: %s",
                          msg ? msg : sqlite3_errmsg(h->db));
        goto done;
    }
    {
        int version = schema_version(h->db);

        /* The schema is made only where it is missing: parsing it, and the
         * write its INSERT makes, were a tenth of a one-shot `memtool log`. */
        if (version == 0) {
            if (sqlite3_exec(h->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
                rc = mt_error_set(MT_EIO, "history database: cannot set it up: %s",
                                  msg ? msg : sqlite3_errmsg(h->db));
                goto done;
            }
            version = schema_version(h->db);
        }
        if (version >= 1 && version < SCHEMA_VERSION && (rc = upgrade_schema(h->db, &version)) < 0)
            goto done;
        if (version != SCHEMA_VERSION) {
            rc = mt_error_set(MT_EINVAL,
                              "history database: schema %d, and this memtool knows %d: use the "
                              "memtool that wrote it",
                              version, SCHEMA_VERSION);
            goto done;
        }
    }
    for (i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v3(h->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &h->st[i], NULL) !=
            SQLITE_OK) {
            rc = db_error(h, "cannot prepare a statement");
            goto done;
        }
    {
        /* A close never deletes the log (a forked child's close must not). */
        int persist = 1;
        sqlite3_file_control(h->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    }
    pthread_mutex_lock(&registry_lock);
    h->forks = forks;
    h->next = registry;
    registry = h;
    pthread_mutex_unlock(&registry_lock);
    *out = h;
    h = NULL;
done:
    sqlite3_free(msg);
    if (h)
        hist_free(h);
    return rc;
}

struct sqlite3 *mt_hist_sqlite(mt_hist *h)
{
    return h->db;
}

void mt_hist_on_close(mt_hist *h, void (*fn)(void *payload), void *payload)
{
    h->on_close = fn;
    h->on_close_payload = payload;
}

void mt_hist_close(mt_hist *h)
{
    mt_hist **p;

    if (!h)
        return;
    pthread_mutex_lock(&registry_lock);
    for (p = &registry; *p && *p != h; p = &(*p)->next)
        ;
    if (*p)
        *p = h->next;
    pthread_mutex_unlock(&registry_lock);
    hist_free(h);
}

static void hist_free(mt_hist *h)
{
    int i;

    seen_forget(h);
    if (h->on_close)
        h->on_close(h->on_close_payload);
    for (i = 0; i < S_COUNT; i++)
        sqlite3_finalize(h->st[i]);
    for (i = 0; i < L_COUNT; i++)
        sqlite3_finalize(h->lazy[i]);
    sqlite3_close(h->db);
    if (h->dirfd >= 0)
        close(h->dirfd);
    if (h->logfd >= 0)
        close(h->logfd);
    over_clear(h);
    free(h->over);
    mt_buf_dispose(&h->change);
    free(h);
}

/* A statement stepped to a row and left there holds a read transaction
 * open: a later BEGIN IMMEDIATE then fails at once (SQLite cannot wait on a
 * snapshot another process has moved past), and a checkpoint cannot
 * truncate the log under it. Every statement is reset between changes. */
static void reset_all(mt_hist *h)
{
    int i;

    for (i = 0; i < S_COUNT; i++)
        sqlite3_reset(h->st[i]);
    for (i = 0; i < L_COUNT; i++)
        if (h->lazy[i])
            sqlite3_reset(h->lazy[i]);
}

/* The paths this handle's appends touched since the log was last loaded:
 * few (a load comes every LOG_BATCH records), so a list. */
static uint64_t path_hash(const char *p)
{
    uint64_t k = 14695981039346656037ULL;

    while (*p) {
        k ^= (unsigned char)*p++;
        k *= 1099511628211ULL;
    }
    return k;
}

static struct over *over_find(mt_hist *h, const char *path)
{
    uint64_t k = path_hash(path);
    size_t i;

    for (i = h->over_n; i-- > 0;)
        if (h->over[i].hash == k && strcmp(h->over[i].path, path) == 0)
            return &h->over[i];
    return NULL;
}

static int over_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m, int has_fp)
{
    struct over *o = over_find(h, path);

    if (!o) {
        if (h->over_n == h->over_cap) {
            size_t cap = h->over_cap ? h->over_cap * 2 : 64;
            struct over *p = realloc(h->over, cap * sizeof(*p));
            if (!p)
                return mt_error_set(MT_ENOMEM, "out of memory recording a version");
            h->over = p;
            h->over_cap = cap;
        }
        o = &h->over[h->over_n];
        if (!(o->path = strdup(path)))
            return mt_error_set(MT_ENOMEM, "out of memory recording a version");
        o->hash = path_hash(path);
        h->over_n++;
    }
    o->found = found;
    o->has_fp = has_fp;
    if (found)
        o->m = *m;
    else
        memset(&o->m, 0, sizeof(o->m));
    return 0;
}

static void over_clear(mt_hist *h)
{
    size_t i;

    for (i = 0; i < h->over_n; i++)
        free(h->over[i].path);
    h->over_n = 0;
}

void mt_hist_log_attach(mt_hist *h, volatile uint64_t *owner)
{
    h->owner = owner;
}

static void log_close(mt_hist *h)
{
    if (h->logfd >= 0)
        close(h->logfd);
    h->logfd = -1;
}

/* The log, opened at its first use (made only to append to it), and at
 * each load checked to be the file its name holds now. Like the database's
 * files it must be a plain single-link file. 1 open, 0 there is none, or an
 * error. */
static int log_open(mt_hist *h, int create, int check)
{
    struct stat sb, there;
    int fd;

    if (h->logfd >= 0 && check &&
        (fstatat(h->dirfd, LOG_NAME, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
         there.st_ino != h->log_ino || there.st_dev != h->log_dev))
        log_close(h);
    if (h->logfd >= 0)
        return 1;
    if (h->dirfd < 0)
        return 0; /* a read-only store's empty history: no log */
    fd = openat(h->dirfd, LOG_NAME,
                (h->read_only ? O_RDONLY : O_RDWR | O_APPEND) | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
                    O_NONBLOCK | (create && !h->read_only ? O_CREAT : 0),
                0600);
    if (fd < 0 && errno == ENOENT && !create)
        return 0;
    if (fd < 0)
        return mt_error_set(MT_EIO, "history's log %s: cannot open it: %s (move it away)", LOG_NAME,
                            strerror(errno));
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        close(fd);
        return mt_error_set(MT_EIO, "history's log %s is not a plain file; move it away", LOG_NAME);
    }
    h->logfd = fd;
    h->log_dev = sb.st_dev;
    h->log_ino = sb.st_ino;
    return 1;
}

/* The size of the log, 0 when there is none. */
static int log_size(mt_hist *h, uint64_t *out, int check)
{
    struct stat sb;
    int rc;

    *out = 0;
    if ((rc = log_open(h, 0, check)) <= 0)
        return rc;
    if (fstat(h->logfd, &sb) < 0)
        return mt_error_set(MT_EIO, "history's log: %s", strerror(errno));
    *out = (uint64_t)sb.st_size;
    return 0;
}

static int sql_begin(mt_hist *h)
{
    /* Claimed before anything is written (under the store's lock): a
     * transaction may give new versions the next ids, and a handle that
     * still thought itself in step after a kill between this commit and a
     * later claim would append under the same ids. */
    if (h->owner) {
        *h->owner = h->token;
        h->synced = 0;
    }
    if (sqlite3_step(stmt(h, S_BEGIN)) != SQLITE_DONE)
        return db_error(h, "cannot begin");
    h->mode = H_SQL;
    return 0;
}

/* Leave no change in progress: a transaction some failure left open must
 * not swallow the next. */
static void begin_clean(mt_hist *h)
{
    seen_forget(h);
    reset_all(h);
    h->dropped = 0;
    if (h->mode != H_IDLE || !sqlite3_get_autocommit(h->db))
        mt_hist_rollback(h);
    h->change.len = 0;
    h->change_recs = 0;
}

static int log_apply(mt_hist *h);

int mt_hist_begin(mt_hist *h)
{
    int rc;

    begin_clean(h);
    if ((rc = sql_begin(h)) < 0)
        return rc;
    /* The versions in the log come first: they are older than this change's. */
    if (h->owner && (rc = log_apply(h)) < 0) {
        mt_hist_rollback(h);
        return rc;
    }
    return 0;
}

void mt_hist_rollback(mt_hist *h)
{
    seen_forget(h);
    if (h->mode != H_LOGGED)
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    /* A logged change's records are dropped before they were appended; the
     * overlay has them, so it goes (the log is loaded before the next
     * append). A transaction's load of the log is undone with it. */
    h->change.len = 0;
    h->change_recs = 0;
    h->log_loaded = 0;
    h->synced = 0;
    h->mode = H_IDLE;
}

/* Step a statement of one SHA-256 that returns no rows; -1 on failure. */
static int step_sha(mt_hist *h, int which, const char *sha)
{
    sqlite3_stmt *s = stmt(h, which);

    sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
}

/* One reference fewer to a content; the content goes with its last (a
 * statement for it only then, as the database stores do). */
static int drop_content(mt_hist *h, const char *sha)
{
    if (step_sha(h, S_CONTENT_UNREF, sha) < 0 || step_sha(h, S_REFS_DROP, sha) < 0)
        return db_error(h, "cannot drop content");
    if (sqlite3_changes(h->db) == 0)
        return 0;
    if (step_sha(h, S_CONTENT_DROP, sha) < 0)
        return db_error(h, "cannot drop content");
    if (sqlite3_changes(h->db) > 0)
        h->dropped = 1;
    return 0;
}

int mt_hist_content_ref(mt_hist *h, const char *sha)
{
    if (step_sha(h, S_CONTENT_REF, sha) < 0)
        return db_error(h, "cannot keep content");
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
        return db_error(h, "cannot keep content");
    s = stmt(h, S_CONTENT_PUT);
    sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(s, 2, len ? data : "", len, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : db_error(h, "cannot keep content");
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
        rc = db_error(h, "cannot prune");
    for (i = 0; rc == 0 && i < n; i++)
        rc = drop_content(h, shas[i]);
    free(shas);
    return rc;
}

/* Whether a prune by days is due: at most once a minute per handle. */
static int days_due(mt_hist *h)
{
    return now_ms() - h->last_days_run >= 60000;
}

static int max_id(mt_hist *h, int64_t *out)
{
    sqlite3_stmt *s = stmt(h, S_MAX_ID);
    int step = sqlite3_step(s);

    *out = step == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return step == SQLITE_ROW ? 0 : db_error(h, "cannot read the newest version");
}

/* Run one of the prune's DELETE ... RETURNING statements (?1 a, ?2 b) and
 * drop the contents it freed. */
static int prune_by(mt_hist *h, const char *text, int64_t a, int64_t b)
{
    sqlite3_stmt *s = NULL;
    int rc;

    if (sqlite3_prepare_v2(h->db, text, -1, &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot prune");
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
static int prune_days_at(mt_hist *h, unsigned days, int64_t now)
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
    if ((rc = max_id(h, &newest)) < 0)
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
    rc = db_error(h, "cannot prune");
done:
    sqlite3_finalize(s);
    return rc;
}

/* A change's prune by days, as it commits (when due). */
static int prune_days(mt_hist *h, unsigned days)
{
    if (!days || !days_due(h))
        return 0;
    h->last_days_run = now_ms();
    return prune_days_at(h, days, h->last_days_run);
}

/* A memory over its cap by the slack loses its oldest versions. */
static int prune_memory(mt_hist *h, const char *memory_id, unsigned keep)
{
    sqlite3_stmt *s;
    int64_t cut;
    int rc, step;

    if (!keep)
        return 0;
    s = stmt(h, S_NTH_NEWEST);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)keep + PRUNE_SLACK(keep) - 1);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE)
        return 0;
    if (step != SQLITE_ROW)
        return db_error(h, "cannot count versions");
    /* Over: keep the newest `keep`. */
    s = stmt(h, S_NTH_NEWEST);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)keep);
    if (sqlite3_step(s) != SQLITE_ROW)
        return db_error(h, "cannot count versions");
    cut = sqlite3_column_int64(s, 0);
    s = stmt(h, S_PRUNE);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, cut);
    rc = drop_returned(h, s);
    sqlite3_reset(s);
    return rc;
}

typedef struct {
    mt_hist *h;
    int64_t max;     /* the newest version in the database: older records are in it already */
    int batch;       /* a load of the log: see apply_rec */
    int days_due;    /* a load prunes by days (at most once a minute, as changes do) */
    uint32_t days;   /* the days of the records since the last prune by days */
    int64_t days_at; /* when the last of them was made */
} apply_ctx;

static int memory_put(mt_hist *h, const char *path, const mt_hist_mem *m, int has_fp)
{
    sqlite3_stmt *s = stmt(h, S_MEMORY_PUT);

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, m->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)m->size);
    if (has_fp) {
        sqlite3_bind_int64(s, 5, (int64_t)m->fp.ino);
        sqlite3_bind_int64(s, 6, m->fp.mtime_ns);
        sqlite3_bind_int64(s, 7, m->fp.ctime_ns);
    }
    return sqlite3_step(s) == SQLITE_DONE ? 0 : db_error(h, "cannot record a memory");
}

int mt_hist_memory_set(mt_hist *h, const char *path, const mt_hist_mem *m)
{
    int rc = memory_put(h, path, m, 1);

    /* What S_FIND reads back now (a find earlier in the transaction may
     * have cached the path as it was). */
    if (rc == 0)
        seen_set(h, path, 1, m);
    else
        seen_forget(h);
    return rc;
}

static int memory_gone(mt_hist *h, const char *path)
{
    sqlite3_stmt *s = stmt(h, S_MEMORY_GONE);

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : db_error(h, "cannot record a memory");
}

/* Put one version into the database, in the open transaction. In a
 * batch (c->batch) the live memories' rows are only noted, in the overlay,
 * and written as the batch ends (batch_end): a memory made, edited and
 * deleted within one batch costs its row nothing. */
static int apply_rec(mt_hist *h, const mt_hist_rec *r, apply_ctx *c)
{
    sqlite3_stmt *s;
    int rc;

    seen_forget(h);
    if (r->op != MT_VERSION_DELETED &&
        (rc = r->data ? mt_hist_content_keep(h, r->sha256, r->data, r->len)
                      : mt_hist_content_ref(h, r->sha256)) < 0)
        return rc;
    s = stmt(h, S_VERSION_PUT);
    sqlite3_bind_text(s, 1, r->memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, (int)r->op);
    sqlite3_bind_text(s, 3, r->path, -1, SQLITE_STATIC);
    if (r->previous)
        sqlite3_bind_text(s, 4, r->previous, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, r->actor, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, r->at);
    if (r->op != MT_VERSION_DELETED)
        sqlite3_bind_text(s, 7, r->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 8, r->op == MT_VERSION_DELETED ? 0 : (int64_t)r->size);
    if (r->id > 0)
        sqlite3_bind_int64(s, 9, r->id);
    if (sqlite3_step(s) != SQLITE_DONE)
        return db_error(h, "cannot record a version");
    /* The live memories: where each is and how its file looks. */
    if (r->op == MT_VERSION_DELETED || r->previous) {
        const char *gone = r->previous ? r->previous : r->path;
        if ((rc = c && c->batch ? over_set(h, gone, 0, NULL, 0) : memory_gone(h, gone)) < 0)
            return rc;
    }
    if (r->op != MT_VERSION_DELETED) {
        mt_hist_mem m;
        memset(&m, 0, sizeof(m));
        snprintf(m.id, sizeof(m.id), "%s", r->memory_id);
        snprintf(m.sha256, sizeof(m.sha256), "%s", r->sha256);
        m.size = m.fp.size = r->size;
        if (r->has_fp) {
            m.fp.ino = r->fp.ino;
            m.fp.mtime_ns = r->fp.mtime_ns;
            m.fp.ctime_ns = r->fp.ctime_ns;
        }
        if ((rc = c && c->batch ? over_set(h, r->path, 1, &m, r->has_fp)
                                : memory_put(h, r->path, &m, r->has_fp)) < 0)
            return rc;
        /* After the version its change pruned after (only that one
         * carries the cap): a memory is pruned at the same versions
         * whichever way they came. */
        if (r->keep)
            return prune_memory(h, r->memory_id, r->keep);
    }
    return 0;
}

/* The end of a batch: the live memories' rows as the batch left them. The
 * overlay is empty again. */
static int batch_end(mt_hist *h)
{
    size_t i;
    int rc = 0;

    for (i = 0; rc == 0 && i < h->over_n; i++)
        rc = h->over[i].found ? memory_put(h, h->over[i].path, &h->over[i].m, h->over[i].has_fp)
                              : memory_gone(h, h->over[i].path);
    over_clear(h);
    return rc;
}

/* A load's prune by days: what the changes since the last one would have
 * pruned as each committed. Changes in a row with the same days prune the
 * same as the last of them alone (the cut only moves later, and a version
 * no longer a memory's newest stays so), so one prune per such run. */
static int batch_days(apply_ctx *c)
{
    int rc = 0;

    if (c->batch && c->days_due && c->days) {
        c->h->last_days_run = now_ms();
        rc = prune_days_at(c->h, c->days, c->days_at);
    }
    c->days = 0;
    return rc;
}

static int apply_cb(void *payload, const mt_hist_rec *r)
{
    apply_ctx *c = payload;
    int rc;

    /* Loaded already: a load whose commit was made, and whose process was
     * killed before it emptied the log (the newest version is never
     * pruned, so the database's newest id says how far it got). */
    if (r->id <= c->max)
        return 0;
    c->max = r->id;
    if (r->days != c->days && (rc = batch_days(c)) < 0)
        return rc;
    c->days = r->days;
    c->days_at = r->at;
    return apply_rec(c->h, r, c);
}

/* Load the log into the open transaction; it is emptied once that commits. */
static int log_apply(mt_hist *h)
{
    apply_ctx c;
    uint64_t size, end;
    int rc;

    if ((rc = log_size(h, &size, 1)) < 0 || size == 0)
        return rc;
    memset(&c, 0, sizeof(c));
    c.h = h;
    c.batch = 1;
    c.days_due = days_due(h);
    /* The overlay notes the batch's live memories (a change's overlay is
     * no use once the log is loaded). */
    over_clear(h);
    if ((rc = max_id(h, &c.max)) == 0 &&
        (rc = mt_hist_log_each(h->logfd, &end, apply_cb, &c)) == 0 && (rc = batch_end(h)) == 0)
        rc = batch_days(&c);
    over_clear(h);
    if (rc == 0)
        h->log_loaded = 1;
    return rc;
}

/* After the commit of a transaction that loaded the log. A log that cannot
 * be emptied is loaded again, and what is in the database already skipped. */
/* -1 (errno set) when the loaded log could not be emptied. */
static int log_emptied(mt_hist *h)
{
    int rc = 0;

    /* A read-only store's log stays as it is: it was loaded into the copy. */
    if (h->log_loaded && h->logfd >= 0 && !h->read_only && ftruncate(h->logfd, 0) < 0) {
        h->synced = 0;
        rc = -1;
    }
    h->log_loaded = 0;
    return rc;
}

int mt_hist_load(mt_hist *h)
{
    uint64_t size;
    int rc;

    if (!h->owner || (rc = log_size(h, &size, 1)) < 0 || size == 0)
        return h->owner ? rc : 0;
    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    return mt_hist_commit(h, NULL);
}

/* Load the log and empty it, so that this handle's appends are all it holds. */
static int log_sync(mt_hist *h)
{
    uint64_t size;
    int rc;

    h->synced = 0;
    over_clear(h);
    h->pending = 0;
    if ((rc = mt_hist_load(h)) < 0 || (rc = log_open(h, 1, 1)) < 0 ||
        (rc = log_size(h, &size, 0)) < 0)
        return rc;
    /* Nothing is ever appended after what a load left (a record cut short). */
    if (size != 0)
        return mt_error_set(MT_EIO, "history's log: cannot empty it");
    if ((rc = max_id(h, &h->next_id)) < 0)
        return rc;
    h->next_id++;
    h->log_end = 0;
    *h->owner = h->token;
    h->synced = 1;
    return 0;
}

/* Whether the log the name holds is the one this handle appends to, as
 * its last append left it: a log moved away, replaced or cut by anything
 * but memtool (which only ever empties it, loaded, and says so in the
 * slot) would take the next appends where no load finds them. */
static int log_intact(mt_hist *h)
{
    struct stat there;

    /* One look at the name: the file it holds is the open one (the inode
     * noted at the open), so its size is the open one's. */
    return h->logfd >= 0 && fstatat(h->dirfd, LOG_NAME, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
           there.st_ino == h->log_ino && there.st_dev == h->log_dev &&
           (uint64_t)there.st_size == h->log_end;
}

int mt_hist_begin_logged(mt_hist *h, unsigned days)
{
    if (!h->owner)
        return mt_hist_begin(h);
    begin_clean(h);
    if ((!h->synced || *h->owner != h->token || h->pending >= LOG_BATCH ||
         h->log_end >= LOG_BATCH_BYTES || !log_intact(h)) &&
        log_sync(h) < 0)
        return mt_hist_begin(h); /* which says what is wrong, or records all the same */
    h->mode = H_LOGGED;
    h->days = days;
    return 0;
}

/* A logged change that needs the database itself (a walk of the memories,
 * the record of ids alone): the log and the change's records so far go
 * into a transaction, and the change goes on in it. */
static int escalate(mt_hist *h)
{
    apply_ctx c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.h = h;
    if (h->mode != H_LOGGED)
        return 0;
    h->mode = H_IDLE;
    h->synced = 0;
    over_clear(h);
    seen_forget(h);
    if ((rc = sql_begin(h)) == 0 && (rc = log_apply(h)) == 0 && (rc = max_id(h, &c.max)) == 0)
        rc = mt_hist_rec_each(h->change.ptr, h->change.len, apply_cb, &c);
    h->change.len = 0;
    h->change_recs = 0;
    return rc; /* a failure: the caller's rollback ends the transaction */
}

int mt_hist_solid(mt_hist *h)
{
    return escalate(h);
}

/* A logged change's records, appended in one write. */
static int log_commit(mt_hist *h)
{
    size_t done = 0;
    int rc = 0;

    h->mode = H_IDLE;
    seen_forget(h);
    if (!h->change.len)
        return 0;
    if ((rc = log_open(h, 1, 0)) < 0)
        goto fail;
    while (done < h->change.len) {
        ssize_t n = write(h->logfd, h->change.ptr + done, h->change.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = mt_error_set(MT_EIO, "history's log: cannot append to it: %s",
                              n < 0 ? strerror(errno) : "nothing written");
            /* No part of a record stays before the next append: cut it off
             * (and, should that fail, the next change loads the log first,
             * which stops at it, and empties it). */
            if (done && ftruncate(h->logfd, (off_t)h->log_end) < 0)
                h->synced = 0;
            goto fail;
        }
        done += (size_t)n;
    }
    h->log_end += h->change.len;
    h->pending += h->change_recs;
    *h->owner = h->token;
    h->change.len = 0;
    h->change_recs = 0;
    return 0;
fail:
    h->synced = 0;
    h->change.len = 0;
    h->change_recs = 0;
    return rc;
}

int mt_hist_commit(mt_hist *h, const mt_store_op *op)
{
    int kept = 0;

    if (h->mode == H_LOGGED)
        return log_commit(h);
    if (op && prune_days(h, op->history_days) < 0) {
        mt_hist_rollback(h);
        return mt_error_last()->code;
    }
    seen_forget(h);
    reset_all(h);
    if (sqlite3_step(stmt(h, S_COMMIT)) != SQLITE_DONE) {
        int rc = db_error(h, "cannot commit");
        mt_hist_rollback(h);
        return rc;
    }
    h->mode = H_IDLE;
    /* Versions may have come into the database: no handle goes on from
     * what it knew (this one included, whose next id may have moved). */
    h->synced = 0;
    /* A redaction or a prune whose log keeps what it erased says so. */
    if (log_emptied(h) < 0 && h->dropped)
        kept = errno;
    if (h->owner)
        *h->owner = h->token;
    if (h->dropped || h->truncate_due) {
        /* The pages that held it are zeros in the database now; the log's
         * copies of them go with the log. The store's lock is held here, so
         * readers (another process's log) are waited for briefly, and a
         * truncation they hold up is tried again at the next commit. */
        int log = -1, done = -1;

        sqlite3_busy_timeout(h->db, 250);
        h->truncate_due = sqlite3_wal_checkpoint_v2(h->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log,
                                                    &done) != SQLITE_OK ||
                          log != 0;
        sqlite3_busy_timeout(h->db, BUSY_MS);
        h->dropped = 0;
    }
    if (kept)
        return mt_error_set(MT_EIO,
                            "history: content was erased from the database, but the history's "
                            "log could not be emptied (%s); run the command again to empty it",
                            strerror(kept));
    return 0;
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
        struct over *o = over_find(h, path);
        if (o) {
            if (o->found)
                *out = o->m;
            seen_set(h, path, o->found, out);
            return o->found;
        }
    }
    s = stmt(h, S_FIND);
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        sqlite3_reset(s);
        seen_set(h, path, 0, NULL);
        return 0;
    }
    if (step != SQLITE_ROW)
        return db_error(h, "cannot look up a memory");
    snprintf(out->id, sizeof(out->id), "%s", (const char *)sqlite3_column_text(s, 0));
    text = (const char *)sqlite3_column_text(s, 1);
    snprintf(out->sha256, sizeof(out->sha256), "%s", text ? text : "");
    out->size = (uint64_t)sqlite3_column_int64(s, 2);
    out->fp.ino = (uint64_t)sqlite3_column_int64(s, 3);
    out->fp.size = out->size;
    out->fp.mtime_ns = sqlite3_column_int64(s, 4);
    out->fp.ctime_ns = sqlite3_column_int64(s, 5);
    sqlite3_reset(s);
    seen_set(h, path, 1, out);
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
    r.at = now_ms();
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
    if (h->mode == H_LOGGED && r.len >= LOG_BATCH_BYTES && (rc = escalate(h)) < 0)
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
        if ((rc = apply_rec(h, &r, NULL)) < 0)
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
          (rc = over_set(h, e->previous ? e->previous : e->path, 0, NULL, 0)) < 0) ||
         (e->op != MT_VERSION_DELETED && (rc = over_set(h, e->path, 1, &now, r.has_fp)) < 0)))
        return rc;
    seen_set(h, e->path, e->op != MT_VERSION_DELETED, &now);
    return 0;
}

static sqlite3_stmt *lazy_stmt(mt_hist *h, int which)
{
    if (!h->lazy[which]) {
        if (sqlite3_prepare_v3(h->db, lazy_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
                               &h->lazy[which], NULL) != SQLITE_OK)
            return NULL;
    } else {
        sqlite3_reset(h->lazy[which]);
        sqlite3_clear_bindings(h->lazy[which]);
    }
    return h->lazy[which];
}

/* Run a statement of the record of ids on one or two paths. */
static int track_run(mt_hist *h, int which, const char *a, const char *b)
{
    sqlite3_stmt *s;
    int step;

    if ((step = escalate(h)) < 0)
        return step;
    seen_forget(h);
    if (!(s = lazy_stmt(h, which)))
        return db_error(h, "cannot record which memory is where");
    sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    sqlite3_reset(s);
    return step == SQLITE_DONE ? 0 : db_error(h, "cannot record which memory is where");
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

    if ((step = escalate(h)) < 0)
        return step;
    if (!(s = lazy_stmt(h, which)))
        return db_error(h, what);
    if (a)
        sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    sqlite3_reset(s);
    if (step == SQLITE_ROW)
        return 1;
    return step == SQLITE_DONE ? 0 : db_error(h, what);
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
        return db_error(h, "cannot look up a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        snprintf(out, 24, "%s", (const char *)sqlite3_column_text(s, 0));
    /* Reset at once: a statement left on a row holds a read transaction. */
    sqlite3_reset(s);
    if (step == SQLITE_ROW)
        return 1;
    return step == SQLITE_DONE ? 0 : db_error(h, "cannot look up a memory");
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
        if ((rc = over_set(h, path, 1, &m, 1)) < 0)
            return rc;
        seen_set(h, path, 1, &m);
        return 0;
    }
    seen_forget(h);
    if (sqlite3_prepare_v2(
            h->db, "UPDATE memories SET ino = ?2, mtime_ns = ?3, ctime_ns = ?4 WHERE path = ?1", -1,
            &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot record a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)fp->ino);
    sqlite3_bind_int64(s, 3, fp->mtime_ns);
    sqlite3_bind_int64(s, 4, fp->ctime_ns);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = db_error(h, "cannot record a memory");
    sqlite3_finalize(s);
    return rc;
}

int mt_hist_prune(mt_hist *h, const char *memory_id, unsigned keep)
{
    int rc;

    if (h->mode != H_LOGGED)
        return prune_memory(h, memory_id, keep);
    /* The change's last record carries the cap, and the load prunes after
     * it: where a transaction would have, and after no other record of the
     * change (a version found on the disk, a move). */
    if (h->change_recs && strcmp(h->last_mem, memory_id) == 0) {
        mt_hist_rec_set_keep(h->change.ptr + h->last_rec, keep);
        return 0;
    }
    /* Not the memory this change just recorded: pruned in a transaction. */
    if ((rc = escalate(h)) < 0)
        return rc;
    return prune_memory(h, memory_id, keep);
}

int mt_hist_each(mt_hist *h, const char *path, mt_hist_each_cb cb, void *payload)
{
    sqlite3_stmt *s = NULL;
    int rc, step;

    if ((rc = escalate(h)) < 0)
        return rc;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT path, id, sha256, size, ino, mtime_ns, ctime_ns FROM memories "
                           "WHERE (?1 = '' OR path = ?1 OR "
                           "(path > ?1 || '/' AND path < ?1 || '0')) ORDER BY path",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot list memories");
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
        rc = db_error(h, "cannot list memories");
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
    if (sqlite3_prepare_v2(h->db,
                           q->memory_id ? VERSION_COLUMNS "WHERE memory_id = ?2 AND " FILTER
                                        : VERSION_COLUMNS "WHERE ?2 IS NULL AND " FILTER,
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot list versions");
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
            rc = db_error(h, "cannot list versions");
    }
done:
    sqlite3_finalize(s);
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
        return db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        rc = version_row(out, s);
    else if (step == SQLITE_DONE)
        rc = mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", id);
    else
        rc = db_error(h, "cannot read a version");
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
        return db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", id);
    } else if (step != SQLITE_ROW) {
        rc = db_error(h, "cannot read a version");
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

int mt_hist_redact(mt_hist *h, int64_t id)
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
        rc = db_error(h, "cannot redact");
        goto fail;
    }
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, id);
        goto fail;
    }
    if (step != SQLITE_ROW) {
        rc = db_error(h, "cannot redact");
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
        rc = db_error(h, "cannot redact");
        goto fail;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (*sha && (rc = drop_content(h, sha)) < 0)
        goto fail;
    /* The search index in this database may hold the version's words: the
     * memory indexed at its path when it was current (a search since then
     * may not have caught up), or the terms FTS5 keeps of replaced words. */
    if ((rc = mt_search_index_erase(h->db, path)) < 0)
        goto fail;
    free(path);
    /* The path is gone too: its pages are rewritten, so truncate the log. */
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
        return db_error(h, "cannot read a version");
    sqlite3_bind_int64(s, 1, id);
    step = sqlite3_step(s);
    if (step == SQLITE_DONE) {
        rc = mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, id);
    } else if (step != SQLITE_ROW) {
        rc = db_error(h, "cannot read a version");
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
        rc = db_error(h, "cannot replace a version's content");
        goto fail;
    }
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, sha, 64, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)out_len);
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = db_error(h, "cannot replace a version's content");
        goto fail;
    }
    sqlite3_finalize(s);
    s = NULL;
    /* The old content goes with its last version, erased as a redaction's. */
    if ((rc = drop_content(h, f.sha)) < 0)
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
    if ((rc = escalate(h)) < 0)
        return rc;
    seen_forget(h);
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
        return db_error(h, "cannot read a version");
    sqlite3_bind_text(s, 1, m.id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, MT_VERSION_DELETED);
    sqlite3_bind_text(s, 3, m.sha256, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_DONE)
        rc = db_error(h, "cannot read a version");
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
        return db_error(h, "cannot replace a version's content");
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)len);
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : db_error(h, "cannot replace a version's content");
    sqlite3_finalize(s);
    s = NULL;
    if (rc < 0)
        return rc;
    if (sqlite3_prepare_v2(h->db,
                           "UPDATE memories SET sha256 = ?2, size = ?3, ino = ?4, mtime_ns = ?5, "
                           "ctime_ns = ?6 WHERE path = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot record a memory");
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)len);
    if (fp) {
        sqlite3_bind_int64(s, 4, (int64_t)fp->ino);
        sqlite3_bind_int64(s, 5, fp->mtime_ns);
        sqlite3_bind_int64(s, 6, fp->ctime_ns);
    }
    rc = sqlite3_step(s) == SQLITE_DONE ? 0 : db_error(h, "cannot record a memory");
    sqlite3_finalize(s);
    if (rc < 0)
        return rc;
    seen_forget(h);
    /* The old content goes with its last version, erased as a redaction's. */
    return drop_content(h, m.sha256);
}

int mt_hist_scrub_words(mt_hist *h, const char *path)
{
    char what[1000];
    int rc;

    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    if ((rc = mt_search_index_erase(h->db, path)) < 0) {
        mt_hist_rollback(h);
        return rc;
    }
    /* The index's pages that held the words are rewritten: empty the log. */
    h->dropped = 1;
    snprintf(what, sizeof(what), "the words of %.900s were erased from the search index", path);
    return commit_erased(h, what, "them", "the same command");
}

int mt_hist_count(mt_hist *h, uint64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;

    *out = 0;
    if (sqlite3_prepare_v2(h->db, "SELECT count(*) FROM versions", -1, &s, NULL) != SQLITE_OK)
        return db_error(h, "cannot count versions");
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(s, 0);
    else
        rc = db_error(h, "cannot count versions");
    sqlite3_finalize(s);
    return rc;
}

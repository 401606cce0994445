/*
 * Opening and closing the history database: its schema and upgrades, its
 * statements, and the registry of open histories a forked child drops.
 */
#include "machinery/hist_internal.h"
#include "util/sha256.h"
#include "machinery/sqlite_wal.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

static void hist_free(mt_hist *h);

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

int mt_hist_db_error(mt_hist *h, const char *what)
{
    int code = sqlite3_errcode(h->db);
    int rc = code == SQLITE_BUSY || code == SQLITE_LOCKED ? MT_EBUSY
             : code == SQLITE_NOMEM                       ? MT_ENOMEM
                                                          : MT_EIO;

    return mt_error_set(rc, "history database: %s: %s", what, sqlite3_errmsg(h->db));
}

sqlite3_stmt *mt_hist_stmt(mt_hist *h, int which)
{
    sqlite3_stmt *s = h->st[which];

    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

int64_t mt_hist_now_ms(void)
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
            rc = h->db ? mt_hist_db_error(h, "cannot open it") : MT_ENOMEM;
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
            rc = mt_hist_db_error(h, "cannot prepare a statement");
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

    mt_hist_seen_forget(h);
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
    mt_hist_over_clear(h);
    free(h->over);
    mt_buf_dispose(&h->change);
    free(h);
}

sqlite3_stmt *mt_hist_lazy(mt_hist *h, int which, const char *text)
{
    if (!h->lazy[which]) {
        if (sqlite3_prepare_v3(h->db, text, -1, SQLITE_PREPARE_PERSISTENT, &h->lazy[which], NULL) !=
            SQLITE_OK)
            return NULL;
    } else {
        sqlite3_reset(h->lazy[which]);
        sqlite3_clear_bindings(h->lazy[which]);
    }
    return h->lazy[which];
}

/* A statement stepped to a row and left there holds a read transaction
 * open: a later BEGIN IMMEDIATE then fails at once (SQLite cannot wait on a
 * snapshot another process has moved past), and a checkpoint cannot
 * truncate the log under it. Every statement is reset between changes. */
void mt_hist_reset_all(mt_hist *h)
{
    int i;

    for (i = 0; i < S_COUNT; i++)
        sqlite3_reset(h->st[i]);
    for (i = 0; i < L_COUNT; i++)
        if (h->lazy[i])
            sqlite3_reset(h->lazy[i]);
}

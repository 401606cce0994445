/*
 * The SQLite driver of the SQL store (db.h): one database file for every
 * tenant, in write-ahead-log mode, so readers never wait for a writer.
 *
 * A change is BEGIN IMMEDIATE with a busy timeout of the op's lock timeout:
 * the writers of all processes queue on the database's one write lock, and
 * one that waited too long gets MT_EBUSY, never "database is locked" half
 * way through. Durability: full is synchronous=FULL (every commit synced),
 * file is NORMAL (synced at checkpoints; a power cut may lose the newest
 * commits, never the database), none is OFF.
 *
 * Content that goes (a redaction, versions pruned) must be gone from the
 * disk: secure_delete overwrites freed pages, and a checkpoint that truncates
 * the log follows the commit that removed it, so no frame keeps a copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db/db.h"
#include "machinery/fts5_rank.h"
#include "machinery/sqlite_wal.h"
#include "search/words.h"

#define READ_BUSY_MS 10000

/* 1 when search_clean's table and its seven triggers are all in the schema
 * (see search_clean_schema). */
#define SEARCH_CLEAN_WHOLE                                                                         \
    "(SELECT count(*) FROM sqlite_master WHERE (type, name, tbl_name) IN (VALUES"                  \
    "  ('table', 'search_clean', 'search_clean'),"                                                 \
    "  ('trigger', 'search_clean_node_put', 'nodes'),"                                             \
    "  ('trigger', 'search_clean_node_gone', 'nodes'),"                                            \
    "  ('trigger', 'search_clean_node_set', 'nodes'),"                                             \
    "  ('trigger', 'search_clean_node_out', 'nodes'),"                                             \
    "  ('trigger', 'search_clean_doc_put', 'search_docs'),"                                        \
    "  ('trigger', 'search_clean_doc_gone', 'search_docs'),"                                       \
    "  ('trigger', 'search_clean_doc_set', 'search_docs'))) = 8"

/* The statements SQLite writes in its own way; NULL: the neutral text. */
/* Each element is one statement, its text split over lines: no comma is missing.
 * NOLINTBEGIN(bugprone-suspicious-missing-comma) */
static const char *const sq_sql[MT_DB_STMT_COUNT] = {
    /* mt_rank() (fts5_rank.h: bm25()'s order) is smaller for better
     * matches: its negation is the score.
     * Searching everything of a tenant alone in the file, the best ?6 + 1
     * matches are found first and each joined to its row (a join is a read
     * of a page of words): when they are every match, or the ?6-th ranks
     * strictly above the next, the answer is among them. Else (ties at the
     * cut, a directory, other tenants) the whole query, which joins every
     * match before ranking, ties by path; LIMIT 0 skips what is not run. */
    [MT_DB_SEARCH_FIND] =
        "WITH alone(yes) AS MATERIALIZED (SELECT ?2 = '' AND NOT EXISTS (SELECT 1 FROM "
        "  search_docs WHERE tenant < ?1) AND NOT EXISTS (SELECT 1 FROM search_docs WHERE "
        "  tenant > ?1)),"
        " top(id, s) AS MATERIALIZED (SELECT rowid, mt_rank(search_words) FROM search_words "
        "  WHERE search_words MATCH ?5 ORDER BY mt_rank(search_words) "
        "  LIMIT CASE WHEN (SELECT yes FROM alone) THEN ?6 + 1 ELSE 0 END),"
        " cand(path, s, ok) AS MATERIALIZED (SELECT d.path, top.s, coalesce(d.tenant = ?1, 0) "
        "  FROM top LEFT JOIN search_docs d ON d.id = top.id),"
        " fast(yes) AS MATERIALIZED (SELECT (SELECT yes FROM alone) AND "
        "  NOT EXISTS (SELECT 1 FROM cand WHERE NOT ok) AND ((SELECT count(*) FROM cand) <= ?6 "
        "  OR (SELECT s FROM cand ORDER BY s LIMIT 1 OFFSET ?6 - 1) < "
        "  (SELECT s FROM cand ORDER BY s LIMIT 1 OFFSET ?6)))"
        "SELECT path, -s FROM (SELECT path, s FROM cand WHERE (SELECT yes FROM fast) "
        " UNION ALL SELECT * FROM (SELECT d.path, mt_rank(search_words) FROM search_words "
        "  JOIN search_docs d ON d.id = search_words.rowid WHERE search_words MATCH ?5 AND "
        "  d.tenant = ?1 AND (?2 = '' OR d.path = ?2 OR (d.path > ?3 AND d.path < ?4)) "
        "  ORDER BY mt_rank(search_words), d.path "
        "  LIMIT CASE WHEN (SELECT yes FROM fast) THEN 0 ELSE ?6 END)) "
        "ORDER BY s, path LIMIT ?6",
    /* The cookie is read in the statement's own snapshot, as the row is. */
    /* Every tenant's words are in the one FTS5 table: its merge is theirs
     * too. ?1 is bound as every statement's; the merge needs no tenant. */
    [MT_DB_SEARCH_MERGE] = "INSERT INTO search_words(search_words) SELECT 'optimize' "
                           "WHERE ?1 IS NOT NULL",
    [MT_DB_SEARCH_FRESH] = "SELECT 1 FROM search_clean WHERE tenant = ?1 AND cap = ?2 AND "
                           "cookie = (SELECT schema_version FROM pragma_schema_version)",
    /* No row while a trigger is missing: the changes would go unrecorded. */
    [MT_DB_SEARCH_FRESH_SET] =
        "INSERT INTO search_clean(tenant, cap, cookie) SELECT ?1, ?2, schema_version FROM "
        "pragma_schema_version WHERE " SEARCH_CLEAN_WHOLE " "
        "ON CONFLICT(tenant) DO UPDATE SET cap = excluded.cap, cookie = excluded.cookie",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

typedef struct {
    char *path;
    mt_durability durability;
    unsigned flags; /* MT_STORE_OPEN_* */
} sqlite_cfg;

struct mt_db_conn {
    struct mt_db_conn *next; /* every open connection of this process (the registry) */
    unsigned forks;          /* the forks counted when it was opened */
    sqlite3 *db;             /* NULL once closed */
    sqlite3_stmt *st[MT_DB_STMT_COUNT];
    const char *path;
    mt_durability durability;
    int truncate_due; /* a scrub readers held up: tried again at each commit */
    int read_only;    /* a copy in memory of a database that cannot be written */
};

/*
 * After a fork the child holds copies of its parent's connections, and
 * SQLite keeps one record per database file and process (its POSIX locks,
 * its mapping of the -shm file): a connection the child opens to the same
 * file would share the inherited record, whose locks the child does not
 * hold. So before the first open in a child every inherited connection is
 * closed (which releases only the child's view; with the log kept,
 * PERSIST_WAL, nothing is deleted), as the file store's history does.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mt_db_conn *registry;
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

static void conn_shut(mt_db_conn *c)
{
    int i;

    for (i = 0; i < MT_DB_STMT_COUNT; i++) {
        sqlite3_finalize(c->st[i]);
        c->st[i] = NULL;
    }
    sqlite3_close(c->db);
    c->db = NULL;
}

/* Unlink c from the registry (registry locked). */
static void registry_remove(mt_db_conn *c)
{
    mt_db_conn **p;

    for (p = &registry; *p && *p != c; p = &(*p)->next)
        ;
    if (*p)
        *p = c->next;
}

static void drop_inherited(void)
{
    mt_db_conn **p = &registry;

    while (*p) {
        mt_db_conn *c = *p;
        if (c->forks != forks) {
            *p = c->next;
            conn_shut(c);
        } else {
            p = &c->next;
        }
    }
}

static int sq_error(mt_db_conn *c, const char *what)
{
    int code = sqlite3_errcode(c->db);
    int rc;

    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        rc = MT_EBUSY;
        break;
    case SQLITE_NOMEM:
        rc = MT_ENOMEM;
        break;
    default:
        rc = MT_EIO;
    }
    return mt_error_set(rc, "SQLite store %s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

static void cfg_free(void *p)
{
    sqlite_cfg *cfg = p;

    if (!cfg)
        return;
    free(cfg->path);
    free(cfg);
}

/*
 * Schema 3: the search index. search_docs holds each file's words (as
 * mt_search_index_text cut them) and the FTS5 table indexes them with the
 * ascii tokenizer, which splits only at the spaces between them (every
 * non-ASCII byte is part of a word), so the words are memtool's own. The
 * words are the FTS5 table's external content, kept in step by triggers:
 * stored once. All tenants share the one FTS5 table: a search joins its
 * rows to its tenant's search_docs, so it finds only the tenant's own
 * memories, but bm25's collection statistics (how many memories hold a
 * word, their average length) count every tenant's: a score depends a
 * little on what other tenants hold, never which memories are found.
 */
#define SEARCH_DOCS_TABLE                                                                          \
    "CREATE TABLE search_docs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, path TEXT NOT NULL,"   \
    "  sha256 TEXT NOT NULL, words TEXT NOT NULL, UNIQUE (tenant, path));"
#define SEARCH_WORDS_TABLE                                                                         \
    "CREATE VIRTUAL TABLE search_words USING fts5(words, content='search_docs',"                   \
    "  content_rowid='id', tokenize='ascii', " MT_FTS5_PREFIXES ");"                               \
    "CREATE TRIGGER search_docs_put AFTER INSERT ON search_docs BEGIN"                             \
    "  INSERT INTO search_words(rowid, words) VALUES (new.id, new.words); END;"                    \
    "CREATE TRIGGER search_docs_gone AFTER DELETE ON search_docs BEGIN"                            \
    "  INSERT INTO search_words(search_words, rowid, words) VALUES ('delete', old.id, old.words);" \
    "  END;"                                                                                       \
    "CREATE TRIGGER search_docs_set AFTER UPDATE ON search_docs BEGIN"                             \
    "  INSERT INTO search_words(search_words, rowid, words) VALUES ('delete', old.id, old.words);" \
    "  INSERT INTO search_words(rowid, words) VALUES (new.id, new.words); END;"
#define SEARCH_SCHEMA SEARCH_DOCS_TABLE SEARCH_WORDS_TABLE

/*
 * The FTS5 table of an older memtool, made without prefix indexes
 * (MT_FTS5_PREFIXES), is made again when a store is opened, as search_clean
 * is: not a schema change (an older memtool reads and writes the new table
 * alike). Its words go with it: search_docs is emptied (its delete trigger
 * dropped first, as it would delete from the new table rows it never had),
 * so every tenant's next search indexes its memories again, in its
 * batches, rather than this open holding the write lock for all of them.
 */
static const char search_words_remake[] =
    "DROP TRIGGER IF EXISTS search_docs_put; DROP TRIGGER IF EXISTS search_docs_gone;"
    "DROP TRIGGER IF EXISTS search_docs_set;"
    "DROP TABLE search_words; DELETE FROM search_docs;" SEARCH_WORDS_TABLE;

/*
 * What lets a search skip its catch-up (the check of every file's SHA-256
 * against its search_docs row, most of a search on a big store): a row per
 * tenant in search_clean, put there by a search that found the tenant's
 * whole index up to date (for the max file size `cap` it indexed to), and
 * deleted by triggers in the transaction of any change to one of the
 * tenant's files, whoever makes it (this memtool, an older one, the sqlite3
 * shell), or of any write to search_docs but that search's own. While the
 * row is there nothing can be stale. Only the first change after a search
 * writes a page: the delete of a row that is not there changes nothing. A
 * directory deleted or changed in place, and columns no search reads (the
 * times), fire nothing. A row put or moved fires whatever its kind: put
 * there by INSERT OR REPLACE (or moved by UPDATE OR REPLACE, plain SQL
 * only), a directory deletes the file it replaces without its delete
 * trigger. A file moved to another tenant (plain SQL only) has a trigger of
 * its own, so that a file's change seeks one row, not two.
 *
 * A row holds the schema cookie of its transaction (`cookie`), and is put
 * there only when every trigger is in the schema: a row whose cookie is not
 * the database's now says nothing, so a trigger dropped (or made again)
 * after it, by any process, while any handle is open, makes each tenant's
 * next search check every file; and while a trigger is missing no row is
 * made, every search checks, until the next open makes it again.
 *
 * Not a schema change: made when missing by any memtool that knows it, kept
 * right by the triggers alone whichever memtool writes. It replaces the
 * change counter of table search_fresh, whose triggers wrote a page at every
 * change: dropped when found (an older memtool's handle still open then
 * fails its next search, it does not answer stale; opened again, it makes
 * its counter again, which the next open of this one drops).
 */
static const char search_clean_schema[] =
    "DROP TRIGGER IF EXISTS search_fresh_node_put; DROP TRIGGER IF EXISTS search_fresh_node_gone;"
    "DROP TRIGGER IF EXISTS search_fresh_node_set; DROP TRIGGER IF EXISTS search_fresh_doc_put;"
    "DROP TRIGGER IF EXISTS search_fresh_doc_gone; DROP TRIGGER IF EXISTS search_fresh_doc_set;"
    "DROP TABLE IF EXISTS search_fresh;"
    "CREATE TABLE IF NOT EXISTS search_clean(tenant TEXT PRIMARY KEY, cap INTEGER NOT NULL,"
    "  cookie INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_node_put AFTER INSERT ON nodes BEGIN"
    "  DELETE FROM search_clean WHERE tenant = new.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_node_gone AFTER DELETE ON nodes"
    "  WHEN old.kind = 1 BEGIN"
    "  DELETE FROM search_clean WHERE tenant = old.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_node_set"
    "  AFTER UPDATE OF tenant, path, kind, sha256, size ON nodes"
    "  WHEN old.tenant IS NOT new.tenant OR old.path IS NOT new.path OR"
    "  ((old.kind = 1 OR new.kind = 1) AND (old.kind IS NOT new.kind OR"
    "  old.sha256 IS NOT new.sha256 OR old.size IS NOT new.size)) BEGIN"
    "  DELETE FROM search_clean WHERE tenant = new.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_node_out AFTER UPDATE OF tenant ON nodes"
    "  WHEN old.kind = 1 AND old.tenant IS NOT new.tenant BEGIN"
    "  DELETE FROM search_clean WHERE tenant = old.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_doc_put AFTER INSERT ON search_docs BEGIN"
    "  DELETE FROM search_clean WHERE tenant = new.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_doc_gone AFTER DELETE ON search_docs BEGIN"
    "  DELETE FROM search_clean WHERE tenant = old.tenant; END;"
    "CREATE TRIGGER IF NOT EXISTS search_clean_doc_set AFTER UPDATE ON search_docs BEGIN"
    "  DELETE FROM search_clean WHERE tenant IN (old.tenant, new.tenant); END;"
    "DELETE FROM search_clean;";

/* 1 when the schema holds search_clean's table and triggers and nothing of
 * search_fresh's. */
static const char search_clean_check[] =
    "SELECT " SEARCH_CLEAN_WHOLE " AND NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name IN ("
    "  'search_fresh', 'search_fresh_node_put', 'search_fresh_node_gone', 'search_fresh_node_set',"
    "  'search_fresh_doc_put', 'search_fresh_doc_gone', 'search_fresh_doc_set'))";

/* Schema 4: a content's count of references, a row of its own (db.h). */
#define CONTENT_REFS_TABLE                                                                         \
    "CREATE TABLE content_refs(tenant TEXT NOT NULL, sha256 TEXT NOT NULL,"                        \
    "  refs INTEGER NOT NULL, PRIMARY KEY (tenant, sha256)) WITHOUT ROWID;"

/* Schema 5: how far the prune by days got, and versions indexed by time
 * (mt_db_prune_days). */
#define EXPIRY_COLUMNS                                                                             \
    "expired_before INTEGER NOT NULL DEFAULT 0, expiry_seen INTEGER NOT NULL DEFAULT 0"
#define VERSIONS_AT "CREATE INDEX versions_at ON versions(tenant, at);"
/* What the planner is told of versions, in place of statistics: a tenant is
 * most of the table (one user's file holds one or a few), and a memory has
 * a few versions. Without it SQLite takes `tenant = ?` for as selective as
 * any key, and reads a memory's versions, or a prune's, by walking every
 * version of the tenant. ANALYZE of sqlite_schema makes the table, and, run
 * again, has the connection read what was put in it. */
#define VERSIONS_STATS                                                                             \
    "ANALYZE sqlite_schema; DELETE FROM sqlite_stat1 WHERE tbl = 'versions';"                      \
    "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES"                                              \
    "  ('versions', 'sqlite_autoindex_versions_1', '1000000 1000000 1'),"                          \
    "  ('versions', 'versions_memory', '1000000 1000000 10 1'),"                                   \
    "  ('versions', 'versions_path', '1000000 1000000 10 1'),"                                     \
    "  ('versions', 'versions_at', '1000000 1000000 2');"                                          \
    "ANALYZE sqlite_schema;"

static const char schema[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE usage(tenant TEXT PRIMARY KEY, bytes INTEGER NOT NULL, files INTEGER NOT NULL,"
    "  dirs INTEGER NOT NULL, next_version INTEGER NOT NULL, " EXPIRY_COLUMNS ","
    "  encryption TEXT, unrecorded INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
    "CREATE TABLE nodes(tenant TEXT NOT NULL, path TEXT NOT NULL, kind INTEGER NOT NULL,"
    "  memory_id TEXT, sha256 TEXT, size INTEGER NOT NULL, accessed INTEGER NOT NULL DEFAULT 0,"
    "  modified INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant, path)) WITHOUT ROWID;"
    "CREATE TABLE contents(tenant TEXT NOT NULL, sha256 TEXT NOT NULL, data BLOB NOT NULL,"
    "  PRIMARY KEY (tenant, sha256));" CONTENT_REFS_TABLE
    "CREATE TABLE versions(tenant TEXT NOT NULL, id INTEGER NOT NULL, memory_id TEXT NOT NULL,"
    "  op INTEGER NOT NULL, path TEXT, previous_path TEXT, actor TEXT NOT NULL,"
    "  at INTEGER NOT NULL, sha256 TEXT, size INTEGER NOT NULL, redacted INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant, id)) WITHOUT ROWID;"
    "CREATE INDEX versions_memory ON versions(tenant, memory_id, id);"
    "CREATE INDEX versions_path ON versions(tenant, path, id);"
    "CREATE INDEX nodes_memory ON nodes(tenant, memory_id);" VERSIONS_AT VERSIONS_STATS
        SEARCH_SCHEMA "INSERT INTO meta VALUES ('schema', '7');";

/* From each schema to the next: a file holds one user's memories (no
 * operator stands between), so an older store is brought up to date when
 * opened, in the transaction that checks it. Schema 2: last access, which
 * schema 1 did not record, counted from the upgrade. Schema 3: the search
 * index, empty (the first search fills it). Schema 4: each content's count
 * moves from its row to content_refs, and the column goes. Dropping it
 * rewrites every content once, here, in the open's transaction, rather
 * than at later changes of its count. Keeping the column unused would
 * spare the upgrade that, but a store made new and one upgraded would then
 * differ, and the column (NOT NULL, without a default) would still have to
 * be written by every new content. Schema 5: the record of how far the prune
 * by days got, in each tenant's usage row (0: none yet, so the first prune
 * looks at every version once), the index of versions by time, and what the
 * planner is told of versions (VERSIONS_STATS). Schema 6: each tenant's
 * record that it is encrypted (NULL: none), in its usage row. Schema 7: the
 * usage row's mark of a change made with history off (db.h), set in every
 * row upgraded, since an older memtool's such changes left none. */
static const char *const upgrades[] = {
    NULL,
    "ALTER TABLE nodes ADD COLUMN accessed INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE nodes ADD COLUMN modified INTEGER NOT NULL DEFAULT 0;"
    "UPDATE nodes SET accessed = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),"
    "  modified = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);"
    "UPDATE meta SET value = '2' WHERE key = 'schema';",
    SEARCH_SCHEMA "UPDATE meta SET value = '3' WHERE key = 'schema';",
    CONTENT_REFS_TABLE "INSERT INTO content_refs(tenant, sha256, refs)"
                       "  SELECT tenant, sha256, refs FROM contents;"
                       "ALTER TABLE contents DROP COLUMN refs;"
                       "UPDATE meta SET value = '4' WHERE key = 'schema';",
    "ALTER TABLE usage ADD COLUMN expired_before INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE usage ADD COLUMN expiry_seen INTEGER NOT NULL DEFAULT 0;" VERSIONS_AT
        VERSIONS_STATS "UPDATE meta SET value = '5' WHERE key = 'schema';",
    "ALTER TABLE usage ADD COLUMN encryption TEXT;"
    "UPDATE meta SET value = '6' WHERE key = 'schema';",
    "ALTER TABLE usage ADD COLUMN unrecorded INTEGER NOT NULL DEFAULT 0;"
    "UPDATE usage SET unrecorded = 1;"
    "UPDATE meta SET value = '7' WHERE key = 'schema';",
};

/* The first column of a row as a number (a count, a schema version). */
static int long_row(void *p, int n, char **v, char **names)
{
    (void)names;
    if (n > 0 && v[0])
        *(long *)p = strtol(v[0], NULL, 10);
    return 0;
}

/* Create the schema in an empty database, or check that it is memtool's. */
static int check_schema(mt_db_conn *c)
{
    char *msg = NULL;
    long version = 0, tables = 0, clean = 0;
    int rc = 0;

    sqlite3_busy_timeout(c->db, READ_BUSY_MS);
    if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        goto sqlite_fail;
    if (sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_master", long_row, &tables, &msg) !=
        SQLITE_OK)
        goto sqlite_fail;
    if (tables == 0) {
        if (sqlite3_exec(c->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(c->db, search_clean_schema, NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(c->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
            goto sqlite_fail;
        return 0;
    }
    if (sqlite3_exec(c->db, "SELECT value FROM meta WHERE key = 'schema'", long_row, &version,
                     &msg) != SQLITE_OK ||
        version <= 0) {
        rc = mt_error_set(MT_EINVAL,
                          "%s is an SQLite database but not a memtool store: give the path of a "
                          "memtool store, or of a new file",
                          c->path);
        goto done;
    }
    if (version > MT_DB_SCHEMA_VERSION) {
        rc = mt_error_set(MT_EINVAL,
                          "%s holds a memtool store of schema %ld, newer than this memtool's %d: "
                          "upgrade memtool",
                          c->path, version, MT_DB_SCHEMA_VERSION);
        goto done;
    }
    for (; version < MT_DB_SCHEMA_VERSION; version++)
        if (sqlite3_exec(c->db, upgrades[version], NULL, NULL, &msg) != SQLITE_OK)
            goto sqlite_fail;
    if (sqlite3_exec(c->db, search_clean_check, long_row, &clean, &msg) != SQLITE_OK)
        goto sqlite_fail;
    if (!clean && sqlite3_exec(c->db, search_clean_schema, NULL, NULL, &msg) != SQLITE_OK)
        goto sqlite_fail;
    if ((rc = mt_fts5_prefixes_missing(c->db)) < 0)
        goto done;
    if (rc > 0 && sqlite3_exec(c->db, search_words_remake, NULL, NULL, &msg) != SQLITE_OK)
        goto sqlite_fail;
    rc = 0;
    if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
        goto sqlite_fail;
    goto done;
sqlite_fail:
    if ((sqlite3_errcode(c->db) & 0xff) == SQLITE_NOTADB)
        rc = mt_error_set(MT_EINVAL,
                          "%s is not a memtool store (not an SQLite database): give the path of a "
                          "memtool store, or of a new file",
                          c->path);
    else
        rc = mt_error_set((sqlite3_errcode(c->db) & 0xff) == SQLITE_BUSY ? MT_EBUSY : MT_EIO,
                          "SQLite store %s: cannot set it up: %s", c->path,
                          msg ? msg : sqlite3_errmsg(c->db));
done:
    sqlite3_free(msg);
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Whether the directory holding path may be written: SQLite makes the log
 * and shared-memory files beside the database. */
static int dir_writable(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int ok;

    if (!slash)
        return access(".", W_OK) == 0 || (errno != EROFS && errno != EACCES);
    if (!(dir = strndup(path, slash == path ? 1 : (size_t)(slash - path))))
        return 1;
    ok = access(dir, W_OK) == 0 || (errno != EROFS && errno != EACCES);
    free(dir);
    return ok;
}

static int sq_connect(mt_db_conn **out, void *p, const char *tenant)
{
    sqlite_cfg *cfg = p;
    mt_db_conn *c = NULL;
    struct stat sb;
    char *msg = NULL;
    const char *sync;
    int rc = 0, fd, read_only = 0;

    (void)tenant;
    *out = NULL;
    pthread_once(&forks_once, watch_forks);
    pthread_mutex_lock(&registry_lock);
    drop_inherited();
    pthread_mutex_unlock(&registry_lock);
    /* A new store is made private (mode 0600); SQLite gives its log and
     * shared-memory files the database's mode. A read makes none. */
    fd = open(cfg->path,
              O_RDWR | O_CLOEXEC | O_NOFOLLOW | (cfg->flags & MT_STORE_OPEN_EXISTING ? 0 : O_CREAT),
              0600);
    if (fd < 0 && (errno == EROFS || errno == EACCES)) {
        read_only = 1;
        fd = open(cfg->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    }
    if (fd < 0 && errno == ENOENT && (cfg->flags & MT_STORE_OPEN_EXISTING))
        return mt_error_set(MT_ENOTFOUND,
                            "no store at %s: check --root/--store, or create it with a write",
                            cfg->path);
    if (fd < 0)
        return mt_error_set(errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                            "cannot open the SQLite store %s: %s", cfg->path, strerror(errno));
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return mt_error_set(MT_EINVAL,
                            "%s is not a regular file: give the path of a memtool "
                            "SQLite store, or of a new file",
                            cfg->path);
    }
    close(fd);
    if (!read_only && !dir_writable(cfg->path))
        read_only = 1;
    /* One an older memtool made with the umask's mode is made private. */
    if (!read_only)
        (void)mt_sqlite_make_private(AT_FDCWD, cfg->path, 0);
    if (!(c = calloc(1, sizeof(*c))))
        return mt_error_set(MT_ENOMEM, "out of memory opening the store");
    c->path = cfg->path;
    c->durability = cfg->durability;
    c->read_only = read_only;
    if (read_only) {
        if ((rc = mt_sqlite_open_copy(&c->db, cfg->path)) < 0)
            goto done;
    } else if (sqlite3_open_v2(cfg->path, &c->db,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
                                   /* A read never makes one, even if the file went
                                    * away since the check above. */
                                   (cfg->flags & MT_STORE_OPEN_EXISTING ? 0 : SQLITE_OPEN_CREATE),
                               NULL) != SQLITE_OK) {
        rc = c->db ? sq_error(c, "cannot open it") : mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    sqlite3_extended_result_codes(c->db, 0);
    if ((rc = mt_fts5_rank_register(c->db)) < 0)
        goto done;
    sqlite3_busy_timeout(c->db, READ_BUSY_MS);
    sync = cfg->durability == MT_DURABILITY_FULL   ? "PRAGMA synchronous=FULL;"
           : cfg->durability == MT_DURABILITY_FILE ? "PRAGMA synchronous=NORMAL;"
                                                   : "PRAGMA synchronous=OFF;";
    if (mt_sqlite_setup_wal(c->db, "PRAGMA journal_mode=WAL;", &msg, READ_BUSY_MS) != SQLITE_OK) {
        rc = (sqlite3_errcode(c->db) & 0xff) == SQLITE_NOTADB
                 ? mt_error_set(MT_EINVAL,
                                "%s is not a memtool store (not an SQLite database): give the "
                                "path of a memtool store, or of a new file",
                                cfg->path)
                 : mt_error_set(MT_EIO, "SQLite store %s: cannot set it up: %s", cfg->path,
                                msg ? msg : sqlite3_errmsg(c->db));
        goto done;
    }
    if (sqlite3_exec(c->db, sync, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(c->db,
                     "PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY; "
                     "PRAGMA journal_size_limit=4194304;",
                     NULL, NULL, &msg) != SQLITE_OK) {
        rc = mt_error_set(MT_EIO, "SQLite store %s: cannot set it up: %s", cfg->path,
                          msg ? msg : sqlite3_errmsg(c->db));
        goto done;
    }
    if ((rc = check_schema(c)) < 0)
        goto done;
    {
        /* A close never deletes the log (a forked child's close must not). */
        int persist = 1;
        sqlite3_file_control(c->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    }
    pthread_mutex_lock(&registry_lock);
    c->forks = forks;
    c->next = registry;
    registry = c;
    pthread_mutex_unlock(&registry_lock);
    *out = c;
    c = NULL;
done:
    sqlite3_free(msg);
    if (c) {
        conn_shut(c);
        free(c);
    }
    return rc;
}

static void sq_close(mt_db_conn *c)
{
    pthread_mutex_lock(&registry_lock);
    registry_remove(c);
    pthread_mutex_unlock(&registry_lock);
    conn_shut(c);
    free(c);
}

static void sq_abandon(mt_db_conn *c)
{
    /* The inherited connection is closed, at the latest by the registry
     * before this process's first open; that touches only this process's
     * view of the file. */
    sq_close(c);
}

static void reset_all(mt_db_conn *c)
{
    int i;

    for (i = 0; i < MT_DB_STMT_COUNT; i++)
        if (c->st[i])
            sqlite3_reset(c->st[i]);
}

static int sq_begin_write(mt_db_conn *c, const char *tenant, unsigned lock_timeout_ms)
{
    int rc;

    (void)tenant;
    reset_all(c);
    if (!sqlite3_get_autocommit(c->db))
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_busy_timeout(c->db, lock_timeout_ms > 0 ? (int)lock_timeout_ms : 0);
    rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_busy_timeout(c->db, READ_BUSY_MS);
    if (rc == SQLITE_OK)
        return 0;
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return mt_error_set(MT_EBUSY,
                            "the store %s is locked by another change, still after %u ms: try "
                            "again, or give a longer lock timeout",
                            c->path, lock_timeout_ms);
    return sq_error(c, "cannot begin a change");
}

static int sq_begin_read(mt_db_conn *c)
{
    reset_all(c);
    if (!sqlite3_get_autocommit(c->db))
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return sq_error(c, "cannot begin a read");
    return 0;
}

static int sq_ready_single(mt_db_conn *c)
{
    reset_all(c);
    if (!sqlite3_get_autocommit(c->db))
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return 0;
}

static void try_truncate(mt_db_conn *c)
{
    int log = -1, done = -1;

    /* Readers of other processes may hold old frames for a moment: waited
     * for briefly, and a truncation they hold up is tried at the next commit. */
    sqlite3_busy_timeout(c->db, 250);
    c->truncate_due = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log,
                                                &done) != SQLITE_OK ||
                      log != 0;
    sqlite3_busy_timeout(c->db, READ_BUSY_MS);
}

static int sq_commit(mt_db_conn *c)
{
    reset_all(c);
    if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return sq_error(c, "cannot commit");
    if (c->truncate_due)
        try_truncate(c);
    return 0;
}

static void sq_rollback(mt_db_conn *c)
{
    reset_all(c);
    if (!sqlite3_get_autocommit(c->db))
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

static int sq_scrub(mt_db_conn *c)
{
    try_truncate(c);
    return c->truncate_due ? mt_error_set(MT_EBUSY, "the log could not be truncated yet") : 0;
}

static int64_t sq_exec(mt_db_conn *c, mt_db_stmt id, const mt_db_value *args, size_t nargs,
                       mt_db_row_cb cb, void *payload)
{
    mt_db_value cols[16];
    sqlite3_stmt *s;
    int64_t rows = 0;
    size_t i;
    int step, ncols, rc = 0;

    if ((unsigned)id >= MT_DB_STMT_COUNT)
        return mt_error_set(MT_EINVAL, "no such statement");
    if (!(s = c->st[id])) {
        const char *text = sq_sql[id] ? sq_sql[id] : mt_db_sql[id];

        if (!text)
            return mt_error_set(MT_ENOSYS, "the SQLite store has no statement %d", (int)id);
        if (sqlite3_prepare_v3(c->db, text, -1, SQLITE_PREPARE_PERSISTENT, &c->st[id], NULL) !=
            SQLITE_OK)
            return sq_error(c, "cannot prepare a statement");
        s = c->st[id];
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    for (i = 0; i < nargs; i++) {
        int k = (int)i + 1, b;
        switch (args[i].type) {
        case MT_DB_INT:
            b = sqlite3_bind_int64(s, k, args[i].i);
            break;
        case MT_DB_TEXT:
            b = sqlite3_bind_text64(s, k, args[i].p, args[i].len, SQLITE_STATIC, SQLITE_UTF8);
            break;
        case MT_DB_BLOB:
            /* A NULL pointer would bind NULL: an empty file is an empty blob. */
            b = args[i].len ? sqlite3_bind_blob64(s, k, args[i].p, args[i].len, SQLITE_STATIC)
                            : sqlite3_bind_zeroblob(s, k, 0);
            break;
        default:
            b = sqlite3_bind_null(s, k);
        }
        if (b != SQLITE_OK)
            return sq_error(c, "cannot bind a value");
    }
    ncols = sqlite3_column_count(s);
    if (ncols > (int)(sizeof(cols) / sizeof(cols[0])))
        return mt_error_set(MT_EINVAL, "a statement with too many columns");
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        int k;
        rows++;
        for (k = 0; k < ncols; k++) {
            mt_db_value *v = &cols[k];
            memset(v, 0, sizeof(*v));
            switch (sqlite3_column_type(s, k)) {
            case SQLITE_INTEGER:
                v->type = MT_DB_INT;
                v->i = sqlite3_column_int64(s, k);
                break;
            case SQLITE_FLOAT:
                v->type = MT_DB_REAL;
                v->d = sqlite3_column_double(s, k);
                break;
            case SQLITE_TEXT:
                v->type = MT_DB_TEXT;
                v->p = (const char *)sqlite3_column_text(s, k);
                v->len = (size_t)sqlite3_column_bytes(s, k);
                break;
            case SQLITE_BLOB:
                v->type = MT_DB_BLOB;
                v->p = sqlite3_column_blob(s, k);
                v->len = (size_t)sqlite3_column_bytes(s, k);
                break;
            default:
                v->type = MT_DB_NULL;
            }
        }
        if (cb && (rc = cb(payload, cols, (size_t)ncols)) != 0)
            break;
    }
    if (rc < 0) {
        sqlite3_reset(s);
        return rc;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        int err = sq_error(c, "cannot run a statement");
        sqlite3_reset(s);
        return err;
    }
    sqlite3_reset(s);
    return ncols > 0 ? rows : (int64_t)sqlite3_changes(c->db);
}

static int sq_unsynced(mt_db_conn *c, int on)
{
    const char *sync = on || c->durability == MT_DURABILITY_NONE ? "PRAGMA synchronous=OFF"
                       : c->durability == MT_DURABILITY_FILE     ? "PRAGMA synchronous=NORMAL"
                                                                 : "PRAGMA synchronous=FULL";

    if (sqlite3_exec(c->db, sync, NULL, NULL, NULL) != SQLITE_OK)
        return sq_error(c, "cannot set the sync mode");
    return 0;
}

static int sq_read_only(mt_db_conn *c)
{
    return c->read_only;
}

static const mt_db_driver sqlite_driver = {
    "SQLite", sq_sql, sq_connect, sq_close, sq_abandon, cfg_free, sq_begin_write, sq_begin_read,
    sq_commit, sq_rollback, sq_exec, sq_scrub, sq_unsynced,
    /* search: FTS5 MATCH over the words as they are */
    mt_search_fts5_match, NULL, sq_ready_single, 1, /* search_fresh */
    0,            /* round_trips: a statement is a call in this process */
    sq_read_only, /* read_only */
};

int mt_store_sqlite_open(mt_store **out, const char *path, const char *tenant,
                         mt_durability durability)
{
    return mt_store_sqlite_open_with(out, NULL, path, tenant, durability, 0);
}

int mt_store_sqlite_open_with(mt_store **out, int *read_only, const char *path, const char *tenant,
                              mt_durability durability, unsigned flags)
{
    sqlite_cfg *cfg;
    int rc;

    if (out)
        *out = NULL;
    if (read_only)
        *read_only = 0;
    if (!out || !path || !*path)
        return mt_error_set(MT_EINVAL, "mt_store_sqlite_open needs an out pointer and a path");
    if (durability != MT_DURABILITY_FULL && durability != MT_DURABILITY_FILE &&
        durability != MT_DURABILITY_NONE)
        return mt_error_set(MT_EINVAL, "unknown durability %d", (int)durability);
    if (!(cfg = calloc(1, sizeof(*cfg))) || !(cfg->path = strdup(path))) {
        free(cfg);
        return mt_error_set(MT_ENOMEM, "out of memory opening the store");
    }
    cfg->durability = durability;
    cfg->flags = flags;
    if ((rc = mt_db_store_open(out, &sqlite_driver, cfg, tenant,
                               flags & MT_STORE_OPEN_EXISTING ? MT_DB_OPEN_EXISTING : 0)) == 0 &&
        read_only)
        *read_only = mt_db_store_read_only(*out);
    return rc;
}

/* The search index in SQLite, brought up to date when searched (see search_index.h). */
#include "machinery/search_index.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "machinery/fts5_rank.h"
#include "search/words.h"

/* The digest of the memories beneath a path when the index last held
 * them exactly, kept by a search that found so. Any change to the
 * memories indexed deletes every one, in its own transaction, whoever
 * makes it (the triggers are in the database): a digest that is here is
 * the digest of what the index holds. `cookie` is the schema's version it
 * was kept under: one from before a trigger was dropped or made again is
 * not trusted, and none is kept unless each trigger is as memtool makes it
 * (its text in sqlite_master, as SQLite keeps it: without IF NOT EXISTS).
 * Whoever can write the database can still make a search answer wrongly
 * (by writing other words under a memory's stamp, or by turning triggers
 * off for a connection): these guard against a change made without
 * knowing of the digests, not against one made to deceive. */
#define SUM_TABLE                                                                                  \
    "CREATE TABLE IF NOT EXISTS search_sum(path TEXT PRIMARY KEY, digest BLOB NOT NULL,"           \
    " cookie INTEGER NOT NULL);"
#define SUM_TRIGGER(name, event)                                                                   \
    name " AFTER " event " ON search_docs BEGIN DELETE FROM search_sum; END"
#define SUM_PUT  SUM_TRIGGER("search_sum_put", "INSERT")
#define SUM_SET  SUM_TRIGGER("search_sum_set", "UPDATE")
#define SUM_GONE SUM_TRIGGER("search_sum_gone", "DELETE")

/* The index's own tables: which memory each row of words is, and the words.
 * Created on first use; a store's other tables never refer to them. */
static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS search_docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
    " stamp TEXT NOT NULL);"
    /* what a search compares with the files, read from the index alone */
    "CREATE INDEX IF NOT EXISTS search_docs_stamps ON search_docs(path, stamp);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_words USING fts5(words, "
    "tokenize='ascii', " MT_FTS5_PREFIXES ");" SUM_TABLE "CREATE TRIGGER IF NOT EXISTS " SUM_PUT ";"
    "CREATE TRIGGER IF NOT EXISTS " SUM_SET ";"
    "CREATE TRIGGER IF NOT EXISTS " SUM_GONE ";";

/* An index made without the prefix indexes goes: its words, and its
 * stamps, so that the next search indexes every memory again, in its
 * batches. Each memory keeps its row and id: a search of an older memtool
 * that planned its batches before this (ids read outside its writes) then
 * writes each memory's words under that memory's id still. The digests'
 * table is made first: the stamps' update fires the triggers that empty
 * it, which fail without it (as when it was dropped by hand). */
static const char REMAKE[] =
    SUM_TABLE "DROP TABLE search_words; UPDATE search_docs SET stamp = '';";

/* Rows at or beneath ?1 ("" all): '/' sorts just before '0'. */
#define BENEATH(col) "(?1 = '' OR " col " = ?1 OR (" col " > ?1 || '/' AND " col " < ?1 || '0'))"
#define D_BENEATH    BENEATH("d.path")

enum {
    Q_DOCS,
    Q_PUT,
    Q_WORDS_DEL,
    Q_WORDS_PUT,
    Q_DOC_DEL,
    Q_FIND,
    Q_VERSION,
    Q_HELD,
    Q_SUM,
    Q_SUM_PUT,
    Q_COUNT
};

static const char *const SQL[Q_COUNT] = {
    [Q_DOCS] = "SELECT id, path, stamp FROM search_docs WHERE " BENEATH("path") " ORDER BY path",
    [Q_PUT] = "INSERT INTO search_docs(path, stamp) VALUES(?1, ?2) ON CONFLICT(path) DO UPDATE "
              "SET stamp = excluded.stamp RETURNING id",
    [Q_WORDS_DEL] = "DELETE FROM search_words WHERE rowid = ?1",
    [Q_WORDS_PUT] = "INSERT INTO search_words(rowid, words) VALUES(?1, ?2)",
    [Q_DOC_DEL] = "DELETE FROM search_docs WHERE id = ?1",
    /* Searching everything, the best ?3 + 1 matches are found first and
     * each joined to its path: when they are every match, or the ?3-th
     * ranks strictly above the next, the answer is among them. Else (ties
     * at the cut, a directory) the whole query, which joins every match
     * before ranking, ties by path; LIMIT 0 skips what is not run.
     * mt_rank() orders as bm25() (fts5_rank.h). */
    [Q_FIND] = "WITH top(id, s) AS MATERIALIZED (SELECT rowid, mt_rank(search_words)"
               " FROM search_words WHERE search_words MATCH ?2 ORDER BY mt_rank(search_words)"
               " LIMIT CASE WHEN ?1 = '' THEN ?3 + 1 ELSE 0 END),"
               " cand(path, s, ok) AS MATERIALIZED (SELECT d.path, top.s, d.id IS NOT NULL"
               " FROM top LEFT JOIN search_docs d ON d.id = top.id),"
               " fast(yes) AS MATERIALIZED (SELECT ?1 = '' AND"
               " NOT EXISTS (SELECT 1 FROM cand WHERE NOT ok) AND"
               " ((SELECT count(*) FROM cand) <= ?3 OR"
               " (SELECT s FROM cand ORDER BY s LIMIT 1 OFFSET ?3 - 1) <"
               " (SELECT s FROM cand ORDER BY s LIMIT 1 OFFSET ?3)))"
               " SELECT path, s FROM (SELECT path, s FROM cand WHERE (SELECT yes FROM fast)"
               " UNION ALL SELECT * FROM (SELECT d.path,"
               " mt_rank(search_words) FROM search_words JOIN search_docs d"
               " ON d.id = search_words.rowid WHERE search_words MATCH ?2 AND " D_BENEATH
               " ORDER BY mt_rank(search_words), d.path"
               " LIMIT CASE WHEN (SELECT yes FROM fast) THEN 0 ELSE ?3 END))"
               " ORDER BY s, path LIMIT ?3",
    /* changed whenever another connection has committed since the last time */
    [Q_VERSION] = "PRAGMA data_version",
    [Q_HELD] =
        "SELECT count(*) FROM (SELECT 1 FROM search_docs WHERE " BENEATH("path") " LIMIT ?2)",
    [Q_SUM] = "SELECT digest FROM search_sum WHERE path = ?1 AND"
              " cookie = (SELECT schema_version FROM pragma_schema_version)",
    /* only while every trigger that deletes it is there, as made */
    [Q_SUM_PUT] = "INSERT OR REPLACE INTO search_sum(path, digest, cookie)"
                  " SELECT ?1, ?2, schema_version FROM pragma_schema_version WHERE"
                  " (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND sql IN"
                  " ('CREATE TRIGGER " SUM_PUT "', 'CREATE TRIGGER " SUM_SET "',"
                  " 'CREATE TRIGGER " SUM_GONE "')) = 3",
};

struct mt_search_index {
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];
};

typedef mt_search_index index_conn;

void (*mt_search_index_hook)(size_t written, int committed);

static int db_error(sqlite3 *db, const char *what)
{
    return mt_error_set(MT_EIO, "search index: cannot %s: %s", what, sqlite3_errmsg(db));
}

/* A memory to index again (id 0: new) or to forget (doc NULL). */
typedef struct {
    const mt_search_doc *doc;
    sqlite3_int64 id;
} todo;

/* A batch is written once this much text was read, or this many memories. */
#define BATCH_BYTES (16 * 1024 * 1024)
#define BATCH_DOCS  64

static int step_done(index_conn *c, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);

    sqlite3_reset(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : db_error(c->db, what);
}

/* Write one memory's words (words NULL: forget it). */
static int write_one(index_conn *c, const todo *t, const char *words, size_t len)
{
    sqlite3_int64 id = t->id;
    int rc;

    if (id) {
        sqlite3_bind_int64(c->st[Q_WORDS_DEL], 1, id);
        if ((rc = step_done(c, c->st[Q_WORDS_DEL], "forget old words")) < 0)
            return rc;
    }
    if (!words) {
        if (!id)
            return 0;
        sqlite3_bind_int64(c->st[Q_DOC_DEL], 1, id);
        return step_done(c, c->st[Q_DOC_DEL], "forget a memory");
    }
    sqlite3_bind_text(c->st[Q_PUT], 1, t->doc->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(c->st[Q_PUT], 2, t->doc->stamp, -1, SQLITE_STATIC);
    if (sqlite3_step(c->st[Q_PUT]) != SQLITE_ROW) {
        sqlite3_reset(c->st[Q_PUT]);
        return db_error(c->db, "record a memory");
    }
    id = sqlite3_column_int64(c->st[Q_PUT], 0);
    sqlite3_reset(c->st[Q_PUT]);
    /* Another search may have indexed it meanwhile, under this id or (after
     * forgetting it) under a new one: its words go first. */
    if (id != t->id) {
        sqlite3_bind_int64(c->st[Q_WORDS_DEL], 1, id);
        if ((rc = step_done(c, c->st[Q_WORDS_DEL], "forget old words")) < 0)
            return rc;
    }
    sqlite3_bind_int64(c->st[Q_WORDS_PUT], 1, id);
    sqlite3_bind_text(c->st[Q_WORDS_PUT], 2, words, (int)len, SQLITE_STATIC);
    return step_done(c, c->st[Q_WORDS_PUT], "index a memory");
}

/* Read and cut a batch into words, and write it, in one short transaction
 * (or in the caller's, `held`): from t, as many memories as BATCH_DOCS and
 * BATCH_BYTES allow (*used). The files are read under the write lock: a
 * writer that changes the index between a read and its write (one erasing
 * a redacted memory's words) would otherwise be undone by the older
 * reading, which the stamps cannot tell when the walk came before both. */
static int write_batch(size_t *used, size_t *written, index_conn *c, const todo *t, size_t n,
                       mt_search_read_fn read, void *payload, size_t cap, int held)
{
    mt_buf *words = NULL, content = MT_BUF_INIT;
    int *have = NULL;
    size_t i, bytes = 0;
    int rc = 0;

    if (n > BATCH_DOCS)
        n = BATCH_DOCS;
    if (!(words = calloc(n, sizeof(*words))) || !(have = calloc(n, sizeof(*have)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory indexing memories");
        goto done;
    }
    if (!held && sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_error(c->db, "begin a transaction");
        goto done;
    }
    for (i = 0; i < n && bytes < BATCH_BYTES; i++) {
        if (!t[i].doc)
            continue;
        mt_buf_truncate(&content, 0);
        /* A memory that cannot be read now (gone, or no longer a plain
         * file) is left out; the next search tries it again if it is back.
         * Anything else (no memory, an I/O error) fails the search rather
         * than answer without it. */
        if ((rc = read(payload, &content, t[i].doc->path, cap)) < 0) {
            if (rc != MT_ENOTFOUND && rc != MT_EISDIR && rc != MT_ENOTDIR && rc != MT_ESYMLINK &&
                rc != MT_EUNSUPPORTED && rc != MT_EMULTILINK)
                break;
            rc = 0;
            continue;
        }
        if ((rc = mt_buf_putc(&words[i], ' ')) < 0 ||
            (rc = mt_search_index_text(&words[i], content.ptr ? content.ptr : "", content.len)) < 0)
            break;
        have[i] = 1;
        bytes += words[i].len;
    }
    if (rc == 0)
        n = i;
    for (i = 0; i < n && rc == 0; i++) {
        rc = write_one(c, &t[i], have[i] ? words[i].ptr : NULL, have[i] ? words[i].len : 0);
        if (rc == 0 && mt_search_index_hook)
            mt_search_index_hook(*written + i + 1, 0);
    }
    if (rc == 0 && !held && sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_error(c->db, "commit");
    if (rc < 0) {
        if (!held)
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        *written += n;
        if (mt_search_index_hook && !held)
            mt_search_index_hook(*written, 1);
    }
done:
    for (i = 0; words && i < n; i++)
        mt_buf_dispose(&words[i]);
    free(words);
    free(have);
    mt_buf_dispose(&content);
    *used = n;
    return rc;
}

/* What differs between the index and docs, by a merge of the two in path order. */
static int plan(todo **out, size_t *count, index_conn *c, const mt_search_doc *docs, size_t n,
                const char *path)
{
    sqlite3_stmt *s = c->st[Q_DOCS];
    todo *t = NULL, *grown;
    size_t i = 0, k = 0, cap = 0;
    int rc = 0, step, cmp;

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    while (step == SQLITE_ROW || i < n) {
        const char *ipath = step == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 1) : NULL;
        todo next = {NULL, 0};

        if (step == SQLITE_ROW && !ipath) {
            rc = db_error(c->db, "read the index");
            goto done;
        }
        cmp = !ipath ? -1 : i == n ? 1 : strcmp(docs[i].path, ipath);
        if (cmp < 0) {
            next.doc = &docs[i++]; /* new since the last search */
        } else {
            if (cmp == 0) {
                const char *stamp = (const char *)sqlite3_column_text(s, 2);

                if (!stamp || strcmp(stamp, docs[i].stamp) != 0) {
                    next.doc = &docs[i];
                    next.id = sqlite3_column_int64(s, 0);
                }
                i++;
            } else {
                next.id = sqlite3_column_int64(s, 0); /* gone */
            }
            step = sqlite3_step(s);
        }
        if (!next.doc && !next.id)
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            if (!(grown = realloc(t, cap * sizeof(*t)))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory indexing memories");
                goto done;
            }
            t = grown;
        }
        t[k++] = next;
    }
    if (step != SQLITE_DONE)
        rc = db_error(c->db, "read the index");
done:
    sqlite3_reset(s);
    if (rc < 0) {
        free(t);
        t = NULL;
        k = 0;
    }
    *out = t;
    *count = k;
    return rc;
}

static int find(mt_store_hit **out, size_t *count, index_conn *c, const mt_search_query *q,
                const char *path, size_t limit)
{
    sqlite3_stmt *s = c->st[Q_FIND];
    mt_buf match = MT_BUF_INIT;
    mt_store_hit *hits = NULL;
    size_t n = 0;
    int rc, step;

    if ((rc = mt_search_fts5_match(&match, q)) < 0)
        goto done;
    if (!(hits = calloc(limit, sizeof(*hits)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching");
        goto done;
    }
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, match.ptr, (int)match.len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)limit);
    while (n < limit && (step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(s, 0);

        if (!p || !(hits[n].path = strdup(p))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory searching");
            goto done;
        }
        /* mt_rank() is smaller for better matches */
        hits[n++].score = -sqlite3_column_double(s, 1);
    }
    if (n < limit && step != SQLITE_DONE)
        rc = db_error(c->db, "search");
done:
    sqlite3_reset(s);
    mt_buf_dispose(&match);
    if (rc < 0) {
        mt_store_hits_free(hits, n);
        hits = NULL;
        n = 0;
    }
    *out = hits;
    *count = n;
    return rc;
}

/* Make an index of an older memtool's again (REMAKE), once: whoever takes
 * the lock first. */
static int remake_old(sqlite3 *db)
{
    int rc;

    if ((rc = mt_fts5_prefixes_missing(db)) <= 0)
        return rc;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_error(db, "make its tables again");
    if ((rc = mt_fts5_prefixes_missing(db)) > 0 &&
        (sqlite3_exec(db, REMAKE, NULL, NULL, NULL) != SQLITE_OK ||
         sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK))
        rc = db_error(db, "make its tables again");
    if (rc >= 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_error(db, "make its tables again");
    if (rc < 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc < 0 ? rc : 0;
}

int mt_search_index_open(mt_search_index **out, sqlite3 *db)
{
    mt_search_index *ix;
    size_t i;
    int rc = 0;

    *out = NULL;
    if (!(ix = calloc(1, sizeof(*ix))))
        return mt_error_set(MT_ENOMEM, "out of memory opening the search index");
    ix->db = db;
    if ((rc = mt_fts5_rank_register(db)) < 0 || (rc = remake_old(db)) < 0)
        goto done;
    if (sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_error(db, "make its tables");
        goto done;
    }
    for (i = 0; i < Q_COUNT; i++) {
        if (sqlite3_prepare_v3(db, SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &ix->st[i], NULL) !=
            SQLITE_OK) {
            rc = db_error(db, "prepare a statement");
            goto done;
        }
    }
done:
    if (rc < 0)
        mt_search_index_free(ix);
    else
        *out = ix;
    return rc;
}

static int exec_path(sqlite3 *db, const char *sql, const char *path)
{
    sqlite3_stmt *s = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        rc = db_error(db, "erase a memory's words");
        goto done;
    }
    if (path)
        sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = db_error(db, "erase a memory's words");
done:
    sqlite3_finalize(s);
    return rc;
}

int mt_search_index_erase(sqlite3 *db, const char *path, int merge)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, tables = 0;

    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                           "name IN ('search_docs', 'search_words')",
                           -1, &s, NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
        rc = db_error(db, "look for its tables");
        goto done;
    }
    tables = sqlite3_column_int(s, 0);
    if (tables < 2)
        goto done; /* never made: nothing was indexed */
    /* The digests' table first: the delete fires the triggers that empty
     * it, which fail without it (as when it was dropped by hand). */
    if (path && (sqlite3_exec(db, SUM_TABLE, NULL, NULL, NULL) != SQLITE_OK ||
                 (rc = exec_path(db,
                                 "DELETE FROM search_words WHERE rowid IN "
                                 "(SELECT id FROM search_docs WHERE path = ?1)",
                                 path)) < 0 ||
                 (rc = exec_path(db, "DELETE FROM search_docs WHERE path = ?1", path)) < 0)) {
        if (rc == 0)
            rc = db_error(db, "erase a memory's words");
        goto done;
    }
    if (merge)
        rc = exec_path(db, "INSERT INTO search_words(search_words) VALUES ('optimize')", NULL);
done:
    sqlite3_finalize(s);
    return rc;
}

void mt_search_index_free(mt_search_index *ix)
{
    size_t i;

    if (!ix)
        return;
    for (i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(ix->st[i]);
    free(ix);
}

/* What PRAGMA data_version says now: another connection's commit since
 * the last time changes it (in a transaction, as of the transaction's start). */
static int data_version(sqlite3_int64 *out, index_conn *c)
{
    sqlite3_stmt *s = c->st[Q_VERSION];
    int rc = 0;

    if (sqlite3_step(s) == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else
        rc = db_error(c->db, "read the index's version");
    sqlite3_reset(s);
    return rc;
}

/* The digest kept of the memories beneath path, when there is one to
 * trust (read in the caller's transaction): 1 when it is in out. */
static int sum_read(unsigned char *out, index_conn *c, const char *path)
{
    sqlite3_stmt *s = c->st[Q_SUM];
    int found = 0;

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_bytes(s, 0) == MT_SEARCH_SUM_BYTES) {
        memcpy(out, sqlite3_column_blob(s, 0), MT_SEARCH_SUM_BYTES);
        found = 1;
    }
    sqlite3_reset(s);
    return found;
}

/*
 * Keep sum as the digest of what the index holds beneath path: the
 * comparison that found them the same read the index at `version`, and
 * the digest is kept only when no other connection has committed since.
 * Nothing depends on it: when another connection holds the write lock it
 * is not waited for (that writer is changing the index, most likely, and
 * the digest would not be kept anyway), and a failure leaves the next
 * search to compare every memory again, as without it. The connection's
 * busy timeout is put back after (a busy handler of its own would not be).
 */
static void sum_keep(index_conn *c, const char *path, const unsigned char *sum,
                     sqlite3_int64 version)
{
    sqlite3_stmt *s = c->st[Q_SUM_PUT], *busy = NULL;
    sqlite3_int64 now = 0;
    int wait_ms = 0, begun, ok;

    /* prepared each time: the pragma's value is taken as it is prepared */
    if (sqlite3_prepare_v2(c->db, "PRAGMA busy_timeout", -1, &busy, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(busy) == SQLITE_ROW)
        wait_ms = sqlite3_column_int(busy, 0);
    sqlite3_finalize(busy);
    sqlite3_busy_timeout(c->db, 0);
    begun = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_busy_timeout(c->db, wait_ms);
    if (!begun)
        return;
    ok = data_version(&now, c) == 0 && now == version;
    if (ok) {
        sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_blob(s, 2, sum, MT_SEARCH_SUM_BYTES, SQLITE_STATIC);
        ok = sqlite3_step(s) == SQLITE_DONE;
        sqlite3_reset(s);
    }
    if (!ok || sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

int mt_search_index_held(size_t *out, mt_search_index *ix, const char *path, size_t at_most)
{
    sqlite3_stmt *s = ix->st[Q_HELD];
    int rc = 0;

    *out = 0;
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, at_most < INT64_MAX ? (sqlite3_int64)at_most : INT64_MAX);
    if (sqlite3_step(s) == SQLITE_ROW)
        *out = (size_t)sqlite3_column_int64(s, 0);
    else
        rc = db_error(ix->db, "count the memories indexed");
    sqlite3_reset(s);
    return rc;
}

/*
 * The answer after catching up. Another search may have written between
 * this one's comparison and its query (its older reading of a file, under
 * that file's older stamp): the query must not answer from that. When no
 * other connection committed since the comparison (`seen`, its data
 * version; NULL: unknown), the index is what it showed plus this search's
 * writes, which is the files as found. Else the comparison runs again in
 * the query's read; what differs then is written again under the write
 * lock, and the query runs before the lock is let go, so that no other
 * writer comes between.
 */
static int find_caught_up(mt_store_hit **out, size_t *count, index_conn *c,
                          const sqlite3_int64 *seen, const mt_search_doc *now, size_t n,
                          mt_search_read_fn read, void *payload, size_t cap,
                          const mt_search_query *q, const char *path, size_t limit, size_t *written)
{
    todo *t = NULL;
    size_t k = 0, at, used = 0;
    sqlite3_int64 version = 0;
    int rc = 0, locked;

    for (locked = 0; locked < 2; locked++) {
        if (sqlite3_exec(c->db, locked ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL) !=
            SQLITE_OK)
            return db_error(c->db, "read the index");
        if (locked) {
            rc = plan(&t, &k, c, now, n, path);
            for (at = 0; rc == 0 && at < k; at += used)
                rc = write_batch(&used, written, c, t + at, k - at, read, payload, cap, 1);
            if (rc == 0)
                rc = find(out, count, c, q, path, limit);
        } else if ((rc = find(out, count, c, q, path, limit)) == 0 &&
                   (rc = data_version(&version, c)) == 0 && !(seen && version == *seen)) {
            rc = plan(&t, &k, c, now, n, path);
        }
        if (rc == 0 && sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            rc = db_error(c->db, "commit");
        if (rc == 0 && locked && k && mt_search_index_hook)
            mt_search_index_hook(*written, 1);
        if (rc < 0)
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        free(t);
        t = NULL;
        if (rc < 0 || k == 0 || locked)
            break;
        /* this read's answer is not the files' */
        mt_store_hits_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    if (rc < 0) {
        mt_store_hits_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

int mt_search_index_run(mt_store_hit **out, size_t *count, mt_search_index *ix,
                        mt_search_docs_fn docs, void *docs_payload, mt_search_read_fn read,
                        void *payload, size_t cap, const mt_search_query *q, const char *path,
                        size_t limit)
{
    const mt_search_doc *now = NULL;
    const unsigned char *sum = NULL;
    unsigned char kept[MT_SEARCH_SUM_BYTES];
    mt_store_hit *guess = NULL;
    size_t n = 0, nguess = 0, k = 0, at, used = 0, written = 0;
    sqlite3_int64 before = 0, after = 0;
    todo *t = NULL;
    int rc, guessed = 0, have_kept = 0, same, versioned = 0;

    *out = NULL;
    *count = 0;
    /* The query is answered from the index while the files are still being
     * found, and in the same read the digest kept of the memories the
     * index holds is read. That answer stands when it is the files'
     * digest: it is from the words of every memory as found. Else it
     * stands when nothing differs between the files and the index and
     * nothing was committed to the index between the query and the
     * comparison (the two reads then saw the same index). Short reads, not
     * one that lasts the walk: a read holds back the history's checkpoints. */
    if (sqlite3_exec(ix->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK) {
        guessed = find(&guess, &nguess, ix, q, path, limit) == 0 && data_version(&before, ix) == 0;
        have_kept = sum_read(kept, ix, path);
        if (sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL); /* it wrote nothing */
    }
    if ((rc = docs(docs_payload, &now, &n, &sum)) < 0)
        goto done;
    same = sum && have_kept && memcmp(sum, kept, sizeof(kept)) == 0;
    if (!guessed || !same) {
        if (sqlite3_exec(ix->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
            rc = db_error(ix->db, "read the index");
            goto done;
        }
        rc = plan(&t, &k, ix, now, n, path);
        versioned = data_version(&after, ix) == 0; /* as of what was just read */
        guessed = guessed && rc == 0 && k == 0 && versioned && after == before;
        if (sqlite3_exec(ix->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL); /* it wrote nothing */
        if (rc < 0)
            goto done;
        /* the index holds the files as found: the next search may know so by their digest */
        if (k == 0 && sum && !same && versioned)
            sum_keep(ix, path, sum, after);
    }
    if (guessed) {
        *out = guess;
        *count = nguess;
        guess = NULL;
        goto done;
    }
    /* Else the index catches up, and the query runs again (and says again
     * what was wrong with it, when that was why it had no answer). */
    for (at = 0; at < k && rc == 0; at += used)
        rc = write_batch(&used, &written, ix, t + at, k - at, read, payload, cap, 0);
    if (rc == 0)
        rc = find_caught_up(out, count, ix, versioned ? &after : NULL, now, n, read, payload, cap,
                            q, path, limit, &written);
done:
    mt_store_hits_free(guess, nguess);
    free(t);
    return rc;
}

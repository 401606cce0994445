/*
 * The SQL store's statements in dialect-neutral SQL (db.h): numbered
 * parameters, ?1 always the tenant, no upserts, no LIMIT -1, CAST where a
 * parameter's type could not be inferred. Path ranges come as bounds
 * computed in C ("d/" < path < "d0"), never by concatenating parameters.
 */
#include <string.h>

#include "db/db.h"

mt_db_value mt_db_text(const char *s)
{
    mt_db_value v = {s ? MT_DB_TEXT : MT_DB_NULL, 0, s, s ? strlen(s) : 0, 0};
    return v;
}

#define VERSION_COLUMNS                                                                            \
    "SELECT id, memory_id, op, path, previous_path, actor, at, sha256, size, redacted "            \
    "FROM versions "

/* A version (row alias v) that a later version of its memory follows. */
#define NOT_NEWEST(v)                                                                              \
    "EXISTS (SELECT 1 FROM versions n WHERE n.tenant = " v ".tenant AND n.memory_id = " v          \
    ".memory_id AND n.id > " v ".id)"

/* col at or beneath ?2 (bounds ?3, ?4), or anywhere when ?2 is the root "". */
#define IN_RANGE(col) "(CAST(?2 AS TEXT) = '' OR " col " = ?2 OR (" col " > ?3 AND " col " < ?4))"

/* The filters of a versions query beside the memory's id (db.h). */
#define VERSIONS_FILTER                                                                            \
    "(CAST(?2 AS TEXT) IS NULL OR ?2 = '' OR memory_id IN (SELECT memory_id FROM versions WHERE "  \
    "tenant = ?1 AND (path = ?2 OR (path > ?3 AND path < ?4)))) "                                  \
    "AND (CAST(?6 AS INTEGER) = 0 OR op = ?6) AND (CAST(?7 AS TEXT) IS NULL OR actor = ?7) "       \
    "AND (CAST(?8 AS BIGINT) = 0 OR at >= ?8) AND (CAST(?9 AS BIGINT) = 0 OR at <= ?9) "           \
    "AND (CAST(?10 AS BIGINT) = 0 OR id < ?10) ORDER BY id DESC LIMIT ?11"

const char *const mt_db_sql[MT_DB_STMT_COUNT] = {
    [MT_DB_USAGE_ENSURE] = "INSERT INTO usage(tenant, bytes, files, dirs, next_version) "
                           "SELECT ?1, 0, 0, 0, 1 WHERE NOT EXISTS "
                           "(SELECT 1 FROM usage WHERE tenant = ?1)",
    [MT_DB_USAGE_GET] = "SELECT bytes, files, dirs, next_version, expired_before, expiry_seen, "
                        "encryption IS NOT NULL, unrecorded FROM usage WHERE tenant = ?1",
    [MT_DB_USAGE_SET] = "UPDATE usage SET bytes = ?2, files = ?3, dirs = ?4, next_version = ?5, "
                        "expired_before = ?6, expiry_seen = ?7, unrecorded = ?8 WHERE tenant = ?1",
    [MT_DB_NODE_GET] =
        "SELECT kind, memory_id, sha256, size FROM nodes WHERE tenant = ?1 AND path = ?2",
    [MT_DB_NODE_PUT] = "INSERT INTO nodes(tenant, path, kind, memory_id, sha256, size) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    /* An edit that is no use of the memory (?5 NULL) keeps its times. */
    [MT_DB_NODE_SET] = "UPDATE nodes SET sha256 = ?3, size = ?4, "
                       "accessed = COALESCE(CAST(?5 AS BIGINT), accessed), "
                       "modified = COALESCE(CAST(?5 AS BIGINT), modified) "
                       "WHERE tenant = ?1 AND path = ?2",
    [MT_DB_NODE_DELETE] = "DELETE FROM nodes WHERE tenant = ?1 AND path = ?2",
    [MT_DB_NODES_BENEATH] = "SELECT path, kind, memory_id, sha256, size FROM nodes "
                            "WHERE tenant = ?1 AND path > ?2 AND path < ?3 ORDER BY path",
    [MT_DB_NODES_DELETE_BENEATH] =
        "DELETE FROM nodes WHERE tenant = ?1 AND path > ?2 AND path < ?3",
    [MT_DB_NODE_MOVE] = "UPDATE nodes SET path = ?3 WHERE tenant = ?1 AND path = ?2",
    [MT_DB_NODES_MOVE_BENEATH] =
        /* substr counts in the database's own units (characters in UTF-8,
         * bytes in PostgreSQL's SQL_ASCII): measuring lo there too puts the
         * cut on the '/' whatever they are. */
    "UPDATE nodes SET path = CAST(?4 AS TEXT) || substr(path, length(CAST(?2 AS TEXT))) "
    "WHERE tenant = ?1 AND path > ?2 AND path < ?3",
    [MT_DB_CONTENT_REF] =
        "UPDATE content_refs SET refs = refs + ?3 WHERE tenant = ?1 AND sha256 = ?2",
    [MT_DB_CONTENT_PUT] = "INSERT INTO contents(tenant, sha256, data) VALUES (?1, ?2, ?3)",
    /* Content without a count is no node's nor version's. */
    [MT_DB_CONTENT_DROP] = "DELETE FROM contents WHERE tenant = ?1 AND sha256 = ?2 AND NOT EXISTS "
                           "(SELECT 1 FROM content_refs r WHERE r.tenant = ?1 AND r.sha256 = ?2)",
    [MT_DB_CONTENT_PIECE] = "SELECT substr(data, CAST(?3 AS INTEGER), CAST(?4 AS INTEGER)) "
                            "FROM contents WHERE tenant = ?1 AND sha256 = ?2",
    [MT_DB_VERSION_PUT] = "INSERT INTO versions(tenant, id, memory_id, op, path, previous_path, "
                          "actor, at, sha256, size, redacted) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)",
    [MT_DB_VERSION_GET] = VERSION_COLUMNS "WHERE tenant = ?1 AND id = ?2",
    [MT_DB_VERSIONS_QUERY] = VERSION_COLUMNS "WHERE tenant = ?1 AND (CAST(?5 AS TEXT) IS NULL "
                                             "OR memory_id = ?5) AND " VERSIONS_FILTER,
    [MT_DB_VERSION_REDACT] = "UPDATE versions SET path = NULL, previous_path = NULL, "
                             "sha256 = NULL, redacted = 1 WHERE tenant = ?1 AND id = ?2",
    [MT_DB_VERSION_NTH] = "SELECT id FROM versions WHERE tenant = ?1 AND memory_id = ?2 "
                          "ORDER BY id DESC LIMIT 1 OFFSET ?3",
    [MT_DB_VERSIONS_UPTO] = "SELECT id, sha256 FROM versions WHERE tenant = ?1 AND "
                            "memory_id = ?2 AND id <= ?3",
    [MT_DB_VERSIONS_EXPIRED] = "SELECT o.id, o.sha256 FROM versions o WHERE o.tenant = ?1 AND "
                               "o.at >= ?2 AND o.at < ?3 AND " NOT_NEWEST("o"),
    [MT_DB_VERSION_DELETE] = "DELETE FROM versions WHERE tenant = ?1 AND id = ?2",
    [MT_DB_READ_WHOLE] = "SELECT n.kind, n.size, CASE WHEN n.size <= ?3 THEN c.data END "
                         "FROM nodes n LEFT JOIN contents c ON c.tenant = n.tenant AND "
                         "c.sha256 = n.sha256 WHERE n.tenant = ?1 AND n.path = ?2",
    [MT_DB_CONTENT_GET] = "SELECT data FROM contents WHERE tenant = ?1 AND sha256 = ?2",
    [MT_DB_NODE_OF_MEMORY] = "SELECT path FROM nodes WHERE tenant = ?1 AND memory_id = ?2",
    [MT_DB_NODES_ALL] = "SELECT path, kind, memory_id, sha256, size FROM nodes "
                        "WHERE tenant = ?1 ORDER BY path",
    [MT_DB_VERSION_NEWEST] = "SELECT op, sha256, id FROM versions WHERE tenant = ?1 AND "
                             "memory_id = ?2 ORDER BY id DESC LIMIT 1",
    [MT_DB_NODE_ACCESSED] = "SELECT kind, accessed FROM nodes WHERE tenant = ?1 AND path = ?2",
    [MT_DB_NODE_ACCESS_SET] = "UPDATE nodes SET accessed = ?3, modified = "
                              "COALESCE(CAST(?4 AS BIGINT), modified) WHERE tenant = ?1 AND "
                              "path = ?2 AND kind = 1",
    [MT_DB_NODE_ACCESS_TOUCH] = "UPDATE nodes SET accessed = ?3 WHERE tenant = ?1 AND path = ?2 "
                                "AND kind = 1 AND accessed < ?4",
    [MT_DB_FILES_ACCESSED] =
        "SELECT path, size, accessed, modified FROM nodes WHERE tenant = ?1 AND "
        "kind = 1 AND (path = ?2 OR (path > ?3 AND path < ?4)) ORDER BY path",
    [MT_DB_FILES_ACCESSED_ALL] =
        "SELECT path, size, accessed, modified FROM nodes WHERE tenant = ?1 AND "
        "kind = 1 ORDER BY path",
    [MT_DB_VERSIONS_COUNT] = "SELECT count(*) FROM versions WHERE tenant = ?1",
    [MT_DB_SEARCH_FORGET] =
        "DELETE FROM search_docs WHERE tenant = ?1 AND path IN (SELECT d.path FROM search_docs d "
        "WHERE d.tenant = ?1 AND " IN_RANGE(
            "d.path") " AND NOT EXISTS (SELECT 1 FROM nodes n "
                      "WHERE n.tenant = ?1 AND n.path = d.path AND n.kind = 1) LIMIT ?5)",
    [MT_DB_SEARCH_STALE] =
        "SELECT n.path, n.sha256, CASE WHEN d.path IS NULL THEN 0 ELSE 1 END FROM nodes n "
        "LEFT JOIN search_docs d ON d.tenant = n.tenant AND d.path = n.path WHERE n.tenant = ?1 "
        "AND n.kind = 1 AND n.sha256 IS NOT NULL AND " IN_RANGE(
            "n.path") " AND n.path > ?5 "
                      "AND (d.sha256 IS NULL OR d.sha256 <> n.sha256) ORDER BY n.path LIMIT ?6",
    [MT_DB_SEARCH_PUT] =
        "INSERT INTO search_docs(tenant, path, sha256, words) VALUES (?1, ?2, ?3, ?4)",
    [MT_DB_SEARCH_SET] =
        "UPDATE search_docs SET sha256 = ?3, words = ?4 WHERE tenant = ?1 AND path = ?2",
    [MT_DB_SEARCH_FIND] = NULL,
    [MT_DB_VERSION_RESEAL] = "UPDATE versions SET sha256 = ?3, size = ?4 WHERE tenant = ?1 AND "
                             "id = ?2",
    [MT_DB_SEARCH_STALE_UPTO] =
        "SELECT n.path, n.sha256, CASE WHEN d.path IS NULL THEN 0 ELSE 1 END, n.size FROM nodes n "
        "LEFT JOIN search_docs d ON d.tenant = n.tenant AND d.path = n.path WHERE n.tenant = ?1 "
        "AND n.kind = 1 AND n.sha256 IS NOT NULL AND " IN_RANGE(
            "n.path") " AND n.path > ?5 AND (d.sha256 IS NULL OR NOT ((n.size <= ?7 AND "
                      "d.sha256 = n.sha256) OR (n.size > ?7 AND substr(d.sha256, 1, 64) = "
                      "n.sha256 AND substr(d.sha256, 65) = ?8))) ORDER BY n.path LIMIT ?6",
    [MT_DB_REFS_NEW] = "INSERT INTO content_refs(tenant, sha256, refs) VALUES (?1, ?2, 1)",
    [MT_DB_REFS_DROP] = "DELETE FROM content_refs WHERE tenant = ?1 AND sha256 = ?2 AND refs <= 0",
    [MT_DB_REFS_ADD] = "INSERT INTO content_refs(tenant, sha256, refs) VALUES (?1, ?2, ?3) "
                       "ON CONFLICT (tenant, sha256) DO UPDATE SET refs = content_refs.refs + "
                       "excluded.refs RETURNING refs",
    [MT_DB_REFS_TAKE] = "UPDATE content_refs SET refs = refs + ?3 WHERE tenant = ?1 AND "
                        "sha256 = ?2 RETURNING refs",
    [MT_DB_REFS_LAST] = "DELETE FROM content_refs WHERE tenant = ?1 AND sha256 = ?2 AND refs <= 1",
    /* A row over the cap holds its sha256 followed by a mark. */
    [MT_DB_SEARCH_ERASE] = "DELETE FROM search_docs WHERE tenant = ?1 AND (path = ?2 OR "
                           "substr(sha256, 1, 64) = ?3)",
    [MT_DB_CRYPT_GET] = "SELECT encryption FROM usage WHERE tenant = ?1",
    [MT_DB_CRYPT_CLAIM] = "UPDATE usage SET encryption = ?2 WHERE tenant = ?1 AND encryption IS "
                          "NULL AND (CAST(?3 AS INTEGER) = 0 OR files = 0)",
    [MT_DB_CRYPT_SET] = "UPDATE usage SET encryption = ?2 WHERE tenant = ?1",
    [MT_DB_OPEN_LOOK] =
        "SELECT u.encryption, f.path, (SELECT substr(c.data, 1, 100) FROM contents c WHERE "
        "c.tenant = ?1 AND c.sha256 = f.sha256) FROM usage u LEFT JOIN (SELECT path, sha256 "
        "FROM nodes WHERE tenant = ?1 AND kind = 1 ORDER BY path LIMIT 1) f ON 1 = 1 "
        "WHERE u.tenant = ?1",
    /* The memories come from the newest versions by id, not from a DISTINCT
     * over the index of all of them. */
    [MT_DB_VERSIONS_SUPERSEDED] =
        "SELECT o.id, o.sha256 FROM versions o WHERE o.tenant = ?1 AND o.memory_id IN "
        "(SELECT memory_id FROM versions WHERE tenant = ?1 AND id >= ?2) AND o.at < ?3 "
        "AND " NOT_NEWEST("o"),
    /* memory_id as a plain equality: an "IS NULL OR" keeps the planner off the index. */
    [MT_DB_VERSIONS_OF] = VERSION_COLUMNS "WHERE tenant = ?1 AND memory_id = CAST(?5 AS TEXT) "
                                          "AND " VERSIONS_FILTER,
    [MT_DB_GAP_ANY] = "SELECT 1 FROM usage WHERE tenant = ?1 AND unrecorded <> 0",
};

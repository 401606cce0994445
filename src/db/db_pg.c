/*
 * The PostgreSQL driver of the SQL store (db.h): every tenant's memories and
 * history in one database, many hosts at once.
 *
 * Isolation: the tables live in the schema `memtool`; every table with a
 * tenant column has ROW LEVEL SECURITY enabled and forced (so it binds the
 * tables' owner too), with the policy tenant = current_setting('memtool.tenant'),
 * which the connection sets once, right after connecting. A statement that
 * forgot its tenant condition still sees and writes only its tenant's rows;
 * with the setting missing every statement fails. The tenant column defaults
 * to the setting. (What this does not stop: see "Privileges" below.)
 *
 * Locking: a change is one READ COMMITTED transaction that first takes its
 * tenant's row of `usage` FOR UPDATE, after SET LOCAL lock_timeout (a row
 * lock, so it serialises one tenant's changes across every host and leaves
 * other tenants alone). The row is made first if missing, INSERT ... ON
 * CONFLICT DO NOTHING, so two first changes cannot race. Under that lock
 * each statement of the change sees every change committed before it, so
 * the limits read from `usage` and written back in the same transaction hold
 * exactly. A read is one REPEATABLE READ READ ONLY transaction: one snapshot.
 * Serialization failures and deadlocks (40001, 40P01) go back to the core as
 * MT_DB_RETRY, which runs the whole change again a bounded number of times.
 *
 * Round trips (each a wait for the server; measured by test_store_pg):
 *   - connecting: libpq's own (TCP, TLS if asked, authentication), then 1 to
 *     set up the session and read the schema version (2 more, once per
 *     database, for the transaction that creates the schema);
 *   - begin_write: 1 (BEGIN, SET LOCAL lock_timeout, the usage row's INSERT
 *     and SELECT ... FOR UPDATE go as one simple-protocol query string: no
 *     parameters are needed, the tenant is the session's setting);
 *   - begin_read, commit, rollback: 1 each;
 *   - each statement the core runs: 1 (PQexecPrepared: Bind, Execute, Sync),
 *     plus 1 the first time the connection runs that statement (PQprepare,
 *     once per connection: later runs skip parsing and planning).
 *   So a change costs 3 + the statements the core runs for it (see the counts
 *   in test_store_pg), a read 2 + its statements; a small file's whole read
 *   and an open's look for the tenant's usage row are 1 each (ready_single:
 *   one statement outside a transaction, its own snapshot). A search with nothing to
 *   index is 5: begin_write, its three statements (forget the gone, list the
 *   stale, find: db_search.c) and commit; each batch it indexes costs a
 *   begin_write, a commit and 2 statements per memory.
 *
 * Privileges: memtool creates its schema on first use when its role may
 * (CREATE on the database), in one transaction under an advisory lock so
 * hosts starting together do not race; it then owns the tables. A demanding
 * operator gives memtool a role that is neither superuser nor owner: the
 * owner (any role with CREATE on the database) runs `memtool store upgrade
 * URL` once, connecting as itself, then grants memtool's role exactly
 * what it needs, which is what memtool's error says when it finds the schema
 * missing and may not create it, or finds it and may not use it:
 *     GRANT USAGE ON SCHEMA memtool TO r; GRANT SELECT ON memtool.meta TO r;
 *     GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes,
 *         memtool.contents, memtool.content_refs, memtool.versions,
 *         memtool.search_docs TO r;
 * Such a role can neither turn row security off (only the owner may ALTER
 * the tables) nor bypass it (not a superuser, no BYPASSRLS). It can still set
 * memtool.tenant to any name: the tenants of one role trust each other's
 * holders of its password; one role per tenant would be the next step.
 *
 * Connections: one per store handle (the core serialises its threads on it).
 * A connection lost mid-change (the server restarted, the backend was
 * terminated, the network failed) is reported as MT_EIO; the server rolls
 * back the unfinished transaction, so nothing of the change is kept, and the
 * next begin connects again. A child of fork() never uses its parent's
 * connection (the core calls abandon: see pg_abandon for why not PQfinish).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "db/db.h"
#include "db/db_pg.h"
#include "db/pq_load.h"
#include "search/words.h"

/* libpq (pq_load.h): set by cfg_new, which every way into this store passes. */
static const mt_pq_fns *pq;

/* Type oids of the columns memtool's statements return (pg_type.dat). */
#define OID_BOOL    16
#define OID_BYTEA   17
#define OID_NAME    19
#define OID_INT8    20
#define OID_INT2    21
#define OID_INT4    23
#define OID_TEXT    25
#define OID_UNKNOWN 705
#define OID_BPCHAR  1042
#define OID_VARCHAR 1043
#define OID_FLOAT8  701

#define MAX_PARAMS 16
#define MAX_COLS   16

/* pg_advisory_xact_lock key for creating and upgrading the schema: "memtool1". */
#define SCHEMA_LOCK "7882827069635128369"

typedef struct {
    char *conninfo;
} pg_cfg;

struct mt_db_conn {
    PGconn *pg;
    const char *conninfo; /* the cfg's */
    char *tenant;
    char where[256]; /* user@host:port/database, for messages (never the password) */
    int broken;      /* lost: connect again at the next begin */
    int unsynced;    /* the next change commits without waiting for the disk */
    int prepared[MT_DB_STMT_COUNT];
};

/* Round trips of this process, for the tests' counts. */
static unsigned long round_trips;

unsigned long mt_db_pg_round_trips(void)
{
    return __atomic_load_n(&round_trips, __ATOMIC_RELAXED);
}

static void trip(void)
{
    __atomic_add_fetch(&round_trips, 1, __ATOMIC_RELAXED);
}

/* The statements PostgreSQL writes differently; NULL: the neutral text. */
/* Each element is one statement, its text split over lines: no comma is missing.
 * NOLINTBEGIN(bugprone-suspicious-missing-comma) */
static const char *const pg_sql[MT_DB_STMT_COUNT] = {
    /* Race-free: two first changes of a tenant both see one row. */
    [MT_DB_USAGE_ENSURE] = "INSERT INTO usage(tenant, bytes, files, dirs, next_version) "
                           "VALUES (?1, 0, 0, 0, 1) ON CONFLICT (tenant) DO NOTHING",
    /* Words and queries come as literals of exact words (mt_search_tsvector,
     * mt_search_tsquery), sent as text and cast: never parsed into words
     * again by the server. */
    [MT_DB_SEARCH_PUT] = "INSERT INTO search_docs(tenant, path, sha256, words) "
                         "VALUES (?1, ?2, ?3, CAST(CAST(?4 AS text) AS tsvector))",
    [MT_DB_SEARCH_SET] = "UPDATE search_docs SET sha256 = ?3, words = "
                         "CAST(CAST(?4 AS text) AS tsvector) WHERE tenant = ?1 AND path = ?2",
    /* ts_rank_cd: cover density (how many times, and how close together, the
     * terms occur), not BM25: no weight for rare words, no length norm. */
    [MT_DB_SEARCH_FIND] =
        "SELECT d.path, CAST(pg_catalog.ts_rank_cd(d.words, CAST(CAST(?5 AS text) AS tsquery)) "
        "AS float8) FROM search_docs d WHERE d.tenant = ?1 AND "
        "d.words @@ CAST(CAST(?5 AS text) AS tsquery) AND (CAST(?2 AS text) = '' OR d.path = ?2 "
        "OR (d.path > ?3 AND d.path < ?4)) ORDER BY 2 DESC, d.path LIMIT ?6",
};
/* NOLINTEND(bugprone-suspicious-missing-comma) */

/* The schema, version 1: db.h's tables (schema_settle brings it to
 * MT_DB_SCHEMA_VERSION). Paths,
 * hashes and names compare by bytes (COLLATE "C"), as the core's ranges and
 * the listing's order need. Content is stored uncompressed out of line
 * (STORAGE EXTERNAL), so substr() of a piece reads only that piece. */
#define TENANT_COLUMN                                                                              \
    "tenant text COLLATE \"C\" NOT NULL DEFAULT pg_catalog.current_setting('memtool.tenant')"
#define ROW_SECURITY(t)                                                                            \
    "ALTER TABLE memtool." t " ENABLE ROW LEVEL SECURITY;"                                         \
    "ALTER TABLE memtool." t " FORCE ROW LEVEL SECURITY;"                                          \
    "CREATE POLICY tenant_only ON memtool." t                                                      \
    " USING (tenant = pg_catalog.current_setting('memtool.tenant'))"                               \
    " WITH CHECK (tenant = pg_catalog.current_setting('memtool.tenant'));"

static const char schema_v1[] =
    "CREATE SCHEMA IF NOT EXISTS memtool;"
    "CREATE TABLE memtool.meta(key text COLLATE \"C\" PRIMARY KEY, value text NOT NULL);"
    "CREATE TABLE memtool.usage(" TENANT_COLUMN " PRIMARY KEY, bytes int8 NOT NULL,"
    " files int8 NOT NULL, dirs int8 NOT NULL, next_version int8 NOT NULL);"
    "CREATE TABLE memtool.nodes(" TENANT_COLUMN ", path text COLLATE \"C\" NOT NULL,"
    " kind int NOT NULL CHECK (kind IN (1, 2)), memory_id text COLLATE \"C\","
    " sha256 text COLLATE \"C\", size int8 NOT NULL, PRIMARY KEY (tenant, path));"
    "CREATE TABLE memtool.contents(" TENANT_COLUMN ", sha256 text COLLATE \"C\" NOT NULL,"
    " refs int8 NOT NULL, data bytea NOT NULL, PRIMARY KEY (tenant, sha256));"
    "ALTER TABLE memtool.contents ALTER COLUMN data SET STORAGE EXTERNAL;"
    "CREATE TABLE memtool.versions(" TENANT_COLUMN ", id int8 NOT NULL,"
    " memory_id text COLLATE \"C\" NOT NULL, op int NOT NULL, path text COLLATE \"C\","
    " previous_path text COLLATE \"C\", actor text NOT NULL, at int8 NOT NULL,"
    " sha256 text COLLATE \"C\", size int8 NOT NULL, redacted int NOT NULL DEFAULT 0,"
    " PRIMARY KEY (tenant, id));"
    "CREATE INDEX versions_memory ON memtool.versions(tenant, memory_id, id);"
    "CREATE INDEX versions_path ON memtool.versions(tenant, path, id);"
    "CREATE INDEX nodes_memory ON memtool.nodes(tenant, memory_id);" ROW_SECURITY("usage")
        ROW_SECURITY("nodes") ROW_SECURITY("contents")
            ROW_SECURITY("versions") "INSERT INTO memtool.meta VALUES ('schema', '1');";

#define GRANTS_FMT                                                                                 \
    "GRANT USAGE ON SCHEMA memtool TO %s; GRANT SELECT ON memtool.meta TO %s; GRANT SELECT, "      \
    "INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes, memtool.contents, "                   \
    "memtool.content_refs, memtool.versions, memtool.search_docs TO %s"

/* Schema 3: the search index, a tsvector of each file's words (as memtool
 * cut them) with a GIN index, under the same row security as every table. */
static const char schema_v3[] =
    "CREATE TABLE memtool.search_docs(" TENANT_COLUMN ", path text COLLATE \"C\" NOT NULL,"
    " sha256 text COLLATE \"C\" NOT NULL, words tsvector NOT NULL, PRIMARY KEY (tenant, path));"
    "CREATE INDEX search_docs_words ON memtool.search_docs USING gin (words);" ROW_SECURITY(
        "search_docs") "UPDATE memtool.meta SET value = '3' WHERE key = 'schema'";

/* Schema 4: each content's count of references in a row of its own
 * (db.h), under the same row security as every table. The counts are
 * copied before the new table's row security is on, and with the owner
 * let past that of contents for the copy (the upgrade's session has no
 * tenant: it copies every tenant's); both hold the tables' exclusive locks
 * to the commit, so no other session ever sees them without it. Dropping
 * the column rewrites nothing in PostgreSQL. */
static const char schema_v4[] =
    "CREATE TABLE memtool.content_refs(" TENANT_COLUMN ", sha256 text COLLATE \"C\" NOT NULL,"
    " refs int8 NOT NULL, PRIMARY KEY (tenant, sha256));"
    "ALTER TABLE memtool.contents NO FORCE ROW LEVEL SECURITY;"
    "INSERT INTO memtool.content_refs(tenant, sha256, refs)"
    " SELECT tenant, sha256, refs FROM memtool.contents;"
    "ALTER TABLE memtool.contents FORCE ROW LEVEL SECURITY;"
    "ALTER TABLE memtool.contents DROP COLUMN refs;" ROW_SECURITY(
        "content_refs") "UPDATE memtool.meta SET value = '4' WHERE key = 'schema'";

/* Schema 5: how far the prune by days got, in each tenant's usage row (0:
 * none yet), and versions indexed by time (mt_db_prune_days). Adding a
 * column with a constant default rewrites nothing. */
static const char schema_v5[] =
    "ALTER TABLE memtool.usage ADD COLUMN expired_before int8 NOT NULL DEFAULT 0,"
    " ADD COLUMN expiry_seen int8 NOT NULL DEFAULT 0;"
    "CREATE INDEX versions_at ON memtool.versions(tenant, at);"
    "UPDATE memtool.meta SET value = '5' WHERE key = 'schema'";

/* Schema 6: each tenant's record that it is encrypted (NULL: none), in its
 * usage row, under that row's security. A column without a default
 * rewrites nothing. */
static const char schema_v6[] = "ALTER TABLE memtool.usage ADD COLUMN encryption text;"
                                "UPDATE memtool.meta SET value = '6' WHERE key = 'schema'";

/* Schema 7: each tenant's mark of a change made with history off (db.h),
 * set in every row there is (an older memtool's such changes left none), by
 * the default the column is added with, as in schema 2: row security would
 * hold an UPDATE to one tenant. */
static const char schema_v7[] =
    "ALTER TABLE memtool.usage ADD COLUMN unrecorded int8 NOT NULL DEFAULT 1;"
    "ALTER TABLE memtool.usage ALTER COLUMN unrecorded SET DEFAULT 0;"
    "UPDATE memtool.meta SET value = '7' WHERE key = 'schema'";

/* ---- messages ------------------------------------------------------------------------- */

/* Overwrite every occurrence of secret in s (len >= 1). */
static void blank_out(char *s, const char *secret, size_t len)
{
    char *p;

    if (len == 0)
        return;
    while ((p = strstr(s, secret)) != NULL)
        memset(p, '*', len);
}

/*
 * A message of libpq's, made one line and without any password the
 * connection string holds: libpq's parse errors can quote the string, and a
 * malformed one cannot be parsed to find the password, so the password-like
 * parts are also found by their shape (user:PASSWORD@ in a URL, password=).
 */
static void clean_message(char *out, size_t size, const char *msg, const char *conninfo)
{
    char *s, *nl;
    size_t n;

    snprintf(out, size, "%s", msg ? msg : "");
    /* The first line says what failed; the rest are hints in libpq's words. */
    if ((nl = strchr(out, '\n')) != NULL)
        *nl = '\0';
    n = strlen(out);
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t' || out[n - 1] == '\r'))
        out[--n] = '\0';
    if (!conninfo)
        return;
    {
        PQconninfoOption *opts = pq->PQconninfoParse(conninfo, NULL), *o;
        for (o = opts; o && o->keyword; o++)
            if (!strcmp(o->keyword, "password") && o->val)
                blank_out(out, o->val, strlen(o->val));
        pq->PQconninfoFree(opts);
    }
    if ((s = strstr(conninfo, "://")) != NULL) {
        const char *user = s + 3;
        size_t span = strcspn(user, "/?#");
        const char *at = memchr(user, '@', span);
        const char *colon = at ? memchr(user, ':', (size_t)(at - user)) : NULL;
        if (colon && at > colon + 1) {
            char secret[512];
            size_t len = (size_t)(at - colon - 1);
            if (len < sizeof(secret)) {
                memcpy(secret, colon + 1, len);
                secret[len] = '\0';
                blank_out(out, secret, len);
            }
        }
    }
    for (s = strstr(conninfo, "password="); s; s = strstr(s + 1, "password=")) {
        const char *v = s + 9;
        size_t len = strcspn(v, " &#\t\n'");
        char secret[512];
        if (len > 0 && len < sizeof(secret)) {
            memcpy(secret, v, len);
            secret[len] = '\0';
            blank_out(out, secret, len);
        }
    }
}

/* libpq's reason without its "connection to server at ... failed: FATAL:" lead. */
static const char *reason_of(const char *line)
{
    const char *p = strstr(line, "failed: ");

    if (p)
        line = p + 8;
    if (!strncmp(line, "FATAL:  ", 8))
        line += 8;
    if (!strncmp(line, "ERROR:  ", 8))
        line += 8;
    return line;
}

static void set_where(mt_db_conn *c)
{
    const char *host = pq->PQhost(c->pg), *port = pq->PQport(c->pg), *db = pq->PQdb(c->pg);
    const char *user = pq->PQuser(c->pg);

    snprintf(c->where, sizeof(c->where), "%s@%s:%s/%s", user ? user : "?", host ? host : "?",
             port ? port : "?", db ? db : "?");
}

/* The error of a failed connection attempt, in one line that says the fix. */
static int connect_error(mt_db_conn *c)
{
    char line[1024], name[128] = "";
    const char *why, *user = pq->PQuser(c->pg), *db = pq->PQdb(c->pg), *q;

    clean_message(line, sizeof(line), pq->PQerrorMessage(c->pg), c->conninfo);
    why = reason_of(line);
    /* Options libpq checks only when connecting (a port, an sslmode). */
    if (!strstr(line, "connection to server") && strstr(why, "invalid "))
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL connection string is not valid (%s): give a URL "
                            "such as postgresql://user@host:5432/database, or key=value pairs "
                            "such as \"host=... dbname=...\"",
                            why);
    if (strstr(why, "password authentication failed") || strstr(why, "SCRAM authentication") ||
        strstr(why, "authentication failed"))
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL server at %s refused the password of role \"%s\": "
                            "give the right one (in the URL, PGPASSWORD or ~/.pgpass)",
                            c->where, user ? user : "");
    if (strstr(why, "no password supplied"))
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL server at %s wants a password for role \"%s\" and "
                            "none was given: put it in ~/.pgpass (or PGPASSWORD, or the URL)",
                            c->where, user ? user : "");
    if ((q = strstr(why, "database \"")) && strstr(why, "does not exist"))
        return mt_error_set(MT_ENOTFOUND,
                            "the database \"%s\" does not exist on the PostgreSQL server at "
                            "%s: create it (createdb -O OWNER %s) or name an existing one in "
                            "the URL",
                            db ? db : "", c->where, db ? db : "DATABASE");
    if ((q = strstr(why, "role \"")) && strstr(why, "does not exist")) {
        snprintf(name, sizeof(name), "%s", user ? user : "");
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL server at %s has no role \"%s\": create it "
                            "(CREATE ROLE %s LOGIN PASSWORD ...) or give another user in the URL",
                            c->where, name, name);
    }
    if (strstr(why, "no pg_hba.conf entry"))
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL server at %s does not let this host in (%s): add a "
                            "line for it to the server's pg_hba.conf",
                            c->where, why);
    if (strstr(why, "Connection refused") || strstr(why, "No such file or directory") ||
        strstr(why, "could not translate host name") || strstr(why, "timeout expired") ||
        strstr(why, "No route to host") || strstr(why, "Network is unreachable") ||
        strstr(why, "could not connect") || strstr(why, "the database system is"))
        return mt_error_set(MT_EIO,
                            "cannot reach the PostgreSQL server at %s (%s): check that it is "
                            "running and that the URL's host and port are right",
                            c->where, why);
    return mt_error_set(MT_EIO, "cannot connect to the PostgreSQL server at %s: %s", c->where, why);
}

static int lost(const char *state, PGconn *pg)
{
    if (pq->PQstatus(pg) == CONNECTION_BAD)
        return 1;
    if (!state)
        return 0;
    /* 08: connection exceptions; 57P01-3: the server is shutting the session down. */
    return !strncmp(state, "08", 2) || !strcmp(state, "57P01") || !strcmp(state, "57P02") ||
           !strcmp(state, "57P03");
}

/*
 * Map a failed result (NULL: libpq could not even send) to an mt_error_code
 * and a one-line message. `what` says what was being done. Frees res.
 */
static int pg_fail(mt_db_conn *c, PGresult *res, const char *what, unsigned lock_ms)
{
    const char *state = res ? pq->PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? pq->PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char msg[1024];
    int rc;

    clean_message(msg, sizeof(msg), primary ? primary : pq->PQerrorMessage(c->pg), c->conninfo);
    if (lost(state, c->pg)) {
        c->broken = 1;
        rc = mt_error_set(MT_EIO,
                          "the connection to the PostgreSQL server at %s was lost (%s) while %s: "
                          "nothing of this change was kept (the server rolls back what was not "
                          "committed); the next command connects again",
                          c->where, *msg ? msg : "no reason given", what);
    } else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01"))) {
        mt_error_set(MT_EBUSY, "PostgreSQL store at %s: %s", c->where, msg);
        rc = MT_DB_RETRY;
    } else if (state && !strcmp(state, "55P03")) {
        rc = mt_error_set(MT_EBUSY,
                          "another process has held the store's lock for over %u ms; nothing "
                          "was changed, try again later",
                          lock_ms);
    } else if (state && !strcmp(state, "42501")) {
        const char *user = pq->PQuser(c->pg);
        rc = mt_error_set(MT_EIO,
                          "role \"%s\" may not use memtool's tables at %s (%s): have their owner "
                          "run " GRANTS_FMT,
                          user, c->where, msg, user, user, user);
    } else if (state && !strncmp(state, "53", 2)) {
        rc = mt_error_set(MT_EIO, "the PostgreSQL server at %s is out of resources (%s) while %s",
                          c->where, msg, what);
    } else {
        rc = mt_error_set(MT_EIO, "PostgreSQL store at %s: %s: %s%s%s%s", c->where, what, msg,
                          state ? " (SQLSTATE " : "", state ? state : "", state ? ")" : "");
    }
    pq->PQclear(res);
    return rc;
}

/* Run one simple-protocol string (no parameters); 0 when its last result is
 * `want`. One round trip however many statements it holds. */
static int run(mt_db_conn *c, const char *sql, ExecStatusType want, PGresult **keep,
               const char *what, unsigned lock_ms)
{
    PGresult *res;

    trip();
    res = pq->PQexec(c->pg, sql);
    if (!res || pq->PQresultStatus(res) != want)
        return pg_fail(c, res, what, lock_ms);
    if (keep)
        *keep = res;
    else
        pq->PQclear(res);
    return 0;
}

/* ---- the schema ----------------------------------------------------------------------- */

static int64_t upgrade_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int schema_version(mt_db_conn *c, PGresult *res, long *version)
{
    const char *v;
    char *end;

    if (pq->PQntuples(res) != 1 || pq->PQgetisnull(res, 0, 0))
        goto bad;
    v = pq->PQgetvalue(res, 0, 0);
    errno = 0;
    *version = strtol(v, &end, 10);
    if (errno || end == v || *end || *version < 1)
        goto bad;
    return 0;
bad:
    return mt_error_set(MT_EINVAL,
                        "the schema memtool at %s is not a memtool store (no schema version in "
                        "memtool.meta): give the URL of a memtool database, or of one without a "
                        "schema named memtool",
                        c->where);
}

static int version_check(mt_db_conn *c, long version)
{
    if (version > MT_DB_SCHEMA_VERSION)
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL store at %s has schema version %ld, newer than this "
                            "memtool's %d: upgrade memtool on this host",
                            c->where, version, MT_DB_SCHEMA_VERSION);
    if (version < MT_DB_SCHEMA_VERSION)
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL store at %s has schema version %ld, older than this "
                            "memtool's %d: run memtool store upgrade URL once (as the tables' "
                            "owner), then connect again",
                            c->where, version, MT_DB_SCHEMA_VERSION);
    return 0;
}

/*
 * Make the schema if there is none, or (upgrade) bring an older one to this
 * memtool's version; one transaction under the advisory lock, so of hosts
 * starting together one makes it and the others find it made.
 */
static int schema_settle(mt_db_conn *c, int upgrade)
{
    PGresult *res = NULL;
    long version = 0;
    int rc;

    if ((rc = run(c,
                  "BEGIN; SELECT pg_catalog.pg_advisory_xact_lock(" SCHEMA_LOCK ");"
                  "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace "
                  "n ON n.oid = r.relnamespace WHERE n.nspname = 'memtool' AND r.relname = "
                  "'meta')",
                  PGRES_TUPLES_OK, &res, "checking the schema", 0)) < 0)
        goto done;
    if (pq->PQntuples(res) == 1 && !strcmp(pq->PQgetvalue(res, 0, 0), "f")) {
        pq->PQclear(res);
        res = NULL;
        trip();
        res = pq->PQexec(c->pg, schema_v1);
        if (!res || pq->PQresultStatus(res) != PGRES_COMMAND_OK) {
            const char *state = res ? pq->PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
            if (state && !strcmp(state, "42501")) {
                const char *user = pq->PQuser(c->pg);
                const char *db = pq->PQdb(c->pg);
                pq->PQclear(res);
                res = NULL;
                rc = mt_error_set(MT_EINVAL,
                                  "the database \"%s\" at %s has no memtool schema and role "
                                  "\"%s\" may not create one: have a role that may (the "
                                  "database's owner) run memtool store upgrade URL once, then "
                                  "run " GRANTS_FMT,
                                  db, c->where, user, user, user, user);
            } else {
                rc = pg_fail(c, res, "creating the schema", 0);
                res = NULL;
            }
            goto done;
        }
        pq->PQclear(res);
        res = NULL;
        goto made;
    }
    pq->PQclear(res);
    res = NULL;
    if ((rc = run(c, "SELECT value FROM memtool.meta WHERE key = 'schema'", PGRES_TUPLES_OK, &res,
                  "reading the schema version", 0)) < 0 ||
        (rc = schema_version(c, res, &version)) < 0)
        goto done;
    if (version > MT_DB_SCHEMA_VERSION || !upgrade) {
        if ((rc = version_check(c, version)) < 0)
            goto done;
    }
    goto steps;
made:
    version = 1;
steps:
    /* Each later schema adds its step here: from version v to v + 1. */
    if (version < 2) {
        /* Last access, which schema 1 did not record: counted from now. A
         * constant default fills the rows without an UPDATE (which row
         * security would hold to one tenant). */
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "ALTER TABLE memtool.nodes ADD COLUMN accessed int8 NOT NULL DEFAULT %" PRId64 ","
                 " ADD COLUMN modified int8 NOT NULL DEFAULT %" PRId64 ";"
                 "ALTER TABLE memtool.nodes ALTER COLUMN accessed SET DEFAULT 0,"
                 " ALTER COLUMN modified SET DEFAULT 0;"
                 "UPDATE memtool.meta SET value = '2' WHERE key = 'schema'",
                 upgrade_now_ms(), upgrade_now_ms());
        if ((rc = run(c, sql, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 2", 0)) < 0)
            goto done;
    }
    if (version < 3) {
        /* The search index, empty: the first search of each tenant fills it. */
        if ((rc = run(c, schema_v3, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 3",
                      0)) < 0)
            goto done;
    }
    if (version < 4) {
        if ((rc = run(c, schema_v4, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 4",
                      0)) < 0)
            goto done;
    }
    if (version < 5) {
        if ((rc = run(c, schema_v5, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 5",
                      0)) < 0)
            goto done;
    }
    if (version < 6) {
        if ((rc = run(c, schema_v6, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 6",
                      0)) < 0)
            goto done;
    }
    if (version < 7) {
        if ((rc = run(c, schema_v7, PGRES_COMMAND_OK, NULL, "upgrading the schema to version 7",
                      0)) < 0)
            goto done;
    }
    rc = run(c, "COMMIT", PGRES_COMMAND_OK, NULL, "creating the schema", 0);
done:
    pq->PQclear(res);
    if (rc < 0 && !c->broken && pq->PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
        trip();
        pq->PQclear(pq->PQexec(c->pg, "ROLLBACK"));
    }
    return rc;
}

/* ---- connections ---------------------------------------------------------------------- */

static void conn_drop(mt_db_conn *c)
{
    if (c->pg)
        pq->PQfinish(c->pg);
    c->pg = NULL;
    memset(c->prepared, 0, sizeof(c->prepared));
}

/* Connect, checking the string first (so a malformed one gets its own words)
 * and the database's encoding after. */
static int conn_start(mt_db_conn *c)
{
    /* Defaults first: what the connection string says overrides them. A
     * connection attempt never waits without end. The client encoding comes
     * last: memtool's bytes are UTF-8, whatever the string says. */
    const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname",
                                "client_encoding", NULL};
    const char *const vals[] = {"10", "memtool", c->conninfo, "UTF8", NULL};
    PQconninfoOption *opts;
    char *err = NULL;
    const char *enc;

    conn_drop(c);
    c->broken = 0;
    if (!(opts = pq->PQconninfoParse(c->conninfo, &err))) {
        char line[512];
        clean_message(line, sizeof(line), err ? err : "out of memory", c->conninfo);
        pq->PQfreemem(err);
        return mt_error_set(MT_EINVAL,
                            "the PostgreSQL connection string is not valid (%s): give a URL "
                            "such as postgresql://user@host:5432/database, or key=value pairs "
                            "such as \"host=... dbname=...\"",
                            line);
    }
    pq->PQconninfoFree(opts);
    if (!(c->pg = pq->PQconnectdbParams(keys, vals, 1)))
        return mt_error_set(MT_ENOMEM, "out of memory connecting to PostgreSQL");
    set_where(c);
    if (pq->PQstatus(c->pg) != CONNECTION_OK)
        return connect_error(c);
    /* Paths are UTF-8 bytes and compare as bytes: a database in another
     * encoding would change them or refuse some. */
    enc = pq->PQparameterStatus(c->pg, "server_encoding");
    if (!enc || (strcmp(enc, "UTF8") && strcmp(enc, "SQL_ASCII")))
        return mt_error_set(MT_EINVAL,
                            "the database at %s is in encoding %s: memtool needs UTF8; create "
                            "its database with ENCODING 'UTF8'",
                            c->where, enc ? enc : "unknown");
    return 0;
}

/*
 * Connect (again) and set the session up: the schema memtool first in the
 * search path (so no other schema's objects are picked up), the tenant, and
 * the schema version checked, all in one round trip; the schema is made
 * when there is none.
 */
static int conn_open(mt_db_conn *c)
{
    PGresult *res = NULL;
    char *tenant = NULL, *sql = NULL;
    long version;
    int rc, made = 0;

    if ((rc = conn_start(c)) < 0)
        goto fail;
    if (!(tenant = pq->PQescapeLiteral(c->pg, c->tenant, strlen(c->tenant)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory connecting to PostgreSQL");
        goto fail;
    }
    {
        static const char fmt[] = "SET search_path TO memtool;"
                                  "SELECT pg_catalog.set_config('memtool.tenant', %s, false);"
                                  "SELECT value FROM memtool.meta WHERE key = 'schema'";
        size_t n = sizeof(fmt) + strlen(tenant);
        if (!(sql = malloc(n))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory connecting to PostgreSQL");
            goto fail;
        }
        snprintf(sql, n, fmt, tenant);
    }
    for (;;) {
        const char *state;

        trip();
        res = pq->PQexec(c->pg, sql);
        if (res && pq->PQresultStatus(res) == PGRES_TUPLES_OK)
            break;
        state = res ? pq->PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        /* No schema (42P01: no table meta; 3F000: no schema memtool): make it
         * once, then set the session up again (the failed string's SET and
         * set_config were rolled back with it). */
        if (state && (!strcmp(state, "42P01") || !strcmp(state, "3F000")) && !made) {
            pq->PQclear(res);
            res = NULL;
            if ((rc = schema_settle(c, 0)) < 0)
                goto fail;
            made = 1;
            continue;
        }
        rc = pg_fail(c, res, "setting up the session", 0);
        res = NULL;
        goto fail;
    }
    if ((rc = schema_version(c, res, &version)) < 0 || (rc = version_check(c, version)) < 0)
        goto fail;
    pq->PQclear(res);
    pq->PQfreemem(tenant);
    free(sql);
    return 0;
fail:
    pq->PQclear(res);
    pq->PQfreemem(tenant);
    free(sql);
    conn_drop(c);
    return rc;
}

static void conn_free(mt_db_conn *c)
{
    if (!c)
        return;
    conn_drop(c);
    free(c->tenant);
    free(c);
}

static int conn_new(mt_db_conn **out, const pg_cfg *cfg, const char *tenant)
{
    mt_db_conn *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c || !(c->tenant = strdup(tenant))) {
        free(c);
        return mt_error_set(MT_ENOMEM, "out of memory connecting to PostgreSQL");
    }
    c->conninfo = cfg->conninfo;
    snprintf(c->where, sizeof(c->where), "%s", "PostgreSQL");
    *out = c;
    return 0;
}

static int pg_connect(mt_db_conn **out, void *p, const char *tenant)
{
    mt_db_conn *c;
    int rc;

    if ((rc = conn_new(&c, p, tenant)) < 0)
        return rc;
    if ((rc = conn_open(c)) < 0) {
        conn_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static void pg_close(mt_db_conn *c)
{
    conn_free(c);
}

/*
 * A connection inherited across fork(): its socket is the parent's too.
 * PQfinish would send Terminate on it and end the parent's session, so the
 * child first points its copy of the descriptor at /dev/null (dup2 keeps the
 * number, so no other thread's descriptor can take its place meanwhile):
 * PQfinish then frees libpq's memory and closes only that.
 */
static void pg_abandon(mt_db_conn *c)
{
    int fd, nul;

    if (!c)
        return;
    if (c->pg && (fd = pq->PQsocket(c->pg)) >= 0) {
        nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nul < 0 || dup2(nul, fd) < 0) {
            /* Nothing safe to free it with: leave libpq's memory be. */
            if (nul >= 0)
                close(nul);
            c->pg = NULL;
        } else {
            close(nul);
        }
    }
    conn_free(c);
}

static void cfg_free(void *p)
{
    pg_cfg *cfg = p;

    if (!cfg)
        return;
    free(cfg->conninfo);
    free(cfg);
}

/* Before a transaction: connected, and not inside one. */
static int ready(mt_db_conn *c)
{
    if (c->broken || !c->pg || pq->PQstatus(c->pg) != CONNECTION_OK)
        return conn_open(c);
    if (pq->PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        return run(c, "ROLLBACK", PGRES_COMMAND_OK, NULL, "ending an unfinished transaction", 0);
    return 0;
}

static int pg_begin_write(mt_db_conn *c, const char *tenant, unsigned lock_timeout_ms)
{
    char sql[512];
    int rc;

    (void)tenant; /* the session's memtool.tenant, which row security holds it to */
    if ((rc = ready(c)) < 0)
        return rc;
    /* lock_timeout 0 would be no timeout at all: "do not wait" is NOWAIT. */
    snprintf(sql, sizeof(sql),
             "BEGIN; SET LOCAL lock_timeout = %u;%s"
             "INSERT INTO usage(bytes, files, dirs, next_version) VALUES (0, 0, 0, 1)"
             " ON CONFLICT (tenant) DO NOTHING;"
             "SELECT 1 FROM usage WHERE tenant = pg_catalog.current_setting('memtool.tenant')"
             " FOR UPDATE%s",
             lock_timeout_ms ? lock_timeout_ms : 1,
             c->unsynced ? " SET LOCAL synchronous_commit = off;" : "",
             lock_timeout_ms ? "" : " NOWAIT");
    if ((rc = run(c, sql, PGRES_TUPLES_OK, NULL, "beginning a change", lock_timeout_ms)) < 0) {
        if (!c->broken && pq->PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
            trip();
            pq->PQclear(pq->PQexec(c->pg, "ROLLBACK"));
        }
        return rc;
    }
    return 0;
}

static int pg_begin_read(mt_db_conn *c)
{
    int rc;

    if ((rc = ready(c)) < 0)
        return rc;
    return run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PGRES_COMMAND_OK, NULL,
               "beginning a read", 0);
}

static int pg_commit(mt_db_conn *c)
{
    PGresult *res;
    int rc;

    trip();
    res = pq->PQexec(c->pg, "COMMIT");
    if (res && pq->PQresultStatus(res) == PGRES_COMMAND_OK &&
        !strcmp(pq->PQcmdStatus(res), "COMMIT")) {
        pq->PQclear(res);
        return 0;
    }
    if (!res || pq->PQresultStatus(res) != PGRES_COMMAND_OK) {
        const char *state = res ? pq->PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        if (lost(state, c->pg)) {
            /* The COMMIT may have reached the server before the connection went. */
            c->broken = 1;
            pq->PQclear(res);
            return mt_error_set(MT_EIO,
                                "the connection to the PostgreSQL server at %s was lost while "
                                "committing: the change may or may not have been made; view "
                                "the memory to see, and the next command connects again",
                                c->where);
        }
        return pg_fail(c, res, "committing", 0);
    }
    /* COMMIT of a failed transaction answers ROLLBACK. */
    pq->PQclear(res);
    rc = mt_error_set(MT_EIO, "PostgreSQL store at %s: the change was rolled back by the server",
                      c->where);
    return rc;
}

static void pg_rollback(mt_db_conn *c)
{
    PGresult *res;

    if (c->broken || !c->pg || pq->PQtransactionStatus(c->pg) == PQTRANS_IDLE)
        return;
    trip();
    res = pq->PQexec(c->pg, "ROLLBACK");
    if (!res || pq->PQresultStatus(res) != PGRES_COMMAND_OK)
        c->broken = 1; /* the next begin connects again */
    pq->PQclear(res);
}

/* ---- statements ----------------------------------------------------------------------- */

/* The statement's text with ?N written $N (no ? occurs in their literals). */
static char *pg_text(mt_db_stmt id)
{
    const char *src = pg_sql[id] ? pg_sql[id] : mt_db_sql[id];
    char *out = malloc(strlen(src) + 1), *o = out;
    const char *s;
    int quoted = 0;

    if (!out)
        return NULL;
    for (s = src; *s; s++) {
        if (*s == '\'')
            quoted = !quoted;
        *o++ = (*s == '?' && !quoted && s[1] >= '0' && s[1] <= '9') ? '$' : *s;
    }
    *o = '\0';
    return out;
}

static int prepare(mt_db_conn *c, mt_db_stmt id)
{
    char name[16], *text;
    PGresult *res;

    if (c->prepared[id])
        return 0;
    if (!(text = pg_text(id)))
        return mt_error_set(MT_ENOMEM, "out of memory preparing a statement");
    snprintf(name, sizeof(name), "mt%d", (int)id);
    trip();
    /* The server infers the parameters' types from the text (the neutral
     * texts CAST where it could not). */
    res = pq->PQprepare(c->pg, name, text, 0, NULL);
    free(text);
    if (!res || pq->PQresultStatus(res) != PGRES_COMMAND_OK)
        return pg_fail(c, res, "preparing a statement", 0);
    pq->PQclear(res);
    c->prepared[id] = 1;
    return 0;
}

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* One column of a binary-format result. */
static int column(mt_db_conn *c, mt_db_value *v, const PGresult *res, int row, int col)
{
    const unsigned char *p = (const unsigned char *)pq->PQgetvalue(res, row, col);
    int len = pq->PQgetlength(res, row, col);

    memset(v, 0, sizeof(*v));
    if (pq->PQgetisnull(res, row, col)) {
        v->type = MT_DB_NULL;
        return 0;
    }
    switch (pq->PQftype(res, col)) {
    case OID_INT8:
    case OID_INT4:
    case OID_INT2:
    case OID_BOOL:
        if (len != 8 && len != 4 && len != 2 && len != 1)
            break;
        v->type = MT_DB_INT;
        /* Sign-extend from the column's width. */
        v->i = len == 8   ? (int64_t)be(p, 8)
               : len == 4 ? (int64_t)(int32_t)(uint32_t)be(p, 4)
               : len == 2 ? (int64_t)(int16_t)(uint16_t)be(p, 2)
                          : (int64_t)p[0];
        return 0;
    case OID_TEXT:
    case OID_VARCHAR:
    case OID_BPCHAR:
    case OID_NAME:
    case OID_UNKNOWN:
        /* libpq ends every value with a NUL, binary ones too. */
        v->type = MT_DB_TEXT;
        v->p = (const char *)p;
        v->len = (size_t)len;
        return 0;
    case OID_FLOAT8: {
        uint64_t bits;
        if (len != 8)
            break;
        bits = be(p, 8);
        v->type = MT_DB_REAL;
        memcpy(&v->d, &bits, sizeof(v->d));
        v->i = 0; /* a score: read as d only */
        return 0;
    }
    case OID_BYTEA:
        v->type = MT_DB_BLOB;
        v->p = (const char *)p;
        v->len = (size_t)len;
        return 0;
    default:
        break;
    }
    return mt_error_set(MT_EIO,
                        "PostgreSQL store at %s: a column of type %u, which memtool does "
                        "not read: is the schema memtool's?",
                        c->where, (unsigned)pq->PQftype(res, col));
}

static int64_t pg_exec(mt_db_conn *c, mt_db_stmt id, const mt_db_value *args, size_t nargs,
                       mt_db_row_cb cb, void *payload)
{
    const char *values[MAX_PARAMS];
    int lengths[MAX_PARAMS], formats[MAX_PARAMS];
    char ints[MAX_PARAMS][24], name[16];
    mt_db_value cols[MAX_COLS];
    PGresult *res = NULL;
    int64_t rows = 0;
    int rc = 0, ncols, ntuples, r, k;
    size_t i;

    if ((unsigned)id >= MT_DB_STMT_COUNT || nargs > MAX_PARAMS)
        return mt_error_set(MT_EINVAL, "no such statement");
    if (c->broken || !c->pg)
        return mt_error_set(MT_EIO,
                            "the connection to the PostgreSQL server at %s was lost: the next "
                            "command connects again",
                            c->where);
    if ((rc = prepare(c, id)) < 0)
        return rc;
    /* Numbers as text (they fit whatever integer type the server inferred);
     * text and blobs as binary: their bytes as they are, no escaping, no
     * terminating NUL needed. */
    for (i = 0; i < nargs; i++) {
        const mt_db_value *a = &args[i];
        switch (a->type) {
        case MT_DB_INT:
            snprintf(ints[i], sizeof(ints[i]), "%" PRId64, a->i);
            values[i] = ints[i];
            lengths[i] = 0;
            formats[i] = 0;
            break;
        case MT_DB_TEXT:
        case MT_DB_BLOB:
            if (a->len > INT32_MAX)
                return mt_error_set(MT_ELIMIT, "a value of %zu bytes is over PostgreSQL's 1 GB",
                                    a->len);
            values[i] = a->p ? a->p : "";
            lengths[i] = (int)a->len;
            formats[i] = 1;
            break;
        default:
            values[i] = NULL;
            lengths[i] = 0;
            formats[i] = 0;
        }
    }
    snprintf(name, sizeof(name), "mt%d", (int)id);
    trip();
    res = pq->PQexecPrepared(c->pg, name, (int)nargs, values, lengths, formats, 1);
    if (!res)
        return pg_fail(c, NULL, "running a statement", 0);
    switch (pq->PQresultStatus(res)) {
    case PGRES_COMMAND_OK: {
        const char *n = pq->PQcmdTuples(res);
        rows = *n ? strtoll(n, NULL, 10) : 0;
        pq->PQclear(res);
        return rows;
    }
    case PGRES_TUPLES_OK:
        break;
    default:
        return pg_fail(c, res, "running a statement", 0);
    }
    ncols = pq->PQnfields(res);
    ntuples = pq->PQntuples(res);
    if (ncols > MAX_COLS) {
        pq->PQclear(res);
        return mt_error_set(MT_EINVAL, "a statement with too many columns");
    }
    for (r = 0; r < ntuples; r++) {
        for (k = 0; k < ncols; k++)
            if ((rc = column(c, &cols[k], res, r, k)) < 0)
                goto done;
        rows++;
        if (cb && (rc = cb(payload, cols, (size_t)ncols)) != 0)
            break;
    }
done:
    pq->PQclear(res);
    return rc < 0 ? rc : rows;
}

/* Folded into the next begin_write: no round trip of its own. */
static int pg_unsynced(mt_db_conn *c, int on)
{
    c->unsynced = on;
    return 0;
}

static const mt_db_driver pg_driver = {
    "PostgreSQL", NULL, pg_connect, pg_close, pg_abandon, cfg_free, pg_begin_write, pg_begin_read,
    pg_commit, pg_rollback, pg_exec, NULL, pg_unsynced,
    /* search: tsquery and tsvector literals of memtool's own words */
    mt_search_tsquery, mt_search_tsvector,
    ready, /* a statement outside a transaction: autocommit, its own snapshot */
    0,     /* search_fresh: no change count; each search checks every file */
    1,     /* round_trips */
    NULL,  /* read_only: the server says what a role may write */
};

static int cfg_new(pg_cfg **out, const char *conninfo, const char *fn)
{
    pg_cfg *cfg;
    int rc;

    *out = NULL;
    if (!conninfo)
        return mt_error_set(MT_EINVAL, "%s needs a connection string (a postgresql:// URL)", fn);
    if ((rc = mt_pq_load(&pq)) < 0)
        return rc;
    if (!(cfg = calloc(1, sizeof(*cfg))) || !(cfg->conninfo = strdup(conninfo))) {
        free(cfg);
        return mt_error_set(MT_ENOMEM, "out of memory opening the store");
    }
    *out = cfg;
    return 0;
}

int mt_store_pg_open(mt_store **out, const char *conninfo, const char *tenant)
{
    return mt_store_pg_open_with(out, conninfo, tenant, 0);
}

int mt_store_pg_open_with(mt_store **out, const char *conninfo, const char *tenant, unsigned flags)
{
    pg_cfg *cfg;
    int rc;

    if (out)
        *out = NULL;
    if (!out)
        return mt_error_set(MT_EINVAL, "mt_store_pg_open needs an out pointer");
    if ((rc = cfg_new(&cfg, conninfo, "mt_store_pg_open")) < 0)
        return rc;
    return mt_db_store_open(out, &pg_driver, cfg, tenant,
                            flags & MT_STORE_OPEN_EXISTING ? MT_DB_OPEN_EXISTING : 0);
}

int mt_store_pg_upgrade(const char *conninfo)
{
    pg_cfg *cfg = NULL;
    mt_db_conn *c = NULL;
    int rc;

    if ((rc = cfg_new(&cfg, conninfo, "mt_store_pg_upgrade")) < 0)
        return rc;
    if ((rc = conn_new(&c, cfg, MT_DB_DEFAULT_TENANT)) < 0)
        goto done;
    /* Connect without making or checking the schema: that is the settling's. */
    if ((rc = conn_start(c)) < 0)
        goto done;
    rc = schema_settle(c, 1);
done:
    conn_free(c);
    cfg_free(cfg);
    return rc;
}

int mt_store_pg_vacuum(const char *conninfo)
{
    pg_cfg *cfg = NULL;
    mt_db_conn *c = NULL;
    PGresult *res = NULL;
    int rc;

    if ((rc = cfg_new(&cfg, conninfo, "mt_store_pg_vacuum")) < 0)
        return rc;
    if ((rc = conn_new(&c, cfg, MT_DB_DEFAULT_TENANT)) < 0)
        goto done;
    if ((rc = conn_start(c)) < 0)
        goto done;
    /* A VACUUM of a table the role does not own only warns, and vacuums
     * nothing: asked first, so that a vacuum that did not happen says so. */
    if ((rc = run(c,
                  "SELECT coalesce(string_agg(DISTINCT pg_catalog.pg_get_userbyid(relowner), "
                  "', '), '') FROM pg_catalog.pg_class WHERE relnamespace = "
                  "'memtool'::regnamespace AND relkind = 'r' AND relname IN ('versions', "
                  "'contents', 'content_refs', 'search_docs', 'nodes') AND NOT "
                  "pg_catalog.pg_has_role(relowner, 'USAGE')",
                  PGRES_TUPLES_OK, &res, "looking up the tables' owner", 0)) < 0)
        goto done;
    if (*pq->PQgetvalue(res, 0, 0)) {
        rc = mt_error_set(MT_EINVAL,
                          "role \"%s\" does not own memtool's tables at %s, so PostgreSQL would "
                          "vacuum none of them: run this as their owner (%s) or a superuser",
                          pq->PQuser(c->pg), c->where, pq->PQgetvalue(res, 0, 0));
        goto done;
    }
    /* FULL: a plain VACUUM frees the dead tuples' space for reuse but may
     * leave their bytes in it; FULL writes each table and its indexes anew
     * and removes the old files. Outside a transaction, as VACUUM must be. */
    rc = run(c,
             "VACUUM (FULL) memtool.versions, memtool.contents, memtool.content_refs, "
             "memtool.nodes, "
             "memtool.search_docs",
             PGRES_COMMAND_OK, NULL, "vacuuming the tables (run it as their owner)", 0);
done:
    if (res)
        pq->PQclear(res);
    conn_free(c);
    cfg_free(cfg);
    return rc;
}

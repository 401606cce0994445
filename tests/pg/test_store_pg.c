/*
 * The PostgreSQL store against a real server: a throwaway cluster that
 * scripts/with-pg.sh starts around this program (MEMTOOL_TEST_PG and friends,
 * see scripts/pg-cluster.sh). Without one the tests fail: nothing is skipped.
 *
 * The roles are the cluster's: memtool (what the store connects as: neither
 * superuser nor owner), memtool_owner (owns the database, makes the schema),
 * postgres (the superuser, on the socket: looks behind memtool's back).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "helpers.h"
#include <memtool/store.h>

#include "search/words.h"
#include "db/db_pg.h"

static const char *url;       /* memtool's role, database memtool */
static const char *owner_url; /* memtool_owner */
static const char *admin;     /* the superuser, on the socket */

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);

    if (!v || !*v) {
        fprintf(stderr,
                "%s is not set: run this test through scripts/with-pg.sh (ctest does), which "
                "starts the PostgreSQL test cluster\n",
                name);
        exit(1);
    }
    return v;
}

static PGconn *pg_connect(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);

    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connecting to %s: %s", conninfo, PQerrorMessage(c));
    return c;
}

/* Run sql; assert it gives `want` (PGRES_COMMAND_OK, PGRES_TUPLES_OK or
 * PGRES_FATAL_ERROR); returns the result (the caller clears it). */
static PGresult *sql(PGconn *c, ExecStatusType want, const char *q)
{
    PGresult *r = PQexec(c, q);

    if (PQresultStatus(r) != want)
        fail_msg("%s: %s (wanted %s)", q, PQresultErrorMessage(r), PQresStatus(want));
    return r;
}

static void sql_ok(PGconn *c, const char *q)
{
    PGresult *r = PQexec(c, q);

    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQresultErrorMessage(r));
    PQclear(r);
}

/* The SQLSTATE q fails with. */
static void sql_fails(PGconn *c, const char *q, const char *state)
{
    PGresult *r = sql(c, PGRES_FATAL_ERROR, q);
    const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);

    if (!s || strcmp(s, state))
        fail_msg("%s failed with %s, not %s: %s", q, s ? s : "?", state, PQresultErrorMessage(r));
    PQclear(r);
}

static long sql_long(PGconn *c, const char *q)
{
    PGresult *r = sql(c, PGRES_TUPLES_OK, q);
    long v;

    assert_int_equal(PQntuples(r), 1);
    v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

/* A URL for another database or role of the cluster: the test URL with its
 * path or user replaced. */
static void url_with_db(char *out, size_t size, const char *base, const char *db)
{
    const char *slash = strrchr(base, '/');

    snprintf(out, size, "%.*s/%s", (int)(slash - base), base, db);
}

/* memtool's role connected as the store connects, with memtool.tenant set. */
static PGconn *as_tenant(const char *tenant)
{
    PGconn *c = pg_connect(url);
    const char *v[1] = {tenant};
    PGresult *r = PQexecParams(c, "SELECT set_config('memtool.tenant', $1, false)", 1, NULL, v,
                               NULL, NULL, 0);

    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    sql_ok(c, "SET search_path TO memtool");
    return c;
}

static void grant_memtool(PGconn *owner)
{
    sql_ok(owner, "GRANT USAGE ON SCHEMA memtool TO memtool; GRANT SELECT ON memtool.meta TO "
                  "memtool; GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes, "
                  "memtool.contents, memtool.content_refs, memtool.versions, memtool.search_docs "
                  "TO memtool");
}

/* What schema 4 was, made from this memtool's: no mark of changes made with
 * history off (schema 7), no record of encryption (schema 6), no record of
 * the prune by days, no index of versions by time. */
static void to_schema_4(PGconn *su)
{
    sql_ok(su, "ALTER TABLE memtool.usage DROP COLUMN unrecorded;"
               "ALTER TABLE memtool.usage DROP COLUMN encryption;"
               "DROP INDEX memtool.versions_at;"
               "ALTER TABLE memtool.usage DROP COLUMN expired_before, DROP COLUMN expiry_seen;"
               "UPDATE memtool.meta SET value = '4' WHERE key = 'schema'");
}

/* What schema 3 was, made by the superuser (past row security) from this
 * memtool's: each content's count a column of its row, no content_refs. */
static void to_schema_3(PGconn *su)
{
    to_schema_4(su);
    sql_ok(su, "ALTER TABLE memtool.contents ADD COLUMN refs int8;"
               "UPDATE memtool.contents c SET refs = r.refs FROM memtool.content_refs r "
               "WHERE r.tenant = c.tenant AND r.sha256 = c.sha256;"
               "ALTER TABLE memtool.contents ALTER COLUMN refs SET NOT NULL;"
               "DROP TABLE memtool.content_refs;"
               "UPDATE memtool.meta SET value = '3' WHERE key = 'schema'");
}

/* A store handle for a tenant of the test database. */
static mt_memory *open_memory(const char *tenant, const mt_options *opts)
{
    mt_store *st;
    mt_memory *mem;

    if (mt_store_pg_open(&st, url, tenant) < 0)
        fail_msg("mt_store_pg_open: %s", mt_error_last()->message);
    assert_int_equal(mt_memory_new(&mem, st, opts), 0);
    return mem;
}

/* An error message: one line, naming what it must, never the secret. */
static void one_line(const char *msg, const char *must1, const char *must2, const char *secret)
{
    if (strchr(msg, '\n'))
        fail_msg("not one line: %s", msg);
    if (must1 && !strstr(msg, must1))
        fail_msg("\"%s\" not in: %s", must1, msg);
    if (must2 && !strstr(msg, must2))
        fail_msg("\"%s\" not in: %s", must2, msg);
    if (secret && strstr(msg, secret))
        fail_msg("the password shows in: %s", msg);
}

static int setup(void **state)
{
    PGconn *owner;
    (void)state;

    url = env_or_fail("MEMTOOL_TEST_PG");
    owner_url = env_or_fail("MEMTOOL_TEST_PG_OWNER");
    admin = env_or_fail("MEMTOOL_TEST_PG_ADMIN");
    /* The database's owner makes the schema and grants memtool's role what it needs. */
    if (mt_store_pg_upgrade(owner_url) < 0) {
        fprintf(stderr, "mt_store_pg_upgrade: %s\n", mt_error_last()->message);
        return -1;
    }
    owner = PQconnectdb(owner_url);
    if (PQstatus(owner) != CONNECTION_OK) {
        fprintf(stderr, "%s\n", PQerrorMessage(owner));
        return -1;
    }
    grant_memtool(owner);
    PQfinish(owner);
    return 0;
}

/* ---- the schema ----------------------------------------------------------------------- */

/* A database without the schema, where memtool's role may not create it:
 * the error says what to run; the owner's upgrade makes it; without the
 * grants the error says which; with them the store opens. */
static void test_schema_by_owner(void **state)
{
    char db_url[512], owner_db[512];
    PGconn *su = pg_connect(admin), *owner;
    mt_store *st;
    (void)state;

    sql_ok(su, "CREATE DATABASE memtool_empty OWNER memtool_owner");
    url_with_db(db_url, sizeof(db_url), url, "memtool_empty");
    url_with_db(owner_db, sizeof(owner_db), owner_url, "memtool_empty");

    assert_int_equal(mt_store_pg_open(&st, db_url, "t"), MT_EINVAL);
    one_line(mt_error_last()->message, "has no memtool schema", "memtool store upgrade", NULL);
    one_line(mt_error_last()->message, "GRANT USAGE ON SCHEMA memtool TO memtool", NULL, NULL);

    assert_int_equal(mt_store_pg_upgrade(owner_db), 0);
    assert_int_equal(mt_store_pg_upgrade(owner_db), 0); /* again: nothing to do */
    assert_int_equal(mt_store_pg_open(&st, db_url, "t"), MT_EIO);
    one_line(mt_error_last()->message, "may not use memtool's tables",
             "GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage", NULL);

    owner = pg_connect(owner_db);
    grant_memtool(owner);
    assert_int_equal(mt_store_pg_open(&st, db_url, "t"), 0);
    st->free(st);
    /* Made by the owner, with row security forced on every tenant table. */
    assert_int_equal(sql_long(owner, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                                     "n.oid = c.relnamespace WHERE n.nspname = 'memtool' AND "
                                     "c.relkind = 'r' AND c.relrowsecurity AND "
                                     "c.relforcerowsecurity AND pg_get_userbyid(c.relowner) = "
                                     "'memtool_owner'"),
                     6);
    PQfinish(owner);
    sql_ok(su, "DROP DATABASE memtool_empty WITH (FORCE)");
    PQfinish(su);
}

/* Where memtool's role may create the schema, the first of several hosts
 * starting at once makes it and the others find it made. */
static void test_schema_on_first_use(void **state)
{
    char db_url[512];
    PGconn *su = pg_connect(admin), *c;
    pid_t kids[6];
    int i, status;
    (void)state;

    sql_ok(su, "CREATE DATABASE memtool_self OWNER memtool");
    url_with_db(db_url, sizeof(db_url), url, "memtool_self");
    for (i = 0; i < 6; i++) {
        assert_true((kids[i] = fork()) >= 0);
        if (kids[i] == 0) {
            mt_store *st;
            char tenant[16];
            snprintf(tenant, sizeof(tenant), "host%d", i);
            if (mt_store_pg_open(&st, db_url, tenant) < 0) {
                fprintf(stderr, "child %d: %s\n", i, mt_error_last()->message);
                _exit(1);
            }
            st->free(st);
            _exit(0);
        }
    }
    for (i = 0; i < 6; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    {
        char su_self[512];
        /* A later keyword overrides an earlier one. */
        snprintf(su_self, sizeof(su_self), "%s dbname=memtool_self", admin);
        c = PQconnectdb(su_self);
    }
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM memtool.meta"), 1);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM memtool.usage"), 6);
    PQfinish(c);
    sql_ok(su, "DROP DATABASE memtool_self WITH (FORCE)");
    PQfinish(su);
}

/* ---- errors --------------------------------------------------------------------------- */

static void test_errors(void **state)
{
    char u[512], port[16];
    const char *at = strrchr(url, ':'), *slash = strrchr(url, '/');
    PGconn *owner, *su = pg_connect(admin);
    mt_store *st;
    (void)state;

    snprintf(port, sizeof(port), "%.*s", (int)(slash - at - 1), at + 1);

    /* A wrong password, given in the URL: named, and never shown. */
    snprintf(u, sizeof(u), "postgresql://memtool:Wr0ngPassw0rd@127.0.0.1:%s/memtool", port);
    assert_int_equal(mt_store_pg_open(&st, u, NULL), MT_EINVAL);
    one_line(mt_error_last()->message, "refused the password of role \"memtool\"", "PGPASSWORD",
             "Wr0ngPassw0rd");

    /* The password from PGPASSWORD, as libpq takes it; a wrong one not shown either. */
    {
        char line[256], pw[128] = "", *file = strdup(getenv("PGPASSFILE"));
        FILE *f = fopen(file, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
            if (strstr(line, ":memtool:"))
                snprintf(pw, sizeof(pw), "%s", strstr(line, ":memtool:") + 9);
        fclose(f);
        pw[strcspn(pw, "\n")] = '\0';
        assert_true(*pw);
        setenv("PGPASSFILE", "/nonexistent", 1);
        setenv("PGPASSWORD", pw, 1);
        assert_int_equal(mt_store_pg_open(&st, url, NULL), 0);
        st->free(st);
        setenv("PGPASSWORD", "NotTheR1ghtOne", 1);
        assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
        one_line(mt_error_last()->message, "refused the password", NULL, "NotTheR1ghtOne");
        unsetenv("PGPASSWORD");
        assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
        one_line(mt_error_last()->message, "none was given", "~/.pgpass", NULL);
        setenv("PGPASSFILE", file, 1);
        free(file);
    }

    /* Nothing listening there (port 1 on loopback). */
    snprintf(u, sizeof(u), "postgres://memtool:S3cretPw@127.0.0.1:1/memtool");
    assert_int_equal(mt_store_pg_open(&st, u, NULL), MT_EIO);
    one_line(mt_error_last()->message, "cannot reach the PostgreSQL server", "host and port",
             "S3cretPw");

    /* Malformed: not a port, an unclosed IPv6 bracket (libpq quotes the URL), junk. */
    assert_int_equal(mt_store_pg_open(&st, "postgresql://memtool@127.0.0.1:nope/memtool", NULL),
                     MT_EINVAL);
    one_line(mt_error_last()->message, "connection string is not valid", "postgresql://user@",
             NULL);
    assert_int_equal(mt_store_pg_open(&st, "postgresql://memtool:S3cretPw@[::1/memtool", NULL),
                     MT_EINVAL);
    one_line(mt_error_last()->message, "connection string is not valid", NULL, "S3cretPw");
    assert_int_equal(mt_store_pg_open(&st, "host=127.0.0.1 password=S3cretPw dbname", NULL),
                     MT_EINVAL);
    one_line(mt_error_last()->message, "connection string is not valid", NULL, "S3cretPw");

    /* A database that is not there. */
    url_with_db(u, sizeof(u), url, "no_such_db");
    assert_int_equal(mt_store_pg_open(&st, u, NULL), MT_ENOTFOUND);
    one_line(mt_error_last()->message, "\"no_such_db\" does not exist", "createdb", NULL);

    /* A schema from a newer memtool; then one older than this one's. */
    owner = pg_connect(owner_url);
    sql_ok(owner, "UPDATE memtool.meta SET value = '8' WHERE key = 'schema'");
    assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
    one_line(mt_error_last()->message, "schema version 8, newer than this memtool's 7",
             "upgrade memtool", NULL);
    assert_int_equal(mt_store_pg_upgrade(owner_url), MT_EINVAL);
    one_line(mt_error_last()->message, "newer", NULL, NULL);
    sql_ok(owner, "UPDATE memtool.meta SET value = 'x' WHERE key = 'schema'");
    assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
    one_line(mt_error_last()->message, "not a memtool store", NULL, NULL);
    /* Schema 1 (no last access, no search index): refused until upgraded,
     * then every file counts as accessed at the upgrade. */
    to_schema_3(su);
    sql_ok(owner, "ALTER TABLE memtool.nodes DROP COLUMN accessed, DROP COLUMN modified");
    sql_ok(owner, "DROP TABLE memtool.search_docs");
    sql_ok(owner, "UPDATE memtool.meta SET value = '1' WHERE key = 'schema'");
    assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
    one_line(mt_error_last()->message, "schema version 1, older than this memtool's 7",
             "memtool store upgrade URL", NULL);
    assert_int_equal(mt_store_pg_upgrade(owner_url), 0);
    grant_memtool(owner);
    assert_int_equal(mt_store_pg_open(&st, url, NULL), 0);
    st->free(st);
    /* Schema 2 (no search index, counts in contents): the same; the new
     * tables need their grant, which a change without it names. */
    {
        mt_memory *mem;
        mt_search_hit *h = NULL;
        size_t n = 0;

        to_schema_3(su);
        sql_ok(owner, "DROP TABLE memtool.search_docs");
        sql_ok(owner, "UPDATE memtool.meta SET value = '2' WHERE key = 'schema'");
        assert_int_equal(mt_store_pg_open(&st, url, NULL), MT_EINVAL);
        one_line(mt_error_last()->message, "schema version 2, older than this memtool's 7",
                 "memtool store upgrade URL", NULL);
        assert_int_equal(mt_store_pg_upgrade(owner_url), 0);
        assert_int_equal(sql_long(owner, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                                         "n.oid = c.relnamespace WHERE n.nspname = 'memtool' AND "
                                         "c.relname = 'search_docs' AND c.relrowsecurity AND "
                                         "c.relforcerowsecurity"),
                         1);
        mem = open_memory("upgraded", NULL);
        {
            int err = 0;
            char *text = mt_test_call(mem, &err,
                                      "{\"command\":\"create\",\"path\":\"/memories/u.md\","
                                      "\"file_text\":\"found after the upgrade\"}");
            assert_int_equal(err, 1);
            one_line(text, "may not use memtool's tables", "memtool.content_refs", NULL);
            free(text);
        }
        /* With content_refs granted the change goes through; a search
         * without search_docs' grant names that table. */
        sql_ok(owner, "GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.content_refs TO memtool");
        mt_test_expect(mem,
                       "{\"command\":\"create\",\"path\":\"/memories/u.md\",\"file_text\":"
                       "\"found after the upgrade\"}",
                       0, "File created successfully at: /memories/u.md");
        assert_int_equal(mt_memory_search(&h, &n, mem, "upgrade", NULL), MT_EIO);
        one_line(mt_error_last()->message, "may not use memtool's tables", "memtool.search_docs",
                 NULL);
        grant_memtool(owner);
        assert_int_equal(mt_memory_search(&h, &n, mem, "upgrade", NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(h[0].path, "/memories/u.md");
        mt_search_hits_free(h, n);
        mt_memory_free(mem);
    }
    PQfinish(owner);
    PQfinish(su);

    /* A bad tenant name never reaches the server. */
    assert_int_equal(mt_store_pg_open(&st, url, "a/b"), MT_EINVAL);
    assert_int_equal(mt_store_pg_open(&st, url, ".."), MT_EINVAL);
}

/* ---- schema 4: counts of references --------------------------------------------------- */

/* The count of the content at tenant's path, read past row security (-1: none). */
static long refs_at(PGconn *su, const char *tenant, const char *path)
{
    char q[512];

    snprintf(q, sizeof(q),
             "SELECT coalesce((SELECT r.refs FROM memtool.content_refs r JOIN memtool.nodes n "
             "ON n.tenant = r.tenant AND n.sha256 = r.sha256 WHERE n.tenant = '%s' AND "
             "n.path = '%s'), -1)",
             tenant, path);
    return sql_long(su, q);
}

/* The prune by days (mt_test_days_prune) on the server, in a tenant of its
 * own; the superuser sets the versions back, past row security. */
static mt_memory *days_open(void *ctx, const mt_options *opts)
{
    (void)ctx;
    return open_memory("days", opts);
}

static void days_age(void *ctx, int64_t ms)
{
    char q[160];

    snprintf(q, sizeof(q), "UPDATE memtool.versions SET at = at - %lld WHERE tenant = 'days'",
             (long long)ms);
    sql_ok(ctx, q);
}

static void test_prune_days(void **state)
{
    PGconn *su = pg_connect(admin);
    (void)state;

    mt_test_days_prune(days_open, days_age, su);
    PQfinish(su);
}

/* The server's answer to one of mt_test_refs_mix's questions, past row security. */
static long long refs_sql(void *ctx, const char *text)
{
    return sql_long(ctx, text);
}

static mt_memory *refs_open(void *ctx, const char *tenant, const mt_options *opts)
{
    (void)ctx;
    return open_memory(tenant, opts);
}

/* The counts of references after a random mix of changes, where the server
 * changes and reads a count in one statement (MT_DB_REFS_ADD, _TAKE). */
static void test_refs_agree(void **state)
{
    PGconn *su = pg_connect(admin);
    (void)state;

    mt_test_refs_mix(refs_open, refs_sql, su, "memtool.");
    PQfinish(su);
}

/* Every tenant's counts, in one text. */
#define ALL_COUNTS                                                                                 \
    "SELECT string_agg(tenant || ' ' || sha256 || ' ' || refs, ',' ORDER BY tenant, sha256) "      \
    "FROM memtool.content_refs"

/* Schema 3 (each count a column of its content's row) is refused until the
 * owner's upgrade, which keeps every tenant's counts, in content_refs under
 * row security, with contents' row security still forced; a content still
 * goes with its last reference. */
static void test_upgrade_refs(void **state)
{
    PGconn *su = pg_connect(admin), *owner = pg_connect(owner_url);
    mt_store *a, *b;
    mt_store_op op;
    PGresult *r;
    char *before;
    (void)state;

    assert_int_equal(mt_store_pg_open(&a, url, "refs_a"), 0);
    assert_int_equal(mt_store_pg_open(&b, url, "refs_b"), 0);
    mt_test_refs_fixture(a, b);
    a->free(a);
    b->free(b);
    assert_int_equal(refs_at(su, "refs_a", "x.md"), 4);
    assert_int_equal(refs_at(su, "refs_a", "lone.md"), 1);
    assert_int_equal(refs_at(su, "refs_b", "x.md"), 2);
    r = sql(su, PGRES_TUPLES_OK, ALL_COUNTS);
    before = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    assert_non_null(before);

    to_schema_3(su);
    assert_int_equal(mt_store_pg_open(&a, url, "refs_a"), MT_EINVAL);
    one_line(mt_error_last()->message, "schema version 3, older than this memtool's 7",
             "memtool store upgrade URL", NULL);
    assert_int_equal(mt_store_pg_upgrade(owner_url), 0);
    r = sql(su, PGRES_TUPLES_OK, ALL_COUNTS);
    assert_string_equal(PQgetvalue(r, 0, 0), before);
    PQclear(r);
    free(before);
    assert_int_equal(sql_long(su, "SELECT count(*) FROM information_schema.columns WHERE "
                                  "table_schema = 'memtool' AND table_name = 'contents' AND "
                                  "column_name = 'refs'"),
                     0);
    /* Schema 5's record of the prune by days (none yet) and its index. */
    assert_int_equal(sql_long(su, "SELECT count(*) FROM memtool.usage WHERE tenant IN "
                                  "('refs_a', 'refs_b') AND expired_before = 0 AND "
                                  "expiry_seen = 0"),
                     2);
    assert_int_equal(sql_long(su, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'memtool' "
                                  "AND indexname = 'versions_at'"),
                     1);
    assert_int_equal(sql_long(su, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                                  "n.oid = c.relnamespace WHERE n.nspname = 'memtool' AND "
                                  "c.relname IN ('contents', 'content_refs') AND "
                                  "c.relrowsecurity AND c.relforcerowsecurity AND "
                                  "pg_get_userbyid(c.relowner) = 'memtool_owner'"),
                     2);
    assert_int_equal(sql_long(su, "SELECT count(*) FROM pg_policies WHERE schemaname = 'memtool' "
                                  "AND tablename = 'content_refs' AND policyname = 'tenant_only'"),
                     1);
    /* memtool's role needs the new table's grant, as ever. */
    grant_memtool(owner);

    assert_int_equal(mt_store_pg_open(&a, url, "refs_a"), 0);
    assert_int_equal(sql_long(su, "SELECT count(*) FROM memtool.contents c JOIN memtool.nodes n "
                                  "USING (tenant, sha256) WHERE n.tenant = 'refs_a' AND "
                                  "n.path = 'lone.md'"),
                     1);
    r = sql(su, PGRES_TUPLES_OK,
            "SELECT sha256 FROM memtool.nodes WHERE tenant = 'refs_a' AND path = 'lone.md'");
    assert_int_equal(PQntuples(r), 1);
    {
        char q[512];
        snprintf(q, sizeof(q),
                 "SELECT (SELECT count(*) FROM memtool.contents WHERE sha256 = '%s') + "
                 "(SELECT count(*) FROM memtool.content_refs WHERE sha256 = '%s')",
                 PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 0));
        PQclear(r);
        assert_int_equal(sql_long(su, q), 2); /* its content and its count */
        mt_test_store_op(&op, 0);
        assert_int_equal(a->remove(a, &op, "lone.md"), 0);
        assert_int_equal(sql_long(su, q), 0);
    }
    mt_test_store_op(&op, 1);
    assert_int_equal(a->remove(a, &op, "y.md"), 0);
    assert_int_equal(refs_at(su, "refs_a", "x.md"), 3);
    assert_int_equal(refs_at(su, "refs_b", "x.md"), 2);
    a->free(a);
    PQfinish(owner);
    PQfinish(su);
}

/* ---- tenants -------------------------------------------------------------------------- */

static void test_tenant_isolation(void **state)
{
    mt_memory *alice = open_memory("alice", NULL), *bob = open_memory("bob", NULL);
    mt_version *v = NULL, one;
    mt_usage u;
    size_t n = 5;
    PGconn *c;
    (void)state;

    mt_test_expect(alice,
                   "{\"command\":\"create\",\"path\":\"/memories/secret.md\",\"file_text\":\"the "
                   "launch code\\n\"}",
                   0, "File created successfully at: /memories/secret.md");
    mt_test_expect(alice,
                   "{\"command\":\"create\",\"path\":\"/memories/d/x.md\",\"file_text\":\"x\\n\"}",
                   0, "File created successfully at: /memories/d/x.md");
    mt_test_expect(alice,
                   "{\"command\":\"str_replace\",\"path\":\"/memories/secret.md\",\"old_str\":"
                   "\"launch\",\"new_str\":\"LAUNCH\"}",
                   0,
                   "The memory file has been edited. Here is the snippet showing the change (with "
                   "line numbers):\n     1\tthe LAUNCH code");

    /* Bob sees nothing of it, by any command. */
    mt_test_expect(bob, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                   "Here're the files and directories up to 2 levels deep in /memories, excluding "
                   "hidden items and node_modules:\n0B\t/memories");
    mt_test_expect(bob, "{\"command\":\"view\",\"path\":\"/memories/secret.md\"}", 1,
                   "The path /memories/secret.md does not exist. Please provide a valid path.");
    mt_test_expect(bob, "{\"command\":\"delete\",\"path\":\"/memories/d\"}", 1,
                   "Error: The path /memories/d does not exist");
    assert_int_equal(mt_memory_log(&v, &n, bob, NULL), 0);
    assert_int_equal(n, 0);
    mt_versions_free(v, n);
    assert_int_equal(mt_memory_version(&one, bob, 1), MT_ENOTFOUND);
    assert_int_equal(mt_memory_usage(&u, bob), 0);
    assert_true(u.bytes == 0 && u.files == 0 && u.dirs == 0);
    /* The same path is Bob's own. */
    mt_test_expect(
        bob, "{\"command\":\"create\",\"path\":\"/memories/secret.md\",\"file_text\":\"bob\"}", 0,
        "File created successfully at: /memories/secret.md");
    mt_test_expect(alice, "{\"command\":\"view\",\"path\":\"/memories/secret.md\"}", 0,
                   "Here's the content of /memories/secret.md with line numbers:\n     1\tthe "
                   "LAUNCH code");

    /* Searches: each finds only its own, and each tenant's index holds only
     * its own words. */
    {
        mt_search_hit *h = NULL;
        size_t k = 0;
        assert_int_equal(mt_memory_search(&h, &k, alice, "launch", NULL), 0);
        assert_int_equal(k, 1);
        assert_string_equal(h[0].path, "/memories/secret.md");
        mt_search_hits_free(h, k);
        assert_int_equal(mt_memory_search(&h, &k, bob, "launch", NULL), 0);
        assert_int_equal(k, 0);
        mt_search_hits_free(h, k);
        assert_int_equal(mt_memory_search(&h, &k, bob, "bob", NULL), 0);
        assert_int_equal(k, 1);
        mt_search_hits_free(h, k);
    }

    /* The server holds the line: a query without any tenant condition, on a
     * connection of memtool's role set to Bob, sees none of Alice's rows. */
    c = as_tenant("bob");
    assert_int_equal(sql_long(c, "SELECT count(*) FROM nodes WHERE tenant = 'alice'"), 0);
    {
        PGresult *r = sql(c, PGRES_TUPLES_OK, "SELECT * FROM nodes");
        int i;
        assert_int_equal(PQntuples(r), 1);
        for (i = 0; i < PQntuples(r); i++)
            assert_string_equal(PQgetvalue(r, i, 0), "bob");
        PQclear(r);
    }
    assert_int_equal(sql_long(c, "SELECT count(*) FROM versions"), 1);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM contents"), 1);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM usage WHERE tenant <> 'bob'"), 0);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM content_refs"), 1);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM content_refs WHERE tenant <> 'bob'"), 0);
    sql_fails(c, "INSERT INTO content_refs(tenant, sha256, refs) VALUES ('alice', 'planted', 1)",
              "42501");
    sql_fails(c, "UPDATE content_refs SET tenant = 'alice'", "42501");
    assert_int_equal(sql_long(c, "WITH d AS (UPDATE content_refs SET refs = 0 WHERE tenant = "
                                 "'alice' RETURNING 1) SELECT count(*) FROM d"),
                     0);
    sql_fails(c, "ALTER TABLE memtool.content_refs NO FORCE ROW LEVEL SECURITY", "42501");
    assert_int_equal(sql_long(c, "SELECT count(*) FROM contents WHERE convert_from(data, 'UTF8') "
                                 "LIKE '%LAUNCH%'"),
                     0);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM search_docs"), 1);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM search_docs WHERE tenant <> 'bob' OR "
                                 "words @@ CAST('launch' AS tsquery)"),
                     0);
    sql_fails(c,
              "INSERT INTO search_docs(tenant, path, sha256, words) VALUES ('alice', 'planted', "
              "'x', 'launch')",
              "42501");
    sql_fails(c, "UPDATE search_docs SET tenant = 'alice'", "42501");
    sql_fails(c, "ALTER TABLE memtool.search_docs NO FORCE ROW LEVEL SECURITY", "42501");
    /* Nor can it write into Alice's rows, or move its own to her. */
    sql_fails(c, "INSERT INTO nodes(tenant, path, kind, size) VALUES ('alice', 'planted', 1, 0)",
              "42501");
    sql_fails(c, "UPDATE nodes SET tenant = 'alice'", "42501");
    assert_int_equal(sql_long(c, "WITH d AS (DELETE FROM nodes WHERE tenant = 'alice' RETURNING "
                                 "1) SELECT count(*) FROM d"),
                     0);
    /* Nor turn row security off, or get around it. */
    assert_int_equal(sql_long(c, "SELECT count(*) FROM pg_roles WHERE rolname = current_user AND "
                                 "NOT rolsuper AND NOT rolbypassrls"),
                     1);
    sql_fails(c, "ALTER TABLE memtool.nodes DISABLE ROW LEVEL SECURITY", "42501");
    sql_fails(c, "ALTER TABLE memtool.nodes NO FORCE ROW LEVEL SECURITY", "42501");
    sql_fails(c, "DROP POLICY tenant_only ON memtool.nodes", "42501");
    sql_fails(c, "SET ROLE memtool_owner", "42501");
    sql_ok(c, "SET row_security = off");
    sql_fails(c, "SELECT * FROM nodes", "42501");
    PQfinish(c);
    /* With the tenant unset nothing can be read at all. */
    c = pg_connect(url);
    sql_fails(c, "SELECT count(*) FROM memtool.nodes", "42704");
    sql_fails(c, "SELECT count(*) FROM memtool.content_refs", "42704");
    PQfinish(c);
    /* (Alice's rows are there, for her.) */
    c = as_tenant("alice");
    assert_int_equal(sql_long(c, "SELECT count(*) FROM nodes"), 3);
    /* Her contents, each counted: the first and the edited secret, x.md. */
    assert_int_equal(sql_long(c, "SELECT count(*) FROM content_refs"), 3);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM contents c JOIN content_refs r USING "
                                 "(tenant, sha256)"),
                     3);
    assert_int_equal(sql_long(c, "SELECT count(*) FROM search_docs WHERE words @@ "
                                 "CAST('launch' AS tsquery)"),
                     1);
    PQfinish(c);

    mt_memory_free(alice);
    mt_memory_free(bob);
}

/* ---- search --------------------------------------------------------------------------- */

/* A memory's words in the index, each with its positions, in byte order. */
static char *indexed_words(PGconn *c, const char *path)
{
    const char *v[1] = {path};
    PGresult *r =
        PQexecParams(c,
                     "SELECT string_agg(lexeme || ':' || array_to_string(positions, ','), "
                     "' ' ORDER BY lexeme COLLATE \"C\") FROM search_docs, unnest(words) "
                     "WHERE path = $1",
                     1, NULL, v, NULL, NULL, 0);
    char *out;

    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("the words of %s: %s", path, PQresultErrorMessage(r));
    out = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return out;
}

static void search_finds(mt_memory *mem, const char *query, const char *want)
{
    mt_search_hit *h = NULL;
    size_t n = 0;

    if (mt_memory_search(&h, &n, mem, query, NULL) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    if (want) {
        assert_int_equal(n, 1);
        assert_string_equal(h[0].path, want);
    } else {
        assert_int_equal(n, 0);
    }
    mt_search_hits_free(h, n);
}

/* The index holds memtool's words exactly as memtool cut them (digits,
 * Cyrillic, CJK pairs), with their positions, also in a database whose
 * encoding makes the server's own parser cut them otherwise; and a memory
 * with more distinct words than a tsvector holds is still indexed. */
static void test_search_words(void **state)
{
    static const char text[] =
        "{\"command\":\"create\",\"path\":\"/memories/w.md\",\"file_text\":\"Версия v2 abc123 "
        "日本語 Ёлка café\"}";
    static const char want[] = "abc123:3 cafe:7 v2:2 версия:1 елка:6 日本:4 本語:5";
    char db_url[512], owner_db[512], *got;
    PGconn *su = pg_connect(admin), *owner, *c;
    mt_memory *mem = open_memory("words", NULL);
    mt_store *st;
    (void)state;

    mt_test_expect(mem, text, 0, "File created successfully at: /memories/w.md");
    search_finds(mem, "ЁЛКА", "/memories/w.md");
    c = as_tenant("words");
    got = indexed_words(c, "w.md");
    assert_string_equal(got, want);
    free(got);
    PQfinish(c);
    mt_memory_free(mem);

    /* SQL_ASCII: every byte past ASCII a separator to the server's parser. */
    sql_ok(su, "CREATE DATABASE memtool_ascii OWNER memtool_owner ENCODING 'SQL_ASCII' "
               "LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
    url_with_db(db_url, sizeof(db_url), url, "memtool_ascii");
    url_with_db(owner_db, sizeof(owner_db), owner_url, "memtool_ascii");
    assert_int_equal(mt_store_pg_upgrade(owner_db), 0);
    owner = pg_connect(owner_db);
    grant_memtool(owner);
    /* (what the server would make of them: nothing) */
    assert_int_equal(sql_long(owner, "SELECT count(*) WHERE to_tsvector('simple', 'елка 本語') = "
                                     "CAST('''елка'':1 ''本語'':2' AS tsvector)"),
                     0);
    assert_int_equal(mt_store_pg_open(&st, db_url, "words"), 0);
    assert_int_equal(mt_memory_new(&mem, st, NULL), 0);
    mt_test_expect(mem, text, 0, "File created successfully at: /memories/w.md");
    search_finds(mem, "елка", "/memories/w.md");
    search_finds(mem, "本語", "/memories/w.md");
    search_finds(mem, "\"ёлка 日本語\"", NULL);
    search_finds(mem, "\"abc123 日本語\"", "/memories/w.md");
    mt_memory_free(mem);
    sql_ok(owner, "SET search_path TO memtool; SELECT set_config('memtool.tenant', 'words', "
                  "false)");
    got = indexed_words(owner, "w.md");
    assert_string_equal(got, want);
    free(got);
    PQfinish(owner);
    sql_ok(su, "DROP DATABASE memtool_ascii WITH (FORCE)");
    PQfinish(su);

    /* 200,000 distinct words (1.4 MB of them): more than a tsvector holds.
     * The first are found; those past what it holds are not (the SQLite and
     * file stores find them: see the man page). */
    {
        size_t len = 200000 * 8, i;
        char *big = malloc(len + 1);
        mt_store_op op;

        assert_non_null(big);
        for (i = 0; i < 200000; i++)
            snprintf(big + i * 8, 9, "w%06zu ", i);
        assert_int_equal(mt_store_pg_open(&st, url, "big"), 0);
        mt_store_op_init(&op);
        assert_int_equal(st->create(st, &op, "big.md", big, len), 0);
        free(big);
        assert_int_equal(mt_memory_new(&mem, st, NULL), 0);
        search_finds(mem, "w000010", "/memories/big.md");
        search_finds(mem, "\"w000100 w000101\"", "/memories/big.md");
        search_finds(mem, "w199999", NULL);
        mt_memory_free(mem);
    }
}

/* ---- a lost connection ---------------------------------------------------------------- */

static PGconn *killer;

static int kill_then_edit(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    (void)data;
    (void)len;
    (void)payload;
    /* The change holds its tenant's lock now, inside its transaction. */
    assert_int_equal(sql_long(killer, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid, "
                                      "10000) FROM pg_stat_activity WHERE usename = 'memtool' "
                                      "AND state = 'idle in transaction') k"),
                     1);
    *out = strdup("two\n");
    *out_len = 4;
    return 0;
}

static void test_connection_lost(void **state)
{
    mt_store *st;
    mt_memory *mem;
    mt_store_op op;
    mt_usage before, after;
    mt_version *v = NULL;
    size_t n = 0;
    (void)state;

    assert_int_equal(mt_store_pg_open(&st, url, "lost"), 0);
    assert_int_equal(mt_memory_new(&mem, st, NULL), 0);
    mt_test_expect(mem,
                   "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}",
                   0, "File created successfully at: /memories/a.md");
    assert_int_equal(mt_memory_usage(&before, mem), 0);

    killer = pg_connect(admin);
    mt_store_op_init(&op);
    op.lock_timeout_ms = 5000;
    op.history = 1;
    op.actor = "test";
    assert_int_equal(st->edit(st, &op, "a.md", kill_then_edit, NULL), MT_EIO);
    one_line(mt_error_last()->message, "connection to the PostgreSQL server", "connects again",
             NULL);
    one_line(mt_error_last()->message, "was lost", "nothing of this change was kept", NULL);
    PQfinish(killer);

    /* Nothing of it was kept, and the next command connects again. */
    mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}", 0,
                   "Here's the content of /memories/a.md with line numbers:\n     1\tone");
    assert_int_equal(mt_memory_usage(&after, mem), 0);
    assert_memory_equal(&before, &after, sizeof(before));
    assert_int_equal(mt_memory_log(&v, &n, mem, NULL), 0);
    assert_int_equal(n, 1);
    mt_versions_free(v, n);
    mt_test_expect(mem,
                   "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"b\\n\"}", 0,
                   "File created successfully at: /memories/b.md");
    mt_memory_free(mem);
}

/* ---- the tenant's lock ---------------------------------------------------------------- */

/* A change waits at most its lock timeout for the tenant's row lock, then
 * says so and changes nothing; 0 does not wait; reads never wait; another
 * tenant is not held up. */
static void test_lock_timeout(void **state)
{
    mt_options o;
    mt_memory *mem, *nowait, *other;
    PGconn *holder;
    (void)state;

    /* (Opened before the lock is taken: opening takes it once, for the usage row.) */
    mt_options_init(&o);
    o.lock_timeout_ms = 0;
    nowait = open_memory("locked", &o);
    o.lock_timeout_ms = 300;
    mem = open_memory("locked", &o);
    other = open_memory("unlocked", &o);
    mt_test_expect(mem, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a\"}",
                   0, "File created successfully at: /memories/a.md");
    holder = as_tenant("locked");
    sql_ok(holder, "BEGIN");
    assert_int_equal(sql_long(holder, "SELECT count(*) FROM (SELECT 1 FROM usage FOR UPDATE) l"),
                     1);
    mt_test_expect(mem, "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"b\"}",
                   1,
                   "Error: Cannot complete the operation on /memories/b.md: another process has "
                   "held the store's lock for over 300 ms; nothing was changed, try again later");
    mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}", 0,
                   "Here's the content of /memories/a.md with line numbers:\n     1\ta");
    mt_test_expect(other,
                   "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"b\"}", 0,
                   "File created successfully at: /memories/b.md");
    mt_test_expect(nowait, "{\"command\":\"delete\",\"path\":\"/memories/a.md\"}", 1,
                   "Error: Cannot complete the operation on /memories/a.md: another process has "
                   "held the store's lock for over 0 ms; nothing was changed, try again later");
    sql_ok(holder, "COMMIT");
    PQfinish(holder);
    mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                   "Here're the files and directories up to 2 levels deep in /memories, excluding "
                   "hidden items and node_modules:\n1B\t/memories\n1B\t/memories/a.md");
    mt_memory_free(mem);
    mt_memory_free(nowait);
    mt_memory_free(other);
}

/* ---- deadlocks ------------------------------------------------------------------------ */

typedef struct {
    mt_memory *mem;
    int is_error;
    char *text;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;

    a->text = mt_test_call(a->mem, &a->is_error,
                           "{\"command\":\"create\",\"path\":\"/memories/twin.md\",\"file_text\":"
                           "\"same\"}");
    return NULL;
}

/* Wait until a session of memtool's role waits for a lock (in a change). */
static void await_lock_wait(PGconn *su, const char *app)
{
    char q[256];
    int i;

    snprintf(q, sizeof(q),
             "SELECT count(*) FROM pg_stat_activity WHERE usename = 'memtool' AND "
             "application_name = '%s' AND wait_event_type = 'Lock'",
             app);
    for (i = 0; i < 600 && sql_long(su, q) == 0; i++)
        usleep(10000);
    assert_true(i < 600);
}

/*
 * The server looks for a cycle once, deadlock_timeout after a session began
 * to wait, and the session that looks first and finds one is the one ended.
 * For the change's session to be that one, its look must come after the
 * other session waits (2 s leaves room on a busy machine, and is within the
 * change's own 5 s wait for a lock) and before the
 * other's own (30 s: set as superuser, then the tenant's role taken).
 */
static PGconn *deadlock_other(const char *tenant)
{
    PGconn *c = pg_connect(admin);
    const char *v[1] = {tenant};
    PGresult *r;

    sql_ok(c, "SET deadlock_timeout = '30s'");
    sql_ok(c, "SET ROLE memtool");
    r = PQexecParams(c, "SELECT set_config('memtool.tenant', $1, false)", 1, NULL, v, NULL, NULL,
                     0);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    sql_ok(c, "SET search_path TO memtool");
    return c;
}

/* The role's setting test_deadlock_retried makes for its connection goes
 * even when the test fails before it undoes it: later tests open with the
 * server's own deadlock_timeout. */
static int reset_role_setting(void **state)
{
    PGconn *su = pg_connect(admin);
    (void)state;

    sql_ok(su, "ALTER ROLE memtool RESET deadlock_timeout");
    PQfinish(su);
    return 0;
}

/* A deadlock with another session (40P01) rolls the change back and the
 * core runs it again, which then goes through: the caller sees success. */
static void test_deadlock_retried(void **state)
{
    PGconn *su = pg_connect(admin), *other;
    mt_memory *mem;
    long before;
    pthread_t t;
    call_arg a = {NULL, -1, NULL};
    (void)state;

    sql_ok(su, "ALTER ROLE memtool SET deadlock_timeout = '2s'");
    a.mem = mem = open_memory("deadlock", NULL);
    sql_ok(su, "ALTER ROLE memtool RESET deadlock_timeout");
    other = deadlock_other("deadlock");

    /* The content the change will reference is a row another session holds. */
    mt_test_expect(mem,
                   "{\"command\":\"create\",\"path\":\"/memories/one.md\",\"file_text\":\"same\"}",
                   0, "File created successfully at: /memories/one.md");
    before = sql_long(su, "SELECT deadlocks FROM pg_stat_database WHERE datname = 'memtool'");
    sql_ok(other, "BEGIN");
    sql_ok(other, "UPDATE content_refs SET refs = refs");
    /* The change takes the tenant's lock, then waits for that row... */
    assert_int_equal(pthread_create(&t, NULL, call_thread, &a), 0);
    await_lock_wait(su, "memtool");
    /* ...and the other session now wants the tenant's lock: a cycle. The
     * server ends the change's transaction (it waited first), the other gets
     * the lock and commits, and the change, run again, goes through. */
    sql_ok(other, "SELECT 1 FROM usage FOR UPDATE");
    sql_ok(other, "COMMIT");
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(a.is_error, 0);
    assert_string_equal(a.text, "File created successfully at: /memories/twin.md");
    free(a.text);
    /* pg_stat_database counts with a delay: poll. */
    {
        int i;
        for (i = 0; i < 300; i++) {
            if (sql_long(su, "SELECT deadlocks FROM pg_stat_database WHERE datname = 'memtool'") >
                before)
                break;
            sql_ok(su, "SELECT pg_stat_clear_snapshot()");
            usleep(10000);
        }
        assert_true(i < 300);
    }
    mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                   "Here're the files and directories up to 2 levels deep in /memories, excluding "
                   "hidden items and node_modules:\n8B\t/memories\n4B\t/memories/one.md\n4B\t/"
                   "memories/twin.md");
    PQfinish(other);
    PQfinish(su);
    mt_memory_free(mem);
}

/* ---- many processes ------------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len;
} collected;

static int collect(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    collected *c = payload;
    (void)off;
    (void)last;
    c->data = realloc(c->data, c->len + len + 1);
    assert_non_null(c->data);
    memcpy(c->data + c->len, data, len);
    c->len += len;
    c->data[c->len] = '\0';
    return 0;
}

#define PROCS   8
#define INSERTS 25

/* 8 processes insert 25 lines each into one memory: all 200 land. The
 * children inherit the parent's handle (and its connection): each makes its
 * own, and the parent's goes on working after they are gone. */
static void test_concurrent_inserts(void **state)
{
    mt_options o;
    mt_store *st;
    mt_memory *mem;
    collected got = {NULL, 0};
    uint64_t size;
    pid_t kids[PROCS];
    int i, k, status;
    (void)state;

    mt_options_init(&o);
    o.lock_timeout_ms = 60000;
    assert_int_equal(mt_store_pg_open(&st, url, "inserts"), 0);
    assert_int_equal(mt_memory_new(&mem, st, &o), 0);
    mt_test_expect(mem, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}",
                   0, "File created successfully at: /memories/log.md");
    for (i = 0; i < PROCS; i++) {
        assert_true((kids[i] = fork()) >= 0);
        if (kids[i] == 0) {
            for (k = 0; k < INSERTS; k++) {
                char json[256], *text;
                int err = 1;
                snprintf(json, sizeof(json),
                         "{\"command\":\"insert\",\"path\":\"/memories/log.md\",\"insert_line\":0,"
                         "\"insert_text\":\"p%d-%d\"}",
                         i, k);
                text = mt_test_call(mem, &err, json);
                if (err) {
                    fprintf(stderr, "child %d: %s\n", i, text);
                    _exit(1);
                }
                free(text);
            }
            _exit(0);
        }
    }
    for (i = 0; i < PROCS; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(st->read(st, &size, "log.md", 1 << 20, collect, &got), 0);
    {
        size_t lines = 0, j;
        for (j = 0; j < got.len; j++)
            lines += got.data[j] == '\n';
        assert_int_equal(lines, PROCS * INSERTS);
    }
    for (i = 0; i < PROCS; i++)
        for (k = 0; k < INSERTS; k++) {
            char line[32];
            snprintf(line, sizeof(line), "p%d-%d\n", i, k);
            assert_non_null(strstr(got.data, line));
        }
    free(got.data);
    /* The parent's own connection was not touched by the children. */
    {
        unsigned long before = mt_db_pg_round_trips();
        mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                       "Here're the files and directories up to 2 levels deep in /memories, "
                       "excluding hidden items and node_modules:\n1.1K\t/memories\n1.1K\t/"
                       "memories/log.md");
        /* No reconnection: a connection costs the session's setup too. */
        assert_true(mt_db_pg_round_trips() - before < 10);
    }
    mt_memory_free(mem);
}

/* 8 processes race to create 40 files under max_files 10: exactly 10 land. */
static void test_max_files_race(void **state)
{
    mt_options o;
    mt_memory *mem;
    mt_usage u;
    pid_t kids[PROCS];
    PGconn *c;
    int i, status, made = 0;
    (void)state;

    mt_options_init(&o);
    o.max_files = 10;
    o.lock_timeout_ms = 60000;
    for (i = 0; i < PROCS; i++) {
        assert_true((kids[i] = fork()) >= 0);
        if (kids[i] == 0) {
            mt_memory *m;
            mt_store *st;
            int k, ok = 0;
            if (mt_store_pg_open(&st, url, "race") < 0 || mt_memory_new(&m, st, &o) < 0)
                _exit(100);
            for (k = 0; k < 5; k++) {
                char json[256], *text;
                int err = 1;
                snprintf(json, sizeof(json),
                         "{\"command\":\"create\",\"path\":\"/memories/r/c%d-%d.md\","
                         "\"file_text\":\"x\"}",
                         i, k);
                text = mt_test_call(m, &err, json);
                if (!err)
                    ok++;
                else if (!strstr(text, "the max files limit is 10"))
                    _exit(101);
                free(text);
            }
            mt_memory_free(m);
            _exit(ok);
        }
    }
    for (i = 0; i < PROCS; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 5);
        made += WEXITSTATUS(status);
    }
    assert_int_equal(made, 10);
    mem = open_memory("race", &o);
    assert_int_equal(mt_memory_usage(&u, mem), 0);
    assert_int_equal(u.files, 10);
    assert_int_equal(u.dirs, 1);
    mt_memory_free(mem);
    c = as_tenant("race");
    assert_int_equal(sql_long(c, "SELECT count(*) FROM nodes WHERE kind = 1"), 10);
    PQfinish(c);
}

/* ---- the same results as the filesystem store ------------------------------------------ */

static const char *const script[] = {
    "{\"command\":\"view\",\"path\":\"/memories\"}",
    "{\"command\":\"create\",\"path\":\"/memories/notes.md\",\"file_text\":\"# Notes\\n- a\\n\"}",
    "{\"command\":\"create\",\"path\":\"/memories/notes.md\",\"file_text\":\"again\"}",
    "{\"command\":\"create\",\"path\":\"/memories/a-c/x.md\",\"file_text\":\"1\\n2\\n3\\n\"}",
    "{\"command\":\"create\",\"path\":\"/memories/a/b/c.md\",\"file_text\":\"deep\"}",
    "{\"command\":\"create\",\"path\":\"/memories/.hidden/h.md\",\"file_text\":\"hhhh\"}",
    "{\"command\":\"create\",\"path\":\"/memories/notes.md/x\",\"file_text\":\"x\"}",
    "{\"command\":\"view\",\"path\":\"/memories\"}",
    "{\"command\":\"view\",\"path\":\"/memories/a\"}",
    "{\"command\":\"view\",\"path\":\"/memories/a-c/x.md\",\"view_range\":[2,-1]}",
    "{\"command\":\"str_replace\",\"path\":\"/memories/notes.md\",\"old_str\":\"- a\","
    "\"new_str\":\"- b\"}",
    "{\"command\":\"str_replace\",\"path\":\"/memories/notes.md\",\"old_str\":\"zzz\"}",
    "{\"command\":\"insert\",\"path\":\"/memories/notes.md\",\"insert_line\":1,"
    "\"insert_text\":\"ins\"}",
    "{\"command\":\"insert\",\"path\":\"/memories/notes.md\",\"insert_line\":9,"
    "\"insert_text\":\"ins\"}",
    "{\"command\":\"rename\",\"old_path\":\"/memories/a\",\"new_path\":\"/memories/z/a\"}",
    "{\"command\":\"rename\",\"old_path\":\"/memories/z\",\"new_path\":\"/memories/z/y\"}",
    "{\"command\":\"rename\",\"old_path\":\"/memories/nope\",\"new_path\":\"/memories/q\"}",
    "{\"command\":\"rename\",\"old_path\":\"/memories/notes.md\",\"new_path\":\"/memories/a-c/"
    "x.md\"}",
    "{\"command\":\"view\",\"path\":\"/memories\"}",
    "{\"command\":\"delete\",\"path\":\"/memories/z\"}",
    "{\"command\":\"delete\",\"path\":\"/memories/z\"}",
    "{\"command\":\"view\",\"path\":\"/memories\"}",
    "{\"command\":\"view\",\"path\":\"/memories/notes.md\"}",
    "{\"command\":\"view\",\"path\":\"/memories/a-c/x.md/y\"}",
};

static void test_same_as_files(void **state)
{
    mt_test_store fs;
    mt_memory *pg = open_memory("same", NULL);
    size_t i;
    (void)state;

    mt_test_store_init(&fs, NULL);
    for (i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
        int e1 = -1, e2 = -1;
        char *a = mt_test_call(fs.mem, &e1, script[i]);
        char *b = mt_test_call(pg, &e2, script[i]);
        if (strcmp(a, b) || e1 != e2)
            fail_msg("%s\nfiles:      %s\npostgresql: %s", script[i], a, b);
        free(a);
        free(b);
    }
    mt_test_store_free(&fs);
    mt_memory_free(pg);
}

/* ---- round trips ---------------------------------------------------------------------- */

/* tmpl with each "%d" made n (a template, not a format: -Wformat-nonliteral). */
static void subst(char *out, size_t size, const char *tmpl, int n)
{
    size_t o = 0;

    for (; *tmpl && o + 12 < size; tmpl++) {
        if (tmpl[0] == '%' && tmpl[1] == 'd') {
            o += (size_t)snprintf(out + o, size - o, "%d", n);
            tmpl++;
        } else {
            out[o++] = *tmpl;
        }
    }
    out[o] = '\0';
}

/* What each command costs in round trips on a warm connection (every
 * statement prepared), printed for the record, and bounded so that a change
 * that adds some is seen. */
static void test_round_trips(void **state)
{
    static const struct {
        const char *name, *json;
        unsigned long most;
    } cmds[] = {
        {"create (2 new parents)",
         "{\"command\":\"create\",\"path\":\"/memories/%d/b/c.md\",\"file_text\":\"x\\n\"}", 30},
        {"create (parents there)",
         "{\"command\":\"create\",\"path\":\"/memories/%d/b/d.md\",\"file_text\":\"y\\n\"}", 30},
        {"view file", "{\"command\":\"view\",\"path\":\"/memories/%d/b/c.md\"}", 12},
        /* Its access is recorded: a small file's view is one statement. */
        {"view file again", "{\"command\":\"view\",\"path\":\"/memories/%d/b/c.md\"}", 1},
        {"view directory", "{\"command\":\"view\",\"path\":\"/memories/%d\"}", 12},
        /* An edit whose contents the history holds already (the first
         * round's): begin, the usage row, the node, the content, the newest
         * version, the new content's count, the old one's (each changed and
         * read in one statement), the node, the version's count, the version,
         * the prune check, the usage row, commit. */
        {"str_replace",
         "{\"command\":\"str_replace\",\"path\":\"/memories/%d/b/c.md\",\"old_str\":\"x\","
         "\"new_str\":\"z\"}",
         14},
        {"insert",
         "{\"command\":\"insert\",\"path\":\"/memories/%d/b/c.md\",\"insert_line\":1,"
         "\"insert_text\":\"w\"}",
         14},
        {"rename file",
         "{\"command\":\"rename\",\"old_path\":\"/memories/%d/b/d.md\",\"new_path\":\"/memories/"
         "%d/e.md\"}",
         30},
        {"rename directory",
         "{\"command\":\"rename\",\"old_path\":\"/memories/%d/b\",\"new_path\":\"/memories/%d/f\"}",
         40},
        {"delete file", "{\"command\":\"delete\",\"path\":\"/memories/%d/e.md\"}", 30},
        {"delete directory", "{\"command\":\"delete\",\"path\":\"/memories/%d\"}", 40},
    };
    mt_memory *mem;
    unsigned long opening = mt_db_pg_round_trips();
    size_t i;
    int round;
    (void)state;

    mem = open_memory("trips", NULL);
    opening = mt_db_pg_round_trips() - opening;
    printf("round trips to open a store (after libpq's connection): %lu\n", opening);
    assert_true(opening <= 8);
    {
        /* A tenant already there: its usage row is found, not made under the
         * write lock as a change would (that was 5 more). */
        mt_memory *again;
        opening = mt_db_pg_round_trips();
        again = open_memory("trips", NULL);
        opening = mt_db_pg_round_trips() - opening;
        printf("round trips to open it again: %lu\n", opening);
        assert_true(opening <= 3);
        mt_memory_free(again);
    }

    for (round = 0; round < 2; round++) {
        if (round == 1)
            printf("round trips per command, warm connection, history on:\n");
        for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
            char json[512], *text;
            unsigned long before;
            int err = 1;
            subst(json, sizeof(json), cmds[i].json, round);
            before = mt_db_pg_round_trips();
            text = mt_test_call(mem, &err, json);
            if (err)
                fail_msg("%s: %s", json, text);
            free(text);
            if (round == 1) {
                unsigned long n = mt_db_pg_round_trips() - before;
                printf("  %-24s %lu\n", cmds[i].name, n);
                assert_true(n <= cmds[i].most);
            }
        }
    }
    mt_memory_free(mem);
    /* A search of the store itself: the first indexes, the next has nothing
     * to index (db_pg.c's count). */
    {
        mt_store *st;
        mt_store_hit *hits;
        mt_search_query *q;
        unsigned long before, n;
        size_t k;

        mt_store_op op;

        assert_int_equal(mt_store_pg_open(&st, url, "trips"), 0);
        mt_store_op_init(&op);
        assert_int_equal(st->create(st, &op, "s.md", "zz z\n", 5), 0);
        assert_int_equal(mt_search_query_parse(&q, "z", 1), 0);
        for (round = 0; round < 2; round++) {
            before = mt_db_pg_round_trips();
            assert_int_equal(st->search(st, &hits, &k, q, "", 10), 0);
            n = mt_db_pg_round_trips() - before;
            assert_int_equal(k, 1);
            assert_string_equal(hits[0].path, "s.md");
            mt_store_hits_free(hits, k);
        }
        printf("  %-24s %lu\n", "search (nothing to index)", n);
        assert_int_equal(n, 5);
        mt_search_query_free(q);
        st->free(st);
    }
}

/* ---- a writer killed at any instant ------------------------------------------------------ */

/*
 * A writer process is killed (SIGKILL) at a random instant while it edits
 * one memory and creates others: every change it reported done is there,
 * none is torn (the edited memory holds exactly one line per reported insert,
 * or one more whose commit the kill hid from the report), and the usage row
 * equals a fresh count of the rows.
 */
static void test_writer_killed(void **state)
{
    mt_options o;
    int round;
    (void)state;

    mt_options_init(&o);
    o.lock_timeout_ms = 60000;
    srand(7);
    for (round = 0; round < 10; round++) {
        char tenant[32], buf[4096];
        int fds[2], status;
        size_t reported = 0;
        ssize_t got;
        pid_t pid;

        snprintf(tenant, sizeof(tenant), "killed-%d", round);
        {
            mt_memory *m = open_memory(tenant, &o);
            mt_test_expect(
                m, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}", 0,
                "File created successfully at: /memories/log.md");
            mt_memory_free(m);
        }
        assert_int_equal(pipe(fds), 0);
        assert_true((pid = fork()) >= 0);
        if (pid == 0) {
            mt_memory *m = open_memory(tenant, &o);
            char json[256];
            int k;
            close(fds[0]);
            for (k = 0;; k++) {
                mt_result r;
                snprintf(json, sizeof(json),
                         k % 2 ? "{\"command\":\"create\",\"path\":\"/memories/d/f%d.md\","
                                 "\"file_text\":\"content %d\\n\"}"
                               : "{\"command\":\"insert\",\"path\":\"/memories/log.md\","
                                 "\"insert_line\":0,\"insert_text\":\"line %d\\n\"}",
                         k, k);
                if (mt_memory_call(&r, m, json, strlen(json)) != 0 || r.is_error)
                    _exit(1);
                mt_result_dispose(&r);
                if (write(fds[1], "x", 1) != 1)
                    _exit(1);
            }
        }
        close(fds[1]);
        assert_int_equal(read(fds[0], buf, 1), 1);
        reported = 1;
        usleep((useconds_t)(rand() % 30000));
        kill(pid, SIGKILL);
        while ((got = read(fds[0], buf, sizeof(buf))) > 0)
            reported += (size_t)got;
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        {
            mt_memory *m = open_memory(tenant, &o);
            char *data = NULL;
            size_t len = 0, lines = 0, i, files = 0;
            long k, done;
            mt_usage u;
            PGconn *c;

            /* Change k was reported once done: changes 0 .. reported-1 are in,
             * and change `reported` may be too (its commit was not reported). */
            assert_int_equal(mt_memory_read(&data, &len, m, "/memories/log.md"), 0);
            for (i = 0; i < len; i++)
                lines += data[i] == '\n';
            free(data);
            assert_int_equal(mt_memory_usage(&u, m), 0);
            files = (size_t)u.files - 1;
            done = (long)(lines + files);
            if (done != (long)reported && done != (long)reported + 1)
                fail_msg("round %d: %zu changes reported, %ld in the store", round, reported, done);
            for (k = 1; k < done; k += 2) {
                char path[64], want[32];
                snprintf(path, sizeof(path), "/memories/d/f%ld.md", k);
                snprintf(want, sizeof(want), "content %ld\n", k);
                assert_int_equal(mt_memory_read(&data, &len, m, path), 0);
                assert_string_equal(data, want);
                free(data);
            }
            c = as_tenant(tenant);
            assert_int_equal(sql_long(c, "SELECT count(*) FROM nodes WHERE kind = 1"),
                             (long)u.files);
            assert_int_equal(sql_long(c, "SELECT count(*) FROM nodes WHERE kind = 2"),
                             (long)u.dirs);
            assert_int_equal(sql_long(c, "SELECT coalesce(sum(size), 0) FROM nodes"),
                             (long)u.bytes);
            /* Every version points at content that is there. */
            assert_int_equal(sql_long(c, "SELECT count(*) FROM versions v WHERE sha256 IS NOT NULL "
                                         "AND NOT EXISTS (SELECT 1 FROM contents c WHERE "
                                         "c.tenant = v.tenant AND c.sha256 = v.sha256)"),
                             0);
            PQfinish(c);
            mt_memory_free(m);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_by_owner),
        cmocka_unit_test(test_schema_on_first_use),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_upgrade_refs),
        cmocka_unit_test(test_prune_days),
        cmocka_unit_test(test_refs_agree),
        cmocka_unit_test(test_tenant_isolation),
        cmocka_unit_test(test_search_words),
        cmocka_unit_test(test_connection_lost),
        cmocka_unit_test(test_lock_timeout),
        cmocka_unit_test_teardown(test_deadlock_retried, reset_role_setting),
        cmocka_unit_test(test_concurrent_inserts),
        cmocka_unit_test(test_max_files_race),
        cmocka_unit_test(test_same_as_files),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_writer_killed),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

/*
 * mt_bench_store: libmemtool on an SQL store (sqlite:PATH or a PostgreSQL
 * URL) next to the floor the database itself sets, in one process.
 *
 *   mt_bench_store --store URL --tenant T --kind view|write|listing
 *                  [--durability D] [--history on|off] [--iters N] [--files N]
 *
 * view     `view` of a small memory through mt_memory_call, against the bare
 *          SELECT of its content by tenant and path (nodes joined to
 *          contents): a prepared sqlite3 statement, or one libpq round trip.
 * write    str_replace of a small memory, against a bare transaction.
 *          SQLite: BEGIN IMMEDIATE; UPDATE of the content row; COMMIT, at the
 *          synchronous setting the durability maps to (db_sqlite.c); and, as
 *          row floor-stmts, the statements memtool runs for the edit; and, as
 *          row floor-rows, the rows no edit can avoid (sf_write_rows).
 *          PostgreSQL: the statements memtool runs for the edit (read from
 *          the server's log_statement=all; see sf_write), prepared and
 *          issued one by one, so the floor pays the same round trips.
 * listing  `view /memories` of --files memories (made through the library at
 *          durability none), against the bare SELECT of every node.
 *
 * A floor works on its own tenant (T-floor, T-stmts) of the same database, so it
 * sees the same file, server, WAL and settings as memtool without touching
 * memtool's rows. memtool and the floor take turns in blocks of BLOCK
 * iterations, so a burst of load elsewhere lands on both.
 *
 * Writes CSV rows (common.h) to stdout, and to stderr the database round
 * trips per command on PostgreSQL.
 */
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memtool.h>

#include "common.h"
#include "db/db.h"

/* Not public: the PostgreSQL driver's count of round trips (db_pg.h). */
unsigned long mt_db_pg_round_trips(void);

#define BLOCK 50

typedef struct {
    const char *url, *tenant, *kind, *durability_name;
    mt_durability durability;
    int history, pg;
    size_t iters, files;
    char floor_tenant[128];
} args;

static mt_memory *open_mem(const args *a, const char *tenant, mt_durability d)
{
    mt_options o;
    mt_memory *mem;

    mt_options_init(&o);
    o.durability = d;
    o.history = a->history;
    o.tenant = tenant;
    /* The listing's store is far over the default limits. */
    o.max_files = o.max_dirs = 1u << 30;
    o.max_store_size = (uint64_t)1 << 40;
    if (mt_memory_open_url(&mem, a->url, &o) < 0)
        bench_die("cannot open %s: %s", a->url, mt_error_last()->message);
    return mem;
}

static void call(mt_memory *mem, const char *json)
{
    mt_result res;

    if (mt_memory_call(&res, mem, json, strlen(json)) < 0)
        bench_die("mt_memory_call failed: %s", mt_error_last()->message);
    if (res.is_error)
        bench_die("%s: %s", json, res.text);
    mt_result_dispose(&res);
}

/* A create request of text as a JSON string (the fixture text needs only
 * newlines escaped: it has no quotes, backslashes or control bytes). */
static char *create_json(const char *path, const char *text)
{
    size_t n = strlen(text), i, k = 0, cap = 2 * n + strlen(path) + 64;
    char *j = malloc(cap);

    if (!j)
        bench_die("out of memory");
    k = (size_t)snprintf(j, cap, "{\"command\":\"create\",\"path\":\"%s\",\"file_text\":\"", path);
    for (i = 0; i < n; i++) {
        if (text[i] == '\n') {
            j[k++] = '\\';
            j[k++] = 'n';
        } else {
            j[k++] = text[i];
        }
    }
    memcpy(j + k, "\"}", 3);
    return j;
}

/* The small text with the token swapped: the edit's other state. */
static char *swapped(const char *text)
{
    char *s = strdup(text), *t;

    if (!s || !(t = strstr(s, BENCH_TOKEN_A)))
        bench_die("the fixture has no %s", BENCH_TOKEN_A);
    memcpy(t, BENCH_TOKEN_B, strlen(BENCH_TOKEN_B));
    return s;
}

/* ---- SQLite floors ---------------------------------------------------------------------- */

static sqlite3 *sq_open(const args *a)
{
    sqlite3 *db;

    if (sqlite3_open_v2(a->url + strlen("sqlite:"), &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        bench_die("sqlite: %s", sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static sqlite3_stmt *sq_prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;

    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        bench_die("sqlite: %s: %s", sql, sqlite3_errmsg(db));
    return st;
}

static void sq_exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        bench_die("sqlite: %s: %s", sql, sqlite3_errmsg(db));
}

#define CONTENT_SQL(t, p)                                                                          \
    "SELECT c.data FROM nodes n JOIN contents c ON c.tenant = n.tenant AND c.sha256 = n.sha256 "   \
    "WHERE n.tenant = " t " AND n.path = " p
static const char content_sql[] = CONTENT_SQL("?1", "?2");

/* The content of tenant's path, read and checked to be there. */
static void sq_view(sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 0) <= 0)
        bench_die("sqlite: the memory's content row is missing");
    sqlite3_reset(st);
}

/* ---- PostgreSQL floor --------------------------------------------------------------------- */

static PGconn *pg_open(const args *a, const char *tenant)
{
    PGconn *pg = PQconnectdb(a->url);
    char sql[256];
    PGresult *r;

    if (PQstatus(pg) != CONNECTION_OK)
        bench_die("libpq: %s", PQerrorMessage(pg));
    /* What memtool's connection sets up (db_pg.c), so both run the same plans. */
    bench_fmt(sql, sizeof(sql),
              "SET search_path TO memtool; SELECT pg_catalog.set_config('memtool.tenant', '%s', "
              "false)",
              tenant);
    r = PQexec(pg, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        bench_die("libpq: %s", PQerrorMessage(pg));
    PQclear(r);
    return pg;
}

static void pg_prep(PGconn *pg, const char *name, const char *sql)
{
    PGresult *r = PQprepare(pg, name, sql, 0, NULL);

    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        bench_die("libpq: %s: %s", sql, PQerrorMessage(pg));
    PQclear(r);
}

/* One prepared statement, one round trip; binary results as memtool asks. */
static PGresult *pg_run(PGconn *pg, const char *name, int n, const char *const *v)
{
    PGresult *r = PQexecPrepared(pg, name, n, v, NULL, NULL, 1);
    ExecStatusType s = PQresultStatus(r);

    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
        bench_die("libpq: %s: %s", name, PQerrorMessage(pg));
    return r;
}

static void pg_simple(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = PQresultStatus(r);

    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
        bench_die("libpq: %s: %s", sql, PQerrorMessage(pg));
    PQclear(r);
}

/*
 * The statements floor: the transaction memtool runs for a str_replace of a
 * small file, read from the database (PostgreSQL's log_statement=all, and
 * the statements SQLite steps), history on and off, issued bare: prepared
 * once, run one by one. With history on, both contents the edit toggles between stay
 * stored (versions hold them); with history off, the new content's row is
 * made and the old one's deleted at every edit.
 */
static const char pg_begin[] =
    "BEGIN; SET LOCAL lock_timeout = 5000;INSERT INTO usage(bytes, files, dirs, next_version) "
    "VALUES (0, 0, 0, 1) ON CONFLICT (tenant) DO NOTHING;SELECT 1 FROM usage WHERE tenant = "
    "pg_catalog.current_setting('memtool.tenant') FOR UPDATE";

enum {
    S_USAGE_GET,
    S_NODE_GET,
    S_CONTENT_GET,
    S_NTH,
    S_NEWEST,
    S_CONTENT_PUT,
    S_CONTENT_DROP,
    S_NODE_SET,
    S_VERSION_PUT,
    S_USAGE_SET,
    S_REF,
    S_REFS_NEW,
    S_DROP,
    S_REFS_ADD,
    S_REFS_TAKE,
    S_REFS_LAST,
    S_COUNT
};

/* The texts themselves are memtool's (src/db/db_sql.c; neither driver
 * writes these differently), so the floor cannot drift from them. */
static const mt_db_stmt stmts[S_COUNT] = {
    [S_USAGE_GET] = MT_DB_USAGE_GET,
    [S_NODE_GET] = MT_DB_NODE_GET,
    [S_CONTENT_GET] = MT_DB_CONTENT_GET,
    [S_NTH] = MT_DB_VERSION_NTH,
    [S_NEWEST] = MT_DB_VERSION_NEWEST,
    [S_CONTENT_PUT] = MT_DB_CONTENT_PUT,
    [S_CONTENT_DROP] = MT_DB_CONTENT_DROP,
    [S_NODE_SET] = MT_DB_NODE_SET,
    [S_VERSION_PUT] = MT_DB_VERSION_PUT,
    [S_USAGE_SET] = MT_DB_USAGE_SET,
    [S_REF] = MT_DB_CONTENT_REF,
    [S_REFS_NEW] = MT_DB_REFS_NEW,
    [S_DROP] = MT_DB_REFS_DROP,
    [S_REFS_ADD] = MT_DB_REFS_ADD,
    [S_REFS_TAKE] = MT_DB_REFS_TAKE,
    [S_REFS_LAST] = MT_DB_REFS_LAST,
};

/* A statement's text as PostgreSQL takes it: ?N spelt $N, as db_pg.c does. */
static void pg_text(char *out, size_t size, const char *sql)
{
    size_t o = 0;

    for (; *sql && o + 1 < size; sql++)
        out[o++] = *sql == '?' ? '$' : *sql;
    if (*sql)
        bench_die("a statement longer than %zu bytes", size);
    out[o] = '\0';
}

typedef struct {
    PGconn *pg;                /* PostgreSQL, or */
    sqlite3 *db;               /* SQLite, with */
    sqlite3_stmt *st[S_COUNT]; /* the statements prepared */
    char names[S_COUNT][8];    /* PostgreSQL's names of them */
    const char *tenant;
    char memory_id[80], sha[2][80], size[32], bytes[32], files[32], dirs[32];
    const char *text[2];   /* the two contents (history off writes them) */
    sqlite3_stmt *update;  /* the rows floor's UPDATE of the content (SQLite), */
    sqlite3_stmt *version; /* and its INSERT of the version */
    size_t len;
    int64_t next_version;
    int history;
    size_t round;
} stmt_floor;

/* Whether v is a whole number memtool binds as an integer (ids, sizes,
 * times; never a hash, a path or an id of a memory). */
static int is_number(const char *v)
{
    size_t i = 0;

    while (v[i] >= '0' && v[i] <= '9')
        i++;
    return i > 0 && i < 19 && v[i] == '\0';
}

/* Run statement k with n values (blob: the last is bytes of blob_len, in
 * binary), to its end; returns nothing: a failure ends the benchmark. */
static void sf_run_blob(stmt_floor *f, int k, int n, const char *const *v, size_t blob_len)
{
    if (f->pg) {
        int lengths[16] = {0}, formats[16] = {0};
        PGresult *r;
        ExecStatusType st;

        if (blob_len) {
            lengths[n - 1] = (int)blob_len;
            formats[n - 1] = 1;
        }
        r = PQexecPrepared(f->pg, f->names[k], n, v, lengths, formats, 1);
        st = PQresultStatus(r);
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
            bench_die("libpq: %s: %s", mt_db_sql[stmts[k]], PQerrorMessage(f->pg));
        PQclear(r);
    } else {
        sqlite3_stmt *q = f->st[k];
        int i, rc;

        for (i = 0; i < n; i++) {
            int at = i + 1; /* ?N is parameter N */
            if (!v[i])
                rc = sqlite3_bind_null(q, at);
            else if (blob_len && i == n - 1)
                rc = sqlite3_bind_blob(q, at, v[i], (int)blob_len, SQLITE_STATIC);
            else if (is_number(v[i]))
                rc = sqlite3_bind_int64(q, at, (sqlite3_int64)strtoll(v[i], NULL, 10));
            else
                rc = sqlite3_bind_text(q, at, v[i], -1, SQLITE_STATIC);
            if (rc != SQLITE_OK)
                bench_die("sqlite: binding ?%d of %s", at, mt_db_sql[stmts[k]]);
        }
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
            ;
        if (rc != SQLITE_DONE)
            bench_die("sqlite: %s: %s", mt_db_sql[stmts[k]], sqlite3_errmsg(f->db));
        sqlite3_reset(q);
    }
}

static void sf_run(stmt_floor *f, int k, int n, const char *const *v)
{
    sf_run_blob(f, k, n, v, 0);
}

/* The one text value of a one-row SELECT of the tenant's ($1) rows. */
static void sf_get(stmt_floor *f, char *out, size_t size, const char *sql)
{
    if (f->pg) {
        PGresult *r = PQexecParams(f->pg, sql, 1, NULL, &f->tenant, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
            bench_die("libpq: %s: %s", sql, PQerrorMessage(f->pg));
        bench_fmt(out, size, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
    } else {
        sqlite3_stmt *q = sq_prepare(f->db, sql);
        sqlite3_bind_text(q, 1, f->tenant, -1, SQLITE_STATIC);
        if (sqlite3_step(q) != SQLITE_ROW)
            bench_die("sqlite: %s: no row", sql);
        bench_fmt(out, size, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
}

static void sf_exec(stmt_floor *f, const char *sql)
{
    if (f->pg)
        pg_simple(f->pg, sql);
    else
        sq_exec(f->db, sql);
}

/* The floor on tenant, whose small.md and other.md hold the two texts;
 * on SQLite with memtool's settings of its connection (as_memtool), or
 * with the synchronous setting alone (a bare floor). */
static void sf_open(stmt_floor *f, const args *a, const char *tenant, char *const texts[2],
                    size_t len, int as_memtool)
{
    char next[32];
    int k;

    memset(f, 0, sizeof(*f));
    f->tenant = tenant;
    f->history = a->history;
    f->text[0] = texts[0];
    f->text[1] = texts[1];
    f->len = len;
    if (a->pg) {
        f->pg = pg_open(a, tenant);
        for (k = 0; k < S_COUNT; k++) {
            char sql[1024];
            bench_fmt(f->names[k], sizeof(f->names[k]), "s%d", k);
            pg_text(sql, sizeof(sql), mt_db_sql[stmts[k]]);
            pg_prep(f->pg, f->names[k], sql);
        }
    } else {
        f->db = sq_open(a);
        sq_exec(f->db, a->durability == MT_DURABILITY_FULL   ? "PRAGMA synchronous=FULL"
                       : a->durability == MT_DURABILITY_FILE ? "PRAGMA synchronous=NORMAL"
                                                             : "PRAGMA synchronous=OFF");
        /* The settings memtool's connection runs its statements with (db_sqlite.c). */
        if (as_memtool)
            sq_exec(f->db, "PRAGMA secure_delete=ON; PRAGMA temp_store=MEMORY");
        for (k = 0; k < S_COUNT; k++)
            f->st[k] = sq_prepare(f->db, mt_db_sql[stmts[k]]);
    }
    sf_get(f, f->memory_id, sizeof(f->memory_id),
           "SELECT memory_id FROM nodes WHERE tenant = $1 AND path = 'small.md'");
    sf_get(f, f->sha[0], sizeof(f->sha[0]),
           "SELECT sha256 FROM nodes WHERE tenant = $1 AND path = 'small.md'");
    sf_get(f, f->sha[1], sizeof(f->sha[1]),
           "SELECT sha256 FROM nodes WHERE tenant = $1 AND path = 'other.md'");
    sf_get(f, f->size, sizeof(f->size),
           "SELECT size FROM nodes WHERE tenant = $1 AND path = 'small.md'");
    sf_get(f, f->bytes, sizeof(f->bytes), "SELECT bytes FROM usage WHERE tenant = $1");
    sf_get(f, f->files, sizeof(f->files), "SELECT files FROM usage WHERE tenant = $1");
    sf_get(f, f->dirs, sizeof(f->dirs), "SELECT dirs FROM usage WHERE tenant = $1");
    sf_get(f, next, sizeof(next), "SELECT next_version FROM usage WHERE tenant = $1");
    f->next_version = (int64_t)bench_parse_u64(next, "next_version");
}

static void sf_close(stmt_floor *f)
{
    int k;

    if (f->pg)
        PQfinish(f->pg);
    for (k = 0; k < S_COUNT; k++)
        sqlite3_finalize(f->st[k]);
    sqlite3_finalize(f->update);
    sqlite3_finalize(f->version);
    sqlite3_close(f->db);
}

/* One str_replace's worth of statements: the content toggles between the
 * two texts, as memtool's edit toggles tokens. */
static void sf_write(stmt_floor *f)
{
    size_t to = (f->round + 1) % 2;
    const char *now = f->sha[f->round % 2], *new = f->sha[to];
    char id[32], next[32], at[32];
    const char *t = f->tenant;

    f->round++;
    bench_fmt(at, sizeof(at), "%llu", (unsigned long long)(bench_now_ns() / 1000000));
    sf_exec(f, f->pg ? pg_begin : "BEGIN IMMEDIATE");
    sf_run(f, S_USAGE_GET, 1, (const char *[]){t});
    sf_run(f, S_NODE_GET, 2, (const char *[]){t, "small.md"});
    sf_run(f, S_CONTENT_GET, 2, (const char *[]){t, now});
    if (f->history)
        sf_run(f, S_NEWEST, 2, (const char *[]){t, f->memory_id});
    /* The new content's count (made, and the content stored, without
     * history); on PostgreSQL changed and read in one statement (db.c). */
    if (f->pg) {
        sf_run(f, S_REFS_ADD, 3, (const char *[]){t, new, "1"});
    } else {
        sf_run(f, S_REF, 3, (const char *[]){t, new, "1"});
        if (!f->history)
            sf_run(f, S_REFS_NEW, 2, (const char *[]){t, new});
    }
    if (!f->history)
        sf_run_blob(f, S_CONTENT_PUT, 3, (const char *[]){t, new, f->text[to]}, f->len);
    /* The old content's: lowered with history (a version keeps it), else
     * deleted with the content. */
    if (!f->history) {
        sf_run(f, S_REFS_LAST, 2, (const char *[]){t, now});
        sf_run(f, S_CONTENT_DROP, 2, (const char *[]){t, now});
    } else if (f->pg) {
        sf_run(f, S_REFS_TAKE, 3, (const char *[]){t, now, "-1"});
    } else {
        sf_run(f, S_REF, 3, (const char *[]){t, now, "-1"});
        sf_run(f, S_DROP, 2, (const char *[]){t, now});
    }
    sf_run(f, S_NODE_SET, 5, (const char *[]){t, "small.md", new, f->size, at});
    if (f->history) {
        bench_fmt(id, sizeof(id), "%lld", (long long)f->next_version);
        sf_run(f, f->pg ? S_REFS_ADD : S_REF, 3, (const char *[]){t, new, "1"});
        sf_run(f, S_VERSION_PUT, 10,
               (const char *[]){t, id, f->memory_id, "2", "small.md", NULL, "floor", at, new,
                                f->size});
        /* memtool's prune check at the default keep of 100 (+ slack 11): the 111th newest. */
        sf_run(f, S_NTH, 3, (const char *[]){t, f->memory_id, "110"});
        f->next_version++;
    }
    bench_fmt(next, sizeof(next), "%lld", (long long)f->next_version);
    /* The prune's record, as memtool writes it back unchanged between prunes. */
    sf_run(f, S_USAGE_SET, 8,
           (const char *[]){t, f->bytes, f->files, f->dirs, next, "0", "0", "0"});
    sf_exec(f, "COMMIT");
}

/*
 * SQLite's bare floors. The target's: BEGIN IMMEDIATE, the UPDATE of the
 * memory's content, COMMIT. With rows, the rows floor: what an edit cannot
 * avoid writing under the store's own terms, the usage counter the limits
 * are kept by, in the same transaction as the write, and with history on a
 * version row in the same file, added to it. The version goes to a table of
 * the floor's own with the columns of memtool's versions and only their
 * key: the least a version row can cost, where memtool's are also indexed
 * by memory, path and time. Nothing read, no content by hash, no counts of
 * references.
 */
static void sf_write_rows(stmt_floor *f, int rows)
{
    char next[32], at[32];
    const char *t = f->tenant;

    bench_fmt(at, sizeof(at), "%llu", (unsigned long long)(bench_now_ns() / 1000000));
    sf_exec(f, "BEGIN IMMEDIATE");
    sqlite3_bind_blob(f->update, 3, f->text[f->round++ % 2], (int)f->len, SQLITE_STATIC);
    if (sqlite3_step(f->update) != SQLITE_DONE || sqlite3_changes(f->db) != 1)
        bench_die("sqlite: the rows floor's UPDATE changed nothing");
    sqlite3_reset(f->update);
    if (rows && f->history) {
        sqlite3_bind_int64(f->version, 2, (sqlite3_int64)f->next_version++);
        sqlite3_bind_int64(f->version, 4, (sqlite3_int64)strtoll(at, NULL, 10));
        if (sqlite3_step(f->version) != SQLITE_DONE)
            bench_die("sqlite: the rows floor's version: %s", sqlite3_errmsg(f->db));
        sqlite3_reset(f->version);
    }
    if (rows) {
        bench_fmt(next, sizeof(next), "%lld", (long long)f->next_version);
        sf_run(f, S_USAGE_SET, 8,
               (const char *[]){t, f->bytes, f->files, f->dirs, next, "0", "0", "0"});
    }
    sf_exec(f, "COMMIT");
}

static void pg_view(PGconn *pg, const char *tenant)
{
    PGresult *r = pg_run(pg, "view", 2, (const char *[]){tenant, "small.md"});

    if (PQntuples(r) != 1 || PQgetlength(r, 0, 0) <= 0)
        bench_die("libpq: the memory's content row is missing");
    PQclear(r);
}

/* ---- the suites --------------------------------------------------------------------------- */

static void row(const args *a, const char *op, const char *impl, const char *param,
                bench_samples *s)
{
    bench_stats st = bench_stats_of(s);
    bench_row(stdout, "store", op, impl, a->durability_name, param, &st);
}

/* Round trips of one more call, printed for the report (PostgreSQL only). */
static void trips(const args *a, const char *what, mt_memory *mem, const char *json)
{
    unsigned long before = mt_db_pg_round_trips();

    call(mem, json);
    if (a->pg)
        fprintf(stderr, "round trips: %s (history %s): %lu\n", what, a->history ? "on" : "off",
                mt_db_pg_round_trips() - before);
}

static void fixture(const args *a, const char *tenant, int other)
{
    mt_memory *mem = open_mem(a, tenant, MT_DURABILITY_NONE);
    size_t len;
    char *text = bench_small_text(&len), *j = create_json("/memories/small.md", text);

    call(mem, j);
    free(j);
    if (other) {
        char *s = swapped(text);
        j = create_json("/memories/other.md", s);
        call(mem, j);
        free(j);
        free(s);
    }
    free(text);
    mt_memory_free(mem);
}

static void suite_view(const args *a, const char *param)
{
    static const char view[] = "{\"command\":\"view\",\"path\":\"/memories/small.md\"}";
    mt_memory *mem;
    bench_samples m, f;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    PGconn *pg = NULL;
    size_t i, k;

    fixture(a, a->tenant, 0);
    mem = open_mem(a, a->tenant, a->durability);
    if (a->pg) {
        /* memtool's own tenant: row security shows a connection only its own. */
        pg = pg_open(a, a->tenant);
        pg_prep(pg, "view", CONTENT_SQL("$1", "$2"));
    } else {
        db = sq_open(a);
        st = sq_prepare(db, content_sql);
        sqlite3_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, "small.md", -1, SQLITE_STATIC);
    }
    trips(a, "view file", mem, view);
    bench_samples_init(&m, a->iters);
    bench_samples_init(&f, a->iters);
    for (i = 0; i < a->iters; i += BLOCK) {
        for (k = i; k < i + BLOCK && k < a->iters; k++) {
            uint64_t t0 = bench_now_ns();
            call(mem, view);
            bench_samples_add(&m, bench_now_ns() - t0);
        }
        for (k = i; k < i + BLOCK && k < a->iters; k++) {
            uint64_t t0 = bench_now_ns();
            if (a->pg)
                pg_view(pg, a->tenant);
            else
                sq_view(st);
            bench_samples_add(&f, bench_now_ns() - t0);
        }
    }
    row(a, "view", "memtool", param, &m);
    row(a, "view", "floor", param, &f);
    bench_samples_free(&m);
    bench_samples_free(&f);
    PQfinish(pg);
    sqlite3_finalize(st);
    sqlite3_close(db);
    mt_memory_free(mem);
}

/* The statements floor on a tenant of its own, made as memtool's is. */
static void stmt_floor_open(stmt_floor *sf, const args *a, const char *tenant, char *const texts[2],
                            size_t len)
{
    fixture(a, tenant, 1);
    sf_open(sf, a, tenant, texts, len, 1);
    if (!a->history) {
        /* Without history nothing keeps the other content stored: other.md made it, and its
         * delete drops it, as memtool's edits drop the content they replace. */
        mt_memory *fm = open_mem(a, tenant, MT_DURABILITY_NONE);
        call(fm, "{\"command\":\"delete\",\"path\":\"/memories/other.md\"}");
        mt_memory_free(fm);
    }
}

/* A bare floor (sf_open's as_memtool 0) made ready for sf_write_rows. */
static void sf_open_bare(stmt_floor *f, const args *a, const char *tenant, char *const texts[2],
                         size_t len)
{
    fixture(a, tenant, 1);
    sf_open(f, a, tenant, texts, len, 0);
    sq_exec(f->db, "CREATE TABLE IF NOT EXISTS floor_versions(tenant TEXT NOT NULL, "
                   "id INTEGER NOT NULL, memory_id TEXT NOT NULL, op INTEGER NOT NULL, "
                   "path TEXT, previous_path TEXT, actor TEXT NOT NULL, at INTEGER NOT NULL, "
                   "sha256 TEXT, size INTEGER NOT NULL, redacted INTEGER NOT NULL, "
                   "PRIMARY KEY (tenant, id)) WITHOUT ROWID");
    f->update = sq_prepare(f->db, "UPDATE contents SET data = ?3 WHERE tenant = ?1 AND "
                                  "sha256 = ?2");
    f->version = sq_prepare(f->db, "INSERT INTO floor_versions VALUES (?1, ?2, ?3, 2, "
                                   "'small.md', NULL, 'floor', ?4, ?5, ?6, 0)");
    sqlite3_bind_text(f->update, 1, f->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(f->update, 2, f->sha[0], -1, SQLITE_STATIC);
    sqlite3_bind_text(f->version, 1, f->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(f->version, 3, f->memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(f->version, 5, f->sha[0], -1, SQLITE_STATIC);
    sqlite3_bind_int64(f->version, 6, (sqlite3_int64)strtoll(f->size, NULL, 10));
}

/*
 * memtool's str_replace against, on PostgreSQL, the statements floor (row
 * "floor"); on SQLite, the one UPDATE (row "floor"), the statements floor
 * (row "floor-stmts"), which shows what memtool adds to its own statements,
 * and the rows floor (row "floor-rows"), the least the store's terms let an
 * edit write.
 */
static void suite_write(const args *a, const char *param)
{
    static const char *const sr[2] = {
        "{\"command\":\"str_replace\",\"path\":\"/memories/small.md\",\"old_str\":\"" BENCH_TOKEN_A
        "\",\"new_str\":\"" BENCH_TOKEN_B "\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/small.md\",\"old_str\":\"" BENCH_TOKEN_B
        "\",\"new_str\":\"" BENCH_TOKEN_A "\"}"};
    mt_memory *mem;
    bench_samples m, f, fs, fr;
    stmt_floor sf, upd, rows;
    char *texts[2], stmts_tenant[160], rows_tenant[160];
    size_t i, k, len;

    fixture(a, a->tenant, 0);
    mem = open_mem(a, a->tenant, a->durability);
    /* Two edits first, so the timed ones find the steady state: both
     * contents already stored, a newest version to compare with. */
    trips(a, "str_replace (first)", mem, sr[0]);
    trips(a, "str_replace", mem, sr[1]);
    texts[0] = bench_small_text(&len);
    texts[1] = swapped(texts[0]);
    bench_fmt(stmts_tenant, sizeof(stmts_tenant), "%s-stmts", a->tenant);
    stmt_floor_open(&sf, a, a->pg ? a->floor_tenant : stmts_tenant, texts, len);
    if (!a->pg) {
        sf_open_bare(&upd, a, a->floor_tenant, texts, len);
        bench_fmt(rows_tenant, sizeof(rows_tenant), "%s-rows", a->tenant);
        sf_open_bare(&rows, a, rows_tenant, texts, len);
    }
    bench_samples_init(&m, a->iters);
    bench_samples_init(&f, a->iters);
    bench_samples_init(&fs, a->iters);
    bench_samples_init(&fr, a->iters);
    for (i = 0; i < a->iters; i += BLOCK) {
        for (k = i; k < i + BLOCK && k < a->iters; k++) {
            uint64_t t0 = bench_now_ns();
            call(mem, sr[k % 2]);
            bench_samples_add(&m, bench_now_ns() - t0);
        }
        for (k = i; k < i + BLOCK && k < a->iters; k++) {
            uint64_t t0 = bench_now_ns();
            sf_write(&sf);
            bench_samples_add(&fs, bench_now_ns() - t0);
        }
        for (k = i; k < i + BLOCK && k < a->iters && !a->pg; k++) {
            uint64_t t0 = bench_now_ns();
            sf_write_rows(&upd, 0);
            bench_samples_add(&f, bench_now_ns() - t0);
        }
        for (k = i; k < i + BLOCK && k < a->iters && !a->pg; k++) {
            uint64_t t0 = bench_now_ns();
            sf_write_rows(&rows, 1);
            bench_samples_add(&fr, bench_now_ns() - t0);
        }
    }
    /* The iterations leave small.md as it started when even; either way is fine. */
    row(a, "str_replace", "memtool", param, &m);
    if (a->pg) {
        row(a, "str_replace", "floor", param, &fs);
    } else {
        row(a, "str_replace", "floor", param, &f);
        row(a, "str_replace", "floor-stmts", param, &fs);
        row(a, "str_replace", "floor-rows", param, &fr);
        sf_close(&upd);
        sf_close(&rows);
    }
    bench_samples_free(&m);
    bench_samples_free(&f);
    bench_samples_free(&fs);
    bench_samples_free(&fr);
    sf_close(&sf);
    free(texts[0]);
    free(texts[1]);
    mt_memory_free(mem);
}

static void suite_listing(const args *a, const char *param)
{
    static const char view[] = "{\"command\":\"view\",\"path\":\"/memories\"}";
    static const char all_sql[] = "SELECT path, kind, size FROM nodes WHERE tenant = $1 "
                                  "ORDER BY path";
    mt_memory *mem = open_mem(a, a->tenant, MT_DURABILITY_NONE);
    bench_samples m, f;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    PGconn *pg = NULL;
    size_t i;

    /* 100 files a directory, as fixture-tree lays out the file store's. */
    for (i = 0; i < a->files; i++) {
        char path[64], *j;
        bench_fmt(path, sizeof(path), "/memories/d%04zu/f%03zu.md", i / 100, i % 100);
        j = create_json(path, "a small memory\n");
        call(mem, j);
        free(j);
    }
    if (a->pg) {
        pg = pg_open(a, a->tenant);
        pg_prep(pg, "all", all_sql);
    } else {
        db = sq_open(a);
        st = sq_prepare(db, "SELECT path, kind, size FROM nodes WHERE tenant = ?1 ORDER BY path");
        sqlite3_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    }
    trips(a, "view directory", mem, view);
    bench_samples_init(&m, a->iters);
    bench_samples_init(&f, a->iters);
    for (i = 0; i < a->iters; i++) {
        uint64_t t0 = bench_now_ns();
        size_t rows = 0;
        call(mem, view);
        bench_samples_add(&m, bench_now_ns() - t0);
        t0 = bench_now_ns();
        if (a->pg) {
            PGresult *r = pg_run(pg, "all", 1, (const char *[]){a->tenant});
            rows = (size_t)PQntuples(r);
            PQclear(r);
        } else {
            while (sqlite3_step(st) == SQLITE_ROW)
                rows++;
            sqlite3_reset(st);
        }
        bench_samples_add(&f, bench_now_ns() - t0);
        if (rows < a->files)
            bench_die("the floor saw %zu nodes of %zu files", rows, a->files);
    }
    row(a, "view_dir", "memtool", param, &m);
    row(a, "view_dir", "floor", param, &f);
    bench_samples_free(&m);
    bench_samples_free(&f);
    if (pg)
        PQfinish(pg);
    sqlite3_finalize(st);
    sqlite3_close(db);
    mt_memory_free(mem);
}

int main(int argc, char **argv)
{
    args a = {NULL, "bench", NULL, "none", MT_DURABILITY_NONE, 1, 0, 1000, 1000, ""};
    const char *history = "on";
    char param[64];
    int k;

    for (k = 1; k < argc; k += 2) {
        const char *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (!v)
            bench_die("%s needs a value", argv[k]);
        if (strcmp(argv[k], "--store") == 0)
            a.url = v;
        else if (strcmp(argv[k], "--tenant") == 0)
            a.tenant = v;
        else if (strcmp(argv[k], "--kind") == 0)
            a.kind = v;
        else if (strcmp(argv[k], "--durability") == 0)
            a.durability_name = v;
        else if (strcmp(argv[k], "--history") == 0)
            history = v;
        else if (strcmp(argv[k], "--iters") == 0)
            a.iters = bench_parse_u64(v, "--iters");
        else if (strcmp(argv[k], "--files") == 0)
            a.files = bench_parse_u64(v, "--files");
        else
            bench_die("unknown option %s", argv[k]);
    }
    if (!a.url || !a.kind || a.iters == 0)
        bench_die("usage: mt_bench_store --store URL [--tenant T] --kind view|write|listing "
                  "[--durability D] [--history on|off] [--iters N] [--files N]");
    if (mt_durability_parse(&a.durability, a.durability_name) < 0)
        bench_die("unknown durability %s", a.durability_name);
    a.history = strcmp(history, "off") != 0;
    a.pg = strncmp(a.url, "sqlite:", 7) != 0;
    bench_fmt(a.floor_tenant, sizeof(a.floor_tenant), "%s-floor", a.tenant);
    bench_fmt(param, sizeof(param), "%s history %s", a.pg ? "postgresql" : "sqlite", history);

    if (strcmp(a.kind, "view") == 0) {
        suite_view(&a, param);
    } else if (strcmp(a.kind, "write") == 0) {
        suite_write(&a, param);
    } else if (strcmp(a.kind, "listing") == 0) {
        bench_fmt(param, sizeof(param), "%s %zu", a.pg ? "postgresql" : "sqlite", a.files);
        suite_listing(&a, param);
    } else {
        bench_die("unknown kind %s", a.kind);
    }
    return 0;
}

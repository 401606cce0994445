/*
 * A redacted version's bytes are gone from every file of the store: on
 * every store (tests/unit/store_openers.h; tests/pg adds PostgreSQL), a
 * memory's words are indexed by a search, the memory is edited so the words
 * are gone from its current content, and the old version is redacted; then
 * every byte of every file the store wrote (the history database, its log,
 * the search index, SQLite's WAL and free pages) is searched, ignoring
 * case, for the redacted version's words. Twice: with the index caught up
 * after the edit (FTS5 keeps the replaced terms in its older segments), and
 * with the index left behind it (the memory's row still holds the words).
 * The handle stays open while its files are read: nothing waits for a close.
 * On the SQLite-backed stores also with a reader in another connection
 * holding the write-ahead log at the redaction's commit.
 * On PostgreSQL what is read is the files of memtool's tables, after the
 * owner's `memtool store vacuum` (mt_store_pg_vacuum), as SECURITY.md says.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "helpers.h"
#include "store_openers.h"

/* Words no other memory of the test holds, mixed case: the index keeps them folded. */
#define CAUGHT_UP   "Quixotrazzle"
#define LEFT_BEHIND "Plonkwhistle"
#define NAMED       "Zanzibarquokka"

/* Where each of words occurs in len bytes at p, ignoring case: names the
 * first in *which and returns its offset, or -1. */
static long find_folded(const char **which, const char *p, size_t len, const char *const *words,
                        size_t nwords)
{
    size_t at, k;

    for (at = 0; at < len; at++)
        for (k = 0; k < nwords; k++) {
            size_t n = strlen(words[k]);

            if (n <= len - at && strncasecmp(p + at, words[k], n) == 0) {
                *which = words[k];
                return (long)at;
            }
        }
    return -1;
}

static char *slurp(const char *path, size_t *len)
{
    struct stat sb;
    char *buf;
    ssize_t got;
    size_t done = 0;
    int fd = open(path, O_RDONLY);

    if (fd < 0 || fstat(fd, &sb) < 0)
        fail_msg("cannot read %s", path);
    assert_non_null(buf = malloc((size_t)sb.st_size + 1));
    while (done < (size_t)sb.st_size && (got = read(fd, buf + done, (size_t)sb.st_size - done)) > 0)
        done += (size_t)got;
    close(fd);
    *len = done;
    return buf;
}

static void assert_file_clean(const char *path, const char *const *words, size_t nwords)
{
    const char *which = NULL;
    size_t len;
    char *data = slurp(path, &len);
    long at = find_folded(&which, data, len, words, nwords);

    free(data);
    if (at >= 0)
        fail_msg("%s still holds the redacted word %s (at byte %ld)", path, which, at);
}

/* Every regular file beneath dir; returns how many were read. */
static size_t assert_tree_clean(const char *dir, const char *const *words, size_t nwords)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t files = 0;

    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[1024];
        struct stat sb;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        assert_int_equal(lstat(path, &sb), 0);
        if (S_ISDIR(sb.st_mode)) {
            files += assert_tree_clean(path, words, nwords);
        } else if (S_ISREG(sb.st_mode)) {
            assert_file_clean(path, words, nwords);
            files++;
        }
    }
    closedir(d);
    return files;
}

static size_t hits(mt_memory *mem, const char *query)
{
    mt_search_hit *h = NULL;
    size_t n = 0;

    if (mt_memory_search(&h, &n, mem, query, NULL) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    mt_search_hits_free(h, n);
    return n;
}

static void edit(mt_memory *mem, const char *path, const char *from, const char *to)
{
    char json[512];

    snprintf(json, sizeof(json),
             "{\"command\":\"str_replace\",\"path\":\"/memories/%s\",\"old_str\":\"%s\","
             "\"new_str\":\"%s\"}",
             path, from, to);
    mt_test_ok(mem, json);
}

/* The id of the oldest version of /memories/path. */
static int64_t first_version(mt_memory *mem, const char *path)
{
    char full[128];
    mt_version *v = NULL;
    size_t n;
    int64_t id;

    snprintf(full, sizeof(full), "/memories/%s", path);
    n = mt_test_log(&v, mem, full, 10);
    assert_int_equal(n, 2);
    id = v[n - 1].id;
    mt_versions_free(v, n);
    return id;
}

#ifdef MT_TEST_STORE_OPENERS_PG_H
/* Run sql on the cluster as the role of conninfo (its env variable's). */
static PGresult *pg_run(const char *env, const char *sql)
{
    PGconn *c = PQconnectdb(getenv(env));
    PGresult *r;

    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connect as %s: %s", env, PQerrorMessage(c));
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQfinish(c);
    return r;
}

/* The files of memtool's tables, their TOAST tables and every index of
 * both, after the owner's vacuum (mt_store_pg_vacuum) and a checkpoint that
 * writes the rewritten pages out. The server's WAL is not
 * read: SECURITY.md says what stays there. */
static size_t pg_assert_clean(const char *const *words, size_t nwords)
{
    PGresult *r;
    size_t files = 0;
    int i;

    /* memtool's own role owns no table: refused, rather than a VACUUM
     * that only warns and vacuums nothing. */
    assert_int_equal(mt_store_pg_vacuum(getenv("MEMTOOL_TEST_PG")), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "does not own memtool's tables"));
    if (mt_store_pg_vacuum(getenv("MEMTOOL_TEST_PG_OWNER")) < 0)
        fail_msg("vacuum as the owner: %s", mt_error_last()->message);
    PQclear(pg_run("MEMTOOL_TEST_PG_ADMIN", "CHECKPOINT"));
    r = pg_run("MEMTOOL_TEST_PG_ADMIN",
               "WITH t AS (SELECT oid FROM pg_class WHERE relnamespace = 'memtool'::regnamespace "
               "AND relkind = 'r' UNION SELECT reltoastrelid FROM pg_class WHERE relnamespace = "
               "'memtool'::regnamespace AND reltoastrelid <> 0), "
               "r AS (SELECT oid FROM t UNION SELECT indexrelid FROM pg_index WHERE indrelid IN "
               "(SELECT oid FROM t)) "
               "SELECT current_setting('data_directory') || '/' || pg_relation_filepath(oid) "
               "FROM r WHERE pg_relation_filepath(oid) IS NOT NULL");
    for (i = 0; i < PQntuples(r); i++) {
        char seg[1100];
        int k;

        if (access(PQgetvalue(r, i, 0), F_OK) != 0)
            continue; /* an empty relation may have no file yet */
        assert_file_clean(PQgetvalue(r, i, 0), words, nwords);
        files++;
        for (k = 1;
             snprintf(seg, sizeof(seg), "%s.%d", PQgetvalue(r, i, 0), k) && access(seg, F_OK) == 0;
             k++)
            assert_file_clean(seg, words, nwords);
    }
    PQclear(r);
    return files;
}
#endif

static void redact_erases(size_t i)
{
    char caught[32], behind[32], named[32], json[256];
    const char *const words[] = {caught, behind, named};
    mt_version *v = NULL;
    int64_t named_ids[2];
    size_t n;
    const char *tmp = getenv("TMPDIR");
    char dir[300];
    mt_options o;
    mt_memory *mem;
    size_t files;

    snprintf(caught, sizeof(caught), "%s%c", CAUGHT_UP, 'A' + (int)i);
    snprintf(behind, sizeof(behind), "%s%c", LEFT_BEHIND, 'A' + (int)i);
    snprintf(named, sizeof(named), "%s%c", NAMED, 'A' + (int)i);
    mt_options_init(&o);
    o.history = 1;
    snprintf(dir, sizeof(dir), "%s/memtool-redact-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    if (mt_test_stores[i].open(&mem, dir, &o) < 0)
        fail_msg("open %s: %s", mt_test_stores[i].name, mt_error_last()->message);

    /* Indexed, edited, and the index caught up with the edit. */
    snprintf(json, sizeof(json), "alpha %s beta\\n", caught);
    mt_test_create(mem, "caught.md", json);
    assert_int_equal(hits(mem, caught), 1);
    edit(mem, "caught.md", caught, "gamma");
    assert_int_equal(hits(mem, "gamma"), 1);
    /* Indexed, edited, and no search since. */
    snprintf(json, sizeof(json), "delta %s epsilon\\n", behind);
    mt_test_create(mem, "behind.md", json);
    assert_int_equal(hits(mem, behind), 1);
    edit(mem, "behind.md", behind, "zeta");

    /* A name, given up by a rename: the creation and the rename both hold it. */
    snprintf(json, sizeof(json), "%s.md", named);
    mt_test_create(mem, json, "eta\\n");
    assert_int_equal(hits(mem, "eta"), 1);
    snprintf(json, sizeof(json),
             "{\"command\":\"rename\",\"old_path\":\"/memories/%s.md\","
             "\"new_path\":\"/memories/plain.md\"}",
             named);
    mt_test_ok(mem, json);
    edit(mem, "plain.md", "eta", "theta");
    assert_int_equal(hits(mem, "theta"), 1);
    n = mt_test_log(&v, mem, "/memories/plain.md", 10);
    assert_int_equal(n, 3);
    named_ids[0] = v[1].id; /* the rename */
    named_ids[1] = v[2].id; /* the creation */
    mt_versions_free(v, n);

    if (mt_memory_redact(mem, first_version(mem, "caught.md")) < 0 ||
        mt_memory_redact(mem, first_version(mem, "behind.md")) < 0 ||
        mt_memory_redact(mem, named_ids[0]) < 0 || mt_memory_redact(mem, named_ids[1]) < 0)
        fail_msg("redact on %s: %s", mt_test_stores[i].name, mt_error_last()->message);

#ifdef MT_TEST_STORE_OPENERS_PG_H
    if (strncmp(mt_test_stores[i].name, "postgresql", 10) == 0)
        files = pg_assert_clean(words, 3);
    else
#endif
        files = assert_tree_clean(dir, words, 3);
    assert_true(files > 0);

    /* The index still answers, from the current contents. */
    assert_int_equal(hits(mem, caught), 0);
    assert_int_equal(hits(mem, behind), 0);
    assert_int_equal(hits(mem, "gamma"), 1);
    assert_int_equal(hits(mem, "zeta"), 1);
    assert_int_equal(hits(mem, "alpha"), 1);
    mt_memory_free(mem);
    assert_int_equal(mt_test_scratch_remove(dir), 0);
}

/* A reader in another connection holds SQLite's write-ahead log, which
 * then cannot be emptied: the redaction stands but fails saying the log
 * still holds the pages, and the same redaction once the reader is done
 * empties it. */
static void redact_held(size_t i)
{
    char word[32], json[256], dir[300], db[400];
    const char *const words[] = {word};
    const char *tmp = getenv("TMPDIR");
    mt_options o;
    mt_memory *mem;
    mt_version v;
    sqlite3 *reader = NULL;
    int64_t id;

    snprintf(word, sizeof(word), "Wobblegrunt%c", 'A' + (int)i);
    mt_options_init(&o);
    o.history = 1;
    snprintf(dir, sizeof(dir), "%s/memtool-redact-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    if (mt_test_stores[i].open(&mem, dir, &o) < 0)
        fail_msg("open %s: %s", mt_test_stores[i].name, mt_error_last()->message);
    snprintf(json, sizeof(json), "alpha %s beta\\n", word);
    mt_test_create(mem, "held.md", json);
    assert_int_equal(hits(mem, word), 1);
    edit(mem, "held.md", word, "gamma");
    id = first_version(mem, "held.md");

    snprintf(db, sizeof(db), "%s/%s", dir,
             strncmp(mt_test_stores[i].name, "fs", 2) == 0 ? "fs/.memtool/history.db"
                                                           : "store.sqlite");
    assert_int_equal(sqlite3_open_v2(db, &reader, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM versions", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(mt_memory_redact(mem, id), MT_EBUSY);
    assert_non_null(strstr(mt_error_last()->message, "still holds the erased pages"));
    assert_int_equal(mt_memory_version(&v, mem, id), 0);
    assert_true(v.redacted);
    mt_version_dispose(&v);

    assert_int_equal(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(reader);
    if (mt_memory_redact(mem, id) < 0)
        fail_msg("redact again on %s: %s", mt_test_stores[i].name, mt_error_last()->message);
    assert_true(assert_tree_clean(dir, words, 1) > 0);
    mt_memory_free(mem);
    assert_int_equal(mt_test_scratch_remove(dir), 0);
}

static size_t store_index[MT_TEST_NSTORES];

/* One test a store, so each store's failure is its own. */
static void test_redact_erases(void **state)
{
    size_t i = *(size_t *)*state;

    redact_erases(i);
    if (strncmp(mt_test_stores[i].name, "postgresql", 10) != 0)
        redact_held(i);
}

int main(void)
{
    struct CMUnitTest tests[MT_TEST_NSTORES];
    size_t i;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        struct CMUnitTest t = {mt_test_stores[i].name, test_redact_erases, NULL, NULL,
                               &store_index[i]};

        store_index[i] = i;
        tests[i] = t;
    }
    return _cmocka_run_group_tests("redact_erases", tests, MT_TEST_NSTORES, NULL, NULL);
}

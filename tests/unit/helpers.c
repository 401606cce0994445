#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memtool/store.h>

#include <sqlite3.h>

#include "search/words.h"

void mt_test_store_init(mt_test_store *ts, const mt_options *opts)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(ts->dir, sizeof(ts->dir), "%s/memtool-unit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(ts->dir));
    snprintf(ts->root, sizeof(ts->root), "%s/store", ts->dir);
    assert_int_equal(mt_memory_open(&ts->mem, ts->root, opts), 0);
}

void mt_test_store_free(mt_test_store *ts)
{
    char cmd[600];

    mt_memory_free(ts->mem);
    ts->mem = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ts->dir);
    assert_int_equal(system(cmd), 0);
}

char *mt_test_call(mt_memory *mem, int *is_error, const char *json)
{
    mt_result res;
    assert_int_equal(mt_memory_call(&res, mem, json, strlen(json)), 0);
    *is_error = res.is_error;
    assert_int_equal(strlen(res.text), res.len);
    return res.text;
}

void mt_test_expect(mt_memory *mem, const char *json, int is_error, const char *text)
{
    int err;
    char *got = mt_test_call(mem, &err, json);

    assert_string_equal(got, text);
    assert_int_equal(err, is_error);
    free(got);
}

void mt_test_ok(mt_memory *mem, const char *json)
{
    int err = 0;
    char *t = mt_test_call(mem, &err, json);

    if (err)
        fail_msg("%s\n  gave: %s", json, t);
    free(t);
}

size_t mt_test_log(mt_version **v, mt_memory *mem, const char *path, size_t limit)
{
    mt_log_query q;
    size_t n = 0;

    memset(&q, 0, sizeof(q));
    q.path = path;
    q.limit = limit;
    if (mt_memory_log(v, &n, mem, &q) < 0)
        fail_msg("log %s: %s", path, mt_error_last()->message);
    return n;
}

void mt_test_create(mt_memory *mem, const char *path, const char *text)
{
    char json[1024];
    int n = snprintf(json, sizeof(json),
                     "{\"command\":\"create\",\"path\":\"/memories/%s\",\"file_text\":\"%s\"}",
                     path, text);

    assert_true(n > 0 && (size_t)n < sizeof(json));
    mt_test_ok(mem, json);
}

char *mt_test_read(const mt_test_store *ts, const char *rel, size_t *len)
{
    char path[1024], *buf;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "%s/%s", ts->root, rel);
    if (!(f = fopen(path, "rb")))
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

long mt_test_log_size(const mt_test_store *ts)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/.memtool/history.log", ts->root);
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const mt_store_hit *)a)->path, ((const mt_store_hit *)b)->path);
}

char *mt_test_store_found(mt_store *st, const char *query, size_t limit, uint64_t max_size)
{
    mt_search_query *q = NULL;
    mt_store_hit *hits = NULL;
    size_t n = 0, i, len = 2;
    char *out;

    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    q->max_size = max_size;
    if (st->search(st, &hits, &n, q, "", limit) < 0)
        fail_msg("the store's search for %s: %s", query, mt_error_last()->message);
    mt_search_query_free(q);
    if (n)
        qsort(hits, n, sizeof(*hits), cmp_path);
    for (i = 0; i < n; i++)
        len += strlen(hits[i].path) + 1;
    assert_non_null(out = malloc(len));
    *out = '\0';
    for (i = 0; i < n; i++) {
        size_t at = strlen(out), k = strlen(hits[i].path);

        memcpy(out + at, hits[i].path, k);
        memcpy(out + at + k, "\n", 2);
    }
    if (n == 0)
        memcpy(out, "-", 2);
    mt_store_hits_free(hits, n);
    return out;
}

void mt_test_scratch_make(char *dir, size_t size, const char *name)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, size, "%s/memtool-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    assert_non_null(mkdtemp(dir));
}

int mt_test_scratch_remove(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int mt_test_temp_fd(const char *name)
{
    char dir[256], path[300];
    int fd;

    mt_test_scratch_make(dir, sizeof(dir), name);
    snprintf(path, sizeof(path), "%s/file", dir);
    assert_true((fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0);
    assert_int_equal(mt_test_scratch_remove(dir), 0);
    return fd;
}

void mt_test_barrier_make(mt_test_barrier *b)
{
    assert_int_equal(pipe(b->fd), 0);
}

int mt_test_barrier_wait(mt_test_barrier *b)
{
    char c;
    ssize_t n;

    close(b->fd[1]);
    /* Nothing is ever written: the read ends at the parent's close. */
    n = read(b->fd[0], &c, 1);
    close(b->fd[0]);
    return n == 0 ? 0 : -1;
}

void mt_test_barrier_release(mt_test_barrier *b)
{
    close(b->fd[0]);
    assert_int_equal(close(b->fd[1]), 0);
}

void mt_test_sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;

    if (sqlite3_open(path, &db) != SQLITE_OK)
        fail_msg("%s: %s", path, sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        char why[512];

        snprintf(why, sizeof(why), "%s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        sqlite3_close(db);
        fail_msg("%s: %s", sql, why);
    }
    sqlite3_close(db);
}

int mt_test_replace_with(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    (void)data;
    (void)len;
    if (!(*out = strdup(payload)))
        return MT_ENOMEM;
    *out_len = strlen(*out);
    return 0;
}

pid_t mt_test_fork(const pid_t *pids, size_t n)
{
    pid_t pid = fork();
    int err = errno;

    if (pid < 0) {
        while (n-- > 0) {
            kill(pids[n], SIGKILL);
            waitpid(pids[n], NULL, 0);
        }
        fail_msg("fork: %s", strerror(err));
    }
    return pid;
}

void mt_test_keys_init(mt_test_keys *s, const char *name)
{
    mt_test_scratch_make(s->dir, sizeof(s->dir), name);
    snprintf(s->key, sizeof(s->key), "%s/key", s->dir);
    snprintf(s->key2, sizeof(s->key2), "%s/key2", s->dir);
    assert_int_equal(mt_crypt_key_generate_file(s->key), 0);
    assert_int_equal(mt_crypt_key_generate_file(s->key2), 0);
}

void mt_test_keys_free(mt_test_keys *s)
{
    assert_int_equal(mt_test_scratch_remove(s->dir), 0);
}

mt_crypt_key *mt_test_key_load(const char *path)
{
    mt_crypt_key *k = NULL;

    if (mt_crypt_key_load_file(&k, path) < 0)
        fail_msg("%s", mt_error_last()->message);
    return k;
}

void mt_test_store_op(mt_store_op *op, int history)
{
    mt_store_op_init(op);
    op->max_file_size = op->max_store_size = op->max_files = op->max_dirs = 0;
    op->history = history;
    op->history_keep = op->history_days = 0;
}

void mt_test_refs_fixture(mt_store *a, mt_store *b)
{
    mt_store_op op;

    mt_test_store_op(&op, 1);
    assert_int_equal(a->create(a, &op, "x.md", "shared\n", 7), 0);
    assert_int_equal(a->create(a, &op, "y.md", "shared\n", 7), 0);
    assert_int_equal(b->create(b, &op, "x.md", "shared\n", 7), 0);
    mt_test_store_op(&op, 0);
    assert_int_equal(a->create(a, &op, "lone.md", "lonely\n", 7), 0);
}

/* How many versions the memory at path has had that are kept. */
static size_t versions_at(mt_memory *mem, const char *path)
{
    mt_log_query q;
    mt_version *v = NULL;
    size_t n = 0;

    memset(&q, 0, sizeof(q));
    q.path = path;
    q.limit = 1000;
    if (mt_memory_log(&v, &n, mem, &q) < 0)
        fail_msg("log %s: %s", path, mt_error_last()->message);
    mt_versions_free(v, n);
    return n;
}

/* One change through a new handle: its prune by days is due. */
static mt_memory *days_change(mt_memory *(*open)(void *, const mt_options *), void *ctx,
                              const char *json)
{
    mt_options o;
    mt_memory *mem;

    mt_options_init(&o);
    o.history_days = 90;
    mem = open(ctx, &o);
    mt_test_ok(mem, json);
    return mem;
}

void mt_test_days_prune(mt_memory *(*open)(void *ctx, const mt_options *opts),
                        void (*age)(void *ctx, int64_t ms), void *ctx)
{
    static const char *const before[] = {
        "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a 0\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"0\","
        "\"new_str\":\"1\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"1\","
        "\"new_str\":\"2\"}",
        "{\"command\":\"create\",\"path\":\"/memories/z.md\",\"file_text\":\"z 0\"}",
        "{\"command\":\"create\",\"path\":\"/memories/old.md\",\"file_text\":\"left alone\"}",
    };
    mt_options o;
    mt_memory *mem;
    size_t i;

    /* History with no limit on days while the past is made. */
    mt_options_init(&o);
    o.history_days = 0;
    mem = open(ctx, &o);
    for (i = 0; i < sizeof(before) / sizeof(before[0]); i++)
        mt_test_ok(mem, before[i]);
    assert_int_equal(versions_at(mem, "/memories/a.md"), 3);
    mt_memory_free(mem);
    age(ctx, 200LL * 86400000);

    /* The first prune: a's older versions go, every newest stays. */
    mem = days_change(open, ctx,
                      "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"2\","
                      "\"new_str\":\"3\"}");
    assert_int_equal(versions_at(mem, "/memories/a.md"), 1);
    assert_int_equal(versions_at(mem, "/memories/z.md"), 1);
    assert_int_equal(versions_at(mem, "/memories/old.md"), 1);
    mt_memory_free(mem);
    /* z.md, left alone past the cut, then changed: its old version goes at
     * the next prune, though it was older than the last prune's cut. */
    mem = days_change(open, ctx,
                      "{\"command\":\"str_replace\",\"path\":\"/memories/z.md\",\"old_str\":\"0\","
                      "\"new_str\":\"1\"}");
    mt_memory_free(mem);
    mem = days_change(open, ctx,
                      "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"b\"}");
    assert_int_equal(versions_at(mem, "/memories/z.md"), 1);
    assert_int_equal(versions_at(mem, "/memories/old.md"), 1);
    assert_int_equal(versions_at(mem, "/memories/a.md"), 1);
    assert_int_equal(versions_at(mem, "/memories/b.md"), 1);
    mt_test_expect(mem, "{\"command\":\"view\",\"path\":\"/memories/z.md\"}", 0,
                   "Here's the content of /memories/z.md with line numbers:\n     1\tz 1");
    mt_memory_free(mem);
}

/* One change of a random mix, on few names and few texts, so that contents
 * are shared between memories and versions, made, kept and dropped; 1 when
 * it was made. */
static int random_change(mt_memory *mem, unsigned *seed, int history)
{
    static const char *const paths[] = {"/memories/a.md", "/memories/b.md", "/memories/d/c.md",
                                        "/memories/d/e.md"};
    static const char *const words[] = {"one", "two", "three"};
    const char *p = paths[rand_r(seed) % 4], *q = paths[rand_r(seed) % 4];
    const char *w = words[rand_r(seed) % 3], *x = words[rand_r(seed) % 3];
    char json[512];
    char *text;
    int err = 1, k = (int)(rand_r(seed) % (history ? 7 : 5));

    if (k == 0)
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"%s\",\"file_text\":\"%s\\n\"}", p, w);
    else if (k == 1)
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"%s\",\"old_str\":\"%s\","
                 "\"new_str\":\"%s\"}",
                 p, w, x);
    else if (k == 2)
        snprintf(json, sizeof(json),
                 "{\"command\":\"insert\",\"path\":\"%s\",\"insert_line\":0,"
                 "\"insert_text\":\"%s\\n\"}",
                 p, w);
    else if (k == 3)
        snprintf(json, sizeof(json),
                 "{\"command\":\"rename\",\"old_path\":\"%s\",\"new_path\":\"%s\"}", p, q);
    else if (k == 4)
        snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"%s\"}",
                 rand_r(seed) % 5 ? p : "/memories/d");
    if (k <= 4) {
        /* Many fail (no such file, already there, no match): a refused
         * change must leave the counts as they were too. */
        text = mt_test_call(mem, &err, json);
        free(text);
    } else {
        mt_version *v;
        size_t n;
        int64_t id, out;
        assert_int_equal(mt_memory_log(&v, &n, mem, NULL), 0);
        if (n > 0) {
            id = v[rand_r(seed) % n].id;
            err = k == 5 ? mt_memory_restore(&out, mem, id) < 0 : mt_memory_redact(mem, id) < 0;
        }
        mt_versions_free(v, n);
    }
    return !err;
}

void mt_test_refs_mix(mt_memory *(*open)(void *ctx, const char *tenant, const mt_options *opts),
                      long long (*sql)(void *ctx, const char *text), void *ctx, const char *prefix)
{
    const char *p = prefix;
    mt_options o;
    mt_memory *on, *off;
    char wrong[2048], orphans[1024], shared[256], kept[256];
    unsigned seed = 20261125;
    int i, made_on = 0, made_off = 0;

    /* What every count should be, from the rows that name a content,
     * against what content_refs holds; then contents without a count and
     * counts without a content. Both 0 in a consistent store. */
    snprintf(wrong, sizeof(wrong),
             "SELECT count(*) FROM (SELECT tenant, sha256, count(*) AS want FROM ("
             "  SELECT tenant, sha256 FROM %snodes WHERE sha256 IS NOT NULL UNION ALL "
             "  SELECT tenant, sha256 FROM %sversions WHERE sha256 IS NOT NULL) x "
             "GROUP BY tenant, sha256) w FULL JOIN %scontent_refs r USING (tenant, sha256) "
             "WHERE coalesce(w.want, 0) <> coalesce(r.refs, 0) OR coalesce(r.refs, 0) <= 0",
             p, p, p);
    snprintf(orphans, sizeof(orphans),
             "SELECT (SELECT count(*) FROM %scontents c WHERE NOT EXISTS (SELECT 1 FROM "
             "%scontent_refs r WHERE r.tenant = c.tenant AND r.sha256 = c.sha256)) + "
             "(SELECT count(*) FROM %scontent_refs r WHERE NOT EXISTS (SELECT 1 FROM %scontents c "
             "WHERE c.tenant = r.tenant AND c.sha256 = r.sha256))",
             p, p, p, p);
    snprintf(shared, sizeof(shared), "SELECT max(refs) FROM %scontent_refs WHERE tenant = 'on'", p);
    snprintf(kept, sizeof(kept), "SELECT count(*) FROM %scontent_refs WHERE tenant = 'off'", p);
    mt_options_init(&o);
    o.history_keep = 3;
    on = open(ctx, "on", &o);
    o.history = 0;
    off = open(ctx, "off", &o);
    for (i = 1; i <= 3000; i++) {
        made_on += random_change(on, &seed, 1);
        made_off += random_change(off, &seed, 0);
        if (i % 100 == 0) {
            assert_int_equal(sql(ctx, wrong), 0);
            assert_int_equal(sql(ctx, orphans), 0);
        }
    }
    /* The mix did change the stores, and share, keep and drop contents. */
    printf("changes made: %d with history, %d without (of 3000 each)\n", made_on, made_off);
    assert_true(made_on > 750 && made_off > 750);
    assert_true(sql(ctx, shared) > 2);
    assert_true(sql(ctx, kept) > 0);
    mt_memory_free(on);
    mt_memory_free(off);
}

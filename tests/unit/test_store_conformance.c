/*
 * Every store gives the filesystem store's results, byte for byte: the same
 * tool inputs run through mt_memory_call on each store (store_openers.h)
 * and compared step by step, then their histories compared.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include <pthread.h>

#include "helpers.h"
#include "core/memory.h"
#include "search/words.h"
#include "util/sha256.h"
#include "store_openers.h"

typedef struct {
    char dir[MT_TEST_NSTORES][256];
    mt_memory *mem[MT_TEST_NSTORES];
} stores;

static void stores_open(stores *s, const mt_options *opts)
{
    const char *tmp = getenv("TMPDIR");
    size_t i;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        snprintf(s->dir[i], sizeof(s->dir[i]), "%s/memtool-conf-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        assert_non_null(mkdtemp(s->dir[i]));
        if (mt_test_stores[i].open(&s->mem[i], s->dir[i], opts) < 0)
            fail_msg("open %s: %s", mt_test_stores[i].name, mt_error_last()->message);
    }
}

static void stores_close(stores *s)
{
    char cmd[600];
    size_t i;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_memory_free(s->mem[i]);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir[i]);
        assert_int_equal(system(cmd), 0);
    }
}

/* Run one input on every store; all results must be the reference's. */
static void same(stores *s, const char *json)
{
    char *ref;
    int ref_err, err;
    size_t i;

    ref = mt_test_call(s->mem[0], &ref_err, json);
    for (i = 1; i < MT_TEST_NSTORES; i++) {
        char *got = mt_test_call(s->mem[i], &err, json);
        if (strcmp(ref, got) != 0 || err != ref_err)
            fail_msg("%s\n  %s: [%d] %s\n  %s: [%d] %s", json, mt_test_stores[0].name, ref_err, ref,
                     mt_test_stores[i].name, err, got);
        free(got);
    }
    free(ref);
}

static void run(stores *s, const char *const *inputs)
{
    for (; *inputs; inputs++)
        same(s, *inputs);
}

/* The histories agree in everything but the random memory ids and the
 * times: those must map one to one. */
static void same_history(stores *s)
{
    mt_version *ref = NULL, *v = NULL;
    size_t nref = 0, n = 0, i, j, k;
    mt_log_query q;

    memset(&q, 0, sizeof(q));
    q.limit = 100000;
    assert_int_equal(mt_memory_log(&ref, &nref, s->mem[0], &q), 0);
    for (i = 1; i < MT_TEST_NSTORES; i++) {
        assert_int_equal(mt_memory_log(&v, &n, s->mem[i], &q), 0);
        assert_int_equal(n, nref);
        for (j = 0; j < n; j++) {
            assert_int_equal(v[j].id, ref[j].id);
            assert_int_equal(v[j].operation, ref[j].operation);
            assert_int_equal(v[j].redacted, ref[j].redacted);
#ifdef MT_TEST_REMOTE
            /* A remote store's versions are the server's (docs/remote-store.md):
             * the actor is the key that wrote (memtool server's
             * "api:apikey_..."). */
            assert_int_equal(strncmp(v[j].actor, "api:apikey_", 11), 0);
#else
            assert_string_equal(v[j].actor, ref[j].actor);
#endif
            assert_string_equal(v[j].content_sha256, ref[j].content_sha256);
#ifdef MT_TEST_REMOTE
            /* The API gives no size of a redacted version or a deletion. */
            if (ref[j].redacted || ref[j].operation == MT_VERSION_DELETED)
                assert_int_equal(v[j].content_size, 0);
            else
#endif
                assert_int_equal(v[j].content_size, ref[j].content_size);
            assert_string_equal(v[j].path ? v[j].path : "-", ref[j].path ? ref[j].path : "-");
#ifdef MT_TEST_REMOTE
            /* The API redacts a version's path with its content: a rename
             * from a redacted version cannot be told (docs/remote-store.md). */
            if (!v[j].previous_path && ref[j].previous_path) {
                for (k = j + 1; k < n && strcmp(ref[k].memory_id, ref[j].memory_id) != 0; k++)
                    ;
                assert_true(k < n && ref[k].redacted);
            } else
#endif
                assert_string_equal(v[j].previous_path ? v[j].previous_path : "-",
                                    ref[j].previous_path ? ref[j].previous_path : "-");
            for (k = 0; k < n; k++) {
                int same_v = strcmp(v[j].memory_id, v[k].memory_id) == 0;
                int same_ref = strcmp(ref[j].memory_id, ref[k].memory_id) == 0;
#ifdef MT_TEST_REMOTE
                /* A deleted memory brought back is a new memory of the API:
                 * a deletion of it lies between the two versions. */
                if (same_ref && !same_v) {
                    size_t m, lo = j < k ? j : k, hi = j < k ? k : j, gone = 0;
                    for (m = lo; m <= hi; m++)
                        gone |= strcmp(ref[m].memory_id, ref[j].memory_id) == 0 &&
                                ref[m].operation == MT_VERSION_DELETED;
                    assert_true(gone);
                    continue;
                }
#endif
                assert_int_equal(same_v, same_ref);
            }
        }
        mt_versions_free(v, n);
        {
            mt_usage a, b;
            assert_int_equal(mt_memory_usage(&a, s->mem[0]), 0);
            assert_int_equal(mt_memory_usage(&b, s->mem[i]), 0);
            assert_int_equal(a.bytes, b.bytes);
            assert_int_equal(a.files, b.files);
            assert_int_equal(a.dirs, b.dirs);
        }
    }
    mt_versions_free(ref, nref);
}

static void options(mt_options *o)
{
    mt_options_init(o);
    o->durability = MT_DURABILITY_NONE;
}

static void test_commands(void **state)
{
    static const char *const inputs[] = {
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"view\",\"path\":\"/memories/none.md\"}",
        "{\"command\":\"create\",\"path\":\"/memories/"
        "a.md\",\"file_text\":\"one\\ntwo\\nthree\\n\"}",
        "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"again\"}",
        "{\"command\":\"create\",\"path\":\"/memories/d/e/f/deep.md\",\"file_text\":\"deep\"}",
        "{\"command\":\"create\",\"path\":\"/memories/d/.hidden\",\"file_text\":\"secret text\"}",
        "{\"command\":\"create\",\"path\":\"/memories/node_modules/x.js\",\"file_text\":\"x\"}",
        "{\"command\":\"create\",\"path\":\"/memories/a-c\",\"file_text\":\"dash\"}",
        "{\"command\":\"create\",\"path\":\"/memories/a/b\",\"file_text\":\"ab\"}",
        "{\"command\":\"create\",\"path\":\"/memories/empty.md\",\"file_text\":\"\"}",
        "{\"command\":\"create\",\"path\":\"/memories/a.md/child\",\"file_text\":\"x\"}",
        "{\"command\":\"create\",\"path\":\"/memories/d\",\"file_text\":\"x\"}",
        "{\"command\":\"create\",\"path\":\"/memories\",\"file_text\":\"x\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"view\",\"path\":\"/memories/d\"}",
        "{\"command\":\"view\",\"path\":\"/memories/d/e\"}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md\"}",
        "{\"command\":\"view\",\"path\":\"/memories/empty.md\"}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md\",\"view_range\":[2,3]}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md\",\"view_range\":[2,-1]}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md\",\"view_range\":[9,12]}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md/x\"}",
        "{\"command\":\"view\",\"path\":\"/memories/d/none/x\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"two\",\"new_str\":"
        "\"2\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"one\\n2\\n\","
        "\"new_str\":\"uno\\ndos\\ntres\\n\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"missing\","
        "\"new_str\":\"x\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/none\",\"old_str\":\"a\",\"new_str\":"
        "\"b\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/"
        "d\",\"old_str\":\"a\",\"new_str\":\"b\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/a.md/z\",\"old_str\":\"a\",\"new_str\":"
        "\"b\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/a.md\",\"insert_line\":0,\"insert_text\":"
        "\"top\\n\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/a.md\",\"insert_line\":3,\"insert_text\":"
        "\"mid\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/a.md\",\"insert_line\":99,\"insert_text\":"
        "\"x\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/d\",\"insert_line\":0,\"insert_text\":\"x\"}",
        "{\"command\":\"view\",\"path\":\"/memories/a.md\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/n/"
        "b.md\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/c.md\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/n/b.md\",\"new_path\":\"/memories/a-c\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/n/b.md\",\"new_path\":\"/memories/a-c/"
        "x\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/d\",\"new_path\":\"/memories/d/e/in\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/d\",\"new_path\":\"/memories/m/d2\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories\",\"new_path\":\"/memories/x\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/x\",\"new_path\":\"/memories\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"view\",\"path\":\"/memories/m\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/m/d2/e\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/m\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/m\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/a-c/x\"}",
        "{\"command\":\"delete\",\"path\":\"/memories\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/n\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        NULL};
    stores s;
    mt_options o;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    run(&s, inputs);
    same_history(&s);
    stores_close(&s);
}

/* Rename whose contents would lie too deep. */
/* The x levels of test_depth's tree: under memtool's limit of 32 levels,
 * and on a remote store under the API's 20 segments a path (t, the x's,
 * f.md, and u/v when moved). */
#ifdef MT_TEST_REMOTE
#define DEPTH_X 16
#else
#define DEPTH_X 20
#endif

static void test_depth(void **state)
{
    char json[4096], path[2048];
    stores s;
    mt_options o;
    int i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    snprintf(path, sizeof(path), "/memories/t");
    for (i = 0; i < DEPTH_X; i++)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "/x");
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"%s/f.md\",\"file_text\":\"x\"}", path);
    same(&s, json);
    snprintf(path, sizeof(path), "/memories/u");
    for (i = 0; i < 12; i++)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "/y");
    snprintf(json, sizeof(json),
             "{\"command\":\"rename\",\"old_path\":\"/memories/t\",\"new_path\":"
             "\"%s\"}",
             path);
#ifndef MT_TEST_REMOTE /* over memtool's 32 levels; the API's 20 refuse it in other words */
    same(&s, json);
#endif
    same(&s,
         "{\"command\":\"rename\",\"old_path\":\"/memories/t\",\"new_path\":\"/memories/u/v\"}");
    same(&s, "{\"command\":\"view\",\"path\":\"/memories/u\"}");
    same_history(&s);
    stores_close(&s);
}

static void test_limits(void **state)
{
    static const char *const inputs[] = {
        "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/big.md\",\"file_text\":"
        "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/c.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/d.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/e.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/e.md\"}",
        "{\"command\":\"create\",\"path\":\"/memories/p/q/r.md\",\"file_text\":\"x\"}",
        "{\"command\":\"create\",\"path\":\"/memories/p/r.md\",\"file_text\":\"x\"}",
        "{\"command\":\"create\",\"path\":\"/memories/p/q.md\",\"file_text\":\"x\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/s/t/"
        "u.md\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/s/"
        "u.md\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/b.md\",\"old_str\":\"0\",\"new_str\":"
        "\"0123456789012345678901234567890123456789\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/c.md\",\"insert_line\":1,\"insert_text\":"
        "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        NULL};
    stores s;
    mt_options o;

    (void)state;
    options(&o);
    o.max_file_size = 60;
    o.max_store_size = 80;
    o.max_files = 5;
    o.max_dirs = 2;
    stores_open(&s, &o);
    run(&s, inputs);
    same_history(&s);
    stores_close(&s);
}

/* expected_sha256: conflicts, then the retried delete and rename. */
static void test_expected(void **state)
{
    char sha[65], json[512];
    stores s;
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    same(&s, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"hello\\n\"}");
    same(&s, "{\"command\":\"create\",\"path\":\"/memories/dir/x.md\",\"file_text\":\"x\"}");
    assert_int_equal(mt_memory_sha256(sha, s.mem[0], "/memories/a.md"), 0);
    for (i = 1; i < MT_TEST_NSTORES; i++) {
        char other[65];
        assert_int_equal(mt_memory_sha256(other, s.mem[i], "/memories/a.md"), 0);
        assert_string_equal(sha, other);
    }
    same(&s, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"hello\","
             "\"new_str\":\"hi\",\"expected_sha256\":"
             "\"0000000000000000000000000000000000000000000000000000000000000000\"}");
    same(&s, "{\"command\":\"delete\",\"path\":\"/memories/dir\",\"expected_sha256\":"
             "\"0000000000000000000000000000000000000000000000000000000000000000\"}");
    same(&s, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"x\","
             "\"expected_sha256\":\"00\"}");
    snprintf(json, sizeof(json),
             "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/"
             "b.md\",\"expected_sha256\":\"%s\"}",
             sha);
    same(&s, json);
    same(&s, json); /* retried: done already */
    snprintf(json, sizeof(json),
             "{\"command\":\"insert\",\"path\":\"/memories/b.md\",\"insert_line\":1,"
             "\"insert_text\":\"more\",\"expected_sha256\":\"%s\"}",
             sha);
    same(&s, json);
    same(&s, json); /* now a conflict */
    assert_int_equal(mt_memory_sha256(sha, s.mem[0], "/memories/b.md"), 0);
    snprintf(json, sizeof(json),
             "{\"command\":\"delete\",\"path\":\"/memories/b.md\",\"expected_sha256\":\"%s\"}",
             sha);
    same(&s, json);
    same(&s, json); /* retried */
    same_history(&s);
    stores_close(&s);
}

/* History through the public functions: log, show, restore, undo, redact. */
static void test_history(void **state)
{
    stores s;
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
#ifndef MT_TEST_REMOTE /* the server keeps versions as it keeps them: no history_keep */
    o.history_keep = 4;
#endif
    stores_open(&s, &o);
    same(&s, "{\"command\":\"create\",\"path\":\"/memories/h.md\",\"file_text\":\"v1\\n\"}");
    for (i = 2; i <= 9; i++) {
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/h.md\",\"old_str\":\"v%zu\","
                 "\"new_str\":\"v%zu\"}",
                 i - 1, i);
        same(&s, json);
    }
    same(&s, "{\"command\":\"rename\",\"old_path\":\"/memories/h.md\",\"new_path\":\"/memories/"
             "g/h.md\"}");
    same(&s, "{\"command\":\"create\",\"path\":\"/memories/g/k.md\",\"file_text\":\"k\"}");
    same(&s, "{\"command\":\"rename\",\"old_path\":\"/memories/g\",\"new_path\":\"/memories/z\"}");
    same_history(&s);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_version v;
        char *data = NULL;
        size_t len = 0;
        int64_t id = 0, restored = 0;
        mt_version *vs = NULL;
        size_t n = 0;
        mt_log_query q;
        int rc;

        memset(&q, 0, sizeof(q));
        q.path = "/memories/z/h.md";
        assert_int_equal(mt_memory_log(&vs, &n, s.mem[i], &q), 0);
        assert_true(n >= 4);
        assert_int_equal(mt_memory_version(&v, s.mem[i], vs[2].id), 0);
        assert_int_equal(mt_memory_version_content(&data, &len, s.mem[i], vs[2].id), 0);
        free(data);
        mt_version_dispose(&v);
        assert_int_equal(mt_memory_restore(&id, s.mem[i], vs[2].id), 0);
        assert_int_equal(mt_memory_undo(&id, &restored, s.mem[i], "/memories/z/h.md"), 0);
        rc = mt_memory_redact(s.mem[i], vs[1].id);
        assert_int_equal(rc, 0);
        assert_int_equal(mt_memory_version_content(&data, &len, s.mem[i], vs[1].id), MT_ENOTFOUND);
        assert_int_equal(mt_memory_version(&v, s.mem[i], 999999), MT_ENOTFOUND);
        assert_int_equal(mt_memory_redact(s.mem[i], 999999), MT_ENOTFOUND);
        mt_versions_free(vs, n);
        /* The current content cannot be redacted. */
        memset(&q, 0, sizeof(q));
        q.path = "/memories/z/h.md";
        q.limit = 1;
        assert_int_equal(mt_memory_log(&vs, &n, s.mem[i], &q), 0);
        assert_int_equal(mt_memory_redact(s.mem[i], vs[0].id), MT_EINVAL);
        mt_versions_free(vs, n);
    }
    same(&s, "{\"command\":\"view\",\"path\":\"/memories/z/h.md\"}");
    same(&s, "{\"command\":\"delete\",\"path\":\"/memories/z\"}");
    same_history(&s);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_version *vs = NULL;
        size_t n = 0;
        mt_log_query q;
        int64_t id = 0;

        memset(&q, 0, sizeof(q));
        q.path = "/memories/z/k.md";
        assert_int_equal(mt_memory_log(&vs, &n, s.mem[i], &q), 0);
        assert_true(n >= 2);
        /* A deleted memory comes back at its path. */
        if (mt_memory_restore(&id, s.mem[i], vs[1].id) < 0)
            fail_msg("%s: restore %lld: %s", mt_test_stores[i].name, (long long)vs[1].id,
                     mt_error_last()->message);
        mt_versions_free(vs, n);
    }
    same(&s, "{\"command\":\"view\",\"path\":\"/memories\"}");
    same_history(&s);
    stores_close(&s);
}

/* --- a rename with content (mt_store_op.rename_content) ------------- */

/* What a refused change must leave as it was: the versions and the usage. */
typedef struct {
    size_t versions;
    mt_usage usage;
} store_look;

static size_t version_count(mt_memory *mem)
{
    mt_version *v = NULL;
    size_t n = 0;
    mt_log_query q;

    memset(&q, 0, sizeof(q));
    q.limit = 100000;
    assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
    mt_versions_free(v, n);
    return n;
}

static void look(store_look *l, mt_memory *mem)
{
    l->versions = version_count(mem);
    assert_int_equal(mt_memory_usage(&l->usage, mem), 0);
}

static void unchanged(const store_look *was, mt_memory *mem, const char *store)
{
    store_look now;

    look(&now, mem);
    if (now.versions != was->versions || now.usage.bytes != was->usage.bytes ||
        now.usage.files != was->usage.files || now.usage.dirs != was->usage.dirs)
        fail_msg("%s: a refused rename changed the store (versions %zu -> %zu, bytes %llu -> "
                 "%llu, dirs %llu -> %llu)",
                 store, was->versions, now.versions, (unsigned long long)was->usage.bytes,
                 (unsigned long long)now.usage.bytes, (unsigned long long)was->usage.dirs,
                 (unsigned long long)now.usage.dirs);
}

/* The memory at path (a request path) holds want; NULL: nothing there. */
static void holds(mt_memory *mem, const char *path, const char *want, const char *store)
{
    char *data = NULL;
    size_t len = 0;
    int rc = mt_memory_read(&data, &len, mem, path);

    if (!want) {
        if (rc != MT_ENOTFOUND)
            fail_msg("%s: %s: expected nothing, got [%d]", store, path, rc);
        return;
    }
    if (rc < 0)
        fail_msg("%s: %s: [%d] %s", store, path, rc, mt_error_last()->message);
    if (len != strlen(want) || memcmp(data, want, len) != 0)
        fail_msg("%s: %s holds '%.*s', not '%s'", store, path, (int)len, data, want);
    free(data);
}

static int rename_with(mt_memory *mem, mt_store_op *op, const char *from, const char *to,
                       const char *content, const char *expect)
{
    mt_memory_op(op, mem);
    op->expect_sha256 = expect;
    op->rename_content = 1;
    op->rename_data = content;
    op->rename_len = strlen(content);
    return mem->store->rename(mem->store, op, from, to);
}

/* The newest version is the rename's one: at path, from previous (NULL:
 * none), holding content, and it is the one op recorded. */
static void newest_is(mt_memory *mem, const mt_store_op *op, const char *path, const char *previous,
                      const char *content, const char *store)
{
    mt_version *v = NULL;
    size_t n = 0;
    mt_log_query q;
    char sha[65];

    memset(&q, 0, sizeof(q));
    q.limit = 1;
    assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
    assert_int_equal(n, 1);
    mt_sha256_hex(sha, content, strlen(content));
    if (v[0].operation != MT_VERSION_MODIFIED || strcmp(v[0].path, path) != 0 ||
        strcmp(v[0].previous_path ? v[0].previous_path : "-", previous ? previous : "-") != 0 ||
        strcmp(v[0].content_sha256, sha) != 0 || v[0].content_size != strlen(content) ||
        v[0].id != op->version)
        fail_msg("%s: newest version %lld (op %d, %s from %s, %s, %llu bytes), op->version %lld",
                 store, (long long)v[0].id, (int)v[0].operation, v[0].path,
                 v[0].previous_path ? v[0].previous_path : "-", v[0].content_sha256,
                 (unsigned long long)v[0].content_size, (long long)op->version);
    mt_versions_free(v, n);
}

/* Beneath the encryption layer the file and its newest version hold the
 * content sealed: the plaintext is nowhere in what the inner store keeps. */
static int whole_cb(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    char **out = payload;

    (void)last;
    if (!(*out = realloc(*out, (size_t)off + len + 1)))
        return MT_ENOMEM;
    memcpy(*out + off, data, len);
    (*out)[off + len] = '\0';
    return 0;
}

static void sealed_beneath(mt_store *st, const char *path, int64_t version, const char *plain,
                           const char *store)
{
    mt_store *inner = NULL;
    char *data = NULL;
    size_t len = 0;
    uint64_t size = 0;

    assert_int_equal(st->control(st, MT_STORE_LISTING, &inner), 0);
    assert_ptr_not_equal(inner, st);
    assert_int_equal(inner->read(inner, &size, path, 1 << 20, whole_cb, &data), 0);
    assert_int_equal(size, strlen(plain) + MT_CRYPT_OVERHEAD);
    if (memmem(data, (size_t)size, plain, strlen(plain)))
        fail_msg("%s: %s holds its content unsealed", store, path);
    free(data);
    assert_int_equal(inner->version_content(inner, &data, &len, version), 0);
    assert_int_equal(len, strlen(plain) + MT_CRYPT_OVERHEAD);
    if (memmem(data, len, plain, strlen(plain)))
        fail_msg("%s: version %lld holds its content unsealed", store, (long long)version);
    free(data);
}

#define ZERO_SHA "0000000000000000000000000000000000000000000000000000000000000000"

/* A new path and new content in one step, one version, on every store; a
 * refused one changes nothing. */
static void test_rename_content(void **state)
{
    char old_sha[65], f1_sha[65];
    stores s;
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    run(&s,
        (const char *const[]){
            "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"old\\n\"}",
            "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"taken\\n\"}",
            "{\"command\":\"create\",\"path\":\"/memories/d/x.md\",\"file_text\":\"x\\n\"}",
            "{\"command\":\"create\",\"path\":\"/memories/f.md\",\"file_text\":\"f1\\n\"}", NULL});
    mt_sha256_hex(old_sha, "old\n", 4);
    mt_sha256_hex(f1_sha, "f1\n", 3);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        const char *name = mt_test_stores[i].name;
        mt_memory *mem = s.mem[i];
        mt_store *st = mem->store;
        store_look was;
        mt_store_op op;
        int rc;

        look(&was, mem);
        /* A stale precondition: checked against the source's content. */
        assert_int_equal(rename_with(mem, &op, "a.md", "n/a.md", "new content\n", ZERO_SHA),
                         MT_ECONFLICT);
        assert_string_equal(op.current_sha256, old_sha);
        unchanged(&was, mem, name);
        holds(mem, "/memories/a.md", "old\n", name);
        holds(mem, "/memories/n/a.md", NULL, name);
        /* The destination taken. */
        assert_int_equal(rename_with(mem, &op, "a.md", "b.md", "new content\n", old_sha),
                         MT_EEXISTS);
        assert_int_equal(op.culprit, 1);
        unchanged(&was, mem, name);
        holds(mem, "/memories/a.md", "old\n", name);
        holds(mem, "/memories/b.md", "taken\n", name);
        /* The limits, on the new content: the file's size... */
        mt_memory_op(&op, mem);
        op.max_file_size = 8;
        op.expect_sha256 = old_sha;
        op.rename_content = 1;
        op.rename_data = "new content\n";
        op.rename_len = 12;
        assert_int_equal(st->rename(st, &op, "a.md", "n/a.md"), MT_ELIMIT);
        assert_int_equal(op.refused, MT_LIMIT_FILE_SIZE);
        assert_int_equal(op.limit, 8);
        assert_int_equal(op.held, 4);
        assert_int_equal(op.would, 12);
        unchanged(&was, mem, name);
        holds(mem, "/memories/a.md", "old\n", name);
#ifndef MT_TEST_REMOTE /* memtool's store-size limit: the server's limits hold there */
        /* ...and the store's, by what it grows. */
        mt_memory_op(&op, mem);
        op.max_store_size = was.usage.bytes + 7;
        op.expect_sha256 = old_sha;
        op.rename_content = 1;
        op.rename_data = "new content\n";
        op.rename_len = 12;
        assert_int_equal(st->rename(st, &op, "a.md", "n/a.md"), MT_ELIMIT);
        assert_int_equal(op.refused, MT_LIMIT_STORE_SIZE);
        assert_int_equal(op.would, was.usage.bytes + 8);
        unchanged(&was, mem, name);
        holds(mem, "/memories/n/a.md", NULL, name);
#endif
        /* A directory takes no content. */
        assert_int_equal(rename_with(mem, &op, "d", "e", "new content\n", NULL), MT_EINVAL);
        unchanged(&was, mem, name);
        holds(mem, "/memories/d/x.md", "x\n", name);
        holds(mem, "/memories/e/x.md", NULL, name);
        /* Done: one version, with the new path and the new content. */
        if ((rc = rename_with(mem, &op, "a.md", "n/a.md", "new content\n", old_sha)) != 0)
            fail_msg("%s: [%d] %s", name, rc, mt_error_last()->message);
        holds(mem, "/memories/a.md", NULL, name);
        holds(mem, "/memories/n/a.md", "new content\n", name);
        assert_int_equal(version_count(mem), was.versions + 1);
        newest_is(mem, &op, "/memories/n/a.md", "/memories/a.md", "new content\n", name);
        if (strstr(name, "crypt"))
            sealed_beneath(st, "n/a.md", op.version, "new content\n", name);
        {
            mt_usage u;
            assert_int_equal(mt_memory_usage(&u, mem), 0);
            assert_int_equal(u.bytes, was.usage.bytes + 8);
            assert_int_equal(u.files, was.usage.files);
            assert_int_equal(u.dirs, was.usage.dirs + 1);
        }
        /* Retried: done already, nothing more. */
        assert_int_equal(rename_with(mem, &op, "a.md", "n/a.md", "new content\n", old_sha), 0);
        assert_int_equal(version_count(mem), was.versions + 1);
        holds(mem, "/memories/n/a.md", "new content\n", name);
        /* A rename without content went first: the content goes in alone,
         * one version more. */
        mt_memory_op(&op, mem);
        assert_int_equal(st->rename(st, &op, "f.md", "g.md"), 0);
        assert_int_equal(rename_with(mem, &op, "f.md", "g.md", "f2\n", f1_sha), 0);
        holds(mem, "/memories/g.md", "f2\n", name);
        assert_int_equal(version_count(mem), was.versions + 3);
        newest_is(mem, &op, "/memories/g.md", NULL, "f2\n", name);
        /* Without a precondition, and to nothing at all. */
        assert_int_equal(rename_with(mem, &op, "g.md", "h.md", "", NULL), 0);
        holds(mem, "/memories/g.md", NULL, name);
        holds(mem, "/memories/h.md", "", name);
        newest_is(mem, &op, "/memories/h.md", "/memories/g.md", "", name);
        /* Nothing at the source, no precondition: nothing to finish. */
        assert_int_equal(rename_with(mem, &op, "g.md", "i.md", "x", NULL), MT_ENOTFOUND);
        assert_int_equal(op.culprit, 0);
    }
    same(&s, "{\"command\":\"view\",\"path\":\"/memories\"}");
    same_history(&s);
    stores_close(&s);
}

/* The file store moves the file, then renames the new content over it: a
 * crash between the two (made here by moving the file outside memtool)
 * leaves the old content at the destination, and the request, retried,
 * finishes it with its one version. */
static void test_rename_content_crash(void **state)
{
    char old_sha[65], from[700], to[700];
    stores s;
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    mt_sha256_hex(old_sha, "old\n", 4);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        const char *name = mt_test_stores[i].name;
        mt_memory *mem = s.mem[i];
        mt_version *v = NULL;
        size_t n = 0, before;
        mt_log_query q;
        mt_store_op op;
        char id[24];

        if (strncmp(name, "fs", 2) != 0)
            continue;
        mt_test_ok(mem,
                   "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"old\\n\"}");
        memset(&q, 0, sizeof(q));
        q.limit = 1;
        assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
        snprintf(id, sizeof(id), "%s", v[0].memory_id);
        mt_versions_free(v, n);
        before = version_count(mem);
        snprintf(from, sizeof(from), "%s/fs/a.md", s.dir[i]);
        snprintf(to, sizeof(to), "%s/fs/z.md", s.dir[i]);
        assert_int_equal(rename(from, to), 0);
        if (rename_with(mem, &op, "a.md", "z.md", "new\n", old_sha) != 0)
            fail_msg("%s: %s", name, mt_error_last()->message);
        holds(mem, "/memories/z.md", "new\n", name);
        holds(mem, "/memories/a.md", NULL, name);
        assert_int_equal(version_count(mem), before + 1);
        newest_is(mem, &op, "/memories/z.md", "/memories/a.md", "new\n", name);
        assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
        assert_string_equal(v[0].memory_id, id);
        mt_versions_free(v, n);
        /* Retried once more: done. */
        assert_int_equal(rename_with(mem, &op, "a.md", "z.md", "new\n", old_sha), 0);
        assert_int_equal(version_count(mem), before + 1);
    }
    stores_close(&s);
}

static uint64_t rnd(uint64_t *seed, uint64_t n)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (*seed >> 33) % n;
}

#ifdef MT_TEST_REMOTE
/* A memory store has no empty directories (docs/remote-store.md): the
 * reference, a file store, deletes its own (through memtool, which keeps its
 * counts) until none is left. */
static void drop_empty_dirs(stores *s)
{
    char cmd[700], line[600], json[800];
    int found = 1, err;

    snprintf(cmd, sizeof(cmd),
             "cd '%s/fs' && find . -mindepth 1 -type d -empty ! -path './.memtool*' | cut -c3-",
             s->dir[0]);
    while (found) {
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        found = 0;
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"/memories/%s\"}",
                     line);
            free(mt_test_call(s->mem[0], &err, json));
            assert_int_equal(err, 0);
            found = 1;
        }
        assert_int_equal(pclose(f), 0);
    }
}
#endif

/* A seeded random walk of a few thousand inputs over a small namespace, with
 * small limits, compared at every step. */
static void test_random(void **state)
{
    static const char *const paths[] = {
        "a.md", "b.md",     "d",   "d/x.md",     "d/y.md",
        "d/e",  "d/e/z.md", ".h",  "d/.h/q.md",  "node_modules/m.js",
        "a-c",  "a",        "a/b", "f/g/h/i.md", "f",
        "f/g"};
    static const char *const texts[] = {"", "one\\n", "one\\ntwo\\n", "two\\nthree\\nfour",
                                        "0123456789012345678901234567890123456789"};
    uint64_t seed = 20250818;
    stores s;
    mt_options o;
    char json[1024];
    int step;

    (void)state;
    options(&o);
    o.max_file_size = 90;
#ifndef MT_TEST_REMOTE /* memtool's store limits and history_keep: the server's hold there */
    o.max_store_size = 300;
    o.max_files = 8;
    o.max_dirs = 6;
    o.history_keep = 5;
#endif
    stores_open(&s, &o);
#define NEXT(n) rnd(&seed, n)
#define NP      (sizeof(paths) / sizeof(paths[0]))
#define NT      (sizeof(texts) / sizeof(texts[0]))
    for (step = 0; step < 3000; step++) {
        const char *p = paths[NEXT(NP)], *q = paths[NEXT(NP)];
        switch (NEXT(7)) {
        case 0:
            snprintf(json, sizeof(json),
                     "{\"command\":\"create\",\"path\":\"/memories/%s\",\"file_text\":\"%s\"}", p,
                     texts[NEXT(NT)]);
            break;
        case 1:
            snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories%s%s\"}",
                     NEXT(3) ? "/" : "", NEXT(3) ? p : "");
            break;
        case 2:
            snprintf(json, sizeof(json),
                     "{\"command\":\"str_replace\",\"path\":\"/memories/%s\",\"old_str\":\"%s\","
                     "\"new_str\":\"%s\"}",
                     p, NEXT(2) ? "one" : "two", texts[NEXT(NT)]);
            break;
        case 3:
            snprintf(json, sizeof(json),
                     "{\"command\":\"insert\",\"path\":\"/memories/%s\",\"insert_line\":%u,"
                     "\"insert_text\":\"%s\"}",
                     p, (unsigned)NEXT(3), texts[NEXT(NT)]);
            break;
        case 4:
            snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"/memories/%s\"}", p);
            break;
        default:
            snprintf(json, sizeof(json),
                     "{\"command\":\"rename\",\"old_path\":\"/memories/%s\",\"new_path\":"
                     "\"/memories/%s\"}",
                     p, q);
        }
        same(&s, json);
#ifdef MT_TEST_REMOTE
        drop_empty_dirs(&s);
#endif
        if (step % 500 == 0)
            same_history(&s);
    }
    same_history(&s);
    stores_close(&s);
}

/* ---- expiry: last access, touch, remove-if-idle ---------------------------------------- */

typedef struct {
    const char *path;
    int64_t at;
    int found;
} access_probe;

static int probe_cb(void *payload, const char *path, uint64_t size, int64_t at, int64_t modified)
{
    access_probe *p = payload;
    (void)size;
    (void)modified;
    if (strcmp(path, p->path) == 0) {
        p->at = at;
        p->found++;
    }
    return 0;
}

static int64_t last_access(mt_store *st, const char *path)
{
    access_probe p = {path, 0, 0};
    assert_int_equal(st->idle(st, "", probe_cb, &p), 0);
    assert_int_equal(p.found, 1);
    return p.at;
}

/* A view records access only when a grain old; a removal of what is idle
 * refuses a file accessed at or after its threshold. Times are given, not
 * waited for. */
static void test_expiry(void **state)
{
    stores s;
    size_t i;
    (void)state;

    stores_open(&s, NULL);
    run(&s,
        (const char *const[]){
            "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a\\n\"}",
            "{\"command\":\"create\",\"path\":\"/memories/d/b.md\",\"file_text\":\"b\\n\"}", NULL});
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_store *st = s.mem[i]->store;
        mt_store_op op;
        int64_t a = last_access(st, "a.md"), now = mt_memory_now_ms();

        assert_true(a > now - 60000 && a <= now);
        /* Within the grain: nothing written. */
        assert_int_equal(st->touch(st, NULL, "a.md", a + 30000), 0);
        assert_int_equal(last_access(st, "a.md"), a);
        /* Past it: the view's time. */
        assert_int_equal(st->touch(st, NULL, "a.md", a + 120000), 0);
        assert_int_equal(last_access(st, "a.md"), a + 120000);
        assert_int_equal(st->touch(st, NULL, "nope.md", a), MT_ENOTFOUND);
        assert_int_equal(st->touch(st, NULL, "d", a), MT_EISDIR);
        mt_store_op_init(&op);
        op.idle_before_ms = a + 120000;
        assert_int_equal(st->remove(st, &op, "a.md"), MT_ECONFLICT);
        op.idle_before_ms = a + 10 * 60000;
        assert_int_equal(st->remove(st, &op, "d"), MT_ECONFLICT); /* a directory is no memory */
        op.idle_before_ms = a + 120001;
        assert_int_equal(st->remove(st, &op, "a.md"), 0);
        /* A rename is a write of the memory: it is accessed now. */
        {
            int64_t before = mt_memory_now_ms();
            mt_store_op r;
            mt_store_op_init(&r);
            assert_int_equal(st->rename(st, &r, "d/b.md", "c.md"), 0);
            assert_true(last_access(st, "c.md") >= before - 1);
        }
    }
    stores_close(&s);
}

typedef struct {
    mt_store *st;
    int64_t base;
    int ok;  /* touches that found the file */
    int bad; /* a touch's other outcome (asserted on the main thread: cmocka's are not
                for other threads) */
    pthread_barrier_t *go;
} viewer;

static void *view_loop(void *arg)
{
    viewer *v = arg;
    int k;

    pthread_barrier_wait(v->go);
    /* Each at a time a grain past the last, so each one writes. */
    for (k = 0; k < 40; k++) {
        int rc =
            v->st->touch(v->st, NULL, "f.md", v->base + (int64_t)(k + 2) * 2 * MT_ACCESS_GRAIN_MS);
        if (rc == 0)
            v->ok++;
        else if (rc != MT_ENOTFOUND && !v->bad)
            v->bad = rc;
    }
    return NULL;
}

/* Views race a removal of what was idle before base + a grain: either the
 * removal is refused, or it came first and no view found the file. Every
 * outcome is that of some serial order, whatever the timing. */
static void test_expiry_race(void **state)
{
    stores s;
    size_t i;
    int round;
    (void)state;

    stores_open(&s, NULL);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_store *st = s.mem[i]->store;
        for (round = 0; round < 8; round++) {
            pthread_barrier_t go;
            pthread_t t[2];
            viewer v[2];
            mt_store_op op;
            int rc, j, err;
            char *out = mt_test_call(
                s.mem[i], &err,
                "{\"command\":\"create\",\"path\":\"/memories/f.md\",\"file_text\":\"f\\n\"}");
            assert_int_equal(err, 0);
            free(out);
            pthread_barrier_init(&go, NULL, 3);
            for (j = 0; j < 2; j++) {
                v[j].st = st;
                v[j].base = last_access(st, "f.md");
                v[j].ok = 0;
                v[j].bad = 0;
                v[j].go = &go;
                assert_int_equal(pthread_create(&t[j], NULL, view_loop, &v[j]), 0);
            }
            mt_store_op_init(&op);
            op.idle_before_ms = v[0].base + MT_ACCESS_GRAIN_MS;
            pthread_barrier_wait(&go);
            if (round % 2)
                usleep(200); /* let some views go first */
            rc = st->remove(st, &op, "f.md");
            for (j = 0; j < 2; j++)
                pthread_join(t[j], NULL);
            pthread_barrier_destroy(&go);
            if (v[0].bad || v[1].bad)
                fail_msg("%s: a touch failed with %d: %s", mt_test_stores[i].name,
                         v[0].bad ? v[0].bad : v[1].bad, mt_error_last()->message);
            if (rc == 0 && v[0].ok + v[1].ok)
                fail_msg("%s: the file was removed as idle after a view found it",
                         mt_test_stores[i].name);
            if (rc == 0) {
                assert_int_equal(v[0].ok + v[1].ok, 0);
            } else {
                assert_int_equal(rc, MT_ECONFLICT);
                assert_true(v[0].ok + v[1].ok > 0);
                mt_store_op_init(&op);
                assert_int_equal(st->remove(st, &op, "f.md"), 0);
            }
        }
    }
    stores_close(&s);
}

/* What a viewing process reports to the test: its touches that found the
 * file, and the first other outcome. */
typedef struct {
    int ok, bad;
} view_report;

/* A process of its own, on a handle of its own: waits for go, then touches
 * like view_loop and reports through out. Never returns. */
static void view_process(size_t i, const char *dir, int64_t base, int go, int out)
{
    view_report r = {0, 0};
    mt_memory *m = NULL;
    char c;
    int k;

    if (mt_test_stores[i].open(&m, dir, NULL) < 0)
        r.bad = mt_error_last()->code ? mt_error_last()->code : -1;
    if (write(out, "r", 1) != 1 || read(go, &c, 1) != 0) /* go: the parent closes it */
        _exit(3);
    for (k = 0; m && k < 40; k++) {
        int rc = m->store->touch(m->store, NULL, "f.md",
                                 base + (int64_t)(k + 2) * 2 * MT_ACCESS_GRAIN_MS);
        if (rc == 0)
            r.ok++;
        else if (rc != MT_ENOTFOUND && !r.bad)
            r.bad = rc;
    }
    if (write(out, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(3);
    _exit(0);
}

/* The same race across processes, each with its own handle, connection
 * and (file store) lock file descriptors: what keeps a view and a removal
 * in one serial order must be the store's, not a handle's mutex. */
static void test_expiry_race_processes(void **state)
{
    stores s;
    size_t i;
    int round;
    (void)state;

    stores_open(&s, NULL);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        mt_store *st = s.mem[i]->store;
        int refused = 0, removed = 0;
        for (round = 0; round < 12; round++) {
            view_report r[2];
            pid_t pid[2];
            int go[2], out[2][2], rc, j, err, status;
            int64_t base;
            mt_store_op op;
            char c,
                *res = mt_test_call(
                    s.mem[i], &err,
                    "{\"command\":\"create\",\"path\":\"/memories/f.md\",\"file_text\":\"f\\n\"}");
            assert_int_equal(err, 0);
            free(res);
            base = last_access(st, "f.md");
            assert_int_equal(pipe(go), 0);
            for (j = 0; j < 2; j++) {
                assert_int_equal(pipe(out[j]), 0);
                fflush(NULL);
                pid[j] = fork();
                assert_true(pid[j] >= 0);
                if (pid[j] == 0) {
                    close(go[1]);
                    close(out[j][0]);
                    view_process(i, s.dir[i], base, go[0], out[j][1]);
                }
                close(out[j][1]);
                assert_int_equal(read(out[j][0], &c, 1), 1); /* opened, waiting */
            }
            close(go[0]);
            mt_store_op_init(&op);
            op.idle_before_ms = base + MT_ACCESS_GRAIN_MS;
            close(go[1]);
            if (round % 2)
                usleep(300); /* let some views go first */
            rc = st->remove(st, &op, "f.md");
            for (j = 0; j < 2; j++) {
                assert_int_equal(read(out[j][0], &r[j], sizeof(r[j])), (ssize_t)sizeof(r[j]));
                close(out[j][0]);
                assert_int_equal(waitpid(pid[j], &status, 0), pid[j]);
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            }
            if (r[0].bad || r[1].bad)
                fail_msg("%s: a touch in another process failed with %d", mt_test_stores[i].name,
                         r[0].bad ? r[0].bad : r[1].bad);
            if (rc == 0 && r[0].ok + r[1].ok)
                fail_msg("%s: the file was removed as idle after another process's view found it",
                         mt_test_stores[i].name);
            if (rc == 0) {
                removed++;
            } else {
                assert_int_equal(rc, MT_ECONFLICT);
                assert_true(r[0].ok + r[1].ok > 0);
                refused++;
                mt_store_op_init(&op);
                assert_int_equal(st->remove(st, &op, "f.md"), 0);
            }
        }
        /* Both orders happened, or the race was not run at all. */
        if (!refused || !removed)
            print_message("%s: %d removals refused, %d made (one order only this run)\n",
                          mt_test_stores[i].name, refused, removed);
    }
    stores_close(&s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append s to out (size bytes in all). */
static void strcat_n(char *out, size_t size, const char *s)
{
    size_t n = strlen(out), k = strlen(s);

    assert_true(n + k < size);
    memcpy(out + n, s, k + 1);
}

/* ---- search ----------------------------------------------------------------------------- */

/* The paths a search finds, sorted, one a line ("-" none): a set, since
 * ranking may differ between stores. *first: the best hit's path. */
static char *hit_set(mt_memory *mem, const char *query, char *first, size_t first_size)
{
    mt_search_options so = {NULL, 100};
    mt_search_hit *h = NULL;
    char **paths, *out;
    size_t n = 0, i, len = 2;
    int rc;

    if ((rc = mt_memory_search(&h, &n, mem, query, &so)) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    if (first)
        snprintf(first, first_size, "%s", n ? h[0].path : "-");
    paths = calloc(n + 1, sizeof(*paths));
    assert_non_null(paths);
    for (i = 0; i < n; i++) {
        paths[i] = h[i].path;
        len += strlen(h[i].path) + 1;
    }
    qsort(paths, n, sizeof(*paths), cmp_str);
    out = malloc(len);
    assert_non_null(out);
    *out = '\0';
    for (i = 0; i < n; i++) {
        strcat_n(out, len, paths[i]);
        strcat_n(out, len, "\n");
    }
    if (n == 0)
        strcat_n(out, len, "-");
    free(paths);
    mt_search_hits_free(h, n);
    return out;
}

/* Every store, encrypted ones too, finds `want` (paths one a line, sorted;
 * "-" none) for query. */
static void found(stores *s, const char *query, const char *want)
{
    size_t i;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        char *got;

        got = hit_set(s->mem[i], query, NULL, 0);
        if (strcmp(got, want) != 0)
            fail_msg("search %s on %s:\n%s\nnot\n%s", query, mt_test_stores[i].name, got, want);
        free(got);
    }
}

/* The best hit of query, on every store. */
static void best(stores *s, const char *query, const char *want)
{
    char first[300];
    size_t i;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        free(hit_set(s->mem[i], query, first, sizeof(first)));
        if (strcmp(first, want) != 0)
            fail_msg("search %s on %s: best %s, not %s", query, mt_test_stores[i].name, first,
                     want);
    }
}

/* An encrypted store ranks as the same store without encryption does by
 * BM25: the same hits in the same order, with the same scores (a search of
 * the whole store, so both count the same collection). PostgreSQL ranks by
 * cover density instead: only its hits are compared (found, above). */
static void same_ranking(stores *s, const char *query)
{
    mt_search_options so = {NULL, 100};
    size_t i, j, k;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        const char *name = mt_test_stores[i].name, *dash = strstr(name, "-crypt");
        mt_search_hit *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;

        if (!dash || strncmp(name, "postgresql", 10) == 0)
            continue;
        for (j = 0; j < MT_TEST_NSTORES; j++)
            if (strlen(mt_test_stores[j].name) == (size_t)(dash - name) &&
                strncmp(mt_test_stores[j].name, name, (size_t)(dash - name)) == 0)
                break;
        assert_true(j < MT_TEST_NSTORES);
        if (mt_memory_search(&a, &na, s->mem[j], query, &so) < 0 ||
            mt_memory_search(&b, &nb, s->mem[i], query, &so) < 0)
            fail_msg("search %s: %s", query, mt_error_last()->message);
        assert_true(na > 0);
        if (na != nb)
            fail_msg("search %s: %zu hits on %s, %zu on %s", query, na, mt_test_stores[j].name, nb,
                     name);
        for (k = 0; k < na; k++) {
            assert_string_equal(b[k].path, a[k].path);
            if (b[k].score - a[k].score > 1e-9 * a[k].score ||
                a[k].score - b[k].score > 1e-9 * a[k].score)
                fail_msg("search %s: %s scores %.17g on %s, %.17g on %s", query, a[k].path,
                         a[k].score, mt_test_stores[j].name, b[k].score, name);
        }
        mt_search_hits_free(a, na);
        mt_search_hits_free(b, nb);
    }
}

/* One corpus on every store: the same memories found, whatever the store;
 * a memory that says a word five times ranks above one that says it once;
 * the index follows creates, edits, renames and deletes between searches;
 * folding (case, accents, ё) and CJK pairs; tenants never see each other's. */
static void test_search(void **state)
{
    static const char *const corpus[] = {
        "{\"command\":\"create\",\"path\":\"/memories/once.md\",\"file_text\":\"the cache is "
        "mentioned here once among many other words\"}",
        "{\"command\":\"create\",\"path\":\"/memories/five.md\",\"file_text\":\"cache cache "
        "cache\\ncache and cache again\"}",
        "{\"command\":\"create\",\"path\":\"/memories/none.md\",\"file_text\":\"nothing "
        "relevant\"}",
        "{\"command\":\"create\",\"path\":\"/memories/intl/ja.md\",\"file_text\":\"日本語のテキスト"
        "を検索する\"}",
        "{\"command\":\"create\",\"path\":\"/memories/intl/fr.md\",\"file_text\":\"Le café crème "
        "est prêt\"}",
        "{\"command\":\"create\",\"path\":\"/memories/intl/ru.md\",\"file_text\":\"Кафе и "
        "ёлка\"}",
        "{\"command\":\"create\",\"path\":\"/memories/code/v2.md\",\"file_text\":\"release v2 "
        "of abc123, the cache build\"}",
        NULL};
    static const char *const changes[] = {
        "{\"command\":\"rename\",\"old_path\":\"/memories/five.md\",\"new_path\":\"/memories/"
        "moved/five.md\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/once.md\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/none.md\",\"old_str\":\"nothing\","
        "\"new_str\":\"a cache\"}",
        "{\"command\":\"create\",\"path\":\"/memories/new/café.md\",\"file_text\":\"cache "
        "notes\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/intl\",\"new_path\":\"/memories/"
        "lang\"}",
        "{\"command\":\"delete\",\"path\":\"/memories/code\"}",
        NULL};
    stores s;
    mt_options o;
    mt_memory *other[MT_TEST_NSTORES];
    size_t i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    run(&s, corpus);
    found(&s, "cache", "/memories/code/v2.md\n/memories/five.md\n/memories/once.md\n");
    best(&s, "cache", "/memories/five.md");
    same_ranking(&s, "cache");
    same_ranking(&s, "cache* \"cache again\"");
    same_ranking(&s, "v2");
    found(&s, "cache*", "/memories/code/v2.md\n/memories/five.md\n/memories/once.md\n");
    found(&s, "\"cache again\"", "/memories/five.md\n");
    found(&s, "\"again cache\"", "-");
    found(&s, "abc123", "/memories/code/v2.md\n");
    found(&s, "V2 release", "/memories/code/v2.md\n");
    found(&s, "nosuchword", "-");
    /* Folding: accents and case, ё as е, on both sides. */
    found(&s, "CAFÉ", "/memories/intl/fr.md\n");
    found(&s, "creme pret", "/memories/intl/fr.md\n");
    found(&s, "ЁЛКА", "/memories/intl/ru.md\n");
    found(&s, "елка кафе", "/memories/intl/ru.md\n");
    found(&s, "caf*", "/memories/intl/fr.md\n");
    /* CJK: a pair inside a run, a run as a phrase of pairs, a lone character. */
    found(&s, "検索", "/memories/intl/ja.md\n");
    found(&s, "日本語のテキスト", "/memories/intl/ja.md\n");
    found(&s, "本", "/memories/intl/ja.md\n");
#ifdef MT_TEST_REMOTE
    /* The remote store's search, at a path that is a memory: that memory
     * alone ("at or beneath path", store.h, as the SQL stores do; the file
     * store's walk and the encryption shims' take a directory only, and
     * memory_search.c asks no store for a file's). */
    for (i = 1; i < MT_TEST_NSTORES; i++) {
        mt_search_query *q = NULL;
        mt_store_hit *hits = NULL;
        size_t n = 0;
        mt_store *st = s.mem[i]->store;

        assert_int_equal(mt_search_query_parse(&q, "cache", 5), 0);
        if (st->search(st, &hits, &n, q, "five.md", 10) < 0)
            fail_msg("%s: %s", mt_test_stores[i].name, mt_error_last()->message);
        if (n != 1 || strcmp(hits[0].path, "five.md") != 0)
            fail_msg("%s: a search at five.md found %zu memories", mt_test_stores[i].name, n);
        mt_store_hits_free(hits, n);
        mt_search_query_free(q);
    }
#endif
    found(&s, "テキスト検索", "-");

    /* Changes through memtool between searches. */
    run(&s, changes);
    found(&s, "cache", "/memories/moved/five.md\n/memories/new/café.md\n/memories/none.md\n");
    best(&s, "cache", "/memories/moved/five.md");
    same_ranking(&s, "cache");
    found(&s, "nothing", "-");
    found(&s, "abc123", "-");
    found(&s, "検索", "/memories/lang/ja.md\n");
    found(&s, "café", "/memories/lang/fr.md\n"); /* words, never names */

    /* Another tenant of the same store: only its own. */
    o.tenant = "other";
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        char *out;
        int err;

        if (mt_test_stores[i].open(&other[i], s.dir[i], &o) < 0)
            fail_msg("open %s as another tenant: %s", mt_test_stores[i].name,
                     mt_error_last()->message);
        out = mt_test_call(other[i], &err,
                           "{\"command\":\"create\",\"path\":\"/memories/theirs.md\","
                           "\"file_text\":\"their cache and secretplan\"}");
        assert_int_equal(err, 0);
        free(out);
    }
    found(&s, "secretplan", "-");
    found(&s, "cache", "/memories/moved/five.md\n/memories/new/café.md\n/memories/none.md\n");
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        char *got;

        got = hit_set(other[i], "cache", NULL, 0);
        assert_string_equal(got, "/memories/theirs.md\n");
        free(got);
        got = hit_set(other[i], "検索", NULL, 0);
        assert_string_equal(got, "-");
        free(got);
    }
    for (i = 0; i < MT_TEST_NSTORES; i++)
        mt_memory_free(other[i]);
    stores_close(&s);
}

typedef struct {
    mt_memory *mem;
    int stop;
    int errors;
    int searches;
} search_racer;

static void *search_loop(void *arg)
{
    search_racer *r = arg;
    mt_search_options so = {NULL, 100};

    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        mt_search_hit *h;
        size_t n;

        if (mt_memory_search(&h, &n, r->mem, "racing", &so) < 0) {
            fprintf(stderr, "search: %s\n", mt_error_last()->message);
            r->errors++;
        } else {
            mt_search_hits_free(h, n);
        }
        __atomic_add_fetch(&r->searches, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* Each racer has finished a search (so searches ran while the writes did,
 * however slowly the machine gives the threads their turns), waiting at
 * most a minute. */
static void racers_searched(search_racer *r, size_t n)
{
    size_t k;
    int waited = 0;

    for (k = 0; k < n; k++)
        while (__atomic_load_n(&r[k].searches, __ATOMIC_ACQUIRE) == 0) {
            struct timespec ms10 = {0, 10 * 1000 * 1000};

            if (++waited > 6000)
                fail_msg("a search racer finished no search in a minute");
            nanosleep(&ms10, NULL);
        }
}

/* Searches (on the writer's handle and on another) race creates, renames
 * and deletes: none fails, and once the writes are done a search finds
 * exactly what is there. The store holds a memory before they start. */
static void test_search_race(void **state)
{
    stores s;
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
    stores_open(&s, &o);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        search_racer r[2];
        pthread_t t[2];
        mt_memory *second;
        char json[200], *out, *got;
        int k, err;

        out = mt_test_call(s.mem[i], &err,
                           "{\"command\":\"create\",\"path\":\"/memories/first.md\","
                           "\"file_text\":\"before the race\"}");
        assert_int_equal(err, 0);
        free(out);
        if (mt_test_stores[i].open(&second, s.dir[i], &o) < 0)
            fail_msg("open %s again: %s", mt_test_stores[i].name, mt_error_last()->message);
        for (k = 0; k < 2; k++) {
            memset(&r[k], 0, sizeof(r[k]));
            r[k].mem = k ? second : s.mem[i];
            assert_int_equal(pthread_create(&t[k], NULL, search_loop, &r[k]), 0);
        }
        for (k = 0; k < 45; k++) {
            snprintf(json, sizeof(json),
                     "{\"command\":\"create\",\"path\":\"/memories/r%d.md\",\"file_text\":\"racing "
                     "words %d\"}",
                     k, k);
            out = mt_test_call(s.mem[i], &err, json);
            assert_int_equal(err, 0);
            free(out);
            if (k % 3 == 0)
                snprintf(json, sizeof(json),
                         "{\"command\":\"delete\",\"path\":\"/memories/r%d.md\"}", k);
            else if (k % 3 == 1)
                snprintf(json, sizeof(json),
                         "{\"command\":\"rename\",\"old_path\":\"/memories/r%d.md\",\"new_path\":"
                         "\"/memories/moved/r%d.md\"}",
                         k, k);
            else
                continue;
            out = mt_test_call(s.mem[i], &err, json);
            assert_int_equal(err, 0);
            free(out);
        }
        racers_searched(r, 2);
        for (k = 0; k < 2; k++) {
            __atomic_store_n(&r[k].stop, 1, __ATOMIC_RELEASE);
            pthread_join(t[k], NULL);
            assert_int_equal(r[k].errors, 0);
            assert_true(r[k].searches > 0);
        }
        /* 15 left where made (k % 3 == 2), 15 moved. */
        got = hit_set(second, "racing", NULL, 0);
        {
            size_t lines = 0;
            const char *p;
            for (p = got; *p; p++)
                lines += *p == '\n';
            assert_int_equal(lines, 30);
            assert_non_null(strstr(got, "/memories/moved/r1.md\n"));
            assert_non_null(strstr(got, "/memories/r2.md\n"));
            assert_null(strstr(got, "/memories/r0.md\n"));
            assert_null(strstr(got, "/memories/r1.md\n"));
        }
        free(got);
        mt_memory_free(second);
    }
    stores_close(&s);
}

int main(void)
{
    /* A remote store (tests/remote/store_openers_remote.h) runs the tests
     * of what it has; each left out meets a difference docs/remote-store.md
     * documents, named here. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_depth),
#ifndef MT_TEST_REMOTE /* memtool's store-size, files and dirs limits: the server's hold */
        cmocka_unit_test(test_limits),
#endif
        cmocka_unit_test(test_expected),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_rename_content),
        cmocka_unit_test(test_rename_content_crash),
        cmocka_unit_test(test_random),
#ifndef MT_TEST_REMOTE /* expiry: the API keeps no last access */
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_expiry_race),
        cmocka_unit_test(test_expiry_race_processes),
#endif
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_search_race),
    };
#ifdef MT_TEST_REMOTE
    /* The tests left out above, named so that the build sees them used. */
    (void)test_limits, (void)test_expiry, (void)test_expiry_race, (void)test_expiry_race_processes;
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Migration with history, between every two stores of store_openers.h
 * (encrypted ones too, each with a key of its own; the PostgreSQL build of
 * this test adds that store): a source whose memories were created,
 * edited, renamed, deleted and redacted by two actors must arrive with
 * every version, all but the version ids the same, every content the same,
 * the deleted memory restorable; a migration stopped after some memories
 * and run again must end the same, with no version twice; a version of an
 * encrypted source that does not open fails its memory's copy alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "helpers.h"
#include "core/memory.h"
#include "crypt/crypt.h"
#include "machinery/history.h"
#include "store_openers.h"

#define ROOT "/memories/"

typedef struct {
    char dir[256];
    mt_memory *mem;
    size_t kind; /* index in mt_test_stores */
} store;

static void store_open(store *s, size_t kind, const char *actor)
{
    const char *tmp = getenv("TMPDIR");
    mt_options o;

    mt_options_init(&o);
    o.actor = actor;
    /* Every version is kept: the comparisons see all of them. */
    o.history_keep = 0;
    o.history_days = 0;
    snprintf(s->dir, sizeof(s->dir), "%s/memtool-mig-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(s->dir));
    s->kind = kind;
    if (mt_test_stores[kind].open(&s->mem, s->dir, &o) < 0)
        fail_msg("open %s: %s", mt_test_stores[kind].name, mt_error_last()->message);
}

static void store_close(store *s)
{
    char cmd[600];

    mt_memory_free(s->mem);
    s->mem = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
}

static void call_ok(mt_memory *m, const char *actor, const char *json)
{
    int err;
    char *text;

    assert_int_equal(mt_memory_set_actor(m, actor), 0);
    text = mt_test_call(m, &err, json);
    if (err)
        fail_msg("%s: %s", json, text);
    free(text);
}

/* The newest version with operation op of the memory at (or last at) path. */
static int64_t version_of(mt_memory *m, const char *path, mt_version_op op)
{
    mt_version *v = NULL;
    size_t n = 0;
    mt_log_query q;
    int64_t id = 0;

    memset(&q, 0, sizeof(q));
    q.path = path;
    q.operation = op;
    q.limit = 1;
    assert_int_equal(mt_memory_log(&v, &n, m, &q), 0);
    if (n)
        id = v[0].id;
    mt_versions_free(v, n);
    assert_true(id > 0);
    return id;
}

/*
 * The source: created, edited, renamed (a file and a directory), one
 * deleted, one with a redacted version, one whose content comes back (kept
 * once), a binary one; by alice and bob.
 */
static void fill(mt_memory *m)
{
    call_ok(m, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/notes.md\",\"file_text\":\"# Notes\\n"
            "- one\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"str_replace\",\"path\":\"/memories/notes.md\",\"old_str\":\"one\","
            "\"new_str\":\"two\"}");
    call_ok(m, "alice",
            "{\"command\":\"insert\",\"path\":\"/memories/notes.md\",\"insert_line\":2,"
            "\"insert_text\":\"- three\\n\"}");
    call_ok(
        m, "alice",
        "{\"command\":\"create\",\"path\":\"/memories/proj/todo.md\",\"file_text\":\"todo\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"rename\",\"old_path\":\"/memories/proj/todo.md\",\"new_path\":"
            "\"/memories/done/todo.md\"}");
    call_ok(m, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/tree/a/x.md\",\"file_text\":\"x\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"rename\",\"old_path\":\"/memories/tree\",\"new_path\":"
            "\"/memories/moved\"}");
    call_ok(m, "bob",
            "{\"command\":\"create\",\"path\":\"/memories/gone.md\",\"file_text\":\"bye\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"str_replace\",\"path\":\"/memories/gone.md\",\"old_str\":\"bye\","
            "\"new_str\":\"bye bye\"}");
    call_ok(m, "alice", "{\"command\":\"delete\",\"path\":\"/memories/gone.md\"}");
    call_ok(m, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/draft.md\",\"file_text\":\"draft with a "
            "name in it\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"str_replace\",\"path\":\"/memories/draft.md\",\"old_str\":\"draft "
            "with a name in it\",\"new_str\":\"clean\"}");
    assert_int_equal(mt_memory_redact(m, version_of(m, "/memories/draft.md", MT_VERSION_CREATED)),
                     0);
    call_ok(m, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/same.md\",\"file_text\":\"same\\n\"}");
    call_ok(m, "bob",
            "{\"command\":\"str_replace\",\"path\":\"/memories/same.md\",\"old_str\":\"same\","
            "\"new_str\":\"other\"}");
    call_ok(m, "alice",
            "{\"command\":\"str_replace\",\"path\":\"/memories/same.md\",\"old_str\":\"other\","
            "\"new_str\":\"same\"}");
    /* NUL bytes and all: the content is bytes. */
    call_ok(m, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/bin.dat\",\"file_text\":\"a\\u0000"
            "b\"}");
}

/* Every version of the store, by memory then oldest first (version ids
 * differ between stores, and so does the order of different memories'). */
static int by_memory(const void *a, const void *b)
{
    const mt_version *x = a, *y = b;
    int c = strcmp(x->memory_id, y->memory_id);

    if (c)
        return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void all_versions(mt_version **out, size_t *n, mt_memory *m)
{
    mt_log_query q;

    memset(&q, 0, sizeof(q));
    q.limit = 100000;
    assert_int_equal(mt_memory_log(out, n, m, &q), 0);
    qsort(*out, *n, sizeof(**out), by_memory);
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The destination holds the source's versions a (all_versions') but those
 * of memory `but` (NULL: all of them): the same but for version ids, every
 * content the same. */
static void assert_same_history_but(const mt_version *a, size_t na, mt_memory *src, mt_memory *dst,
                                    const char *what, const char *but)
{
    mt_version *b = NULL;
    size_t nb = 0, i, j = 0, left = 0;

    all_versions(&b, &nb, dst);
    for (i = 0; i < na; i++)
        left += !but || strcmp(a[i].memory_id, but) != 0;
    if (left != nb)
        fail_msg("%s: %zu versions in the source, %zu at the destination", what, left, nb);
    for (i = 0; i < na; i++) {
        const mt_version *x = &a[i], *y;
        if (but && strcmp(x->memory_id, but) == 0)
            continue;
        y = &b[j++];
        if (strcmp(x->memory_id, y->memory_id) != 0 || x->operation != y->operation ||
            !same_text(x->path, y->path) || !same_text(x->previous_path, y->previous_path) ||
            strcmp(x->actor, y->actor) != 0 || x->created_at != y->created_at ||
            strcmp(x->content_sha256, y->content_sha256) != 0 ||
            x->content_size != y->content_size || x->redacted != y->redacted)
            fail_msg("%s: version %zu differs: %s op %d %s <- %s by %s at %lld sha %.8s size "
                     "%llu redacted %d; there %s op %d %s <- %s by %s at %lld sha %.8s size %llu "
                     "redacted %d",
                     what, i, x->memory_id, x->operation, x->path ? x->path : "-",
                     x->previous_path ? x->previous_path : "-", x->actor, (long long)x->created_at,
                     x->content_sha256, (unsigned long long)x->content_size, x->redacted,
                     y->memory_id, y->operation, y->path ? y->path : "-",
                     y->previous_path ? y->previous_path : "-", y->actor, (long long)y->created_at,
                     y->content_sha256, (unsigned long long)y->content_size, y->redacted);
        if (x->operation != MT_VERSION_DELETED && !x->redacted) {
            char *ca = NULL, *cb = NULL;
            size_t la = 0, lb = 0;
            assert_int_equal(mt_memory_version_content(&ca, &la, src, x->id), 0);
            if (mt_memory_version_content(&cb, &lb, dst, y->id) < 0)
                fail_msg("%s: version %lld there: %s", what, (long long)y->id,
                         mt_error_last()->message);
            assert_int_equal(la, lb);
            assert_memory_equal(ca, cb, la);
            free(ca);
            free(cb);
        } else if (x->redacted) {
            char *c = NULL;
            size_t l = 0;
            assert_int_equal(mt_memory_version_content(&c, &l, dst, y->id), MT_ENOTFOUND);
        }
    }
    mt_versions_free(b, nb);
}

static void assert_same_history(mt_memory *src, mt_memory *dst, const char *what)
{
    mt_version *a = NULL;
    size_t na = 0;

    all_versions(&a, &na, src);
    assert_same_history_but(a, na, src, dst, what, NULL);
    mt_versions_free(a, na);
}

static void assert_same_file(mt_memory *src, mt_memory *dst, const char *path)
{
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;

    assert_int_equal(mt_memory_read(&a, &la, src, path), 0);
    if (mt_memory_read(&b, &lb, dst, path) < 0)
        fail_msg("%s at the destination: %s", path, mt_error_last()->message);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

static void assert_same_files(mt_memory *src, mt_memory *dst)
{
    static const char *const live[] = {"/memories/notes.md",     "/memories/done/todo.md",
                                       "/memories/moved/a/x.md", "/memories/draft.md",
                                       "/memories/same.md",      "/memories/bin.dat"};
    size_t i;

    for (i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        assert_same_file(src, dst, live[i]);
}

/* The deleted memory comes back at the destination from its versions there. */
static void assert_restorable(mt_memory *dst)
{
    char *data = NULL;
    size_t len = 0;
    int64_t now = 0;

    assert_int_equal(mt_memory_read(&data, &len, dst, "/memories/gone.md"), MT_ENOTFOUND);
    if (mt_memory_restore(&now, dst, version_of(dst, "/memories/gone.md", MT_VERSION_MODIFIED)) < 0)
        fail_msg("restore: %s", mt_error_last()->message);
    assert_true(now > 0);
    assert_int_equal(mt_memory_read(&data, &len, dst, "/memories/gone.md"), 0);
    assert_string_equal(data, "bye bye\n");
    free(data);
}

/* An encrypted destination keeps every version sealed for the memory it is
 * of: read beneath the encryption, no content is plaintext, and each header
 * names the version's memory. */
static int (*raw_opener(size_t kind))(mt_memory **, const char *, const mt_options *)
{
    if (strcmp(mt_test_stores[kind].name, "fs-crypt") == 0)
        return mt_test_open_fs;
    if (strcmp(mt_test_stores[kind].name, "sqlite-crypt") == 0)
        return mt_test_open_sqlite;
#ifdef MT_TEST_STORE_OPENERS_PG_H
    if (strcmp(mt_test_stores[kind].name, "postgresql-crypt") == 0)
        return mt_test_open_pg;
#endif
    return NULL;
}

static void assert_sealed(const store *dst)
{
    int (*open_raw)(mt_memory **, const char *, const mt_options *) = raw_opener(dst->kind);
    mt_version *v = NULL;
    size_t n = 0, i, sealed = 0;
    mt_memory *raw = NULL;
    mt_log_query q;

    if (!open_raw)
        return;
    /* Beneath the encryption: the store refuses an open without its key. */
    mt_crypt_record_off = 1;
    assert_int_equal(open_raw(&raw, dst->dir, NULL), 0);
    mt_crypt_record_off = 0;
    memset(&q, 0, sizeof(q));
    q.limit = 1000;
    assert_int_equal(raw->store->versions(raw->store, &v, &n, &q), 0);
    for (i = 0; i < n; i++) {
        char *data = NULL;
        size_t len = 0;
        if (v[i].operation == MT_VERSION_DELETED || v[i].redacted)
            continue;
        assert_int_equal(raw->store->version_content(raw->store, &data, &len, v[i].id), 0);
        assert_true(len >= 100);
        assert_memory_equal(data, "MTCR", 4);
        /* The header's memory id (bytes 32 to 52). */
        assert_memory_equal(data + 32, v[i].memory_id, 20);
        assert_null(memmem(data, len, "# Notes", 7));
        assert_null(memmem(data, len, "bye", 3));
        free(data);
        sealed++;
    }
    assert_true(sealed > 0);
    mt_versions_free(v, n);
    mt_memory_free(raw);
}

typedef struct {
    unsigned stop_after; /* memories copied before stopping (0: never) */
    unsigned copied;
} stopper;

static int stop_cb(void *payload, const mt_migrate_event *e)
{
    stopper *s = payload;

    if (e->kind == MT_MIGRATE_CONFLICT || e->kind == MT_MIGRATE_FAILED)
        fail_msg("%s: %s", e->path, e->message);
    if (e->kind == MT_MIGRATE_COPIED)
        s->copied++;
    return s->stop_after && s->copied >= s->stop_after;
}

static uint64_t count_versions(mt_memory *m)
{
    mt_version *v = NULL;
    size_t n = 0;

    all_versions(&v, &n, m);
    mt_versions_free(v, n);
    return n;
}

/* One pair: a full migration, then one stopped after `stop` memories and run again. */
static void pair(size_t from, size_t to, unsigned stop)
{
    store src, dst, dst2;
    mt_migrate_stats st;
    stopper sp = {0, 0};
    char what[128];
    uint64_t versions, first;

    snprintf(what, sizeof(what), "%s -> %s", mt_test_stores[from].name, mt_test_stores[to].name);
    store_open(&src, from, "alice");
    store_open(&dst, to, "migrate");
    store_open(&dst2, to, "migrate");
    fill(src.mem);
    versions = count_versions(src.mem);

    if (mt_memory_migrate(&st, src.mem, dst.mem, stop_cb, &sp) < 0)
        fail_msg("%s: %s", what, mt_error_last()->message);
    assert_true(st.history);
    assert_int_equal(st.files, 6);
    assert_int_equal(st.deleted, 1);
    assert_int_equal(st.copied, 7);
    assert_int_equal(st.versions, versions);
    assert_int_equal(st.versions_copied, versions);
    assert_int_equal(st.done_versions, versions);
    assert_int_equal(st.conflicts + st.failed + st.same, 0);
    assert_same_history(src.mem, dst.mem, what);
    assert_same_files(src.mem, dst.mem);
    assert_sealed(&dst);
    assert_restorable(dst.mem);

    /* Stopped after `stop` memories, then run again: the same end, no version twice. */
    sp.stop_after = stop;
    sp.copied = 0;
    assert_int_equal(mt_memory_migrate(&st, src.mem, dst2.mem, stop_cb, &sp), MT_ESTOPPED);
    assert_int_equal(st.copied, stop);
    assert_int_equal(count_versions(dst2.mem), st.versions_copied);
    assert_true(st.versions_copied < versions);
    first = st.versions_copied;
    sp.stop_after = 0;
    if (mt_memory_migrate(&st, src.mem, dst2.mem, stop_cb, &sp) < 0)
        fail_msg("%s, again: %s", what, mt_error_last()->message);
    assert_int_equal(st.same, stop);
    assert_int_equal(st.copied, 7 - stop);
    assert_int_equal(first + st.versions_copied, versions);
    assert_int_equal(count_versions(dst2.mem), versions);
    assert_same_history(src.mem, dst2.mem, what);
    assert_same_files(src.mem, dst2.mem);
    /* A third run finds everything there. */
    assert_int_equal(mt_memory_migrate(&st, src.mem, dst2.mem, stop_cb, &sp), 0);
    assert_int_equal(st.same, 7);
    assert_int_equal(st.versions_copied, 0);
    assert_int_equal(count_versions(dst2.mem), versions);

    store_close(&src);
    store_close(&dst);
    store_close(&dst2);
}

static void test_every_pair(void **state)
{
    size_t i, j;
    (void)state;

    for (i = 0; i < MT_TEST_NSTORES; i++)
        for (j = 0; j < MT_TEST_NSTORES; j++)
            pair(i, j, (unsigned)(1 + (i + j) % 5));
}

/* --no-history: each current memory is one new version by the destination's
 * actor; deleted memories stay behind. */
static void test_no_history(void **state)
{
    size_t j;
    (void)state;

    for (j = 0; j < MT_TEST_NSTORES; j++) {
        store src, dst;
        mt_migrate_options mo = {1};
        mt_migrate_stats st;
        stopper sp = {0, 0};
        mt_version *v = NULL;
        size_t n = 0, i;

        store_open(&src, 0, "alice");
        store_open(&dst, j, "migrate");
        fill(src.mem);
        assert_int_equal(mt_memory_migrate_with(&st, src.mem, dst.mem, &mo, stop_cb, &sp), 0);
        assert_false(st.history);
        assert_int_equal(st.copied, 6);
        assert_int_equal(st.deleted + st.versions + st.versions_copied, 0);
        assert_same_files(src.mem, dst.mem);
        all_versions(&v, &n, dst.mem);
        assert_int_equal(n, 6);
        for (i = 0; i < n; i++) {
            assert_int_equal(v[i].operation, MT_VERSION_CREATED);
            assert_string_equal(v[i].actor, "migrate");
        }
        mt_versions_free(v, n);
        store_close(&src);
        store_close(&dst);
    }
}

/* A history longer than a page of the store's versions (1,000) arrives whole. */
static void test_long_history(void **state)
{
    store src, dst;
    mt_migrate_stats st;
    stopper sp = {0, 0};
    char json[200];
    int i;
    (void)state;

    store_open(&src, 0, "alice");
    store_open(&dst, MT_TEST_NSTORES - 1, "migrate");
    call_ok(src.mem, "alice",
            "{\"command\":\"create\",\"path\":\"/memories/long.md\",\"file_text\":\"n0\"}");
    for (i = 1; i <= 1050; i++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/long.md\",\"old_str\":"
                 "\"n%d\",\"new_str\":\"n%d\"}",
                 i - 1, i);
        call_ok(src.mem, i % 2 ? "bob" : "alice", json);
    }
    assert_int_equal(mt_memory_migrate(&st, src.mem, dst.mem, stop_cb, &sp), 0);
    assert_int_equal(st.versions, 1051);
    assert_int_equal(st.versions_copied, 1051);
    assert_same_history(src.mem, dst.mem, "long");
    store_close(&src);
    store_close(&dst);
}

/* The destination's limits hold: a memory over them fails whole, named in
 * a create's words, and the rest go on. */
typedef struct {
    unsigned failed;
} failures;

static int fail_cb(void *payload, const mt_migrate_event *e)
{
    failures *f = payload;

    if (e->kind == MT_MIGRATE_FAILED) {
        if (strncmp(e->message, "Cannot create /memories/", 24) != 0 ||
            !strstr(e->message, ": the store holds 2 files, the max files limit is 2"))
            fail_msg("%s: %s", e->path, e->message);
        f->failed++;
    }
    return 0;
}

static size_t count_of(const mt_version *v, size_t n, const char *id)
{
    size_t i, c = 0;

    for (i = 0; i < n; i++)
        c += strcmp(v[i].memory_id, id) == 0;
    return c;
}

static void test_limits_hold(void **state)
{
    size_t j;
    (void)state;

    for (j = 0; j < MT_TEST_NSTORES; j++) {
        store src, dst;
        mt_migrate_stats st;
        failures f = {0};
        mt_version *v = NULL, *sv = NULL;
        size_t n = 0, sn = 0, i, memories = 0;
        mt_options o;

        store_open(&src, 0, "alice");
        fill(src.mem);
        /* The destination allows two files. */
        mt_options_init(&o);
        o.max_files = 2;
        o.history_keep = 0;
        o.history_days = 0;
        snprintf(dst.dir, sizeof(dst.dir), "%s/memtool-mig-XXXXXX",
                 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        assert_non_null(mkdtemp(dst.dir));
        dst.kind = j;
        assert_int_equal(mt_test_stores[j].open(&dst.mem, dst.dir, &o), 0);
        assert_int_equal(mt_memory_migrate(&st, src.mem, dst.mem, fail_cb, &f), 0);
        assert_int_equal(st.failed, 4);
        assert_int_equal(f.failed, 4);
        assert_int_equal(st.copied, 3); /* two files and the deleted memory */
        /* No memory arrived in part: each one there has all its versions. */
        all_versions(&v, &n, dst.mem);
        all_versions(&sv, &sn, src.mem);
        assert_int_equal(n, st.versions_copied);
        for (i = 0; i < n; i++) {
            if (i + 1 < n && strcmp(v[i].memory_id, v[i + 1].memory_id) == 0)
                continue;
            assert_int_equal(count_of(v, n, v[i].memory_id), count_of(sv, sn, v[i].memory_id));
            memories++;
        }
        assert_int_equal(memories, 3);
        mt_versions_free(v, n);
        mt_versions_free(sv, sn);
        store_close(&src);
        store_close(&dst);
    }
}

/* The store's import itself: whole or nothing, once. */
typedef struct {
    const char *const *content;
    size_t fail_at; /* 1-based index that fails; 0 none */
    unsigned asked;
} feed;

static int feed_cb(void *payload, char **out, size_t *len, size_t index)
{
    feed *f = payload;

    f->asked++;
    if (f->fail_at && index + 1 == f->fail_at)
        return mt_error_set(MT_EIO, "the source failed");
    *len = strlen(f->content[index]);
    *out = strdup(f->content[index]);
    return *out ? 0 : MT_ENOMEM;
}

static void sha_of(char out[65], const char *s)
{
    mt_hist_sha256(out, s, strlen(s));
}

static void test_import_whole_or_nothing(void **state)
{
    static const char *const content[] = {"one\n", "two\n", "", "three\n"};
    size_t j;
    (void)state;

    for (j = 0; j < MT_TEST_NSTORES; j++) {
        mt_version v[4];
        feed f = {content, 2, 0};
        mt_store_import in;
        mt_store_op op;
        store dst;
        mt_log_query q;
        mt_version *got = NULL;
        size_t n = 0, k;
        char *data = NULL;
        size_t len = 0;

        store_open(&dst, j, "migrate");
        memset(v, 0, sizeof(v));
        for (k = 0; k < 4; k++) {
            v[k].operation = k == 0 ? MT_VERSION_CREATED : MT_VERSION_MODIFIED;
            v[k].path = (char *)(k < 3 ? "a/b.md" : "c.md");
            v[k].previous_path = (char *)(k == 3 ? "a/b.md" : NULL);
            v[k].actor = (char *)(k % 2 ? "bob" : "alice");
            v[k].created_at = 1000 + (int64_t)k;
            if (k != 2)
                sha_of(v[k].content_sha256, content[k]);
            v[k].content_size = strlen(content[k]);
        }
        v[2].operation = MT_VERSION_DELETED;
        v[3].operation = MT_VERSION_CREATED;
        v[3].previous_path = NULL;
        memset(&in, 0, sizeof(in));
        in.memory_id = "mem_0123456789abcdef";
        in.versions = v;
        in.count = 4;
        in.content = feed_cb;
        in.payload = &f;
        assert_true(dst.mem->store->version >= 6);
        assert_non_null(dst.mem->store->import);

        /* The content of the second version fails: nothing is there. */
        mt_store_op_init(&op);
        op.history = 1;
        assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), MT_EIO);
        memset(&q, 0, sizeof(q));
        q.memory_id = in.memory_id;
        assert_int_equal(mt_memory_log(&got, &n, dst.mem, &q), 0);
        assert_int_equal(n, 0);
        mt_versions_free(got, 0);
        assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/c.md"), MT_ENOTFOUND);
        assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/a/b.md"), MT_ENOTFOUND);

        /* A limit refuses the file: nothing is there either. */
        f.fail_at = 0;
        mt_store_op_init(&op);
        op.history = 1;
        op.max_files = 1;
        call_ok(dst.mem, "migrate",
                "{\"command\":\"create\",\"path\":\"/memories/z\",\"file_text\":\"z\"}");
        assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), MT_ELIMIT);
        assert_int_equal(op.refused, MT_LIMIT_FILES);
        assert_int_equal(mt_memory_log(&got, &n, dst.mem, &q), 0);
        assert_int_equal(n, 0);
        mt_versions_free(got, 0);

        /* Whole: four versions, the file at the newest's path; then once only. */
        mt_store_op_init(&op);
        op.history = 1;
        assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), 0);
        assert_false(in.present);
        assert_int_equal(in.made, 4);
        assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/c.md"), 0);
        assert_string_equal(data, "three\n");
        free(data);
        q.limit = 100;
        assert_int_equal(mt_memory_log(&got, &n, dst.mem, &q), 0);
        assert_int_equal(n, 4);
        for (k = 0; k < 4; k++) {
            const mt_version *x = &got[3 - k];
            assert_int_equal(x->operation, v[k].operation);
            assert_int_equal(x->created_at, v[k].created_at);
            assert_string_equal(x->actor, v[k].actor);
            assert_string_equal(x->content_sha256, v[k].content_sha256);
        }
        mt_versions_free(got, n);
        f.asked = 0;
        assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), 0);
        assert_true(in.present);
        assert_int_equal(in.made, 0);
        assert_int_equal(f.asked, 0);
        assert_int_equal(count_versions(dst.mem), 5);
        store_close(&dst);
    }
}

/*
 * The file store makes the file and commits its history one after the
 * other: a file its history has not recorded, holding the newest version's
 * content, is what a crash between the two leaves, and the next import of
 * the memory takes it as its own; with other content, it is refused.
 */
static void test_import_takes_unrecorded_file(void **state)
{
    static const char *const content[] = {"kept\n"};
    mt_version v;
    feed f = {content, 0, 0};
    mt_store_import in;
    mt_store_op op;
    store dst;
    char path[600], *data = NULL;
    size_t len = 0;
    FILE *out;
    (void)state;

    store_open(&dst, 0, "migrate");
    assert_string_equal(mt_test_stores[0].name, "fs");
    memset(&v, 0, sizeof(v));
    v.operation = MT_VERSION_CREATED;
    v.path = (char *)"left.md";
    v.actor = (char *)"alice";
    v.created_at = 5000;
    sha_of(v.content_sha256, content[0]);
    v.content_size = strlen(content[0]);
    memset(&in, 0, sizeof(in));
    in.memory_id = "mem_00000000000000aa";
    in.versions = &v;
    in.count = 1;
    in.content = feed_cb;
    in.payload = &f;

    /* Other content there: refused, nothing recorded. */
    snprintf(path, sizeof(path), "%s/fs/left.md", dst.dir);
    assert_non_null(out = fopen(path, "w"));
    fputs("other\n", out);
    fclose(out);
    mt_store_op_init(&op);
    op.history = 1;
    assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), MT_EEXISTS);
    assert_int_equal(count_versions(dst.mem), 1); /* the file, recorded as "external" */

    /* The newest content, and no memory recorded there: taken. */
    snprintf(path, sizeof(path), "%s/fs/right.md", dst.dir);
    assert_non_null(out = fopen(path, "w"));
    fputs("kept\n", out);
    fclose(out);
    v.path = (char *)"right.md";
    assert_int_equal(dst.mem->store->import(dst.mem->store, &op, &in), 0);
    assert_false(in.present);
    assert_int_equal(in.made, 1);
    assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/right.md"), 0);
    assert_string_equal(data, "kept\n");
    free(data);
    {
        mt_version *got = NULL;
        size_t n = 0;
        mt_log_query q;
        memset(&q, 0, sizeof(q));
        q.path = "/memories/right.md";
        assert_int_equal(mt_memory_log(&got, &n, dst.mem, &q), 0);
        /* Only the version brought in: the file is that memory's, nothing "external". */
        assert_int_equal(n, 1);
        assert_string_equal(got[0].memory_id, in.memory_id);
        assert_string_equal(got[0].actor, "alice");
        assert_int_equal(got[0].created_at, 5000);
        mt_versions_free(got, n);
    }
    store_close(&dst);
}

/* A memory renamed by another process between migrate's walk and its copy
 * (here, when the plan is told: after the walk, before any copy) is found
 * where it is now and copied there: with history by its id, without it by
 * the walk again. */
typedef struct {
    mt_memory *mover; /* another handle on the source */
    unsigned moved;
} mover;

static int move_cb(void *payload, const mt_migrate_event *e)
{
    mover *mv = payload;

    if (e->kind == MT_MIGRATE_CONFLICT || e->kind == MT_MIGRATE_FAILED)
        fail_msg("%s: %s", e->path, e->message);
    if (e->kind == MT_MIGRATE_PLAN) {
        call_ok(mv->mover, "bob",
                "{\"command\":\"rename\",\"old_path\":\"/memories/notes.md\",\"new_path\":"
                "\"/memories/later/notes.md\"}");
        mv->moved++;
    }
    assert_true(e->stats->done_files <= e->stats->files);
    return 0;
}

static void test_moved_during_run(void **state)
{
    size_t k;
    int no_history;
    (void)state;

    for (k = 0; k < MT_TEST_NSTORES; k++)
        for (no_history = 0; no_history <= 1; no_history++) {
            store src, dst;
            mt_migrate_options mo = {no_history};
            mt_migrate_stats st;
            mover mv = {NULL, 0};
            char *data = NULL;
            size_t len = 0;
            mt_options o;

            store_open(&src, k, "alice");
            store_open(&dst, k, "migrate");
            fill(src.mem);
            mt_options_init(&o);
            o.history_keep = 0;
            o.history_days = 0;
            if (mt_test_stores[k].open(&mv.mover, src.dir, &o) < 0)
                fail_msg("open %s: %s", mt_test_stores[k].name, mt_error_last()->message);
            if (mt_memory_migrate_with(&st, src.mem, dst.mem, &mo, move_cb, &mv) < 0)
                fail_msg("%s: %s", mt_test_stores[k].name, mt_error_last()->message);
            assert_int_equal(mv.moved, 1);
            assert_int_equal(st.failed + st.conflicts + st.same, 0);
            /* Counted once, where it is now. */
            assert_int_equal(st.files, 6);
            assert_int_equal(st.done_files, 6);
            assert_int_equal(st.copied, no_history ? 6 : 7);
            assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/notes.md"),
                             MT_ENOTFOUND);
            assert_same_file(src.mem, dst.mem, "/memories/later/notes.md");
            if (!no_history) {
                assert_int_equal(st.done_versions, st.versions);
                assert_int_equal(st.versions_copied, count_versions(src.mem));
                assert_same_history(src.mem, dst.mem, mt_test_stores[k].name);
            }
            mt_memory_free(mv.mover);
            store_close(&src);
            store_close(&dst);
        }
}

/* A file that is gone every time it is looked for (a walk that names one
 * that is never there): after a bounded number of walks it is a failure
 * that names it and says to run migrate again, never silence. */
static int (*real_walk)(mt_store *, const char *, mt_walk_cb, void *);
static unsigned ghost_walks;

static int ghost_walk(mt_store *st, const char *path, mt_walk_cb cb, void *payload)
{
    int rc = real_walk(st, path, cb, payload);

    ghost_walks++;
    return rc < 0 ? rc : cb(payload, "ghost.md", MT_NODE_FILE, 5);
}

/* What a run told: its failures (the last one's path and words), copies and
 * memories found there already; a conflict fails the test. */
typedef struct {
    unsigned failed, copied, same;
    char path[128];
    char message[1024];
} failed_seen;

static int failed_cb(void *payload, const mt_migrate_event *e)
{
    failed_seen *d = payload;

    if (e->kind == MT_MIGRATE_CONFLICT)
        fail_msg("%s: %s", e->path, e->message);
    if (e->kind == MT_MIGRATE_FAILED) {
        snprintf(d->path, sizeof(d->path), "%s", e->path ? e->path : "(none)");
        snprintf(d->message, sizeof(d->message), "%s", e->message ? e->message : "(none)");
        d->failed++;
    }
    d->copied += e->kind == MT_MIGRATE_COPIED;
    d->same += e->kind == MT_MIGRATE_SAME;
    return 0;
}

static void test_gone_each_walk(void **state)
{
    size_t k;
    int no_history;
    (void)state;

    for (k = 0; k < MT_TEST_NSTORES; k++)
        for (no_history = 0; no_history <= 1; no_history++) {
            store src, dst;
            mt_migrate_options mo = {no_history};
            mt_migrate_stats st;
            failed_seen g;

            memset(&g, 0, sizeof(g));
            store_open(&src, k, "alice");
            store_open(&dst, k, "migrate");
            fill(src.mem);
            real_walk = src.mem->store->walk;
            src.mem->store->walk = ghost_walk;
            ghost_walks = 0;
            assert_int_equal(mt_memory_migrate_with(&st, src.mem, dst.mem, &mo, failed_cb, &g), 0);
            src.mem->store->walk = real_walk;
            assert_true(ghost_walks > 1 && ghost_walks <= 4);
            assert_int_equal(g.failed, 1);
            assert_int_equal(st.failed, 1);
            assert_string_equal(g.path, "/memories/ghost.md");
            assert_non_null(strstr(g.message, "run migrate again"));
            /* Everything else arrived, each told once. */
            assert_int_equal(st.copied, no_history ? 6 : 7);
            assert_int_equal(st.same + st.conflicts, 0);
            assert_int_equal(st.files, 7);
            assert_int_equal(st.done_files, 7);
            assert_same_files(src.mem, dst.mem);
            store_close(&src);
            store_close(&dst);
        }
}

/*
 * A version of an encrypted source that does not open (its sealed content
 * damaged beneath the store) fails its memory's copy alone, named with the
 * reason: the others arrive with their whole history, nothing of that
 * memory arrives, and a second run fails it again and copies nothing twice.
 */

/* The history database beneath an encrypted store of mt_test_stores: its
 * versions and contents tables name a version's sealed content by sha256. */
static void history_db(char *out, size_t size, const store *s)
{
    if (strcmp(mt_test_stores[s->kind].name, "fs-crypt") == 0)
        snprintf(out, size, "%s/fs/.memtool/history.db", s->dir);
    else if (strcmp(mt_test_stores[s->kind].name, "sqlite-crypt") == 0)
        snprintf(out, size, "%s/store.sqlite", s->dir);
    else
        fail_msg("%s: not an encrypted store", mt_test_stores[s->kind].name);
}

/* sql run with ?1 the blob data (when there is one), ?2 a and ?3 b. */
static void exec_bound(sqlite3 *db, const char *sql, const void *data, int len, const char *a,
                       const char *b)
{
    sqlite3_stmt *q;

    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (data)
        sqlite3_bind_blob(q, 1, data, len, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, a, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, b, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(q);
}

#ifdef MT_TEST_STORE_OPENERS_PG_H
/* A statement run as the cluster's superuser (past the tables' row
 * security); text parameters unless formats says otherwise, binary results. */
static PGresult *pg_run(PGconn *c, ExecStatusType want, const char *sql, int n,
                        const char *const *values, const int *lengths, const int *formats)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, values, lengths, formats, 1);

    if (PQresultStatus(r) != want)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    return r;
}

/* The rows a statement changed, which must be one. */
static void pg_one(PGconn *c, const char *sql, int n, const char *const *values, const int *lengths,
                   const int *formats)
{
    PGresult *r = pg_run(c, PGRES_COMMAND_OK, sql, n, values, lengths, formats);

    assert_string_equal(PQcmdTuples(r), "1");
    PQclear(r);
}

/* damage_version's damage done to the PostgreSQL store's tables, through
 * libpq as the superuser, in the tenant mt_test_pg_store named for s. */
static void damage_version_pg(const store *s, int64_t id, int rehash)
{
    const char *admin = getenv("MEMTOOL_TEST_PG_ADMIN"), *base = strrchr(s->dir, '/');
    char tenant[300], ids[24], sha[65], now[65];
    unsigned char *data;
    PGconn *c;
    PGresult *r;
    int len;

    if (!admin)
        fail_msg("MEMTOOL_TEST_PG_ADMIN is not set: run this test through scripts/with-pg.sh");
    snprintf(tenant, sizeof(tenant), "t-%s", base ? base + 1 : s->dir);
    snprintf(ids, sizeof(ids), "%lld", (long long)id);
    c = PQconnectdb(admin);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connecting as the superuser: %s", PQerrorMessage(c));
    {
        const char *v[2] = {tenant, ids};

        r = pg_run(c, PGRES_TUPLES_OK,
                   "SELECT sha256 FROM memtool.versions WHERE tenant = $1 AND id = $2::int8", 2, v,
                   NULL, NULL);
        assert_int_equal(PQntuples(r), 1);
        assert_int_equal(PQgetlength(r, 0, 0), 64);
        memcpy(sha, PQgetvalue(r, 0, 0), 64);
        sha[64] = '\0';
        PQclear(r);
    }
    {
        const char *v[2] = {tenant, sha};

        r = pg_run(c, PGRES_TUPLES_OK,
                   "SELECT data FROM memtool.contents WHERE tenant = $1 AND sha256 = $2", 2, v,
                   NULL, NULL);
        assert_int_equal(PQntuples(r), 1);
        len = PQgetlength(r, 0, 0);
        assert_true(len >= 100);
        assert_non_null(data = malloc((size_t)len));
        memcpy(data, PQgetvalue(r, 0, 0), (size_t)len);
        PQclear(r);
    }
    data[len - 1] ^= 0x01;
    mt_hist_sha256(now, (const char *)data, (size_t)len);
    {
        const char *v[4] = {(const char *)data, rehash ? now : sha, tenant, sha};
        const int lengths[4] = {len, 0, 0, 0}, formats[4] = {1, 0, 0, 0};

        pg_one(c,
               "UPDATE memtool.contents SET data = $1, sha256 = $2 WHERE tenant = $3 AND "
               "sha256 = $4",
               4, v, lengths, formats);
    }
    if (rehash) {
        /* Only this version holds it (each sealing has a nonce of its own). */
        const char *v[3] = {now, tenant, sha};

        pg_one(c, "UPDATE memtool.versions SET sha256 = $1 WHERE tenant = $2 AND sha256 = $3", 3, v,
               NULL, NULL);
        pg_one(c, "UPDATE memtool.content_refs SET sha256 = $1 WHERE tenant = $2 AND sha256 = $3",
               3, v, NULL, NULL);
    }
    free(data);
    PQfinish(c);
}
#endif

/*
 * Flip the last byte (in the authentication tag) of version id's sealed
 * content. As the disk would damage it: the history's own SHA-256 of the
 * content no longer matches. Or, rehash, with the history's SHA-256s made
 * to match, so that only the decryption finds it.
 */
static void damage_version(const store *s, int64_t id, int rehash)
{
    char path[600], sha[65], now[65];
    sqlite3 *db;
    sqlite3_stmt *q;
    unsigned char *data;
    int len;

#ifdef MT_TEST_STORE_OPENERS_PG_H
    if (strcmp(mt_test_stores[s->kind].name, "postgresql-crypt") == 0) {
        damage_version_pg(s, id, rehash);
        return;
    }
#endif
    history_db(path, sizeof(path), s);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT sha256 FROM versions WHERE id = ?", -1, &q, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(q, 1, id);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    snprintf(sha, sizeof(sha), "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    assert_int_equal(strlen(sha), 64);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT data FROM contents WHERE sha256 = ?", -1, &q, NULL),
        SQLITE_OK);
    sqlite3_bind_text(q, 1, sha, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    len = sqlite3_column_bytes(q, 0);
    assert_true(len >= 100);
    assert_non_null(data = malloc((size_t)len));
    memcpy(data, sqlite3_column_blob(q, 0), (size_t)len);
    sqlite3_finalize(q);
    data[len - 1] ^= 0x01;
    mt_hist_sha256(now, (const char *)data, (size_t)len);
    exec_bound(db, "UPDATE contents SET data = ?1, sha256 = ?2 WHERE sha256 = ?3", data, len,
               rehash ? now : sha, sha);
    assert_int_equal(sqlite3_changes(db), 1);
    if (rehash) {
        /* Only this version holds it (each sealing has a nonce of its own). */
        exec_bound(db, "UPDATE versions SET sha256 = ?2 WHERE sha256 = ?3", NULL, 0, now, sha);
        assert_int_equal(sqlite3_changes(db), 1);
        exec_bound(db, "UPDATE content_refs SET sha256 = ?2 WHERE sha256 = ?3", NULL, 0, now, sha);
        assert_int_equal(sqlite3_changes(db), 1);
    }
    free(data);
    sqlite3_close(db);
}

/* The versions of memory id in m. */
static size_t versions_of(mt_memory *m, const char *id)
{
    mt_version *v = NULL;
    size_t n = 0, c;

    all_versions(&v, &n, m);
    c = count_of(v, n, id);
    mt_versions_free(v, n);
    return c;
}

static void damaged(size_t from, size_t to, int rehash)
{
    static const char *const names[] = {"a", "b", "c"};
    store src, dst;
    mt_migrate_stats st;
    failed_seen d;
    mt_version v, *want = NULL;
    size_t nwant = 0;
    size_t i;
    char json[256], what[128], id[24], *data = NULL;
    size_t len = 0;
    int64_t created;
    mt_options o;
    int run;

    snprintf(what, sizeof(what), "damaged%s %s -> %s", rehash ? " (rehashed)" : "",
             mt_test_stores[from].name, mt_test_stores[to].name);
    store_open(&src, from, "alice");
    store_open(&dst, to, "migrate");
    /* Three memories of three versions each. */
    for (i = 0; i < 3; i++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/%s.md\",\"file_text\":\"%s0\"}",
                 names[i], names[i]);
        call_ok(src.mem, "alice", json);
        for (run = 1; run < 3; run++) {
            snprintf(json, sizeof(json),
                     "{\"command\":\"str_replace\",\"path\":\"/memories/%s.md\",\"old_str\":"
                     "\"%s%d\",\"new_str\":\"%s%d\"}",
                     names[i], names[i], run - 1, names[i], run);
            call_ok(src.mem, "bob", json);
        }
    }
    /* The source's history as it was: listing it now fails at the damage
     * the history itself finds. */
    all_versions(&want, &nwant, src.mem);
    assert_int_equal(nwant, 9);
    /* b.md's first version: not the content its file holds now. */
    created = version_of(src.mem, "/memories/b.md", MT_VERSION_CREATED);
    assert_int_equal(mt_memory_version(&v, src.mem, created), 0);
    snprintf(id, sizeof(id), "%s", v.memory_id);
    mt_version_dispose(&v);
    mt_memory_free(src.mem);
    damage_version(&src, created, rehash);
    mt_options_init(&o);
    o.history_keep = 0;
    o.history_days = 0;
    if (mt_test_stores[from].open(&src.mem, src.dir, &o) < 0)
        fail_msg("%s: open again: %s", what, mt_error_last()->message);
    /* The damage is that version's alone: the file itself still reads. */
    assert_int_equal(mt_memory_read(&data, &len, src.mem, "/memories/b.md"), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(data, "b2", 2);
    free(data);
    if (mt_memory_version_content(&data, &len, src.mem, created) != (rehash ? MT_ECRYPT : MT_EIO))
        fail_msg("%s: version %lld: %d %s", what, (long long)created, mt_error_last()->code,
                 mt_error_last()->message);

    for (run = 0; run < 2; run++) {
        memset(&d, 0, sizeof(d));
        /* Not an error that stops the run: the stats and the events tell it. */
        if (mt_memory_migrate(&st, src.mem, dst.mem, failed_cb, &d) < 0)
            fail_msg("%s: run %d: %s", what, run + 1, mt_error_last()->message);
        assert_true(st.history);
        assert_int_equal(d.failed, 1);
        assert_int_equal(st.failed, 1);
        assert_string_equal(d.path, "/memories/b.md");
        /* Why: the decryption's integrity check, naming the memory; or the
         * history's own check of the content it keeps. */
        if (strncmp(d.message, "its history could not be read: ", 31) != 0 ||
            (rehash ? !strstr(d.message, "failed its integrity check") || !strstr(d.message, id)
                    : !strstr(d.message, "is damaged (its SHA-256 does not match)")))
            fail_msg("%s: run %d: b.md failed for another reason: %s", what, run + 1, d.message);
        assert_int_equal(st.conflicts, 0);
        assert_int_equal(st.files, 3);
        assert_int_equal(st.versions, 9);
        /* The first run copies the two others whole; the second finds them there. */
        assert_int_equal(st.copied, run ? 0 : 2);
        assert_int_equal(d.copied, st.copied);
        assert_int_equal(st.same, run ? 2 : 0);
        assert_int_equal(d.same, st.same);
        assert_int_equal(st.versions_copied, run ? 0 : 6);
        /* Nothing of b.md arrived, and no version of the others is there twice. */
        assert_int_equal(mt_memory_read(&data, &len, dst.mem, "/memories/b.md"), MT_ENOTFOUND);
        assert_int_equal(versions_of(dst.mem, id), 0);
        assert_int_equal(count_versions(dst.mem), 6);
        assert_same_history_but(want, nwant, src.mem, dst.mem, what, id);
        assert_same_file(src.mem, dst.mem, "/memories/a.md");
        assert_same_file(src.mem, dst.mem, "/memories/c.md");
    }
    mt_versions_free(want, nwant);
    store_close(&src);
    store_close(&dst);
}

static void test_damaged_version(void **state)
{
    size_t i, j, pairs = 0;
    (void)state;

    for (i = 0; i < MT_TEST_NSTORES; i++)
        for (j = 0; j < MT_TEST_NSTORES; j++)
            if (raw_opener(i) && !strstr(mt_test_stores[j].name, "crypt")) {
                damaged(i, j, 0);
                damaged(i, j, 1);
                pairs++;
            }
    /* Every list of stores has an encrypted one to damage: none run would
     * pass having tested nothing. */
    assert_true(pairs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pair),
        cmocka_unit_test(test_no_history),
        cmocka_unit_test(test_limits_hold),
        cmocka_unit_test(test_long_history),
        cmocka_unit_test(test_import_whole_or_nothing),
        cmocka_unit_test(test_import_takes_unrecorded_file),
        cmocka_unit_test(test_moved_during_run),
        cmocka_unit_test(test_gone_each_walk),
        cmocka_unit_test(test_damaged_version),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Rekey on every encrypted store of store_openers.h (the PostgreSQL one too,
 * in test_rekey_pg): files and every version of the history re-encrypted,
 * resumable, the last accesses kept, and what cannot be read named and left
 * while the rest goes on.
 *
 * The encrypted openers read the key at DIR/key: a store is opened with
 * another key by putting that key there. The store without encryption of
 * the same name (without "-crypt") opens the same store underneath.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "core/memory.h"
#include "crypt/crypt.h"
#include "store_openers.h"

typedef struct {
    const mt_test_store_opener *crypt, *plain;
    char dir[256];
    char key[3][300]; /* k1 (the first), k2 (the new), k3 (another) */
} scratch;

static void copy_file(const char *from, const char *to)
{
    char buf[256];
    ssize_t n;
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    assert_true(in >= 0 && out >= 0);
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
}

static void scratch_init(scratch *s, size_t i)
{
    char name[64], path[300];
    mt_crypt_key *k;
    size_t j;
    int n;

    s->crypt = &mt_test_stores[i];
    s->plain = NULL;
    n = (int)(strstr(s->crypt->name, "-crypt") - s->crypt->name);
    snprintf(name, sizeof(name), "%.*s", n, s->crypt->name);
    for (j = 0; j < MT_TEST_NSTORES; j++)
        if (strcmp(mt_test_stores[j].name, name) == 0)
            s->plain = &mt_test_stores[j];
    assert_non_null(s->plain);
    mt_test_scratch_make(s->dir, sizeof(s->dir), "rekey");
    /* The key the openers make and read. */
    assert_int_equal(mt_test_crypt_key(&k, s->dir), 0);
    mt_crypt_key_free(k);
    snprintf(path, sizeof(path), "%s/key", s->dir);
    for (j = 0; j < 3; j++)
        snprintf(s->key[j], sizeof(s->key[j]), "%s/k%zu", s->dir, j + 1);
    copy_file(path, s->key[0]);
    assert_int_equal(mt_crypt_key_generate_file(s->key[1]), 0);
    assert_int_equal(mt_crypt_key_generate_file(s->key[2]), 0);
}

static void scratch_free(scratch *s)
{
    assert_int_equal(mt_test_scratch_remove(s->dir), 0);
}

/* The store, encrypted with key k (0, 1, 2: k1, k2, k3). */
/* The store, encrypted with the key in the file key_path. */
static mt_memory *open_with_key(scratch *s, const char *key_path, const mt_options *opts)
{
    char path[300];
    mt_memory *m = NULL;

    snprintf(path, sizeof(path), "%s/key", s->dir);
    copy_file(key_path, path);
    if (s->crypt->open(&m, s->dir, opts) < 0)
        fail_msg("open %s: %s", s->crypt->name, mt_error_last()->message);
    return m;
}

static mt_memory *open_with_options(scratch *s, int k, const mt_options *opts)
{
    return open_with_key(s, s->key[k], opts);
}

static mt_memory *open_with(scratch *s, int k)
{
    return open_with_options(s, k, NULL);
}

static mt_memory *open_plain(scratch *s)
{
    mt_memory *m = NULL;

    /* Beneath the encryption: the store refuses an open without its key. */
    mt_crypt_record_off = 1;
    if (s->plain->open(&m, s->dir, NULL) < 0)
        fail_msg("open %s: %s", s->plain->name, mt_error_last()->message);
    mt_crypt_record_off = 0;
    return m;
}

/* The store, writing with the key in key_path: a process with another key
 * than the store's, which it reads too (the store opens only with a key
 * that reads what its record names). */
static mt_memory *open_writing_with(scratch *s, const char *key_path)
{
    mt_memory *m;

    mt_test_also_key = mt_test_key_load(s->key[0]);
    m = open_with_key(s, key_path, NULL);
    mt_crypt_key_free(mt_test_also_key);
    mt_test_also_key = NULL;
    return m;
}

static mt_crypt_key *key_of(scratch *s, int k)
{
    return mt_test_key_load(s->key[k]);
}

/* Every version of the store (newest first). */
static mt_version *all_versions(mt_memory *m, size_t *n)
{
    mt_log_query q;
    mt_version *v = NULL;

    memset(&q, 0, sizeof(q));
    q.limit = 1000;
    if (mt_memory_log(&v, n, m, &q) < 0)
        fail_msg("log: %s", mt_error_last()->message);
    return v;
}

/* The id of the n-th oldest version of the memory at path (1 the first). */
static int64_t version_of(mt_memory *m, const char *path, size_t nth)
{
    mt_log_query q;
    mt_version *v = NULL;
    size_t n = 0;
    int64_t id;

    memset(&q, 0, sizeof(q));
    q.path = path;
    assert_int_equal(mt_memory_log(&v, &n, m, &q), 0);
    assert_true(nth <= n);
    id = v[n - nth].id;
    mt_versions_free(v, n);
    return id;
}

/* The content of every version that has one, by id. */
typedef struct {
    int64_t id;
    char *text;
} kept;

typedef struct {
    kept k[64];
    size_t n;
} contents;

static void contents_take(contents *c, mt_memory *m)
{
    mt_version *v;
    size_t n, i, len;

    c->n = 0;
    v = all_versions(m, &n);
    for (i = 0; i < n; i++) {
        if (v[i].redacted || !v[i].content_sha256[0])
            continue;
        assert_true(c->n < 64);
        c->k[c->n].id = v[i].id;
        if (mt_memory_version_content(&c->k[c->n].text, &len, m, v[i].id) < 0)
            fail_msg("version %lld: %s", (long long)v[i].id, mt_error_last()->message);
        c->n++;
    }
    mt_versions_free(v, n);
}

/* Each still reads, to the byte, with m's key. */
static void contents_check(const contents *c, mt_memory *m)
{
    size_t i, len;
    char *got;

    for (i = 0; i < c->n; i++) {
        if (mt_memory_version_content(&got, &len, m, c->k[i].id) < 0)
            fail_msg("version %lld: %s", (long long)c->k[i].id, mt_error_last()->message);
        assert_string_equal(got, c->k[i].text);
        free(got);
    }
}

/* Leave the version id out of c. */
static void contents_forget(contents *c, int64_t id)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        if (c->k[i].id == id) {
            free(c->k[i].text);
            c->k[i] = c->k[--c->n];
            return;
        }
    fail_msg("version %lld was not taken", (long long)id);
}

static void contents_free(contents *c)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        free(c->k[i].text);
    c->n = 0;
}

/* Last accesses, as gc sees them (a dry run with everything idle). */
typedef struct {
    char path[8][64];
    int64_t at[8];
    size_t n;
} accesses;

static int on_gc(void *payload, const mt_gc_event *e)
{
    accesses *a = payload;

    if (e->kind == MT_GC_EXPIRED && a->n < 8) {
        snprintf(a->path[a->n], sizeof(a->path[a->n]), "%s", e->path);
        a->at[a->n++] = e->last_access_ms;
    }
    return 0;
}

static void accesses_take(accesses *a, mt_memory *m)
{
    mt_gc_options o;
    mt_gc_stats st;

    memset(a, 0, sizeof(*a));
    memset(&o, 0, sizeof(o));
    o.idle_ms = MT_GC_MIN_IDLE_MS;
    o.dry_run = 1;
    o.now_ms = (int64_t)time(NULL) * 1000 + 86400000;
    if (mt_memory_gc(&st, m, &o, on_gc, a) < 0)
        fail_msg("gc: %s", mt_error_last()->message);
}

/* Last changes of content, as stats sees them. */
static void modified_take(int64_t out[8], size_t *n, mt_memory *m)
{
    mt_stats st;
    size_t i;

    assert_int_equal(mt_memory_stats(&st, m), 0);
    *n = st.noldest;
    for (i = 0; i < st.noldest && i < 8; i++)
        out[i] = st.oldest[i].modified_ms;
    mt_stats_dispose(&st);
}

static int stop_at_two(void *payload, const mt_rekey_event *e)
{
    (void)payload;
    return e->kind == MT_REKEY_FILE && e->done == 2;
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};

    nanosleep(&ts, NULL);
}

/* Several memories with histories (one deleted, one version redacted),
 * rekeyed in two runs; then the new key alone reads every version, and
 * no memory looks used. */
static void rekey_all(scratch *s)
{
    mt_memory *m;
    mt_crypt_key *k2 = key_of(s, 1);
    mt_rekey_result r;
    mt_crypt_status st;
    contents before;
    accesses a1, a2;
    int64_t mod1[8], mod2[8], id;
    size_t nmod1, nmod2, i, n, nversions;
    mt_version *v;
    char *data;

    m = open_with(s, 0);
    mt_test_ok(m,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a one\\n\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"one\","
                  "\"new_str\":\"two\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"two\","
                  "\"new_str\":\"three\"}");
    mt_test_ok(m,
               "{\"command\":\"create\",\"path\":\"/memories/d/b.md\",\"file_text\":\"b one\\n\"}");
    mt_test_ok(m, "{\"command\":\"insert\",\"path\":\"/memories/d/b.md\",\"insert_line\":1,"
                  "\"insert_text\":\"b two\"}");
    mt_test_ok(
        m, "{\"command\":\"create\",\"path\":\"/memories/gone.md\",\"file_text\":\"g one\\n\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/gone.md\",\"old_str\":\"one\","
                  "\"new_str\":\"two\"}");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/gone.md\"}");
    mt_test_ok(
        m, "{\"command\":\"create\",\"path\":\"/memories/red.md\",\"file_text\":\"secret one\"}");
    mt_test_ok(m,
               "{\"command\":\"str_replace\",\"path\":\"/memories/red.md\",\"old_str\":\"secret\","
               "\"new_str\":\"public\"}");
    assert_int_equal(mt_memory_redact(m, version_of(m, "/memories/red.md", 1)), 0);
    contents_take(&before, m);
    assert_int_equal(before.n, 8);
    accesses_take(&a1, m);
    assert_int_equal(a1.n, 3);
    modified_take(mod1, &nmod1, m);
    v = all_versions(m, &n);
    nversions = n;
    mt_versions_free(v, n);
    /* A rekey that set the times to now would be seen. */
    pause_ms(30);

    /* Interrupted after two files. */
    assert_int_equal(mt_memory_rekey(&r, m, k2, stop_at_two, NULL), MT_ESTOPPED);
    assert_int_equal(r.files, 2);
    assert_int_equal(r.versions, 0);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);

    /* Run again, with the old key alone: only what is left. */
    m = open_with(s, 0);
    if (mt_memory_rekey(&r, m, k2, NULL, NULL) < 0)
        fail_msg("rekey: %s", mt_error_last()->message);
    assert_int_equal(r.files, 1);
    assert_int_equal(r.files_kept, 2);
    assert_int_equal(r.files_failed + r.versions_failed, 0);
    assert_int_equal(r.nfailures, 0);
    /* The 8 versions with content: 3 of them are the memories' current
     * content, which took the new bytes with their files (no version is
     * made: a re-encryption is no change of content); redacted and deleted
     * ones have none. */
    assert_int_equal(r.versions, 5);
    assert_int_equal(r.versions_kept, 3 + 2); /* the 3 current, 1 redacted, 1 deletion */
    mt_rekey_result_dispose(&r);

    /* Nothing looks used: the same last accesses and changes. */
    accesses_take(&a2, m);
    assert_int_equal(a2.n, a1.n);
    for (i = 0; i < a1.n; i++) {
        assert_string_equal(a2.path[i], a1.path[i]);
        assert_int_equal(a2.at[i], a1.at[i]);
    }
    modified_take(mod2, &nmod2, m);
    assert_int_equal(nmod2, nmod1);
    for (i = 0; i < nmod1; i++)
        assert_int_equal(mod2[i], mod1[i]);
    mt_memory_free(m);

    /* The new key alone reads every version, and the log, and restores. */
    m = open_with(s, 1);
    contents_check(&before, m);
    v = all_versions(m, &n);
    /* No version was added, and none is the rekey's. */
    assert_int_equal(n, 3 + 2 + 3 + 2);
    assert_int_equal(n, nversions);
    for (i = 0; i < n; i++)
        assert_string_not_equal(v[i].actor, "rekey");
    mt_versions_free(v, n);
    assert_int_equal(mt_memory_crypt_status(&st, m), 0);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.files, 3);
    assert_int_equal(st.keys[0].files, 3);
    assert_int_equal(st.versions, 8);
    assert_int_equal(st.keys[0].versions, 8);
    assert_int_equal(st.versions_plain, 0);
    mt_crypt_status_dispose(&st);
    assert_int_equal(mt_memory_restore(&id, m, version_of(m, "/memories/gone.md", 1)), 0);
    assert_int_equal(mt_memory_read(&data, &n, m, "/memories/gone.md"), 0);
    assert_string_equal(data, "g one\n");
    free(data);
    mt_memory_free(m);

    /* A third run finds nothing to do. */
    m = open_with(s, 1);
    assert_int_equal(mt_memory_rekey(&r, m, k2, NULL, NULL), 0);
    assert_int_equal(r.files + r.versions, 0);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    contents_free(&before);
    mt_crypt_key_free(k2);
}

/* Flip a byte of the ciphertext: the file fails its integrity check. */
static int damage(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    (void)payload;
    if (!(*out = malloc(len)))
        return MT_ENOMEM;
    memcpy(*out, data, len);
    (*out)[len - 1] ^= 0x20;
    *out_len = len;
    return 0;
}

static const mt_rekey_failure *failure_of(const mt_rekey_result *r, mt_rekey_kind kind,
                                          const char *path, int64_t version)
{
    size_t i;

    for (i = 0; i < r->nfailures; i++)
        if (r->failures[i].kind == kind &&
            (kind == MT_REKEY_FILE ? strcmp(r->failures[i].path, path) == 0
                                   : r->failures[i].version == version))
            return &r->failures[i];
    fail_msg("no failure named %s (version %lld)", path ? path : "", (long long)version);
    return NULL;
}

typedef struct {
    unsigned files_failed, versions_failed;
} seen_events;

static int count_failed(void *payload, const mt_rekey_event *e)
{
    seen_events *s = payload;

    if (e->outcome < 0) {
        assert_non_null(e->message);
        (*(e->kind == MT_REKEY_FILE ? &s->files_failed : &s->versions_failed))++;
    }
    return 0;
}

/* A file under another key, a damaged file and a damaged version: each
 * named, the rest re-encrypted, the key not switched; once they are dealt
 * with, a run again completes. */
static void rekey_failures(scratch *s)
{
    mt_memory *m, *plain;
    mt_crypt_key *k2 = key_of(s, 1);
    mt_rekey_result r;
    mt_store_op op;
    seen_events seen = {0, 0};
    contents good;
    int64_t bad_version, third_v1, third_v2, damaged_v2;
    mt_version *v;
    char *data;
    size_t len, i, n;

    m = open_with(s, 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/ok1.md\",\"file_text\":\"one\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/ok1.md\",\"old_str\":\"one\","
                  "\"new_str\":\"one!\"}");
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/ok2.md\",\"file_text\":\"two\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/ok2.md\",\"old_str\":\"two\","
                  "\"new_str\":\"two!\"}");
    mt_test_ok(m,
               "{\"command\":\"create\",\"path\":\"/memories/damaged.md\",\"file_text\":\"dmg\"}");
    contents_take(&good, m);
    assert_int_equal(good.n, 5);
    mt_memory_free(m);
    m = open_writing_with(s, s->key[2]);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/third.md\",\"file_text\":\"3\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/third.md\",\"old_str\":\"3\","
                  "\"new_str\":\"33\"}");
    mt_memory_free(m);
    /* Damage, beneath the encryption: the file damaged.md (as a change,
     * which the history records) and ok2.md's first version. */
    plain = open_plain(s);
    mt_memory_op(&op, plain);
    assert_int_equal(plain->store->edit(plain->store, &op, "damaged.md", damage, NULL), 0);
    bad_version = version_of(plain, "/memories/ok2.md", 1);
    contents_forget(&good, bad_version); /* damaged: no key reads it */
    assert_int_equal(plain->store->version_reseal(plain->store, &op, bad_version, damage, NULL), 0);
    third_v1 = version_of(plain, "/memories/third.md", 1);
    third_v2 = version_of(plain, "/memories/third.md", 2);
    damaged_v2 = version_of(plain, "/memories/damaged.md", 2);
    mt_memory_free(plain);

    m = open_with(s, 0);
    assert_int_equal(mt_memory_rekey(&r, m, k2, count_failed, &seen), MT_ECRYPT);
    assert_non_null(
        strstr(mt_error_last()->message, "2 files and 4 versions could not be re-encrypted"));
    assert_int_equal(r.files, 2);
    assert_int_equal(r.files_failed, 2);
    assert_int_equal(seen.files_failed, 2);
    assert_int_equal(r.versions_failed, 4);
    assert_int_equal(seen.versions_failed, 4);
    assert_int_equal(r.nfailures, 6);
    assert_non_null(strstr(failure_of(&r, MT_REKEY_FILE, "/memories/third.md", 0)->message,
                           "is encrypted with key"));
    assert_int_equal(failure_of(&r, MT_REKEY_FILE, "/memories/third.md", 0)->code, MT_ECRYPT);
    assert_non_null(strstr(failure_of(&r, MT_REKEY_FILE, "/memories/damaged.md", 0)->message,
                           "failed its integrity check"));
    assert_non_null(strstr(failure_of(&r, MT_REKEY_VERSION, NULL, bad_version)->message,
                           "failed its integrity check"));
    assert_non_null(
        strstr(failure_of(&r, MT_REKEY_VERSION, NULL, third_v1)->message, "is encrypted with key"));
    assert_non_null(
        strstr(failure_of(&r, MT_REKEY_VERSION, NULL, third_v2)->message, "is encrypted with key"));
    assert_non_null(strstr(failure_of(&r, MT_REKEY_VERSION, NULL, damaged_v2)->message,
                           "failed its integrity check"));
    mt_rekey_result_dispose(&r);
    /* The handle still reads what the failed rekey re-encrypted, and its
     * versions (under k2 now, which it was not opened with). */
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/ok1.md"), 0);
    assert_string_equal(data, "one!");
    free(data);
    contents_check(&good, m);
    /* The key is not switched: what the handle writes now is under k1. */
    mt_test_ok(m,
               "{\"command\":\"create\",\"path\":\"/memories/later.md\",\"file_text\":\"later\"}");
    mt_memory_free(m);

    /* Unfinished, the rekey left the store's record naming k1: the new
     * key alone does not open it. */
    {
        char path[300];
        snprintf(path, sizeof(path), "%s/key", s->dir);
        copy_file(s->key[1], path);
        assert_int_equal(s->crypt->open(&m, s->dir, NULL), MT_ECRYPT);
        assert_non_null(strstr(mt_error_last()->message, "not the key given"));
    }
    /* The rest is under the new key. */
    mt_crypt_record_off = 1;
    m = open_with(s, 1);
    mt_crypt_record_off = 0;
    contents_check(&good, m);
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/ok1.md"), 0);
    assert_string_equal(data, "one!");
    free(data);
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/later.md"), MT_ECRYPT);
    mt_memory_free(m);

    /* Dealt with as the message says: what is under k3 and the damage
     * deleted or redacted. Then a run again completes, and the new key
     * alone reads the whole history. */
    m = open_with(s, 0);
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/third.md\"}");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/damaged.md\"}");
    assert_int_equal(mt_memory_redact(m, third_v1), 0);
    assert_int_equal(mt_memory_redact(m, third_v2), 0);
    assert_int_equal(mt_memory_redact(m, damaged_v2), 0);
    assert_int_equal(mt_memory_redact(m, bad_version), 0);
    if (mt_memory_rekey(&r, m, k2, NULL, NULL) < 0)
        fail_msg("rekey: %s", mt_error_last()->message);
    assert_int_equal(r.files, 1); /* later.md */
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    m = open_with(s, 1);
    v = all_versions(m, &n);
    for (i = 0; i < n; i++)
        if (!v[i].redacted && v[i].content_sha256[0]) {
            assert_int_equal(mt_memory_version_content(&data, &len, m, v[i].id), 0);
            free(data);
        }
    mt_versions_free(v, n);
    mt_memory_free(m);
    contents_free(&good);
    mt_crypt_key_free(k2);
}

/* A rekey with history off records no version of the files it
 * re-encrypts: the history still takes each memory's version before as its
 * current content, until it sees the file's new one. The versions go under
 * the new key all the same. */
static void rekey_history_off(scratch *s)
{
    mt_crypt_key *k2 = key_of(s, 1);
    mt_rekey_result r;
    mt_options o;
    mt_memory *m;
    contents before;

    m = open_with(s, 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/h.md\",\"file_text\":\"first\"}");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/h.md\",\"old_str\":\"first\","
                  "\"new_str\":\"second\"}");
    contents_take(&before, m);
    assert_int_equal(before.n, 2);
    mt_memory_free(m);
    mt_options_init(&o);
    o.history = 0;
    m = open_with_options(s, 0, &o);
    if (mt_memory_rekey(&r, m, k2, NULL, NULL) < 0)
        fail_msg("rekey: %s", mt_error_last()->message);
    assert_int_equal(r.files, 1);
    assert_int_equal(r.versions, 2);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    m = open_with(s, 1);
    contents_check(&before, m);
    mt_memory_free(m);
    contents_free(&before);
    mt_crypt_key_free(k2);
}

/* Run fn on a new store of each encrypted kind. */
static void on_each_crypt_store(void (*fn)(scratch *s))
{
    scratch s;
    size_t i, tested = 0;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        if (!strstr(mt_test_stores[i].name, "-crypt"))
            continue;
        scratch_init(&s, i);
        fn(&s);
        scratch_free(&s);
        tested++;
    }
    assert_true(tested > 0);
}

static void test_rekey_everything(void **state)
{
    (void)state;
    on_each_crypt_store(rekey_all);
}

/* A handle keeps reading the keys of rekeys that failed, at most 8 (the
 * running one included, SECURITY.md): a memory another handle seals with the
 * first of 8 failed rekeys' keys is read; after a 9th, that key is dropped. */
static void rekey_keys_capped(scratch *s)
{
    enum { FAILED = 9 };
    mt_crypt_key *k[FAILED];
    mt_memory *m, *other;
    mt_rekey_result r;
    char path[FAILED][300];
    char *data;
    size_t len;
    int j;

    /* A memory under k3, which m does not read: every rekey of m fails.
     * The store made with k1 first: it is k1's. */
    mt_memory_free(open_with(s, 0));
    other = open_writing_with(s, s->key[2]);
    mt_test_ok(other, "{\"command\":\"create\",\"path\":\"/memories/k3.md\",\"file_text\":\"3\"}");
    mt_memory_free(other);
    m = open_with(s, 0);
    for (j = 0; j < FAILED; j++) {
        snprintf(path[j], sizeof(path[j]), "%s/failed%d", s->dir, j);
        assert_int_equal(mt_crypt_key_generate_file(path[j]), 0);
        k[j] = mt_test_key_load(path[j]);
    }
    for (j = 0; j < FAILED; j++) {
        if (j == FAILED - 1) {
            /* Sealed with the first failed rekey's key, by a handle opened with it. */
            other = open_writing_with(s, path[0]);
            mt_test_ok(
                other,
                "{\"command\":\"create\",\"path\":\"/memories/probe.md\",\"file_text\":\"p\"}");
            mt_memory_free(other);
            assert_int_equal(mt_memory_read(&data, &len, m, "/memories/probe.md"), 0);
            assert_string_equal(data, "p");
            free(data);
        }
        assert_int_equal(mt_memory_rekey(&r, m, k[j], NULL, NULL), MT_ECRYPT);
        mt_rekey_result_dispose(&r);
    }
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/probe.md"), MT_ECRYPT);
    assert_non_null(strstr(mt_error_last()->message, "encrypted with key"));
    mt_memory_free(m);
    for (j = 0; j < FAILED; j++)
        mt_crypt_key_free(k[j]);
}

static void test_rekey_keys_capped(void **state)
{
    (void)state;
    on_each_crypt_store(rekey_keys_capped);
}

static void test_rekey_failures(void **state)
{
    (void)state;
    on_each_crypt_store(rekey_failures);
}

static void test_rekey_history_off(void **state)
{
    (void)state;
    on_each_crypt_store(rekey_history_off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rekey_everything),
        cmocka_unit_test(test_rekey_failures),
        cmocka_unit_test(test_rekey_keys_capped),
        cmocka_unit_test(test_rekey_history_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

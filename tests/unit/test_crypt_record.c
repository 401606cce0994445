/*
 * Encryption is the store's: on every encrypted store of store_openers.h
 * (PostgreSQL's too, in test_crypt_record_pg), the record a store keeps of
 * its key refuses an open without it and one with another, is made once
 * when two processes make the store encrypted at once, is made for a store
 * sealed before records were kept, and follows a rekey.
 *
 * The encrypted openers read the key at DIR/key: a store is opened with
 * another key by putting that key there. The opener of the same name
 * without "-crypt" opens the same store without a key.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "core/memory.h"
#include "crypt/crypt.h"
#include "store_openers.h"

typedef struct {
    const mt_test_store_opener *crypt, *plain;
    char dir[256];
    char key[2][300]; /* k1 (the store's), k2 (another) */
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
    char name[64];
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
    mt_test_scratch_make(s->dir, sizeof(s->dir), "record");
    for (j = 0; j < 2; j++) {
        snprintf(s->key[j], sizeof(s->key[j]), "%s/k%zu", s->dir, j + 1);
        assert_int_equal(mt_crypt_key_generate_file(s->key[j]), 0);
    }
}

/* Open with key k (0, 1): the result of the opener, the handle in *m. */
static int open_key(mt_memory **m, scratch *s, int k)
{
    char path[300];

    snprintf(path, sizeof(path), "%s/key", s->dir);
    copy_file(s->key[k], path);
    *m = NULL;
    return s->crypt->open(m, s->dir, NULL);
}

static mt_memory *open_ok(scratch *s, int k)
{
    mt_memory *m;

    if (open_key(&m, s, k) < 0)
        fail_msg("open %s: %s", s->crypt->name, mt_error_last()->message);
    return m;
}

static void key_id(char out[17], scratch *s, int k)
{
    mt_crypt_key *key = mt_test_key_load(s->key[k]);

    mt_crypt_key_id(out, key);
    mt_crypt_key_free(key);
}

/* The record the store holds (malloc'd), or NULL: read beneath the layer. */
static char *record_of(scratch *s)
{
    mt_memory *raw = NULL;
    char *got = NULL;
    int rc;

    mt_crypt_record_off = 1;
    rc = s->plain->open(&raw, s->dir, NULL);
    mt_crypt_record_off = 0;
    assert_int_equal(rc, 0);
    assert_non_null(raw->store->encryption);
    rc = raw->store->encryption(raw->store, &got, NULL, 0, 5000);
    assert_true(rc == 0 || rc == 1);
    mt_memory_free(raw);
    return got;
}

static void expect_refused_without_key(scratch *s, const char *id)
{
    mt_memory *m = NULL;
    const char *msg;

    assert_int_equal(s->plain->open(&m, s->dir, NULL), MT_ECRYPT);
    assert_null(m);
    msg = mt_error_last()->message;
    if (!strstr(msg, "the store is encrypted (with key ") || !strstr(msg, id) ||
        !strstr(msg, "--key-file PATH (or MEMTOOL_KEY_FILE)") || !strstr(msg, "MEMTOOL_PASSPHRASE"))
        fail_msg("%s without a key: %s", s->plain->name, msg);
}

/* Made encrypted, the store says so: without the key every open is refused
 * (so no command reads ciphertext or writes plaintext), with another key
 * too, naming both; the right key reads. */
static void refused(scratch *s)
{
    char id1[17], id2[17], want[96];
    mt_memory *m;
    char *data, *rec;
    size_t len;

    key_id(id1, s, 0);
    key_id(id2, s, 1);
    m = open_ok(s, 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"MTCR\"}");
    mt_memory_free(m);
    rec = record_of(s);
    assert_non_null(rec);
    assert_non_null(strstr(rec, id1));
    free(rec);
    expect_refused_without_key(s, id1);
    assert_int_equal(open_key(&m, s, 1), MT_ECRYPT);
    assert_null(m);
    snprintf(want, sizeof(want), "encrypted with key %s, not the key given (key %s)", id1, id2);
    if (!strstr(mt_error_last()->message, want))
        fail_msg("another key: %s", mt_error_last()->message);
    m = open_ok(s, 0);
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/a.md"), 0);
    assert_string_equal(data, "MTCR");
    free(data);
    mt_memory_free(m);
}

/* An empty store opened with a key becomes encrypted, history off too; a
 * store of plain memories is refused a key, with the way to encrypt it. */
static void new_and_plain(scratch *s)
{
    mt_options o;
    mt_memory *m;
    char *rec, id1[17];

    key_id(id1, s, 0);
    mt_options_init(&o);
    o.history = 0;
    /* Another tenant of the same store: plain, and records nothing. */
    o.tenant = "plainly";
    assert_int_equal(s->plain->open(&m, s->dir, &o), 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/p.md\",\"file_text\":\"plain\"}");
    mt_memory_free(m);
    o.tenant = NULL;
    if (s->crypt->open(&m, s->dir, &o) < 0) /* the opener made DIR/key: k1 of its own */
        fail_msg("open: %s", mt_error_last()->message);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a\"}");
    mt_memory_free(m);
    rec = record_of(s);
    assert_non_null(rec);
    free(rec);
    {
        char path[300];
        mt_crypt_key *k;
        snprintf(path, sizeof(path), "%s/key", s->dir);
        k = mt_test_key_load(path);
        mt_crypt_key_id(id1, k);
        mt_crypt_key_free(k);
    }
    expect_refused_without_key(s, id1);
    /* The plain tenant is still plain; with a key it is refused. */
    o.tenant = "plainly";
    assert_int_equal(s->plain->open(&m, s->dir, &o), 0);
    mt_memory_free(m);
    assert_int_equal(s->crypt->open(&m, s->dir, &o), MT_ECRYPT);
    if (!strstr(mt_error_last()->message, "memories that are not encrypted (/memories/p.md") ||
        !strstr(mt_error_last()->message, "migrate --from-plain"))
        fail_msg("a plain store with a key: %s", mt_error_last()->message);
}

/* Forget the record, as a store encrypted by a memtool before records was. */
static void record_drop(scratch *s)
{
    char path[400];

    if (strcmp(s->plain->name, "fs") == 0) {
        snprintf(path, sizeof(path), "%s/fs/.memtool/encryption", s->dir);
        assert_int_equal(unlink(path), 0);
    } else if (strcmp(s->plain->name, "sqlite") == 0) {
        snprintf(path, sizeof(path), "%s/store.sqlite", s->dir);
        mt_test_sql_exec(path, "UPDATE usage SET encryption = NULL");
    } else {
#ifdef MT_TEST_STORE_OPENERS_PG_H
        const char *admin = getenv("MEMTOOL_TEST_PG_ADMIN"), *base = strrchr(s->dir, '/');
        const char *v[1];
        char tenant[300];
        PGconn *c;
        PGresult *r;

        assert_non_null(admin);
        snprintf(tenant, sizeof(tenant), "t-%s", base ? base + 1 : s->dir);
        v[0] = tenant;
        c = PQconnectdb(admin);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        r = PQexecParams(c, "UPDATE memtool.usage SET encryption = NULL WHERE tenant = $1", 1, NULL,
                         v, NULL, NULL, 0);
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        assert_string_equal(PQcmdTuples(r), "1");
        PQclear(r);
        PQfinish(c);
#else
        fail_msg("no way to drop the record of %s", s->plain->name);
#endif
    }
    assert_null(record_of(s));
}

/* A store sealed before records were kept: refused without a key (its
 * first memory is sealed), opened with its key, which records it; refused
 * with another key. */
static void old_store(scratch *s)
{
    char id1[17], *rec;
    mt_memory *m;

    key_id(id1, s, 0);
    m = open_ok(s, 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"old\"}");
    mt_memory_free(m);
    record_drop(s);
    expect_refused_without_key(s, id1);
    assert_int_equal(open_key(&m, s, 1), MT_ECRYPT);
    assert_null(record_of(s));
    m = open_ok(s, 0);
    mt_test_ok(m, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}");
    mt_memory_free(m);
    rec = record_of(s);
    assert_non_null(rec);
    assert_non_null(strstr(rec, id1));
    free(rec);
}

/* The store of dir opened with the key at key_path (not DIR/key, which
 * two processes at once would share). */
static int open_store_key(mt_memory **m, scratch *s, const char *dir, const char *key_path)
{
    mt_crypt_key *key = NULL;
    mt_store *st = NULL;
    char where[400];
    int rc;

    *m = NULL;
    if ((rc = mt_crypt_key_load_file(&key, key_path)) < 0)
        return rc;
    if (strcmp(s->plain->name, "fs") == 0) {
        snprintf(where, sizeof(where), "%s/fs", dir);
        rc = mt_memory_open_encrypted(m, where, NULL, key);
    } else if (strcmp(s->plain->name, "sqlite") == 0) {
        snprintf(where, sizeof(where), "sqlite:%s/store.sqlite", dir);
        rc = mt_memory_open_url_encrypted(m, where, NULL, key);
    } else {
#ifdef MT_TEST_STORE_OPENERS_PG_H
        if ((rc = mt_test_pg_store(&st, dir, NULL)) == 0 &&
            (rc = mt_store_crypt_wrap(&st, st, key)) == 0)
            rc = mt_memory_new(m, st, NULL);
#else
        (void)st;
        rc = MT_EINVAL;
#endif
    }
    mt_crypt_key_free(key);
    return rc;
}

/* Two processes make one new store encrypted at once, each with its own
 * key: one record, the first's; the second is refused at its open. */
static void racing(scratch *s)
{
    int round;

    for (round = 0; round < 4; round++) {
        char dir[300];
        mt_test_barrier b;
        pid_t pids[2];
        int status, k, opened = 0, refused_n = 0;

        snprintf(dir, sizeof(dir), "%s/race%d", s->dir, round);
        assert_int_equal(mkdir(dir, 0700), 0);
        mt_test_barrier_make(&b);
        for (k = 0; k < 2; k++) {
            pids[k] = mt_test_fork(pids, (size_t)k);
            if (pids[k] == 0) {
                mt_memory *m = NULL;
                int rc;

                if (mt_test_barrier_wait(&b) < 0)
                    _exit(3);
                rc = open_store_key(&m, s, dir, s->key[k]);
                mt_memory_free(m);
                _exit(rc == 0 ? 0
                      : rc == MT_ECRYPT && strstr(mt_error_last()->message, "not the key given")
                          ? 1
                          : 2);
            }
        }
        mt_test_barrier_release(&b);
        for (k = 0; k < 2; k++) {
            assert_int_equal(waitpid(pids[k], &status, 0), pids[k]);
            assert_true(WIFEXITED(status));
            opened += WEXITSTATUS(status) == 0;
            refused_n += WEXITSTATUS(status) == 1;
        }
        assert_int_equal(opened, 1);
        assert_int_equal(refused_n, 1);
    }
}

/* A handle opened without the key while the store was new and plain, and
 * still open when another process makes the store encrypted: its changes
 * are refused from then on (nothing written), as an open would be. */
static void outlived(scratch *s)
{
    mt_memory *plain = NULL, *keyed;
    char *reply;
    int is_error = 0;

    assert_int_equal(s->plain->open(&plain, s->dir, NULL), 0);
    keyed = open_ok(s, 0);
    mt_test_ok(keyed, "{\"command\":\"create\",\"path\":\"/memories/k.md\",\"file_text\":\"k\"}");
    reply =
        mt_test_call(plain, &is_error,
                     "{\"command\":\"create\",\"path\":\"/memories/u.md\",\"file_text\":\"u\"}");
    assert_true(is_error);
    if (!strstr(reply, "made the store encrypted"))
        fail_msg("%s: a create without the key was not refused for the reason: %s", s->crypt->name,
                 reply);
    free(reply);
    reply = mt_test_call(plain, &is_error,
                         "{\"command\":\"str_replace\",\"path\":\"/memories/k.md\",\"old_str\":"
                         "\"MTCR\",\"new_str\":\"x\"}");
    assert_true(is_error);
    free(reply);
    mt_memory_free(plain);
    /* Nothing of the refused writes: the one memory, under the key. */
    reply = mt_test_call(keyed, &is_error, "{\"command\":\"view\",\"path\":\"/memories\"}");
    assert_false(is_error);
    if (strstr(reply, "u.md"))
        fail_msg("%s: plaintext written into the encrypted store: %s", s->crypt->name, reply);
    free(reply);
    mt_test_ok(keyed, "{\"command\":\"view\",\"path\":\"/memories/k.md\"}");
    mt_memory_free(keyed);
}

/* A claim of a new store that a memory reached first (written without the
 * key between the look and the claim) is refused under the store's lock,
 * and records nothing. */
static void claim_not_empty(scratch *s)
{
    mt_memory *raw = NULL;
    char *got = NULL;
    int rc;

    mt_crypt_record_off = 1;
    assert_int_equal(s->plain->open(&raw, s->dir, NULL), 0);
    mt_crypt_record_off = 0;
    mt_test_ok(raw, "{\"command\":\"create\",\"path\":\"/memories/u.md\",\"file_text\":\"u\"}");
    rc = raw->store->encryption(raw->store, &got, "mtcr1 test", MT_STORE_RECORD_IF_EMPTY, 5000);
    assert_int_equal(rc, MT_ECONFLICT);
    assert_null(got);
    mt_memory_free(raw);
    assert_null(record_of(s));
}

/* After a rekey the record names the new key: the old one opens no more. */
static void rekeyed(scratch *s)
{
    char id2[17], *rec;
    mt_crypt_key *k2 = mt_test_key_load(s->key[1]);
    mt_rekey_result r;
    mt_memory *m;

    key_id(id2, s, 1);
    m = open_ok(s, 0);
    mt_test_ok(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"a\"}");
    assert_int_equal(mt_memory_rekey(&r, m, k2, NULL, NULL), 0);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    rec = record_of(s);
    assert_non_null(strstr(rec, id2));
    free(rec);
    assert_int_equal(open_key(&m, s, 0), MT_ECRYPT);
    assert_non_null(strstr(mt_error_last()->message, "not the key given"));
    m = open_ok(s, 1);
    mt_test_ok(m, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}");
    mt_memory_free(m);
    mt_crypt_key_free(k2);
}

static void on_each_crypt_store(void (*fn)(scratch *s))
{
    scratch s;
    size_t i, tested = 0;

    for (i = 0; i < MT_TEST_NSTORES; i++) {
        if (!strstr(mt_test_stores[i].name, "-crypt"))
            continue;
        scratch_init(&s, i);
        fn(&s);
        assert_int_equal(mt_test_scratch_remove(s.dir), 0);
        tested++;
    }
    assert_true(tested > 0);
}

static void test_refused(void **state)
{
    (void)state;
    on_each_crypt_store(refused);
}

static void test_new_and_plain(void **state)
{
    (void)state;
    on_each_crypt_store(new_and_plain);
}

static void test_old_store(void **state)
{
    (void)state;
    on_each_crypt_store(old_store);
}

static void test_racing(void **state)
{
    (void)state;
    on_each_crypt_store(racing);
}

static void test_outlived(void **state)
{
    (void)state;
    on_each_crypt_store(outlived);
}

static void test_claim_not_empty(void **state)
{
    (void)state;
    on_each_crypt_store(claim_not_empty);
}

static void test_rekeyed(void **state)
{
    (void)state;
    on_each_crypt_store(rekeyed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),         cmocka_unit_test(test_new_and_plain),
        cmocka_unit_test(test_old_store),       cmocka_unit_test(test_racing),
        cmocka_unit_test(test_rekeyed),         cmocka_unit_test(test_outlived),
        cmocka_unit_test(test_claim_not_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

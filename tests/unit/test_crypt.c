/* Encryption at rest: round trips, keys, tampering, exact sizes and limits, rekey. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include <memtool/store.h>

#include "crypt/crypt.h"

/* A file store (sqlite 0) or SQLite store (1) in the mt_test_keys directory, with key. */
static mt_memory *open_store(const mt_test_keys *s, int sqlite, mt_crypt_key *key,
                             const mt_options *opts)
{
    char url[600];
    mt_memory *m = NULL;

    snprintf(url, sizeof(url), sqlite ? "sqlite:%s/store.db" : "file:%s/fs", s->dir);
    if (mt_memory_open_url_encrypted(&m, url, opts, key) < 0)
        fail_msg("open %s: %s", url, mt_error_last()->message);
    return m;
}

/* An open with key refused at once, with a message holding needle (and
 * then each of more, up to a NULL). */
static void open_refused(const mt_test_keys *s, int sqlite, mt_crypt_key *key, const char *needle,
                         const char *more)
{
    char url[600];
    mt_memory *m = NULL;

    snprintf(url, sizeof(url), sqlite ? "sqlite:%s/store.db" : "file:%s/fs", s->dir);
    assert_int_equal(mt_memory_open_url_encrypted(&m, url, NULL, key), MT_ECRYPT);
    assert_null(m);
    if (!strstr(mt_error_last()->message, needle) ||
        (more && !strstr(mt_error_last()->message, more)))
        fail_msg("open %s: %s\n  expected: %s", url, mt_error_last()->message, needle);
}

static char *call(mt_memory *m, int *is_error, const char *json)
{
    return mt_test_call(m, is_error, json);
}

static void expect_error_with(mt_memory *m, const char *json, const char *needle)
{
    int err = 0;
    char *t = call(m, &err, json);

    if (!err || !strstr(t, needle))
        fail_msg("%s\n  gave: %s\n  expected an error with: %s", json, t, needle);
    free(t);
}

static void put_bytes(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static char *get_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b = malloc(4096);

    assert_non_null(f);
    *len = fread(b, 1, 4096, f);
    fclose(f);
    return b;
}

static void test_round_trip_and_wrong_key(void **state)
{
    mt_test_keys s;
    mt_crypt_key *k, *k2;
    mt_memory *m;
    char path[400], *data;
    size_t len;
    int sqlite;

    (void)state;
    for (sqlite = 0; sqlite < 2; sqlite++) {
        mt_test_keys_init(&s, "crypt");
        k = mt_test_key_load(s.key);
        k2 = mt_test_key_load(s.key2);
        m = open_store(&s, sqlite, k, NULL);
        mt_test_expect(
            m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"secret\\n\"}",
            0, "File created successfully at: /memories/a.md");
        mt_test_expect(m, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}", 0,
                       "Here's the content of /memories/a.md with line numbers:\n     1\tsecret");
        mt_memory_free(m);
        if (!sqlite) {
            /* On disk: the header and ciphertext, never the text. */
            snprintf(path, sizeof(path), "%s/fs/a.md", s.dir);
            data = get_bytes(path, &len);
            assert_int_equal(len, 7 + MT_CRYPT_OVERHEAD);
            assert_memory_equal(data, "MTCR", 4);
            assert_null(memmem(data, len, "secret", 6));
            free(data);
        }
        /* Another key: refused at the open (so no read and no write with
         * it), naming the store's key and the one given. */
        {
            char id[17], id2[17], want[80];
            mt_crypt_key_id(id, k);
            mt_crypt_key_id(id2, k2);
            snprintf(want, sizeof(want), "encrypted with key %s, not the key given (key %s)", id,
                     id2);
            open_refused(&s, sqlite, k2, want, "--key-file");
        }
        m = open_store(&s, sqlite, k, NULL);
        assert_int_equal(mt_memory_read(&data, &len, m, "/memories/a.md"), 0);
        assert_string_equal(data, "secret\n");
        free(data);
        mt_memory_free(m);
        mt_crypt_key_free(k);
        mt_crypt_key_free(k2);
        mt_test_keys_free(&s);
    }
}

/* Change one byte of a file store's file at off (from the end when negative). */
static void flip(const char *path, long off)
{
    size_t len;
    char *b = get_bytes(path, &len);

    b[off < 0 ? (long)len + off : off] ^= 0x20;
    put_bytes(path, b, len);
    free(b);
}

static void test_tampering(void **state)
{
    /* A byte of the header (key id, memory id, generation, nonce), of the
     * ciphertext and of the tag. */
    static const long offsets[] = {9, 40, 55, 70, MT_CRYPT_HEADER + 1, -1};
    mt_test_keys s;
    mt_crypt_key *k;
    mt_memory *m;
    char path[400], *b, *orig;
    size_t i, len;

    (void)state;
    mt_test_keys_init(&s, "crypt");
    k = mt_test_key_load(s.key);
    m = open_store(&s, 0, k, NULL);
    mt_test_expect(
        m, "{\"command\":\"create\",\"path\":\"/memories/t.md\",\"file_text\":\"tamper me\"}", 0,
        "File created successfully at: /memories/t.md");
    snprintf(path, sizeof(path), "%s/fs/t.md", s.dir);
    orig = get_bytes(path, &len);
    for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
        put_bytes(path, orig, len);
        flip(path, offsets[i]);
        expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/t.md\"}",
                          offsets[i] == 9 ? "is encrypted with key" : "failed its integrity check");
    }
    /* Cut short: within the header, and within the tag. */
    put_bytes(path, orig, 50);
    expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/t.md\"}", "is not encrypted");
    put_bytes(path, orig, len - 3);
    expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/t.md\"}",
                      "/memories/t.md failed its integrity check");
    /* Written outside memtool, without the header: never shown as text. */
    put_bytes(path, "plain words\n", 12);
    expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/t.md\"}",
                      "/memories/t.md is not encrypted");
    expect_error_with(m,
                      "{\"command\":\"insert\",\"path\":\"/memories/t.md\",\"insert_line\":0,"
                      "\"insert_text\":\"x\"}",
                      "is not encrypted");
    b = get_bytes(path, &len);
    assert_int_equal(len, 12); /* the refused edit wrote nothing */
    free(b);
    free(orig);
    mt_memory_free(m);
    mt_crypt_key_free(k);
    mt_test_keys_free(&s);
}

/* Two memories' contents exchanged in the SQLite store's rows: the store
 * records which memory is at each path, the header says whose it is. */
static void test_swap_detected(void **state)
{
    mt_test_keys s;
    mt_crypt_key *k;
    mt_memory *m;
    char path[400];

    (void)state;
    mt_test_keys_init(&s, "crypt");
    k = mt_test_key_load(s.key);
    m = open_store(&s, 1, k, NULL);
    mt_test_expect(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"aaaa\"}",
                   0, "File created successfully at: /memories/a.md");
    mt_test_expect(m, "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"bbbb\"}",
                   0, "File created successfully at: /memories/b.md");
    mt_memory_free(m);
    snprintf(path, sizeof(path), "%s/store.db", s.dir);
    mt_test_sql_exec(path, "CREATE TEMP TABLE t AS SELECT path, sha256 FROM nodes WHERE path IN "
                           "('a.md', 'b.md'); UPDATE nodes SET sha256 = (SELECT sha256 FROM t "
                           "WHERE t.path <> nodes.path) WHERE path IN ('a.md', 'b.md')");
    m = open_store(&s, 1, k, NULL);
    expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}",
                      "/memories/a.md failed its integrity check: it holds the content of memory");
    expect_error_with(m, "{\"command\":\"view\",\"path\":\"/memories/b.md\"}", "were swapped");
    /* Nor is the other memory's content edited in its place. */
    expect_error_with(m,
                      "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                      "\"bbbb\",\"new_str\":\"cccc\"}",
                      "/memories/a.md failed its integrity check");
    expect_error_with(m,
                      "{\"command\":\"insert\",\"path\":\"/memories/b.md\",\"insert_line\":0,"
                      "\"insert_text\":\"x\"}",
                      "it was not changed");
    mt_memory_free(m);
    mt_crypt_key_free(k);
    mt_test_keys_free(&s);
}

/* Sizes, limits and history as without encryption, to the byte. */
static void test_exact_sizes_and_limits(void **state)
{
    mt_test_keys s;
    mt_crypt_key *k;
    mt_memory *plain, *enc;
    mt_options o;
    mt_usage u1, u2;
    mt_version *v1, *v2;
    size_t n1, n2, i;
    char root[400];
    int e1, e2, round;
    const char *steps[] = {
        "{\"command\":\"create\",\"path\":\"/memories/d/a.md\",\"file_text\":\"0123456789\"}",
        "{\"command\":\"create\",\"path\":\"/memories/d/e/b.md\",\"file_text\":\"abc\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        /* Exactly at the limit of 20 bytes, then one byte over. */
        "{\"command\":\"create\",\"path\":\"/memories/c.md\",\"file_text\":\"1234567\"}",
        "{\"command\":\"create\",\"path\":\"/memories/x.md\",\"file_text\":\"\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/"
        "x.md\",\"insert_line\":0,\"insert_text\":\"!\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/"
        "c.md\",\"old_str\":\"7\",\"new_str\":\"\"}",
        "{\"command\":\"insert\",\"path\":\"/memories/"
        "x.md\",\"insert_line\":0,\"insert_text\":\"!\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"rename\",\"old_path\":\"/memories/d\",\"new_path\":\"/memories/f\"}",
        "{\"command\":\"view\",\"path\":\"/memories/f\"}",
    };

    (void)state;
    mt_test_keys_init(&s, "crypt");
    k = mt_test_key_load(s.key);
    mt_options_init(&o);
    o.max_store_size = 20;
    o.max_file_size = 10;
    for (round = 0; round < 2; round++) {
        snprintf(root, sizeof(root), "%s/plain%d", s.dir, round);
        assert_int_equal(mt_memory_open(&plain, root, &o), 0);
        enc = open_store(&s, round, k, &o);
        for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
            char *a = call(plain, &e1, steps[i]), *b = call(enc, &e2, steps[i]);
            if (e1 != e2 || strcmp(a, b) != 0)
                fail_msg("%s\n  plain: %s\n  encrypted: %s", steps[i], a, b);
            free(a);
            free(b);
        }
        assert_int_equal(mt_memory_usage(&u1, plain), 0);
        assert_int_equal(mt_memory_usage(&u2, enc), 0);
        assert_int_equal(u1.bytes, u2.bytes);
        /* The second insert ("!\n") was refused at 21 bytes, as without encryption. */
        assert_int_equal(u1.bytes, 19);
        assert_int_equal(u1.files, u2.files);
        /* The history's sizes and SHA-256 are the memories'. */
        assert_int_equal(mt_memory_log(&v1, &n1, plain, NULL), 0);
        assert_int_equal(mt_memory_log(&v2, &n2, enc, NULL), 0);
        assert_int_equal(n1, n2);
        for (i = 0; i < n1; i++) {
            assert_string_equal(v1[i].content_sha256, v2[i].content_sha256);
            assert_int_equal(v1[i].content_size, v2[i].content_size);
        }
        mt_versions_free(v1, n1);
        mt_versions_free(v2, n2);
        mt_memory_free(plain);
        mt_memory_free(enc);
    }
    mt_crypt_key_free(k);
    mt_test_keys_free(&s);
}

static int stop_after_two(void *payload, const mt_rekey_event *e)
{
    (void)payload;
    return e->kind == MT_REKEY_FILE && e->done == 2;
}

static void test_rekey_resumed(void **state)
{
    mt_test_keys s;
    mt_crypt_key *k, *k2, *both;
    mt_memory *m;
    mt_crypt_status st;
    mt_rekey_result r;
    char json[200], id2[17], *data;
    size_t len;
    int i;

    (void)state;
    mt_test_keys_init(&s, "crypt");
    k = mt_test_key_load(s.key);
    k2 = mt_test_key_load(s.key2);
    mt_crypt_key_id(id2, k2);
    m = open_store(&s, 0, k, NULL);
    for (i = 0; i < 5; i++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/m%d.md\",\"file_text\":\"n%d\"}", i,
                 i);
        free(call(m, &(int){0}, json));
    }
    /* Interrupted after two files. */
    assert_int_equal(mt_memory_rekey(&r, m, k2, stop_after_two, NULL), MT_ESTOPPED);
    assert_int_equal(r.files, 2);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    /* The old key alone reads three; the status says so. */
    both = mt_test_key_load(s.key);
    assert_int_equal(mt_crypt_key_accept(both, k2), 0);
    m = open_store(&s, 0, both, NULL);
    assert_int_equal(mt_memory_crypt_status(&st, m), 0);
    assert_int_equal(st.count, 2);
    assert_int_equal(st.files, 5);
    assert_int_equal(st.keys[0].files, 3);
    assert_int_equal(st.keys[1].files, 2);
    assert_string_equal(st.keys[1].key_id, id2);
    mt_crypt_status_dispose(&st);
    /* Run again: only what is left. */
    assert_int_equal(mt_memory_rekey(&r, m, k2, NULL, NULL), 0);
    assert_int_equal(r.files, 3);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    /* The new key alone reads everything. */
    m = open_store(&s, 0, k2, NULL);
    for (i = 0; i < 5; i++) {
        char want[8];
        snprintf(json, sizeof(json), "/memories/m%d.md", i);
        snprintf(want, sizeof(want), "n%d", i);
        assert_int_equal(mt_memory_read(&data, &len, m, json), 0);
        assert_string_equal(data, want);
        free(data);
    }
    assert_int_equal(mt_memory_crypt_status(&st, m), 0);
    assert_int_equal(st.count, 1);
    assert_int_equal(st.keys[0].files, 5);
    mt_crypt_status_dispose(&st);
    mt_memory_free(m);
    mt_crypt_key_free(k);
    mt_crypt_key_free(k2);
    mt_crypt_key_free(both);
    mt_test_keys_free(&s);
}

static void test_key_files(void **state)
{
    mt_test_keys s;
    mt_crypt_key *k = NULL;
    char path[400];

    (void)state;
    mt_test_keys_init(&s, "crypt");
    assert_int_equal(chmod(s.key, 0640), 0);
    assert_int_equal(mt_crypt_key_load_file(&k, s.key), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "may be read by others"));
    assert_null(k);
    /* Never replaced. */
    assert_int_equal(mt_crypt_key_generate_file(s.key), MT_EEXISTS);
    /* Raw 32 bytes are a key; 31 are not. */
    snprintf(path, sizeof(path), "%s/raw", s.dir);
    put_bytes(path, "0123456789abcdef0123456789abcdef", 32);
    assert_int_equal(mt_crypt_key_load_file(&k, path), 0);
    mt_crypt_key_free(k);
    put_bytes(path, "0123456789abcdef0123456789abcde", 31);
    assert_int_equal(mt_crypt_key_load_file(&k, path), MT_EINVAL);
    snprintf(path, sizeof(path), "%s/missing", s.dir);
    assert_int_equal(mt_crypt_key_load_file(&k, path), MT_ENOTFOUND);
    mt_test_keys_free(&s);
}

static void test_passphrase(void **state)
{
    mt_test_keys s;
    mt_crypt_key *p1, *p2, *wrong;
    mt_memory *m;
    char *data;
    size_t len;

    (void)state;
    mt_test_keys_init(&s, "crypt");
    assert_int_equal(mt_crypt_key_from_passphrase(&p1, "correct horse battery", 21), 0);
    m = open_store(&s, 1, p1, NULL);
    mt_test_expect(m, "{\"command\":\"create\",\"path\":\"/memories/p.md\",\"file_text\":\"pass\"}",
                   0, "File created successfully at: /memories/p.md");
    mt_memory_free(m);
    /* Another process: a new key from the same passphrase, derived from the file's salt. */
    assert_int_equal(mt_crypt_key_from_passphrase(&p2, "correct horse battery", 21), 0);
    m = open_store(&s, 1, p2, NULL);
    assert_int_equal(mt_memory_read(&data, &len, m, "/memories/p.md"), 0);
    assert_string_equal(data, "pass");
    free(data);
    mt_memory_free(m);
    assert_int_equal(mt_crypt_key_from_passphrase(&wrong, "correct horse batterY", 21), 0);
    /* The record's verifier refuses another passphrase at the open. */
    open_refused(&s, 1, wrong, "encrypted with a passphrase",
                 "the passphrase given is not it: give that passphrase in MEMTOOL_PASSPHRASE");
    mt_crypt_key_free(wrong);
    assert_int_equal(mt_crypt_key_from_passphrase(&wrong, "short", 5), MT_EINVAL);
    mt_crypt_key_free(p1);
    mt_crypt_key_free(p2);
    mt_test_keys_free(&s);
}

/* From a passphrase to a key file: every version too, so the key file
 * alone reads the whole history after. */
static void test_rekey_from_passphrase(void **state)
{
    mt_test_keys s;
    mt_crypt_key *p, *k;
    mt_memory *m;
    mt_rekey_result r;
    mt_version *v;
    size_t n, len;
    char *data;

    (void)state;
    mt_test_keys_init(&s, "crypt");
    assert_int_equal(mt_crypt_key_from_passphrase(&p, "correct horse battery", 21), 0);
    k = mt_test_key_load(s.key);
    m = open_store(&s, 1, p, NULL);
    mt_test_expect(m, "{\"command\":\"create\",\"path\":\"/memories/p.md\",\"file_text\":\"one\"}",
                   0, "File created successfully at: /memories/p.md");
    free(call(m, &(int){0},
              "{\"command\":\"str_replace\",\"path\":\"/memories/p.md\",\"old_str\":\"one\","
              "\"new_str\":\"two\"}"));
    assert_int_equal(mt_crypt_key_accept(p, k), 0);
    assert_int_equal(mt_memory_rekey(&r, m, k, NULL, NULL), 0);
    assert_int_equal(r.files, 1);
    /* The edit's version took the new bytes with the file: the create's is left. */
    assert_int_equal(r.versions, 1);
    mt_rekey_result_dispose(&r);
    mt_memory_free(m);
    m = open_store(&s, 1, k, NULL);
    assert_int_equal(mt_memory_log(&v, &n, m, NULL), 0);
    /* The create and the edit: the re-encryption adds no version. */
    assert_int_equal(n, 2);
    assert_string_not_equal(v[0].actor, "rekey");
    assert_int_equal(mt_memory_version_content(&data, &len, m, v[n - 1].id), 0);
    assert_string_equal(data, "one");
    free(data);
    mt_versions_free(v, n);
    mt_memory_free(m);
    mt_crypt_key_free(p);
    mt_crypt_key_free(k);
    mt_test_keys_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_wrong_key),
        cmocka_unit_test(test_tampering),
        cmocka_unit_test(test_swap_detected),
        cmocka_unit_test(test_exact_sizes_and_limits),
        cmocka_unit_test(test_rekey_resumed),
        cmocka_unit_test(test_key_files),
        cmocka_unit_test(test_passphrase),
        cmocka_unit_test(test_rekey_from_passphrase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Search in an encrypted store, on the file and SQLite stores: hits and their
 * order, every form of query, paths and limits, a file it cannot open, and
 * no word of a memory on disk after searching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include <memtool/store.h>

/* A file store (sqlite 0) or SQLite store (1) in the mt_test_keys directory,
 * encrypted with the key file at key_path (NULL: not encrypted). */
static mt_memory *open_store(const mt_test_keys *s, int sqlite, const char *key_path)
{
    char url[600];
    mt_memory *m = NULL;
    mt_crypt_key *k = key_path ? mt_test_key_load(key_path) : NULL;
    int rc;

    snprintf(url, sizeof(url), sqlite ? "sqlite:%s/store.db" : "file:%s/fs", s->dir);
    rc = k ? mt_memory_open_url_encrypted(&m, url, NULL, k) : mt_memory_open_url(&m, url, NULL);
    if (rc < 0)
        fail_msg("open %s: %s", url, mt_error_last()->message);
    mt_crypt_key_free(k);
    return m;
}

/* The store, writing with the key at key_path and reading with the one at
 * store_key too: a process with another key than the store's, which opens
 * only with a key that reads what its record names. */
static mt_memory *open_writing(const mt_test_keys *s, int sqlite, const char *key_path,
                               const char *store_key)
{
    char url[600];
    mt_memory *m = NULL;
    mt_crypt_key *k = mt_test_key_load(key_path), *own = mt_test_key_load(store_key);

    snprintf(url, sizeof(url), sqlite ? "sqlite:%s/store.db" : "file:%s/fs", s->dir);
    assert_int_equal(mt_crypt_key_accept(k, own), 0);
    if (mt_memory_open_url_encrypted(&m, url, NULL, k) < 0)
        fail_msg("open %s: %s", url, mt_error_last()->message);
    mt_crypt_key_free(k);
    mt_crypt_key_free(own);
    return m;
}

/* Append s to out (size bytes in all). */
static void append(char *out, size_t size, const char *s)
{
    size_t n = strlen(out), k = strlen(s);

    assert_true(n + k < size);
    memcpy(out + n, s, k + 1);
}

/* The paths found, best first, one a line ("-" none). */
static char *search(mt_memory *m, const char *query, const char *path, size_t limit)
{
    mt_search_options so = {path, limit};
    mt_search_hit *h = NULL;
    size_t n = 0, i, len = 2;
    char *out;

    if (mt_memory_search(&h, &n, m, query, &so) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    for (i = 0; i < n; i++)
        len += strlen(h[i].path) + 1;
    out = malloc(len);
    assert_non_null(out);
    *out = '\0';
    for (i = 0; i < n; i++) {
        assert_true(h[i].score > 0);
        if (i > 0)
            assert_true(h[i - 1].score >= h[i].score);
        append(out, len, h[i].path);
        append(out, len, "\n");
    }
    if (n == 0)
        append(out, len, "-");
    mt_search_hits_free(h, n);
    return out;
}

static void expect(mt_memory *m, const char *query, const char *path, size_t limit,
                   const char *want)
{
    char *got = search(m, query, path, limit);

    if (strcmp(got, want) != 0)
        fail_msg("search %s beneath %s:\n%s\nnot\n%s", query, path ? path : "/memories", got, want);
    free(got);
}

/* Exactly the paths in want (one a line), in whatever order. */
static void expect_set(mt_memory *m, const char *query, const char *want)
{
    char *got = search(m, query, NULL, 0), line[300];
    const char *p = want, *nl;
    size_t lines = 0;

    for (; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
        snprintf(line, sizeof(line), "%.*s\n", (int)(nl - p), p);
        if (!strstr(got, line))
            fail_msg("search %s: %s not found in\n%s", query, line, got);
    }
    for (p = got; (nl = strchr(p, '\n')); p = nl + 1)
        lines--;
    if (lines != 0)
        fail_msg("search %s:\n%s\nnot\n%s", query, got, want);
    free(got);
}

/* A test's body on a new store: the file store (sqlite 0) or SQLite store
 * (1) in s's directory, encrypted with the key file at key (NULL: not). */
typedef void (*store_case)(const mt_test_keys *s, int sqlite, const char *key);

/* body on each store, encrypted; and without encryption too when plain_too. */
static void on_each_store(store_case body, int plain_too)
{
    mt_test_keys s;
    int sqlite, encrypted;

    for (sqlite = 0; sqlite < 2; sqlite++)
        for (encrypted = 1; encrypted >= !plain_too; encrypted--) {
            mt_test_keys_init(&s, "csearch");
            body(&s, sqlite, encrypted ? s.key : NULL);
            mt_test_keys_free(&s);
        }
}

/* Ranked by BM25: five mentions above one; equal scores by path; beneath a
 * directory only; at most limit. */
static void hits_and_order(const mt_test_keys *s, int sqlite, const char *key)
{
    mt_memory *m = open_store(s, sqlite, key);

    mt_test_create(m, "once.md", "the cache is mentioned here once among many other words");
    mt_test_create(m, "five.md", "cache cache cache\\ncache and cache again");
    mt_test_create(m, "none.md", "nothing relevant");
    mt_test_create(m, "tie/b.md", "same words cache");
    mt_test_create(m, "tie/a.md", "same words cache");
    mt_test_create(m, "empty.md", "");
    expect(m, "cache", NULL, 0,
           "/memories/five.md\n/memories/tie/a.md\n/memories/tie/b.md\n/memories/once.md\n");
    expect(m, "cache", NULL, 1, "/memories/five.md\n");
    expect(m, "cache", NULL, 2, "/memories/five.md\n/memories/tie/a.md\n");
    expect(m, "cache", "/memories/tie", 0, "/memories/tie/a.md\n/memories/tie/b.md\n");
    expect(m, "cache", "/memories/tie", 1, "/memories/tie/a.md\n");
    expect(m, "cache relevant", NULL, 0, "-");
    expect(m, "relevant", NULL, 0, "/memories/none.md\n");
    expect(m, "nosuchword", NULL, 0, "-");
    /* Changes between searches are seen at once: nothing to bring up to date. */
    mt_test_create(m, "tie/c.md", "cache cache cache cache cache cache cache cache");
    expect(m, "cache", "/memories/tie", 1, "/memories/tie/c.md\n");
    mt_memory_free(m);
}

/* Phrases, prefixes, folding and CJK pairs, as the indexed stores match them. */
static void query_forms(const mt_test_keys *s, int sqlite, const char *key)
{
    mt_memory *m = open_store(s, sqlite, key);

    mt_test_create(m, "ops/deploy.md",
                   "The deploy script runs nightly.\\nDeploy it after a restore.");
    mt_test_create(m, "notes.md", "Deployment is rare.");
    mt_test_create(m, "intl/ja.md", "日本語のテキストを検索する");
    mt_test_create(m, "intl/fr.md", "Le café crème est prêt");
    mt_test_create(m, "intl/ru.md", "Кафе и ёлка");
    mt_test_create(m, "intl/de.md", "Grüße aus der Straße");
    expect(m, "deploy", NULL, 0, "/memories/ops/deploy.md\n");
    expect_set(m, "deploy*", "/memories/ops/deploy.md\n/memories/notes.md\n");
    expect(m, "\"script runs\"", NULL, 0, "/memories/ops/deploy.md\n");
    expect(m, "\"runs script\"", NULL, 0, "-");
    expect(m, "\"script ru*\"", NULL, 0, "/memories/ops/deploy.md\n");
    expect(m, "\"the deploy\" restore", NULL, 0, "/memories/ops/deploy.md\n");
    expect(m, "CAFÉ", NULL, 0, "/memories/intl/fr.md\n");
    expect(m, "creme pret", NULL, 0, "/memories/intl/fr.md\n");
    expect(m, "caf*", NULL, 0, "/memories/intl/fr.md\n");
    expect(m, "ЁЛКА", NULL, 0, "/memories/intl/ru.md\n");
    expect(m, "елка кафе", NULL, 0, "/memories/intl/ru.md\n");
    expect(m, "grusse STRASSE", NULL, 0, "/memories/intl/de.md\n");
    expect(m, "検索", NULL, 0, "/memories/intl/ja.md\n");
    expect(m, "日本語のテキスト", NULL, 0, "/memories/intl/ja.md\n");
    expect(m, "本", NULL, 0, "/memories/intl/ja.md\n");
    expect(m, "テキスト検索", NULL, 0, "-");
    expect(m, "検索", "/memories/ops", 0, "-");
    mt_memory_free(m);
}

/* A file the key does not open fails the search with its own error, never
 * skipped; a search beneath a directory without it is not troubled. */
static void unreadable_file(const mt_test_keys *s, int sqlite, const char *key)
{
    mt_memory *m;
    mt_search_hit *h = NULL;
    mt_search_options so = {NULL, 10};
    size_t n = 0;
    const char *msg;

    mt_memory_free(open_store(s, sqlite, key)); /* the store is key's */
    m = open_writing(s, sqlite, s->key2, key);
    mt_test_create(m, "theirs/other.md", "a cache under another key");
    mt_memory_free(m);
    m = open_store(s, sqlite, key);
    mt_test_create(m, "mine/own.md", "my cache");
    assert_int_equal(mt_memory_search(&h, &n, m, "cache", &so), MT_ECRYPT);
    assert_null(h);
    assert_int_equal(n, 0);
    msg = mt_error_last()->message;
    if (!strstr(msg, "/memories/theirs/other.md is encrypted with key ") ||
        !strstr(msg, "not the key given") || !strstr(msg, "a search of an encrypted store"))
        fail_msg("the error: %s", msg);
    expect(m, "cache", "/memories/mine", 0, "/memories/mine/own.md\n");
    if (!sqlite) {
        /* A file put there by hand, not sealed: never read as text. */
        char path[400];
        FILE *f;

        snprintf(path, sizeof(path), "%s/fs/mine/plain.md", s->dir);
        assert_non_null(f = fopen(path, "w"));
        fputs("a plain cache\n", f);
        fclose(f);
        assert_int_equal(mt_memory_search(&h, &n, m, "cache", &so), MT_ECRYPT);
        so.path = "/memories/mine";
        assert_int_equal(mt_memory_search(&h, &n, m, "plain", &so), MT_ECRYPT);
        so.path = NULL;
        msg = mt_error_last()->message;
        if (!strstr(msg, "/memories/mine/plain.md is not encrypted"))
            fail_msg("the error: %s", msg);
    }
    mt_memory_free(m);
}

/* Whether any file beneath dir holds word (in any case). */
static int on_disk(const char *dir, const char *word)
{
    char cmd[700];
    int rc;

    snprintf(cmd, sizeof(cmd), "grep -r -a -i -q -F '%s' '%s'", word, dir);
    rc = system(cmd);
    assert_true(rc == 0 || (rc != -1 && WEXITSTATUS(rc) == 1));
    return rc == 0;
}

/* A search writes no word of a memory anywhere: not in the store's files,
 * its database, its history or a journal. Without encryption the words are
 * on disk (in the files, the database and the index): the check finds them
 * there, inside a database file too. */
static void nothing_written(const mt_test_keys *s, int sqlite, const char *key)
{
    mt_memory *m = open_store(s, sqlite, key);
    int encrypted = key != NULL;

    mt_test_create(m, "notes/a.md", "The Zebraquartz plan\\nand a Xylophonic marker");
    mt_test_create(m, "notes/b.md", "nothing to see");
    assert_int_equal(on_disk(s->dir, "zebraquartz"), !encrypted);
    expect(m, "zebraquartz", NULL, 0, "/memories/notes/a.md\n");
    expect(m, "xylo*", NULL, 0, "/memories/notes/a.md\n");
    expect(m, "\"zebraquartz plan\"", "/memories/notes", 0, "/memories/notes/a.md\n");
    mt_memory_free(m);
    /* The index, when there is one, holds the words folded. */
    assert_int_equal(on_disk(s->dir, "zebraquartz"), !encrypted);
    assert_int_equal(on_disk(s->dir, "xylophonic"), !encrypted);
}

static void test_hits_and_order(void **state)
{
    (void)state;
    on_each_store(hits_and_order, 0);
}

static void test_query_forms(void **state)
{
    (void)state;
    on_each_store(query_forms, 0);
}

static void test_unreadable_file(void **state)
{
    (void)state;
    on_each_store(unreadable_file, 0);
}

static void test_nothing_written(void **state)
{
    (void)state;
    on_each_store(nothing_written, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hits_and_order),
        cmocka_unit_test(test_query_forms),
        cmocka_unit_test(test_unreadable_file),
        cmocka_unit_test(test_nothing_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

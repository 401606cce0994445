/*
 * Encryption at rest on the file store: which memory is at which path. Files
 * swapped or copied outside memtool fail their check, with history on or
 * off, and memtool's own changes (deletes, creates, renames of files and
 * trees, restores) never make a file fail it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include <memtool/store.h>

#define SWAPPED "failed its integrity check: it holds the content of memory"

typedef struct {
    char dir[256];
    char root[300];
    char key[300];
    mt_crypt_key *k;
} scratch;

static void scratch_init(scratch *s)
{
    mt_test_scratch_make(s->dir, sizeof(s->dir), "cswap");
    snprintf(s->root, sizeof(s->root), "%s/fs", s->dir);
    snprintf(s->key, sizeof(s->key), "%s/key", s->dir);
    assert_int_equal(mt_crypt_key_generate_file(s->key), 0);
    s->k = mt_test_key_load(s->key);
}

static void scratch_free(scratch *s)
{
    mt_crypt_key_free(s->k);
    assert_int_equal(mt_test_scratch_remove(s->dir), 0);
}

/* The encrypted file store, with history on or off. */
static mt_memory *open_enc(const scratch *s, int history)
{
    char url[400];
    mt_options o;
    mt_memory *m = NULL;

    mt_options_init(&o);
    o.history = history;
    snprintf(url, sizeof(url), "file:%s", s->root);
    if (mt_memory_open_url_encrypted(&m, url, &o, s->k) < 0)
        fail_msg("open %s: %s", url, mt_error_last()->message);
    return m;
}

/* A view of path shows text. */
static void view_ok(mt_memory *m, const char *path, const char *text)
{
    char json[512];
    int err = 0;
    char *t;

    snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/%s\"}", path);
    t = mt_test_call(m, &err, json);
    if (err || !strstr(t, text))
        fail_msg("view /memories/%s\n  gave: %s\n  expected: %s", path, t, text);
    free(t);
}

/* A view of path fails its check, naming the path, and shows no text. */
static void view_swapped(mt_memory *m, const char *path, const char *text)
{
    char json[512], want[512];
    int err = 0;
    char *t;

    snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/%s\"}", path);
    snprintf(want, sizeof(want), "/memories/%s " SWAPPED, path);
    t = mt_test_call(m, &err, json);
    if (!err || !strstr(t, want) || strstr(t, text))
        fail_msg("view /memories/%s\n  gave: %s\n  expected an error with: %s", path, t, want);
    free(t);
}

/* Files a and b (which held a_text and b_text) were swapped: each fails
 * its check and shows nothing of the other's. */
static void both_swapped(mt_memory *m, const char *a, const char *a_text, const char *b,
                         const char *b_text)
{
    view_swapped(m, a, b_text);
    view_swapped(m, b, a_text);
}

static void disk_path(char *out, size_t size, const scratch *s, const char *rel)
{
    snprintf(out, size, "%s/%s", s->root, rel);
}

/* Exchange two files with rename(2), as `mv` would, outside memtool. */
static void swap_files(const scratch *s, const char *a, const char *b)
{
    char pa[600], pb[600], tmp[600];

    disk_path(pa, sizeof(pa), s, a);
    disk_path(pb, sizeof(pb), s, b);
    snprintf(tmp, sizeof(tmp), "%s/swap.tmp", s->dir);
    assert_int_equal(rename(pa, tmp), 0);
    assert_int_equal(rename(pb, pa), 0);
    assert_int_equal(rename(tmp, pb), 0);
}

static void copy_file(const scratch *s, const char *from, const char *to)
{
    char cmd[1400], pf[600], pt[600];

    disk_path(pf, sizeof(pf), s, from);
    disk_path(pt, sizeof(pt), s, to);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", pf, pt);
    assert_int_equal(system(cmd), 0);
}

/* What was changed outside memtool is recorded (a log catches up first). */
static void catch_up(mt_memory *m)
{
    mt_version *v = NULL;
    size_t n = 0;

    if (mt_memory_log(&v, &n, m, NULL) < 0)
        fail_msg("log: %s", mt_error_last()->message);
    mt_versions_free(v, n);
}

static int history_db_exists(const scratch *s)
{
    char p[600];
    struct stat sb;

    snprintf(p, sizeof(p), "%s/.memtool/history.db", s->root);
    return stat(p, &sb) == 0;
}

/* Two files swapped with mv, history on: each fails its check, and still
 * does once a change elsewhere, a catch-up and a change of the file itself
 * have recorded what is on the disk. */
static void test_swap_history_on(void **state)
{
    scratch s;
    mt_memory *m;

    (void)state;
    scratch_init(&s);
    m = open_enc(&s, 1);
    mt_test_create(m, "a.md", "alpha");
    mt_test_create(m, "b.md", "bravo");
    view_ok(m, "a.md", "alpha");
    swap_files(&s, "a.md", "b.md");
    both_swapped(m, "a.md", "alpha", "b.md", "bravo");
    mt_test_create(m, "c.md", "charlie");
    view_swapped(m, "a.md", "bravo");
    catch_up(m);
    both_swapped(m, "a.md", "alpha", "b.md", "bravo");
    /* An edit neither changes the other memory's content in its place nor
     * shows it; the file stays as the swap left it. */
    {
        int err = 0;
        char *t = mt_test_call(m, &err,
                               "{\"command\":\"insert\",\"path\":\"/memories/a.md\","
                               "\"insert_line\":0,\"insert_text\":\"more\"}");
        if (!err || !strstr(t, "/memories/a.md " SWAPPED) || strstr(t, "bravo"))
            fail_msg("insert into a swapped file gave: %s", t);
        free(t);
    }
    mt_memory_free(m);
    m = open_enc(&s, 1);
    both_swapped(m, "a.md", "alpha", "b.md", "bravo");
    view_ok(m, "c.md", "charlie");
    mt_memory_free(m);
    scratch_free(&s);
}

/* The same with history off: the record of which memory is where is kept
 * all the same, and a later catch-up with history on keeps it. */
static void test_swap_history_off(void **state)
{
    scratch s;
    mt_memory *m;

    (void)state;
    scratch_init(&s);
    m = open_enc(&s, 0);
    mt_test_create(m, "a.md", "alpha");
    mt_test_create(m, "d/b.md", "bravo");
    swap_files(&s, "a.md", "d/b.md");
    both_swapped(m, "a.md", "alpha", "d/b.md", "bravo");
    mt_test_create(m, "c.md", "charlie");
    mt_test_ok(m,
               "{\"command\":\"rename\",\"old_path\":\"/memories/c.md\",\"new_path\":\"/memories/"
               "e.md\"}");
    view_swapped(m, "a.md", "bravo");
    mt_memory_free(m);
    /* A fresh process: nothing remembered but what the store records. */
    m = open_enc(&s, 0);
    both_swapped(m, "a.md", "alpha", "d/b.md", "bravo");
    view_ok(m, "e.md", "charlie");
    mt_memory_free(m);
    m = open_enc(&s, 1);
    catch_up(m);
    both_swapped(m, "a.md", "alpha", "d/b.md", "bravo");
    view_ok(m, "e.md", "charlie");
    mt_memory_free(m);
    scratch_free(&s);
}

/* memtool's own changes with history off, then on, then off again: no view
 * ever fails, and the record is exact after them all (a swap is caught). */
static void test_no_false_alarm(void **state)
{
    scratch s;
    mt_memory *m;
    mt_version *v = NULL;
    mt_log_query q;
    size_t n = 0, i;
    int64_t restored = 0, first = 0;

    (void)state;
    scratch_init(&s);
    m = open_enc(&s, 0);
    mt_test_create(m, "a.md", "old a");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/a.md\"}");
    mt_test_create(m, "a.md", "new a");
    view_ok(m, "a.md", "new a");
    mt_test_ok(m,
               "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/"
               "c.md\"}");
    view_ok(m, "c.md", "new a");
    mt_test_ok(m,
               "{\"command\":\"rename\",\"old_path\":\"/memories/c.md\",\"new_path\":\"/memories/"
               "a.md\"}");
    view_ok(m, "a.md", "new a");
    mt_test_create(m, "t/x.md", "ex");
    mt_test_create(m, "t/u/y.md", "why");
    view_ok(m, "t/x.md", "ex");
    mt_test_ok(
        m, "{\"command\":\"rename\",\"old_path\":\"/memories/t\",\"new_path\":\"/memories/n/t\"}");
    view_ok(m, "n/t/x.md", "ex");
    view_ok(m, "n/t/u/y.md", "why");
    /* A tree where a deleted one was. */
    mt_test_create(m, "t/x.md", "second ex");
    view_ok(m, "t/x.md", "second ex");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/t\"}");
    mt_test_create(m, "t/x.md", "third ex");
    view_ok(m, "t/x.md", "third ex");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"new\","
                  "\"new_str\":\"newer\"}");
    view_ok(m, "a.md", "newer a");
    mt_memory_free(m);

    /* History on: a catch-up records what history-off changes made, then a
     * delete and a restore bring memory r back under its own id. */
    m = open_enc(&s, 1);
    catch_up(m);
    view_ok(m, "a.md", "newer a");
    view_ok(m, "n/t/u/y.md", "why");
    mt_test_create(m, "r.md", "restore me");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/r.md\",\"old_str\":\"me\","
                  "\"new_str\":\"me again\"}");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/r.md\"}");
    memset(&q, 0, sizeof(q));
    q.path = "/memories/r.md";
    assert_int_equal(mt_memory_log(&v, &n, m, &q), 0);
    for (i = 0; i < n; i++)
        if (v[i].operation == MT_VERSION_CREATED)
            first = v[i].id;
    mt_versions_free(v, n);
    assert_true(first > 0);
    assert_int_equal(mt_memory_restore(&restored, m, first), 0);
    view_ok(m, "r.md", "restore me");
    mt_test_ok(
        m, "{\"command\":\"rename\",\"old_path\":\"/memories/n\",\"new_path\":\"/memories/m\"}");
    view_ok(m, "m/t/x.md", "ex");
    mt_memory_free(m);

    /* History off again, in a new process. */
    m = open_enc(&s, 0);
    view_ok(m, "r.md", "restore me");
    view_ok(m, "m/t/x.md", "ex");
    mt_test_ok(
        m, "{\"command\":\"rename\",\"old_path\":\"/memories/m\",\"new_path\":\"/memories/n\"}");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/r.md\"}");
    mt_test_create(m, "r.md", "another r");
    view_ok(m, "r.md", "another r");
    view_ok(m, "n/t/x.md", "ex");
    view_ok(m, "n/t/u/y.md", "why");
    view_ok(m, "t/x.md", "third ex");
    view_ok(m, "a.md", "newer a");
    /* ... and the record knows every one of them. */
    swap_files(&s, "a.md", "n/t/u/y.md");
    both_swapped(m, "a.md", "newer a", "n/t/u/y.md", "why");
    swap_files(&s, "r.md", "t/x.md");
    both_swapped(m, "r.md", "another r", "t/x.md", "third ex");
    mt_memory_free(m);
    scratch_free(&s);
}

/* A copy outside memtool to a path the store has no record of: shown until
 * a change or catch-up there records it, which finds its memory recorded at
 * another path and records it as a new memory, so it then fails. */
static void test_copy_detected_after_catch_up(void **state)
{
    scratch s;
    mt_memory *m;
    int history;

    (void)state;
    for (history = 0; history < 2; history++) {
        scratch_init(&s);
        m = open_enc(&s, history);
        mt_test_create(m, "a.md", "alpha");
        copy_file(&s, "a.md", "d.md");
        view_ok(m, "d.md", "alpha"); /* no record at d.md yet: not checked */
        mt_memory_free(m);
        m = open_enc(&s, 1);
        catch_up(m);
        view_swapped(m, "d.md", "alpha");
        view_ok(m, "a.md", "alpha");
        mt_memory_free(m);
        scratch_free(&s);
    }
}

/* a.md, b.md and c.md (alpha, bravo, charlie) made with history on or off,
 * then sql run on the history database beneath the store. */
static void three_memories(const scratch *s, int history, const char *sql)
{
    mt_memory *m = open_enc(s, history);
    char p[600];

    mt_test_create(m, "a.md", "alpha");
    mt_test_create(m, "b.md", "bravo");
    mt_test_create(m, "c.md", "charlie");
    mt_memory_free(m);
    snprintf(p, sizeof(p), "%s/.memtool/history.db", s->root);
    mt_test_sql_exec(p, sql);
}

/* A file the store has no record of that names a memory recorded nowhere
 * else (written with history off before ids were kept) is recorded as that
 * memory: no false alarm, and checked from then on. */
static void test_unrecorded_file_adopted(void **state)
{
    scratch s;
    mt_memory *m;

    (void)state;
    scratch_init(&s);
    /* As a store written before ids were kept: no record at all. */
    three_memories(&s, 0, "DELETE FROM memories");
    m = open_enc(&s, 1);
    view_ok(m, "a.md", "alpha");
    /* A change with history on records a.md, an edit with history off c.md. */
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"alpha\","
                  "\"new_str\":\"alpha2\"}");
    view_ok(m, "a.md", "alpha2");
    mt_memory_free(m);
    m = open_enc(&s, 0);
    mt_test_ok(m,
               "{\"command\":\"str_replace\",\"path\":\"/memories/c.md\",\"old_str\":\"charlie\","
               "\"new_str\":\"charlie2\"}");
    view_ok(m, "c.md", "charlie2");
    /* Recorded now: swapped, they fail; b.md was never recorded. */
    swap_files(&s, "a.md", "c.md");
    both_swapped(m, "a.md", "alpha2", "c.md", "charlie2");
    mt_memory_free(m);
    scratch_free(&s);
}

/* The history database's files, saved to or put back from DIR/saved. */
static void save_db(const scratch *s)
{
    char cmd[1200];

    snprintf(cmd, sizeof(cmd),
             "mkdir '%s/saved' && cp '%s/.memtool/'history.db* '%s/saved/' && rm -f "
             "'%s/saved/'*-shm",
             s->dir, s->root, s->dir, s->dir);
    assert_int_equal(system(cmd), 0);
}

static void restore_db(const scratch *s)
{
    char cmd[1200];

    snprintf(cmd, sizeof(cmd), "rm -f '%s/.memtool/'history.db* && cp '%s/saved/'* '%s/.memtool/'",
             s->root, s->dir, s->root);
    assert_int_equal(system(cmd), 0);
}

/* A store kept by a memtool that recorded memory ids only with history on:
 * a memory it replaced with history off is still recorded as the one that
 * was there. Views raise no false alarm, before or after the first change
 * (which checks each recorded file once), and the record is exact after. */
static void test_stale_record_upgraded(void **state)
{
    scratch s;
    mt_memory *m;

    (void)state;
    scratch_init(&s);
    /* The database as that memtool left it: no mark, and untouched by what
     * follows with history off. */
    three_memories(&s, 1, "DELETE FROM meta WHERE key = 'ids'");
    save_db(&s);
    m = open_enc(&s, 0);
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/a.md\"}");
    mt_test_create(m, "a.md", "new alpha");
    mt_memory_free(m);
    restore_db(&s);

    m = open_enc(&s, 0);
    view_ok(m, "a.md", "new alpha"); /* not known exact yet: unchecked */
    view_ok(m, "b.md", "bravo");
    mt_test_create(m, "d.md", "delta"); /* the first change checks the record */
    view_ok(m, "a.md", "new alpha");
    mt_memory_free(m);
    m = open_enc(&s, 1);
    view_ok(m, "a.md", "new alpha");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"new\","
                  "\"new_str\":\"newer\"}");
    view_ok(m, "a.md", "newer alpha");
    /* Exact now: a.md (recorded anew), b.md (kept) and d.md are checked. */
    swap_files(&s, "a.md", "b.md");
    both_swapped(m, "a.md", "newer alpha", "b.md", "bravo");
    swap_files(&s, "c.md", "d.md");
    view_swapped(m, "c.md", "delta");
    mt_memory_free(m);
    scratch_free(&s);
}

/* The history database: none for a plain store with history off, whatever
 * it writes; an encrypted one keeps its record there; a view reads it and
 * never makes one. */
static void test_history_db_only_where_needed(void **state)
{
    scratch s;
    mt_options o;
    mt_memory *m;
    char p[700];

    (void)state;
    scratch_init(&s);
    mt_options_init(&o);
    o.history = 0;
    assert_int_equal(mt_memory_open(&m, s.root, &o), 0);
    mt_test_create(m, "a.md", "alpha");
    mt_test_create(m, "d/b.md", "bravo");
    mt_test_ok(m, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"alpha\","
                  "\"new_str\":\"alpha2\"}");
    mt_test_ok(
        m, "{\"command\":\"rename\",\"old_path\":\"/memories/d\",\"new_path\":\"/memories/e\"}");
    mt_test_ok(m,
               "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\",\"new_path\":\"/memories/"
               "c.md\"}");
    mt_test_ok(m, "{\"command\":\"delete\",\"path\":\"/memories/e\"}");
    view_ok(m, "c.md", "alpha2");
    mt_memory_free(m);
    assert_false(history_db_exists(&s));
    snprintf(p, sizeof(p), "rm -rf '%s'", s.root);
    assert_int_equal(system(p), 0);

    m = open_enc(&s, 0);
    mt_test_create(m, "a.md", "alpha");
    assert_true(history_db_exists(&s));
    mt_memory_free(m);
    snprintf(p, sizeof(p), "rm -f '%s/.memtool/history.db'*", s.root);
    assert_int_equal(system(p), 0);
    m = open_enc(&s, 0);
    view_ok(m, "a.md", "alpha"); /* no record: not checked */
    mt_memory_free(m);
    assert_false(history_db_exists(&s));
    scratch_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swap_history_on),
        cmocka_unit_test(test_swap_history_off),
        cmocka_unit_test(test_no_false_alarm),
        cmocka_unit_test(test_copy_detected_after_catch_up),
        cmocka_unit_test(test_unrecorded_file_adopted),
        cmocka_unit_test(test_stale_record_upgraded),
        cmocka_unit_test(test_history_db_only_where_needed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

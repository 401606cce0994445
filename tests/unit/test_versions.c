/*
 * History: the guarantees of SPEC section 6 under processes, kills and
 * damage, and that what is redacted or pruned is gone from the disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "helpers.h"
#include "machinery/hist_log.h"

static void sha_hex(char out[65], const char *data, size_t len)
{
    unsigned char md[crypto_hash_sha256_BYTES];

    crypto_hash_sha256(md, (const unsigned char *)data, len);
    sodium_bin2hex(out, 65, md, sizeof(md));
}

/* Whether needle occurs in any file of the store's reserved directory. */
static int in_history_files(const mt_test_store *ts, const char *needle)
{
    static const char *const names[] = {"history.db", "history.db-wal", "history.db-shm",
                                        "history.log"};
    char path[512];
    size_t i;
    int found = 0;

    for (i = 0; i < sizeof(names) / sizeof(names[0]) && !found; i++) {
        FILE *f;
        char *data;
        long size;

        snprintf(path, sizeof(path), "%s/.memtool/%s", ts->root, names[i]);
        if (!(f = fopen(path, "rb")))
            continue;
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fseek(f, 0, SEEK_SET);
        data = malloc((size_t)size + 1);
        assert_non_null(data);
        if (size > 0 && fread(data, 1, (size_t)size, f) == (size_t)size)
            found = memmem(data, (size_t)size, needle, strlen(needle)) != NULL;
        free(data);
        fclose(f);
    }
    return found;
}

/* 8 processes x 25 edits of one file: 200 versions in one chain, each
 * content readable, the newest the file's. */
static void test_processes_one_chain(void **state)
{
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char json[256];
    size_t n, i;
    int p, status;
    (void)state;

    /* No cap on versions: all 201 must be there. */
    mt_options_init(&o);
    o.history_keep = 0;
    mt_test_store_init(&ts, &o);
    mt_test_ok(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}");
    for (p = 0; p < 8; p++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            mt_memory *mem;
            int k, ok = 1;
            if (mt_memory_open(&mem, ts.root, &o) < 0)
                _exit(3);
            for (k = 0; k < 25; k++) {
                mt_result r;
                snprintf(json, sizeof(json),
                         "{\"command\":\"insert\",\"path\":\"/memories/log.md\",\"insert_line\":0,"
                         "\"insert_text\":\"p%d k%d\\n\"}",
                         p, k);
                if (mt_memory_call(&r, mem, json, strlen(json)) < 0 || r.is_error)
                    ok = 0;
                mt_result_dispose(&r);
            }
            mt_memory_free(mem);
            _exit(ok ? 0 : 4);
        }
    }
    for (p = 0; p < 8; p++) {
        assert_true(wait(&status) > 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    n = mt_test_log(&v, ts.mem, "/memories/log.md", 1000);
    assert_int_equal(n, 201);
    assert_int_equal(v[n - 1].operation, MT_VERSION_CREATED);
    /* One chain: each version's content is its predecessor's with one line
     * more at the top. */
    {
        char *prev = NULL;
        size_t prev_len = 0;
        for (i = n; i-- > 0;) {
            char *data;
            size_t len;
            assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[i].id), 0);
            if (prev) {
                const char *nl = memchr(data, '\n', len);
                assert_non_null(nl);
                assert_int_equal(len - (size_t)(nl + 1 - data), prev_len);
                assert_memory_equal(nl + 1, prev, prev_len);
            }
            if (i + 1 < n)
                assert_true(v[i].id > v[i + 1].id);
            free(prev);
            prev = data;
            prev_len = len;
        }
        /* The newest is what the file holds. */
        {
            size_t flen;
            char *file = mt_test_read(&ts, "log.md", &flen);
            assert_int_equal(flen, prev_len);
            assert_memory_equal(file, prev, flen);
            free(file);
        }
        free(prev);
    }
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* SIGKILL at any moment of a write: afterwards every file's content is
 * the newest version of its memory, and every version with content reads. */
static void test_kill_any_moment(void **state)
{
    mt_test_store ts;
    unsigned seed = (unsigned)time(NULL);
    int round;
    (void)state;

    mt_test_store_init(&ts, NULL);
    print_message("seed %u\n", seed);
    srand(seed);
    for (round = 0; round < 30; round++) {
        int ready[2], status;
        pid_t pid;
        char byte;

        /* The kill lands after the child's first write, whatever the
         * machine's speed (a sanitizer build starts slowly). */
        assert_int_equal(pipe(ready), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(ready[0]);
            mt_options o;
            mt_memory *mem;
            char json[256];
            int k;
            mt_options_init(&o);
            o.durability = MT_DURABILITY_NONE;
            if (mt_memory_open(&mem, ts.root, &o) < 0)
                _exit(3);
            for (k = 0;; k++) {
                mt_result r;
                int f = k % 5;
                switch (k % 4) {
                case 0:
                    snprintf(json, sizeof(json),
                             "{\"command\":\"create\",\"path\":\"/memories/f%d.md\",\"file_text\":"
                             "\"r%d k%d\\n\"}",
                             f, round, k);
                    break;
                case 1:
                    snprintf(
                        json, sizeof(json),
                        "{\"command\":\"insert\",\"path\":\"/memories/f%d.md\",\"insert_line\":"
                        "0,\"insert_text\":\"k%d\\n\"}",
                        f, k);
                    break;
                case 2:
                    snprintf(
                        json, sizeof(json),
                        "{\"command\":\"rename\",\"old_path\":\"/memories/f%d.md\",\"new_path\":"
                        "\"/memories/d%d/g.md\"}",
                        f, k);
                    break;
                default:
                    snprintf(json, sizeof(json),
                             "{\"command\":\"delete\",\"path\":\"/memories/d%d\"}", k - 1);
                }
                mt_memory_call(&r, mem, json, strlen(json));
                mt_result_dispose(&r);
                if (k == 0 && write(ready[1], "r", 1) != 1)
                    _exit(5);
            }
        }
        close(ready[1]);
        assert_int_equal(read(ready[0], &byte, 1), 1);
        close(ready[0]);
        usleep((useconds_t)(rand() % 20000));
        kill(pid, SIGKILL);
        assert_true(waitpid(pid, &status, 0) == pid);
    }
    /* A fresh handle; the log catches up with what the kills left. */
    {
        mt_memory *mem;
        mt_version *v = NULL;
        size_t n, i;
        assert_int_equal(mt_memory_open(&mem, ts.root, NULL), 0);
        {
            mt_log_query q;
            memset(&q, 0, sizeof(q));
            q.limit = SIZE_MAX;
            assert_int_equal(mt_memory_log(&v, &n, mem, &q), 0);
        }
        assert_true(n > 0);
        for (i = 0; i < n; i++) {
            char *data;
            size_t len;
            char sha[65];
            if (v[i].operation == MT_VERSION_DELETED || v[i].redacted)
                continue;
            if (mt_memory_version_content(&data, &len, mem, v[i].id) < 0)
                fail_msg("version %lld: %s", (long long)v[i].id, mt_error_last()->message);
            sha_hex(sha, data, len);
            assert_string_equal(sha, v[i].content_sha256);
            free(data);
        }
        /* Every file on disk: the newest version at its path holds its content. */
        for (i = 0; i < 5; i++) {
            char rel[32], path[48];
            size_t len, j;
            char *file, sha[65];
            snprintf(rel, sizeof(rel), "f%zu.md", i);
            snprintf(path, sizeof(path), "/memories/%s", rel);
            if (!(file = mt_test_read(&ts, rel, &len)))
                continue;
            sha_hex(sha, file, len);
            for (j = 0; j < n; j++)
                if (v[j].path && strcmp(v[j].path, path) == 0)
                    break;
            assert_true(j < n);
            assert_int_not_equal(v[j].operation, MT_VERSION_DELETED);
            assert_string_equal(v[j].content_sha256, sha);
            free(file);
        }
        mt_versions_free(v, n);
        mt_memory_free(mem);
    }
    mt_test_store_free(&ts);
}

/* A damaged history never stops the memories; log says what is wrong;
 * a missing one is made anew. */
static void test_damaged_history(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    size_t n = 0;
    char path[512];
    int fd;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}");
    mt_memory_free(ts.mem);
    snprintf(path, sizeof(path), "%s/.memtool/history.db-wal", ts.root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/.memtool/history.db-shm", ts.root);
    unlink(path);
    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts.root);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "this is not a database, not at all, no....", 42), 42);
    close(fd);
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, NULL), 0);
    mt_test_ok(ts.mem,
               "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"one\","
               "\"new_str\":\"two\"}");
    /* The change stands; the handle says why it has no version. */
    assert_non_null(mt_memory_history_warning(ts.mem));
    assert_non_null(strstr(mt_memory_history_warning(ts.mem), "history database"));
    mt_test_ok(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}");
    assert_true(mt_memory_log(&v, &n, ts.mem, NULL) < 0);
    assert_non_null(strstr(mt_error_last()->message, "history database"));
    /* Moved away: memtool starts a new history. */
    unlink(path);
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"b\\n\"}");
    assert_null(mt_memory_history_warning(ts.mem));
    n = mt_test_log(&v, ts.mem, "/memories/b.md", 10);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].operation, MT_VERSION_CREATED);
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* Redacted content and content pruned by retention leave no copy in the
 * database, its log or its shared memory. */
static void test_gone_from_disk(void **state)
{
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char json[256], marker[64];
    size_t n, i;
    int k;
    (void)state;

    mt_options_init(&o);
    o.history_keep = 5;
    mt_test_store_init(&ts, &o);
    mt_test_ok(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/s.md\",\"file_text\":\"token "
                       "SECRET-aa11bb22cc33\\n\"}");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/s.md\",\"old_str\":"
                       "\"SECRET-aa11bb22cc33\",\"new_str\":\"[removed]\"}");
    assert_true(in_history_files(&ts, "SECRET-aa11bb22cc33"));
    n = mt_test_log(&v, ts.mem, "/memories/s.md", 10);
    assert_int_equal(n, 2);
    assert_int_equal(mt_memory_redact(ts.mem, v[0].id), MT_EINVAL); /* the current content */
    assert_int_equal(mt_memory_redact(ts.mem, v[1].id), 0);
    assert_false(in_history_files(&ts, "SECRET-aa11bb22cc33"));
    mt_versions_free(v, n);
    n = mt_test_log(&v, ts.mem, "/memories/s.md", 10);
    assert_true(v[1].redacted);
    assert_null(v[1].path);
    assert_string_equal(v[1].content_sha256, "");
    mt_versions_free(v, n);

    /* Retention: 31 versions of a memory with a cap of 5 keep at most
     * 5 + 5/10 + 1, the newest; the content of every pruned one (each
     * holds only its own marker) is gone from the files. */
    mt_test_ok(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/r.md\",\"file_text\":"
                       "\"MARK-0000-unique\\n\"}");
    for (k = 1; k <= 30; k++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/r.md\",\"old_str\":"
                 "\"MARK-%04d-unique\",\"new_str\":\"MARK-%04d-unique\"}",
                 k - 1, k);
        mt_test_ok(ts.mem, json);
    }
    n = mt_test_log(&v, ts.mem, "/memories/r.md", 100);
    assert_true(n >= 5 && n <= 7);
    for (i = 0; i < n; i++) {
        char *data;
        size_t len;
        snprintf(marker, sizeof(marker), "MARK-%04zu-unique\n", 30 - i);
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[i].id), 0);
        assert_int_equal(len, strlen(marker));
        assert_memory_equal(data, marker, len);
        free(data);
    }
    for (k = 0; k <= 30 - (int)n; k++) {
        snprintf(marker, sizeof(marker), "MARK-%04d-unique", k);
        if (in_history_files(&ts, marker))
            fail_msg("%s was pruned but is still in the history's files", marker);
    }
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* /memories/big.md made through the library: `big` bytes of letters
 * cycling with `period`, `token` at `at`. Returns its text (malloc'd). */
static char *big_create(mt_memory *m, size_t big, unsigned period, size_t at, const char *token)
{
    char *json, *text = malloc(big + 1);
    size_t i;

    json = malloc(big + 256);
    assert_non_null(text);
    assert_non_null(json);
    for (i = 0; i < big; i++)
        text[i] = (char)('a' + i % period);
    memcpy(text + at, token, strlen(token));
    text[big] = '\0';
    snprintf(json, big + 256,
             "{\"command\":\"create\",\"path\":\"/memories/big.md\",\"file_text\":\"%s\"}", text);
    mt_test_ok(m, json);
    free(json);
    return text;
}

/* A content of many pages (more than one write's worth of the log's
 * frames) is kept whole: another process reads back both versions. */
static void test_big_content(void **state)
{
    enum { BIG = 600 * 1024 };
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char *text, *data;
    size_t n, len, i;
    int status;
    pid_t pid;
    (void)state;

    mt_options_init(&o);
    mt_test_store_init(&ts, &o);
    text = big_create(ts.mem, BIG, 23, BIG / 2, "TOKEN-ONE");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/big.md\",\"old_str\":"
                       "\"TOKEN-ONE\",\"new_str\":\"TOKEN-TWO\"}");
    n = mt_test_log(&v, ts.mem, "/memories/big.md", 10);
    assert_int_equal(n, 2);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mt_memory *other;
        int bad = mt_memory_open(&other, ts.root, &o) < 0;
        for (i = 0; !bad && i < 2; i++) {
            memcpy(text + BIG / 2, i == 0 ? "TOKEN-TWO" : "TOKEN-ONE", 9);
            bad = mt_memory_version_content(&data, &len, other, v[i].id) < 0 || len != BIG ||
                  memcmp(data, text, BIG) != 0;
            if (!bad)
                free(data);
        }
        _exit(bad);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    mt_versions_free(v, n);
    free(text);
    mt_test_store_free(&ts);
}

/* A content over a MiB is hashed on another thread while it is written: each
 * version's SHA-256 is still that of its content, created and edited. */
static void test_big_hashed_aside(void **state)
{
    enum { BIG = 3 * 1024 * 1024 + 17 };
    unsigned char digest[crypto_hash_sha256_BYTES];
    char hex[65], *text, *data;
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    size_t n, len, i;
    (void)state;

    mt_options_init(&o);
    o.max_file_size = 2 * BIG;
    mt_test_store_init(&ts, &o);
    text = big_create(ts.mem, BIG, 21, BIG - 100, "TOKEN-ONE");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/big.md\",\"old_str\":"
                       "\"TOKEN-ONE\",\"new_str\":\"TOKEN-TWO-LONGER\"}");
    n = mt_test_log(&v, ts.mem, "/memories/big.md", 10);
    assert_int_equal(n, 2);
    for (i = 0; i < n; i++) {
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[i].id), 0);
        assert_int_equal(len, i == 0 ? BIG + 7 : BIG);
        crypto_hash_sha256(digest, (const unsigned char *)data, len);
        sodium_bin2hex(hex, sizeof(hex), digest, sizeof(digest));
        assert_string_equal(v[i].content_sha256, hex);
        free(data);
    }
    mt_versions_free(v, n);
    free(text);
    mt_test_store_free(&ts);
}

/* With history off nothing is recorded, and the history calls say why. */
static void test_history_off(void **state)
{
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    size_t n = 0;
    struct stat sb;
    char path[512];
    (void)state;

    mt_options_init(&o);
    o.history = 0;
    mt_test_store_init(&ts, &o);
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}");
    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts.root);
    assert_int_equal(stat(path, &sb), -1);
    assert_int_equal(mt_memory_log(&v, &n, ts.mem, NULL), MT_ENOSYS);
    mt_test_store_free(&ts);
}

/* Whether needle is in the log of versions not yet loaded. */
static int in_log(const mt_test_store *ts, const char *needle)
{
    char path[512], buf[65536];
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/.memtool/history.log", ts->root);
    if (!(f = fopen(path, "rb")))
        return 0;
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

/* In a child: open the store, run the inputs, and die by SIGKILL before any
 * close, leaving its versions in the log. */
static void changes_then_killed_with(const mt_test_store *ts, const mt_options *o,
                                     const char *const *inputs, size_t n)
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        mt_memory *mem;
        size_t i;
        if (mt_memory_open(&mem, ts->root, o) < 0)
            _exit(3);
        for (i = 0; i < n; i++) {
            mt_result r;
            if (mt_memory_call(&r, mem, inputs[i], strlen(inputs[i])) < 0 || r.is_error)
                _exit(4);
            mt_result_dispose(&r);
        }
        raise(SIGKILL);
        _exit(5);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void changes_then_killed(const mt_test_store *ts, const char *const *inputs, size_t n)
{
    changes_then_killed_with(ts, NULL, inputs, n);
}

static const char *const three_changes[] = {
    "{\"command\":\"create\",\"path\":\"/memories/k.md\",\"file_text\":\"one\\n\"}",
    "{\"command\":\"str_replace\",\"path\":\"/memories/k.md\",\"old_str\":\"one\","
    "\"new_str\":\"two\"}",
    "{\"command\":\"str_replace\",\"path\":\"/memories/k.md\",\"old_str\":\"two\","
    "\"new_str\":\"three\"}",
};

/* Each version's content, newest first, is want[0], want[1], ... */
static void contents_are(mt_memory *mem, const mt_version *v, size_t n, const char *const *want)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char *data;
        size_t len;
        if (mt_memory_version_content(&data, &len, mem, v[i].id) < 0)
            fail_msg("version %lld: %s", (long long)v[i].id, mt_error_last()->message);
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(data, want[i], len);
        free(data);
    }
}

/* A process killed after its appends, before anything loaded them, loses
 * no version: the next reader loads them, in order, and empties the log.
 * Readers in several processes at once load them once between them: each
 * finds the same three, and the history holds each once. */
static void test_log_kill_after_append(void **state)
{
    enum { ROUNDS = 3, READERS = 4 };
    static const char *const want[] = {"three\n", "two\n", "one\n"};
    mt_test_store ts;
    mt_version *v = NULL;
    pid_t pid[READERS];
    mt_test_barrier go;
    int round, p, status;
    size_t n, i;
    (void)state;

    for (round = 0; round < ROUNDS; round++) {
        mt_test_store_init(&ts, NULL);
        changes_then_killed(&ts, three_changes, 3);
        /* The versions are in the log only. */
        assert_true(mt_test_log_size(&ts) > 0);
        assert_true(in_log(&ts, "three\n"));
        mt_test_barrier_make(&go);
        for (p = 0; p < READERS; p++) {
            pid[p] = mt_test_fork(pid, (size_t)p);
            if (pid[p] == 0) {
                mt_memory *mem;
                mt_log_query q;
                mt_version *cv = NULL;
                size_t cn = 0, k;
                int ok;
                if (mt_memory_open(&mem, ts.root, NULL) < 0)
                    _exit(3);
                /* All readers start together, each with its store open. */
                if (mt_test_barrier_wait(&go) < 0)
                    _exit(4);
                memset(&q, 0, sizeof(q));
                q.path = "/memories/k.md";
                q.limit = 10;
                if (mt_memory_log(&cv, &cn, mem, &q) < 0)
                    _exit(5);
                ok = cn == 3 && cv[0].id > cv[1].id && cv[1].id > cv[2].id;
                for (k = 0; ok && k < cn; k++)
                    ok = strcmp(cv[k].actor, "external") != 0;
                mt_versions_free(cv, cn);
                mt_memory_free(mem);
                _exit(ok ? 0 : 6);
            }
        }
        mt_test_barrier_release(&go);
        for (p = 0; p < READERS; p++) {
            assert_int_equal(waitpid(pid[p], &status, 0), pid[p]);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("round %d: reader %d: status %d", round, p, status);
        }
        assert_int_equal(mt_test_log_size(&ts), 0);
        /* Each version once in the whole history, in order. */
        n = mt_test_log(&v, ts.mem, "/memories", 100);
        assert_int_equal(n, 3);
        assert_int_equal(v[0].operation, MT_VERSION_MODIFIED);
        assert_int_equal(v[2].operation, MT_VERSION_CREATED);
        assert_true(v[0].id > v[1].id && v[1].id > v[2].id);
        assert_string_equal(v[0].memory_id, v[2].memory_id);
        for (i = 0; i < n; i++)
            assert_string_equal(v[i].path, "/memories/k.md");
        contents_are(ts.mem, v, n, want);
        mt_versions_free(v, n);
        mt_test_store_free(&ts);
    }
}

/* A record cut short (a kill in the middle of the append) or damaged is
 * never loaded, nor anything after it; the change it belonged to is found
 * as what the file holds, and later appends are kept. */
static void test_log_torn_record(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    char path[512];
    size_t n;
    long size;
    int cut;
    (void)state;

    for (cut = 0; cut < 2; cut++) {
        mt_test_store_init(&ts, NULL);
        changes_then_killed(&ts, three_changes, 3);
        size = mt_test_log_size(&ts);
        assert_true(size > 40);
        snprintf(path, sizeof(path), "%s/.memtool/history.log", ts.root);
        if (cut) {
            /* The last record, cut in the middle of "three". */
            assert_int_equal(truncate(path, size - 8), 0);
        } else {
            /* One byte of the last record's content flipped. */
            int fd = open(path, O_RDWR);
            char byte;
            assert_true(fd >= 0);
            assert_int_equal(pread(fd, &byte, 1, size - 3), 1);
            byte ^= 0x20;
            assert_int_equal(pwrite(fd, &byte, 1, size - 3), 1);
            close(fd);
        }
        /* The torn record is not loaded: the third change is the file's
         * content, found by the log's catch-up as a change from outside. */
        n = mt_test_log(&v, ts.mem, "/memories/k.md", 10);
        assert_int_equal(n, 3);
        assert_string_equal(v[0].actor, "external");
        assert_string_not_equal(v[1].actor, "external");
        {
            static const char *const want[] = {"three\n", "two\n", "one\n"};
            contents_are(ts.mem, v, n, want);
        }
        mt_versions_free(v, n);
        assert_int_equal(mt_test_log_size(&ts), 0);
        /* What comes after is appended to an emptied log, and kept. */
        mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/k.md\",\"old_str\":"
                           "\"three\",\"new_str\":\"four\"}");
        n = mt_test_log(&v, ts.mem, "/memories/k.md", 10);
        assert_int_equal(n, 4);
        assert_string_not_equal(v[0].actor, "external");
        mt_versions_free(v, n);
        mt_test_store_free(&ts);
    }
}

/* A file put in the store from outside under a name no request could give
 * (a backslash, a name past the path limit) is no memory: the catch-up
 * records a version of the nameable ones beside it and none of it. A name
 * exactly at the limit is a memory like any other. */
static void test_unnameable_not_recorded(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    char path[8192], name[300], longest[4200], dirpath[4200], *data = NULL, *text;
    size_t n, i, len = 0;
    int fd, found = 0, err;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_create(ts.mem, "kept.md", "kept\\n");
    snprintf(path, sizeof(path), "%s/back\\slash.md", ts.root);
    assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
    assert_int_equal(write(fd, "x\n", 2), 2);
    close(fd);
    snprintf(path, sizeof(path), "%s/outside.md", ts.root);
    assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
    assert_int_equal(write(fd, "y\n", 2), 2);
    close(fd);
    /* 15 directories of 255 bytes, and in the last a file of 250: a store
     * path of 4,090 bytes, past the 4,086 (MT_FS_REL_MAX) a request can name
     * beneath /memories/; beside it one of 246, a store path of exactly
     * 4,086. */
    memset(name, 'd', 255);
    name[255] = '\0';
    memcpy(dirpath, "/memories", 9);
    len = 9;
    {
        /* Beneath one directory at a time: the whole path is past PATH_MAX. */
        int at = open(ts.root, O_RDONLY | O_DIRECTORY);
        assert_true(at >= 0);
        for (i = 0; i < 15; i++) {
            int next;
            assert_int_equal(mkdirat(at, name, 0700), 0);
            assert_true((next = openat(at, name, O_RDONLY | O_DIRECTORY)) >= 0);
            close(at);
            at = next;
            dirpath[len++] = '/';
            memcpy(dirpath + len, name, 255);
            len += 255;
        }
        dirpath[len] = '\0';
        memset(name, 'f', 247);
        memcpy(name + 247, ".md", 4);
        assert_true((fd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
        assert_int_equal(write(fd, "z\n", 2), 2);
        close(fd);
        memcpy(name + 243, ".md", 4);
        assert_true((fd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
        assert_int_equal(write(fd, "w\n", 2), 2);
        close(fd);
        close(at);
    }
    snprintf(longest, sizeof(longest), "%s/%s", dirpath, name);
    assert_int_equal(strlen(longest) - (sizeof("/memories/") - 1), 4086);
    n = mt_test_log(&v, ts.mem, NULL, 100);
    assert_int_equal(n, 3);
    for (i = 0; i < n; i++) {
        assert_null(strchr(v[i].path, '\\'));
        assert_true(strlen(v[i].path) <= strlen(longest));
    }
    /* The two from outside, in either order, then the one made by request. */
    for (i = 0; i < 2; i++) {
        assert_string_equal(v[i].actor, "external");
        if (strcmp(v[i].path, longest) == 0)
            found++;
        else
            assert_string_equal(v[i].path, "/memories/outside.md");
    }
    assert_int_equal(found, 1);
    assert_string_equal(v[2].path, "/memories/kept.md");
    mt_versions_free(v, n);
    /* And it is a memory: read by its name, listed in its directory. */
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, longest), 0);
    assert_int_equal(len, 2);
    assert_memory_equal(data, "w\n", 2);
    free(data);
    snprintf(path, sizeof(path), "{\"command\":\"view\",\"path\":\"%s\"}", dirpath);
    text = mt_test_call(ts.mem, &err, path);
    assert_int_equal(err, 0);
    assert_non_null(strstr(text, longest + strlen(dirpath))); /* "/" and its name */
    free(text);
    mt_test_store_free(&ts);
}

/* Two processes taking turns append to the log in turn; the loads keep
 * that order: one chain, each version its predecessor with one line more. */
static void test_log_processes_in_order(void **state)
{
    enum { TURNS = 10 };
    mt_test_store ts;
    mt_version *v = NULL;
    int to[2][2], status, p;
    pid_t pid[2];
    size_t n, i;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_ok(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/t.md\",\"file_text\":\"\"}");
    for (p = 0; p < 2; p++)
        assert_int_equal(pipe(to[p]), 0);
    for (p = 0; p < 2; p++) {
        pid[p] = mt_test_fork(pid, (size_t)p);
        if (pid[p] == 0) {
            mt_memory *mem;
            char json[256], token;
            int k;
            if (mt_memory_open(&mem, ts.root, NULL) < 0)
                _exit(3);
            for (k = 0; k < TURNS; k++) {
                mt_result r;
                if (read(to[p][0], &token, 1) != 1)
                    _exit(4);
                snprintf(json, sizeof(json),
                         "{\"command\":\"insert\",\"path\":\"/memories/t.md\",\"insert_line\":0,"
                         "\"insert_text\":\"p%d k%d\\n\"}",
                         p, k);
                if (mt_memory_call(&r, mem, json, strlen(json)) < 0 || r.is_error)
                    _exit(5);
                mt_result_dispose(&r);
                if (write(to[1 - p][1], "t", 1) != 1)
                    _exit(6);
            }
            /* Killed: what it appended last stays in the log. */
            raise(SIGKILL);
            _exit(7);
        }
    }
    assert_int_equal(write(to[0][1], "t", 1), 1);
    for (p = 0; p < 2; p++)
        assert_int_equal(waitpid(pid[p], &status, 0), pid[p]);
    assert_true(mt_test_log_size(&ts) > 0);
    n = mt_test_log(&v, ts.mem, "/memories/t.md", 100);
    assert_int_equal(n, 2 * TURNS + 1);
    for (i = 0; i + 1 < n; i++) {
        /* Newest first: turn (n - 2 - i) / 2 of process (n - 2 - i) % 2. */
        size_t turn = n - 2 - i;
        char line[32], *data;
        size_t len;
        assert_true(v[i].id > v[i + 1].id);
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[i].id), 0);
        snprintf(line, sizeof(line), "p%zu k%zu\n", turn % 2, turn / 2);
        assert_true(len >= strlen(line));
        assert_memory_equal(data, line, strlen(line));
        assert_int_equal(len, (turn + 1) * strlen(line));
        free(data);
    }
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* A redaction of a version still in the log (its id known, nothing read
 * since): the log is loaded and emptied first, and the content is in
 * none of the history's files. */
static void test_log_redact_pending(void **state)
{
    static const char *const inputs[] = {
        "{\"command\":\"create\",\"path\":\"/memories/s.md\",\"file_text\":\"token "
        "SECRET-77aa88bb99cc\\n\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/s.md\",\"old_str\":"
        "\"SECRET-77aa88bb99cc\",\"new_str\":\"[removed]\"}",
    };
    mt_test_store ts;
    mt_version *v = NULL;
    size_t n;
    (void)state;

    mt_test_store_init(&ts, NULL);
    changes_then_killed(&ts, inputs, 2);
    assert_true(in_log(&ts, "SECRET-77aa88bb99cc"));
    /* Version 1 is the create: the first version of a new history. */
    assert_int_equal(mt_memory_redact(ts.mem, 1), 0);
    assert_false(in_history_files(&ts, "SECRET-77aa88bb99cc"));
    assert_int_equal(mt_test_log_size(&ts), 0);
    n = mt_test_log(&v, ts.mem, "/memories/s.md", 10);
    assert_int_equal(n, 2);
    assert_int_equal(v[1].id, 1);
    assert_true(v[1].redacted);
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

/* Records bigger than a log read whole (4 MiB) are read one by one. */
typedef struct {
    int n;
    size_t lens[4];
    char first[4];
} rec_seen;

static int rec_note(void *payload, const mt_hist_rec *r)
{
    rec_seen *seen = payload;

    if (seen->n == 4)
        return -1;
    seen->lens[seen->n] = r->len;
    seen->first[seen->n] = r->len ? r->data[0] : '-';
    seen->n++;
    return 0;
}

/* A log bigger than one read (as a future memtool or a long batch could
 * leave) is read record by record: every whole record, in order, and none
 * from a record cut short onwards. */
static void test_log_reader_big(void **state)
{
    enum { BIG = 5 * 1024 * 1024 };
    mt_buf b = MT_BUF_INIT;
    mt_hist_rec r;
    rec_seen seen;
    char *big = malloc(BIG);
    uint64_t end = 0;
    size_t first_end, i;
    int fd;
    (void)state;

    assert_non_null(big);
    memset(big, 'B', BIG);
    memset(&r, 0, sizeof(r));
    r.op = MT_VERSION_CREATED;
    snprintf(r.memory_id, sizeof(r.memory_id), "mem_0123456789abcdef");
    memset(r.sha256, 'e', 64); /* not checked against the data here */
    r.path = "a.md";
    r.actor = "test";
    for (i = 0; i < 3; i++) {
        r.id = (int64_t)i + 1;
        r.data = i == 1 ? big : (i ? "zz" : "a");
        r.len = i == 1 ? BIG : (i ? 2 : 1);
        r.size = r.len;
        assert_int_equal(mt_hist_rec_encode(&b, &r), 0);
        if (i == 0)
            first_end = b.len;
    }
    fd = mt_test_temp_fd("hist-log");
    assert_int_equal(write(fd, b.ptr, b.len), (ssize_t)b.len);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(mt_hist_log_each(fd, &end, rec_note, &seen), 0);
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.lens[1], BIG);
    assert_int_equal(seen.first[0], 'a');
    assert_int_equal(seen.first[1], 'B');
    assert_int_equal(seen.first[2], 'z');
    assert_int_equal(end, b.len);
    /* Cut in the middle of the big record. */
    assert_int_equal(ftruncate(fd, (off_t)(first_end + BIG / 2)), 0);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(mt_hist_log_each(fd, &end, rec_note, &seen), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(end, first_end);
    close(fd);
    mt_buf_dispose(&b);
    free(big);
}

static void test_log_big_records(void **state)
{
    enum { BIG = 5 * 1024 * 1024 };
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char *json[2], *text;
    size_t n, i;
    int k;
    (void)state;

    mt_options_init(&o);
    o.max_file_size = 2 * BIG;
    mt_test_store_init(&ts, &o);
    text = malloc(BIG + 1);
    assert_non_null(text);
    for (i = 0; i < BIG; i++)
        text[i] = (char)('a' + i % 19);
    text[BIG] = '\0';
    memcpy(text, "FIRST", 5);
    for (k = 0; k < 2; k++) {
        json[k] = malloc(BIG + 256);
        assert_non_null(json[k]);
    }
    snprintf(json[0], BIG + 256,
             "{\"command\":\"create\",\"path\":\"/memories/b.md\",\"file_text\":\"%s\"}", text);
    snprintf(json[1], BIG + 256,
             "{\"command\":\"str_replace\",\"path\":\"/memories/b.md\",\"old_str\":\"FIRST\","
             "\"new_str\":\"OTHER\"}");
    /* Versions this big go straight into the database, not through the log. */
    changes_then_killed_with(&ts, &o, (const char *const *)json, 2);
    assert_int_equal(mt_test_log_size(&ts), 0);
    n = mt_test_log(&v, ts.mem, "/memories/b.md", 10);
    assert_int_equal(n, 2);
    for (i = 0; i < n; i++) {
        char *data;
        size_t len;
        memcpy(text, i == 0 ? "OTHER" : "FIRST", 5);
        assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[i].id), 0);
        assert_int_equal(len, BIG);
        assert_memory_equal(data, text, BIG);
        free(data);
    }
    assert_int_equal(mt_test_log_size(&ts), 0);
    mt_versions_free(v, n);
    for (k = 0; k < 2; k++)
        free(json[k]);
    free(text);
    mt_test_store_free(&ts);
}

static sqlite3 *hist_db(const mt_test_store *ts)
{
    char path[512];
    sqlite3 *db = NULL;

    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts->root);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static void sql_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : sqlite3_errmsg(db));
}

/* The history's content table as schemas 1 and 2 had it (each content's
 * count in its row), without schema 4's index of versions by time, marked
 * schema `version`. */
static void old_layout(const mt_test_store *ts, const char *version)
{
    char sql[1024];
    sqlite3 *db = hist_db(ts);

    snprintf(sql, sizeof(sql),
             "BEGIN;"
             "CREATE TABLE old(sha256 TEXT PRIMARY KEY, refs INTEGER NOT NULL, "
             "  data BLOB NOT NULL) WITHOUT ROWID;"
             "INSERT INTO old SELECT c.sha256, r.refs, c.data FROM contents c "
             "  JOIN content_refs r USING (sha256);"
             "DROP TABLE contents; DROP TABLE content_refs;"
             "ALTER TABLE old RENAME TO contents;"
             "DROP INDEX versions_at;"
             "UPDATE meta SET value = '%s' WHERE key = 'schema';"
             "COMMIT;",
             version);
    sql_ok(db, sql);
    sqlite3_close(db);
}

/* The history's schema in its meta table, read or set through SQLite. */
static void schema_set(const mt_test_store *ts, const char *value)
{
    char path[512], sql[128];

    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts->root);
    snprintf(sql, sizeof(sql), "UPDATE meta SET value = '%s' WHERE key = 'schema'", value);
    mt_test_sql_exec(path, sql);
}

static int schema_get(const mt_test_store *ts)
{
    char path[512];
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int version = -1;

    snprintf(path, sizeof(path), "%s/.memtool/history.db", ts->root);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema'", -1, &s, NULL),
        SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return version;
}

/* A history of schema 1 (from before versions could wait in its log) is
 * brought to 4 when this memtool opens it, so that a memtool that knows only
 * 1, which would not load the log, refuses it from then on; a newer schema
 * is refused here with the same error. */
static void test_schema_marked(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    size_t n;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 1);
    mt_versions_free(v, n);
    mt_memory_free(ts.mem);
    assert_int_equal(schema_get(&ts), 4);
    old_layout(&ts, "1");
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, NULL), 0);
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"one\",\"new_str\":\"two\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 2);
    mt_versions_free(v, n);
    mt_memory_free(ts.mem);
    assert_int_equal(schema_get(&ts), 4);
    schema_set(&ts, "5");
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, NULL), 0);
    assert_true(mt_memory_log(&v, &n, ts.mem, NULL) < 0);
    assert_non_null(strstr(mt_error_last()->message, "schema 5, and this memtool knows 4"));
    mt_test_store_free(&ts);
}

/* The first column of the first row of sql, ?1 bound to text (-1: no row). */
static long sql_long(sqlite3 *db, const char *sql, const char *text)
{
    sqlite3_stmt *s = NULL;
    long v = -1;

    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (text)
        sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = (long)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The count content_refs holds for text's content (-1: none). */
static long refs_of(sqlite3 *db, const char *text)
{
    char sha[65];

    sha_hex(sha, text, strlen(text));
    return sql_long(db, "SELECT refs FROM content_refs WHERE sha256 = ?1", sha);
}

/* Whether the contents table holds text's content. */
static int kept(sqlite3 *db, const char *text)
{
    char sha[65];

    sha_hex(sha, text, strlen(text));
    return sql_long(db, "SELECT count(*) FROM contents WHERE sha256 = ?1", sha) == 1;
}

/* A version recorded by schema 2's statements, which kept a content and its
 * count in one row. */
static void schema2_put(sqlite3 *db, int64_t id, const char *memory_id, int op, const char *path,
                        const char *text)
{
    sqlite3_stmt *s = NULL;
    char sha[65];

    if (text) {
        sha_hex(sha, text, strlen(text));
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "INSERT INTO contents(sha256, refs, data) VALUES "
                                            "(?1, 1, ?2) ON CONFLICT(sha256) DO UPDATE SET "
                                            "refs = refs + 1",
                                            -1, &s, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(s, 1, sha, -1, SQLITE_STATIC);
        sqlite3_bind_blob(s, 2, text, (int)strlen(text), SQLITE_STATIC);
        assert_int_equal(sqlite3_step(s), SQLITE_DONE);
        sqlite3_finalize(s);
    }
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO versions(id, memory_id, op, path, "
                                        "previous_path, actor, at, sha256, size) VALUES (?9, ?1, "
                                        "?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                        -1, &s, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(s, 1, memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, op);
    sqlite3_bind_text(s, 3, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, "library", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, (int64_t)time(NULL) * 1000);
    if (text)
        sqlite3_bind_text(s, 7, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 8, text ? (int64_t)strlen(text) : 0);
    sqlite3_bind_int64(s, 9, id);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
}

/*
 * A history of schema 2 kept each content's count in the content's row.
 * Opened by this memtool (by several processes at once), it is schema 3 with
 * every count, content and version kept; a redaction and a prune then free
 * exactly the contents whose last version goes.
 */
static void test_schema_upgrade(void **state)
{
    enum { OPENERS = 4 };
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char path_b[256];
    mt_test_barrier go;
    int i, status;
    pid_t pids[OPENERS];
    sqlite3 *db;
    size_t n;
    (void)state;

    mt_test_store_init(&ts, NULL);
    /* One, two, one again: "one\n" is held by two versions of a.md. */
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"one\",\"new_str\":\"two\"}");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"two\",\"new_str\":\"one\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 3);
    mt_versions_free(v, n);
    mt_memory_free(ts.mem);
    ts.mem = NULL;
    assert_true(mt_test_log_size(&ts) <= 0);

    /* Schema 2's table, then versions added by schema 2's own statements:
     * b.md made with "one\n" (its third reference) and deleted. */
    old_layout(&ts, "2");
    db = hist_db(&ts);
    {
        sqlite3_stmt *s = NULL;
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT replace(path, 'a.md', 'b.md') FROM versions "
                                            "WHERE id = 1",
                                            -1, &s, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        snprintf(path_b, sizeof(path_b), "%s", (const char *)sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
    }
    schema2_put(db, 4, "mem_00000000000000bb", MT_VERSION_CREATED, path_b, "one\n");
    schema2_put(db, 5, "mem_00000000000000bb", MT_VERSION_DELETED, path_b, NULL);
    assert_int_equal(sql_long(db,
                              "SELECT refs FROM contents WHERE sha256 = "
                              "(SELECT sha256 FROM versions WHERE id = 1)",
                              NULL),
                     3);
    sqlite3_close(db);
    assert_int_equal(schema_get(&ts), 2);

    /* Several processes open it at once: one upgrades, the others find it done. */
    mt_test_barrier_make(&go);
    for (i = 0; i < OPENERS; i++) {
        pids[i] = mt_test_fork(pids, (size_t)i);
        if (pids[i] == 0) {
            mt_memory *mem = NULL;
            mt_version *cv = NULL;
            size_t cn = 0;
            int bad;
            bad = mt_test_barrier_wait(&go) < 0 || mt_memory_open(&mem, ts.root, NULL) < 0;
            bad = bad || mt_memory_log(&cv, &cn, mem, NULL) < 0 || cn != 5;
            if (!bad)
                mt_versions_free(cv, cn);
            _exit(bad);
        }
    }
    mt_test_barrier_release(&go); /* all start */
    for (i = 0; i < OPENERS; i++) {
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(schema_get(&ts), 4);
    db = hist_db(&ts);
    assert_int_equal(
        sql_long(db, "SELECT count(*) FROM pragma_table_info('contents') WHERE name = 'refs'",
                 NULL),
        0);
    assert_int_equal(
        sql_long(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'versions_at'", NULL), 1);
    assert_int_equal(refs_of(db, "one\n"), 3);
    assert_int_equal(refs_of(db, "two\n"), 1);
    assert_int_equal(sql_long(db, "SELECT count(*) FROM versions", NULL), 5);

    mt_options_init(&o);
    o.history_keep = 1;
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, &o), 0);
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 3);
    {
        static const char *const want[] = {"one\n", "two\n", "one\n"};
        contents_are(ts.mem, v, n, want);
    }
    /* "two" has one version: redacted, it is gone. */
    assert_int_equal(mt_memory_redact(ts.mem, v[1].id), 0);
    mt_versions_free(v, n);
    assert_false(kept(db, "two\n"));
    assert_int_equal(refs_of(db, "two\n"), -1);
    assert_true(kept(db, "one\n"));
    /* A change with a cap of one version prunes a.md's two of "one":
     * b.md's still holds it. */
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":"
                       "\"one\",\"new_str\":\"three\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 1);
    mt_versions_free(v, n);
    assert_int_equal(refs_of(db, "one\n"), 1);
    assert_true(kept(db, "one\n"));
    /* Its last version redacted, it goes too. */
    assert_int_equal(mt_memory_redact(ts.mem, 4), 0);
    assert_false(kept(db, "one\n"));
    assert_int_equal(refs_of(db, "one\n"), -1);
    assert_int_equal(refs_of(db, "three\n"), 1);
    assert_int_equal(sql_long(db, "SELECT count(*) FROM contents", NULL), 1);
    assert_int_equal(sql_long(db, "SELECT count(*) FROM content_refs", NULL), 1);
    sqlite3_close(db);
    mt_test_store_free(&ts);
}

/* An upgrade that fails part way (here: an index on the old count keeps
 * its column from going) leaves the database as it was, and says so. */
static void test_schema_upgrade_atomic(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    size_t n = 0;
    sqlite3 *db;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_ok(ts.mem,
               "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"one\\n\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    mt_versions_free(v, n);
    mt_memory_free(ts.mem);
    ts.mem = NULL;
    old_layout(&ts, "2");
    db = hist_db(&ts);
    sql_ok(db, "CREATE INDEX contents_refs ON contents(refs)");
    sqlite3_close(db);
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, NULL), 0);
    assert_true(mt_memory_log(&v, &n, ts.mem, NULL) < 0);
    assert_non_null(strstr(mt_error_last()->message, "cannot upgrade it from schema 2 to 4"));
    assert_int_equal(schema_get(&ts), 2);
    db = hist_db(&ts);
    assert_int_equal(
        sql_long(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'content_refs'", NULL), 0);
    assert_int_equal(sql_long(db, "SELECT refs FROM contents", NULL), 1);
    sqlite3_close(db);
    mt_test_store_free(&ts);
}

/* The size of a file of the store's reserved directory (0: none). */
static long reserved_size(const mt_test_store *ts, const char *name)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/.memtool/%s", ts->root, name);
    return stat(path, &sb) == 0 ? (long)sb.st_size : 0;
}

/* A content the history holds already, recorded again (an edit undone),
 * costs a count, not a copy: the database and its log grow by a few pages,
 * nothing near the content's size. */
static void test_recurring_content(void **state)
{
    enum { BIG = 8 * 1024 * 1024 };
    static const char *const edits[] = {
        "{\"command\":\"str_replace\",\"path\":\"/memories/big.md\",\"old_str\":\"FIRST\","
        "\"new_str\":\"OTHER\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/big.md\",\"old_str\":\"OTHER\","
        "\"new_str\":\"FIRST\"}",
    };
    mt_test_store ts;
    mt_options o;
    mt_version *v = NULL;
    char *text, *data;
    long wal, db;
    size_t n, len;
    (void)state;

    mt_options_init(&o);
    o.max_file_size = 2 * BIG;
    mt_test_store_init(&ts, &o);
    text = big_create(ts.mem, BIG, 19, 0, "FIRST");
    mt_test_ok(ts.mem, edits[0]);
    /* The last close leaves the database's log empty. */
    mt_memory_free(ts.mem);
    assert_int_equal(mt_memory_open(&ts.mem, ts.root, &o), 0);
    assert_int_equal(reserved_size(&ts, "history.db-wal"), 0);
    db = reserved_size(&ts, "history.db");
    /* The first content again. */
    mt_test_ok(ts.mem, edits[1]);
    wal = reserved_size(&ts, "history.db-wal");
    if (wal >= BIG / 16)
        fail_msg("recording a content kept already wrote %ld bytes of log", wal);
    /* Nor did it go through the history's own log of versions. */
    if (mt_test_log_size(&ts) >= BIG / 16)
        fail_msg("recording a content kept already wrote %ld bytes of history.log",
                 mt_test_log_size(&ts));
    n = mt_test_log(&v, ts.mem, "/memories/big.md", 10);
    assert_int_equal(n, 3);
    assert_int_equal(mt_memory_version_content(&data, &len, ts.mem, v[0].id), 0);
    assert_int_equal(len, BIG);
    assert_memory_equal(data, text, BIG);
    free(data);
    mt_versions_free(v, n);
    mt_memory_free(ts.mem);
    ts.mem = NULL;
    if (reserved_size(&ts, "history.db") - db >= BIG / 16)
        fail_msg("the database grew by %ld bytes", reserved_size(&ts, "history.db") - db);
    free(text);
    mt_test_store_free(&ts);
}

/* A change that leaves the content as it was records no version (the
 * memory-store API's rule): an edit to the same bytes, a restore of the
 * content held; undo passes over a rename to the content that differs. */
static void test_no_op_changes(void **state)
{
    mt_test_store ts;
    mt_version *v = NULL;
    int64_t now = -1, restored = -1;
    size_t n;
    (void)state;

    mt_test_store_init(&ts, NULL);
    mt_test_create(ts.mem, "a.md", "one");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\","
                       "\"old_str\":\"one\",\"new_str\":\"two\"}");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\","
                       "\"old_str\":\"two\",\"new_str\":\"two\"}");
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 2);
    mt_versions_free(v, n);
    /* Version 2 is the content now: 0, and no new version. */
    assert_int_equal(mt_memory_restore(&now, ts.mem, 2), 0);
    assert_int_equal(now, 0);
    n = mt_test_log(&v, ts.mem, "/memories/a.md", 10);
    assert_int_equal(n, 2);
    mt_versions_free(v, n);
    /* A rename is a version; undo goes past it, to "one". */
    mt_test_ok(ts.mem, "{\"command\":\"rename\",\"old_path\":\"/memories/a.md\","
                       "\"new_path\":\"/memories/b.md\"}");
    assert_int_equal(mt_memory_undo(&now, &restored, ts.mem, "/memories/b.md"), 0);
    assert_int_equal(restored, 1);
    assert_int_equal(now, 4);
    /* Every earlier content differs from "one" but version 1's: back to "two". */
    assert_int_equal(mt_memory_undo(&now, &restored, ts.mem, "/memories/b.md"), 0);
    assert_int_equal(restored, 3);
    assert_int_equal(now, 5);
    /* A memory whose every version holds its content has nothing to undo. */
    mt_test_create(ts.mem, "c.md", "same");
    mt_test_ok(ts.mem, "{\"command\":\"rename\",\"old_path\":\"/memories/c.md\","
                       "\"new_path\":\"/memories/d.md\"}");
    assert_int_equal(mt_memory_undo(&now, &restored, ts.mem, "/memories/d.md"), MT_ENOTFOUND);
    assert_non_null(strstr(mt_error_last()->message, "nothing to undo"));
    assert_int_equal(now, 0);
    n = mt_test_log(&v, ts.mem, "/memories/d.md", 10);
    assert_int_equal(n, 2);
    mt_versions_free(v, n);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes_one_chain),
        cmocka_unit_test(test_kill_any_moment),
        cmocka_unit_test(test_damaged_history),
        cmocka_unit_test(test_gone_from_disk),
        cmocka_unit_test(test_history_off),
        cmocka_unit_test(test_big_content),
        cmocka_unit_test(test_big_hashed_aside),
        cmocka_unit_test(test_log_kill_after_append),
        cmocka_unit_test(test_log_torn_record),
        cmocka_unit_test(test_unnameable_not_recorded),
        cmocka_unit_test(test_log_processes_in_order),
        cmocka_unit_test(test_log_redact_pending),
        cmocka_unit_test(test_log_big_records),
        cmocka_unit_test(test_log_reader_big),
        cmocka_unit_test(test_schema_marked),
        cmocka_unit_test(test_schema_upgrade),
        cmocka_unit_test(test_schema_upgrade_atomic),
        cmocka_unit_test(test_recurring_content),
        cmocka_unit_test(test_no_op_changes),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* memtool server's API keys file (src/httpd/keys.c): what a key opens, that
 * a revoke reaches a running server, and that the file holds no key. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <memtool.h>
#include <memtool/store.h>

#include "httpd/keys.h"

#define WORKERS 8

typedef struct {
    char dir[256];
    char path[300];
} scratch;

static int setup(void **state)
{
    scratch *s = calloc(1, sizeof(*s));
    const char *tmp = getenv("TMPDIR");

    assert_non_null(s);
    snprintf(s->dir, sizeof(s->dir), "%s/mt-keys-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(s->dir));
    /* A directory that does not exist yet: add makes it. */
    snprintf(s->path, sizeof(s->path), "%s/conf/memtool/keys", s->dir);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    scratch *s = *state;
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
    free(s);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 20);
    size_t n;

    assert_non_null(f);
    assert_non_null(buf);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *add(const char *path, const char *tenant, int ro, int admin, mt_key_info *info)
{
    char *key = NULL;

    if (mt_keys_add(&key, info, path, tenant, ro, admin) < 0)
        fail_msg("mt_keys_add: %s", mt_error_last()->message);
    assert_non_null(key);
    return key;
}

static void test_add_then_check(void **state)
{
    scratch *s = *state;
    mt_keys *k = NULL;
    mt_key_info rw, ro, got;
    char *key_rw = add(s->path, "alice", 0, 1, &rw);
    char *key_ro = add(s->path, "bob", 1, 0, &ro);
    struct stat st;
    size_t i;

    assert_int_equal(strlen(key_rw), 47);
    assert_memory_equal(key_rw, "mtk_", 4);
    for (i = 4; i < 47; i++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", key_rw[i]));
    assert_int_equal(strlen(rw.id), 23);
    assert_memory_equal(rw.id, "apikey_", 7);
    assert_string_not_equal(rw.id, ro.id);
    assert_true(rw.created_ms > 1700000000000LL);

    assert_int_equal(mt_keys_open(&k, s->path), 0);
    assert_int_equal(mt_keys_check(&got, k, key_rw, strlen(key_rw)), 0);
    assert_string_equal(got.id, rw.id);
    assert_string_equal(got.tenant, "alice");
    assert_int_equal(got.read_only, 0);
    assert_int_equal(got.admin, 1);
    assert_true(got.created_ms == rw.created_ms);
    assert_int_equal(mt_keys_check(&got, k, key_ro, strlen(key_ro)), 0);
    assert_string_equal(got.tenant, "bob");
    assert_int_equal(got.read_only, 1);
    assert_int_equal(got.admin, 0);

    /* The file and its directory are the owner's alone. */
    assert_int_equal(stat(s->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    {
        char dir[300];
        snprintf(dir, sizeof(dir), "%s/conf/memtool", s->dir);
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
    }
    mt_keys_free(k);
    free(key_rw);
    free(key_ro);
}

static void test_wrong_keys(void **state)
{
    scratch *s = *state;
    mt_keys *k = NULL;
    mt_key_info got;
    char *key = add(s->path, "alice", 0, 0, NULL), *near = strdup(key);
    size_t i;

    assert_int_equal(mt_keys_open(&k, s->path), 0);
    assert_int_equal(mt_keys_check(&got, k, "mtk_nope", 8), MT_ENOTFOUND);
    assert_int_equal(mt_keys_check(&got, k, "", 0), MT_ENOTFOUND);
    assert_int_equal(mt_keys_check(&got, k, key, strlen(key) - 1), MT_ENOTFOUND);
    /* Each one-character change, anywhere in the key, opens nothing. */
    for (i = 0; i < strlen(key); i++) {
        near[i] = key[i] == 'A' ? 'B' : 'A';
        assert_int_equal(mt_keys_check(&got, k, near, strlen(near)), MT_ENOTFOUND);
        near[i] = key[i];
    }
    assert_int_equal(mt_keys_check(&got, k, near, strlen(near)), 0);
    mt_keys_free(k);
    free(key);
    free(near);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A revoke reaches an mt_keys opened before it, within a second. */
static void test_revoke_reloads(void **state)
{
    scratch *s = *state;
    mt_keys *k = NULL;
    mt_key_info info, got;
    char *key = add(s->path, "alice", 0, 0, &info), *other = add(s->path, "bob", 0, 0, NULL);
    int64_t start;
    int rc;

    assert_int_equal(mt_keys_open(&k, s->path), 0);
    assert_int_equal(mt_keys_check(&got, k, key, strlen(key)), 0);
    assert_int_equal(mt_keys_revoke(s->path, info.id), 0);
    assert_int_equal(mt_keys_revoke(s->path, info.id), MT_ENOTFOUND);
    assert_int_equal(mt_keys_revoke(s->path, "apikey_0000000000000000"), MT_ENOTFOUND);
    start = now_ms();
    while ((rc = mt_keys_check(&got, k, key, strlen(key))) == 0 && now_ms() - start < 1000)
        usleep(10000);
    assert_int_equal(rc, MT_ENOTFOUND);
    assert_int_equal(mt_keys_check(&got, k, other, strlen(other)), 0);

    /* A key added meanwhile is seen too. */
    free(key);
    key = add(s->path, "carol", 1, 0, NULL);
    start = now_ms();
    while ((rc = mt_keys_check(&got, k, key, strlen(key))) != 0 && now_ms() - start < 1000)
        usleep(10000);
    assert_int_equal(rc, 0);
    assert_string_equal(got.tenant, "carol");
    mt_keys_free(k);
    free(key);
    free(other);
}

/* A file that stops parsing keeps the keys read before; one removed is no keys. */
static void test_reload_broken_and_removed(void **state)
{
    scratch *s = *state;
    mt_keys *k = NULL;
    mt_key_info got;
    char *key = add(s->path, "alice", 0, 0, NULL);
    FILE *f;
    int rc;

    assert_int_equal(mt_keys_open(&k, s->path), 0);
    f = fopen(s->path, "a");
    assert_non_null(f);
    fputs("this is not a key line\n", f);
    fclose(f);
    usleep(300000);
    assert_int_equal(mt_keys_check(&got, k, key, strlen(key)), 0);
    assert_int_equal(unlink(s->path), 0);
    usleep(300000);
    rc = mt_keys_check(&got, k, key, strlen(key));
    assert_int_equal(rc, MT_ENOTFOUND);
    mt_keys_free(k);
    free(key);
}

static void test_modes_and_missing(void **state)
{
    scratch *s = *state;
    mt_keys *k = NULL;
    mt_key_info got;
    char *key = add(s->path, "alice", 0, 0, NULL);

    assert_int_equal(chmod(s->path, 0644), 0);
    assert_int_equal(mt_keys_open(&k, s->path), MT_EINVAL);
    assert_null(k);
    assert_non_null(strstr(mt_error_last()->message, "chmod 600"));
    assert_int_equal(chmod(s->path, 0620), 0);
    assert_int_equal(mt_keys_open(&k, s->path), MT_EINVAL);
    assert_int_equal(chmod(s->path, 0600), 0);
    assert_int_equal(mt_keys_open(&k, s->path), 0);
    mt_keys_free(k);

    /* No file: no keys, and no error. */
    assert_int_equal(unlink(s->path), 0);
    assert_int_equal(mt_keys_open(&k, s->path), 0);
    assert_int_equal(mt_keys_check(&got, k, key, strlen(key)), MT_ENOTFOUND);
    mt_keys_free(k);
    free(key);
}

static void test_file_holds_no_key(void **state)
{
    scratch *s = *state;
    mt_key_info a, b;
    char *ka = add(s->path, "alice", 0, 1, &a), *kb = add(s->path, "bob", 1, 0, &b);
    char *text = slurp(s->path);

    assert_null(strstr(text, ka));
    assert_null(strstr(text, ka + 4)); /* nor its random part */
    assert_null(strstr(text, kb + 4));
    {
        static const char header[] = "# memtool server keys: id, tenant, access, admin, created "
                                     "(ms), SHA-256 of the key\n";
        assert_memory_equal(text, header, sizeof(header) - 1);
    }
    assert_non_null(strstr(text, a.id));
    assert_non_null(strstr(text, "\talice\trw\tadmin\t"));
    assert_non_null(strstr(text, "\tbob\tro\t-\t"));
    free(text);
    free(ka);
    free(kb);
}

static void test_list(void **state)
{
    scratch *s = *state;
    mt_key_info a, b, *list = NULL;
    char *ka = add(s->path, "alice", 0, 1, &a), *kb = add(s->path, "bob", 1, 0, &b);
    size_t n = 99;

    assert_int_equal(mt_keys_list(&list, &n, s->path), 0);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].id, a.id);
    assert_string_equal(list[0].tenant, "alice");
    assert_int_equal(list[0].admin, 1);
    assert_string_equal(list[1].id, b.id);
    assert_int_equal(list[1].read_only, 1);
    free(list);
    assert_int_equal(mt_keys_revoke(s->path, a.id), 0);
    assert_int_equal(mt_keys_list(&list, &n, s->path), 0);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].id, b.id);
    free(list);
    free(ka);
    free(kb);

    /* A file that does not exist lists nothing. */
    assert_int_equal(unlink(s->path), 0);
    assert_int_equal(mt_keys_list(&list, &n, s->path), 0);
    assert_int_equal(n, 0);
    assert_null(list);
}

static void test_bad_tenants(void **state)
{
    scratch *s = *state;
    static const char *const bad[] = {"a~b",        "../x",     "",    ".",    "..",  ".memtool",
                                      ".memtool-x", ".mt-tmp1", "a/b", "a\tb", "a\nb"};
    char *key = (char *)"untouched", long_name[300];
    size_t i;
    struct stat st;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mt_keys_add(&key, NULL, s->path, bad[i], 0, 0), MT_EINVAL);
        assert_null(key);
    }
    memset(long_name, 'a', 256);
    long_name[256] = '\0';
    assert_int_equal(mt_keys_add(&key, NULL, s->path, long_name, 0, 0), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "255"));
    /* Nothing was written for them. */
    assert_int_not_equal(stat(s->path, &st), 0);
    long_name[255] = '\0';
    key = add(s->path, long_name, 0, 0, NULL);
    free(key);
}

/* WORKERS processes adding at once: the lock keeps every key. */
static void test_concurrent_adds(void **state)
{
    scratch *s = *state;
    pid_t pids[WORKERS];
    mt_key_info *list = NULL;
    size_t n, i, j;
    int status, w;

    for (w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            char tenant[32], *key = NULL;
            int ok = 1;

            for (i = 0; i < 5; i++) {
                snprintf(tenant, sizeof(tenant), "w%d-%zu", w, i);
                ok &= mt_keys_add(&key, NULL, s->path, tenant, 0, 0) == 0;
                free(key);
            }
            _exit(ok ? 0 : 1);
        }
    }
    for (w = 0; w < WORKERS; w++) {
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(mt_keys_list(&list, &n, s->path), 0);
    assert_int_equal(n, WORKERS * 5);
    for (w = 0; w < WORKERS; w++) {
        for (i = 0; i < 5; i++) {
            char tenant[32];
            int seen = 0;

            snprintf(tenant, sizeof(tenant), "w%d-%zu", w, i);
            for (j = 0; j < n; j++)
                seen += strcmp(list[j].tenant, tenant) == 0;
            assert_int_equal(seen, 1);
        }
    }
    free(list);
}

static void test_default_path(void **state)
{
    char *p;

    (void)state;
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    p = mt_keys_default_path();
    assert_string_equal(p, "/xdg/memtool/keys");
    free(p);
    unsetenv("XDG_CONFIG_HOME");
    p = mt_keys_default_path();
    assert_string_equal(p, "/home/u/.config/memtool/keys");
    free(p);
    unsetenv("HOME");
    assert_null(mt_keys_default_path());
    assert_int_equal(mt_error_last()->code, MT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_then_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke_reloads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_broken_and_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_holds_no_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_tenants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_adds, setup, teardown),
        cmocka_unit_test(test_default_path),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The public API: handles, options, errors, tool_result blocks, durability. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

static void test_arguments(void **state)
{
    mt_test_store ts;
    mt_result res;
    (void)state;
    mt_test_store_init(&ts, NULL);
    assert_int_equal(mt_memory_call(&res, NULL, "{}", 2), MT_EINVAL);
    assert_null(res.text);
    assert_int_equal(mt_memory_call(NULL, ts.mem, "{}", 2), MT_EINVAL);
    assert_int_equal(mt_memory_call_object(&res, ts.mem, NULL), MT_EINVAL);
    assert_int_equal(mt_error_last()->code, MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "mt_memory_call_object"));
    /* Empty input is a tool error, not a fault. */
    assert_int_equal(mt_memory_call(&res, ts.mem, NULL, 0), 0);
    assert_true(res.is_error);
    assert_non_null(strstr(res.text, "not valid JSON"));
    mt_result_dispose(&res);
    mt_result_dispose(NULL);
    mt_memory_free(NULL);
    mt_test_store_free(&ts);
}

static void test_options(void **state)
{
    mt_options o;
    mt_memory *m = NULL;
    mt_durability d;
    (void)state;
    mt_options_init(&o);
    assert_int_equal(o.max_file_size, 1048576);
    assert_int_equal(o.max_store_size, 104857600);
    assert_int_equal(o.max_files, 10000);
    assert_int_equal(o.view_limit, 16000);
    assert_int_equal(o.durability, MT_DURABILITY_FULL);
    o.version = 99;
    assert_int_equal(mt_memory_open(&m, "/tmp/never-made-by-memtool-test", &o), MT_EINVAL);
    assert_null(m);
    assert_int_equal(access("/tmp/never-made-by-memtool-test", F_OK), -1);
    mt_options_init(&o);
    o.view_limit = 10;
    assert_int_equal(mt_memory_open(&m, "/tmp/never-made-by-memtool-test", &o), MT_EINVAL);
    assert_int_equal(mt_durability_parse(&d, "file"), 0);
    assert_int_equal(d, MT_DURABILITY_FILE);
    assert_int_equal(mt_durability_parse(&d, "none"), 0);
    assert_int_equal(d, MT_DURABILITY_NONE);
    assert_int_equal(mt_durability_parse(&d, "FULL"), MT_EINVAL);
    assert_int_equal(mt_durability_parse(&d, NULL), MT_EINVAL);
}

static void test_root(void **state)
{
    mt_test_store ts;
    mt_memory *m = NULL;
    char path[400];
    struct stat sb;
    int fd;
    (void)state;
    mt_test_store_init(&ts, NULL);
    /* Made if missing, 0700; its parents too. */
    assert_int_equal(stat(ts.root, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0700);
    snprintf(path, sizeof(path), "%s/a/b/c", ts.dir);
    assert_int_equal(mt_memory_open(&m, path, NULL), 0);
    mt_memory_free(m);
    /* A root that is a file is refused with a message that names it. */
    snprintf(path, sizeof(path), "%s/file", ts.dir);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    close(fd);
    assert_int_equal(mt_memory_open(&m, path, NULL), MT_EIO);
    assert_null(m);
    assert_non_null(strstr(mt_error_last()->message, path));
    mt_test_store_free(&ts);
}

/* must_exist: a store, a tenant, an SQLite file that is not there is
 * MT_ENOTFOUND naming it, and nothing is made; a version 5 struct (before
 * the field) still makes what it opens. */
static void test_must_exist(void **state)
{
    mt_test_store ts;
    mt_memory *m = NULL;
    mt_options o;
    char path[400], url[420];
    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_options_init(&o);
    o.must_exist = 1;
    snprintf(path, sizeof(path), "%s/typo", ts.dir);
    assert_int_equal(mt_memory_open(&m, path, &o), MT_ENOTFOUND);
    assert_null(m);
    assert_non_null(strstr(mt_error_last()->message, "no store at"));
    assert_non_null(strstr(mt_error_last()->message, path));
    assert_int_equal(access(path, F_OK), -1);
    snprintf(url, sizeof(url), "sqlite:%s/typo.db", ts.dir);
    assert_int_equal(mt_memory_open_url(&m, url, &o), MT_ENOTFOUND);
    snprintf(path, sizeof(path), "%s/typo.db", ts.dir);
    assert_int_equal(access(path, F_OK), -1);
    /* The store is there, its tenant is not. */
    o.tenant = "bob";
    assert_int_equal(mt_memory_open(&m, ts.root, &o), MT_ENOTFOUND);
    assert_non_null(strstr(mt_error_last()->message, "no tenant 'bob'"));
    snprintf(path, sizeof(path), "%s/.memtool/tenants/bob", ts.root);
    assert_int_equal(access(path, F_OK), -1);
    /* The default tenant and a store that exists open; neither is read-only. */
    o.tenant = NULL;
    assert_int_equal(mt_memory_open(&m, ts.root, &o), 0);
    assert_int_equal(mt_memory_read_only(m), 0);
    mt_memory_free(m);
    assert_int_equal(mt_memory_read_only(NULL), 0);
    /* A version 5 struct knows nothing of must_exist: made as before. */
    mt_options_init(&o);
    o.version = 5;
    o.tenant = "bob";
    assert_int_equal(mt_memory_open(&m, ts.root, &o), 0);
    mt_memory_free(m);
    assert_int_equal(access(path, F_OK), 0);
    mt_test_store_free(&ts);
}

static void test_tool_result(void **state)
{
    mt_test_store ts;
    json_t *block, *out = NULL;
    char *s;
    (void)state;
    mt_test_store_init(&ts, NULL);
    block = json_pack("{s:s, s:i, s:s, s:{s:s, s:s}}", "type", "tool_use", "id", 7, "name",
                      "memory", "input", "command", "view", "path", "/memories");
    assert_int_equal(mt_memory_tool_result(&out, ts.mem, block), 0);
    s = json_dumps(out, JSON_COMPACT);
    /* A non-string id is not echoed: tool_use ids are strings. */
    assert_string_equal(s, "{\"type\":\"tool_result\",\"content\":\"Here're the files and "
                           "directories up to 2 levels deep in /memories, excluding hidden items "
                           "and node_modules:\\n0B\\t/memories\",\"is_error\":false}");
    free(s);
    json_decref(out);
    json_decref(block);
    block = json_pack("{s:s, s:s}", "command", "view", "path", "/x");
    assert_int_equal(mt_memory_tool_result(&out, ts.mem, block), 0);
    assert_true(json_is_true(json_object_get(out, "is_error")));
    assert_null(json_object_get(out, "tool_use_id"));
    json_decref(out);
    json_decref(block);
    assert_int_equal(mt_memory_tool_result(NULL, ts.mem, NULL), MT_EINVAL);
    mt_test_store_free(&ts);
}

static void test_durability_modes(void **state)
{
    static const mt_durability modes[] = {MT_DURABILITY_FULL, MT_DURABILITY_FILE,
                                          MT_DURABILITY_NONE};
    size_t i;
    (void)state;
    for (i = 0; i < 3; i++) {
        mt_test_store ts;
        mt_options o;
        char *data;
        mt_options_init(&o);
        o.durability = modes[i];
        mt_test_store_init(&ts, &o);
        mt_test_expect(ts.mem,
                       "{\"command\":\"create\",\"path\":\"/memories/d/f\",\"file_text\":\"x\"}", 0,
                       "File created successfully at: /memories/d/f");
        mt_test_expect(ts.mem,
                       "{\"command\":\"insert\",\"path\":\"/memories/d/f\",\"insert_line\":1,"
                       "\"insert_text\":\"y\"}",
                       0, "The file /memories/d/f has been edited.");
        data = mt_test_read(&ts, "d/f", NULL);
        assert_string_equal(data, "x\ny\n");
        free(data);
        mt_test_store_free(&ts);
    }
}

static void test_stale_temp_cleaned(void **state)
{
    mt_test_store ts;
    char path[400];
    int fd;
    (void)state;
    mt_test_store_init(&ts, NULL);
    /* What writers killed half way leave: temporaries (named with a closing
     * backslash, which no request can use), a file and a directory. Changes
     * run one at a time under the store's lock, so the change that counts the
     * store (its counter is missing here, as after a crash it is dirty) knows
     * that no writer owns them, however young they are. */
    snprintf(path, sizeof(path), "%s/.mt-tmp.dead\\", ts.root);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "partial", 7), 7);
    close(fd);
    snprintf(path, sizeof(path), "%s/.mt-tmp.tree\\", ts.root);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/.mt-tmp.tree\\/deep", ts.root);
    assert_int_equal(mkdir(path, 0700), 0);
    /* A request can no longer name a .mt-tmp. directory, nor the store's own. */
    mt_test_expect(
        ts.mem, "{\"command\":\"create\",\"path\":\"/memories/.mt-tmp.x/f\",\"file_text\":\"x\"}",
        1, "Error: Path /memories/.mt-tmp.x/f would escape /memories directory");
    mt_test_expect(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/.memtool/state\"}", 1,
                   "Error: Path /memories/.memtool/state would escape /memories directory");
    /* One made outside memtool is a user's directory, not a temporary. */
    snprintf(path, sizeof(path), "%s/.mt-tmp.x", ts.root);
    assert_int_equal(mkdir(path, 0700), 0);
    mt_test_expect(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/n\",\"file_text\":\"\"}",
                   0, "File created successfully at: /memories/n");
    snprintf(path, sizeof(path), "%s/.mt-tmp.dead\\", ts.root);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/.mt-tmp.tree\\", ts.root);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/.mt-tmp.x", ts.root);
    assert_int_equal(access(path, F_OK), 0);
    mt_test_store_free(&ts);
}

static void test_usage_counts_other_writers(void **state)
{
    mt_test_store ts;
    mt_options o;
    mt_memory *other;
    (void)state;
    mt_options_init(&o);
    o.max_files = 2;
    mt_test_store_init(&ts, &o);
    assert_int_equal(mt_memory_open(&other, ts.root, &o), 0);
    mt_test_expect(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"\"}",
                   0, "File created successfully at: /memories/a");
    mt_test_expect(other, "{\"command\":\"create\",\"path\":\"/memories/b\",\"file_text\":\"\"}", 0,
                   "File created successfully at: /memories/b");
    /* The first handle has not seen b yet; its count is refreshed within a second. */
    sleep(2);
    mt_test_expect(ts.mem, "{\"command\":\"create\",\"path\":\"/memories/c\",\"file_text\":\"\"}",
                   1,
                   "Error: Cannot create /memories/c: the store holds 2 files, the max files "
                   "limit is 2; delete or merge memory files that are no longer needed");
    mt_memory_free(other);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_root),
        cmocka_unit_test(test_must_exist),
        cmocka_unit_test(test_tool_result),
        cmocka_unit_test(test_durability_modes),
        cmocka_unit_test(test_stale_temp_cleaned),
        cmocka_unit_test(test_usage_counts_other_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

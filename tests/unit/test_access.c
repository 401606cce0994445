/*
 * A handle remembers what the store last said of each file's last access:
 * views of a working set of files ask the store once per file per grain,
 * however the paths' hashes fall, and a file's access is still asked for
 * once its remembered time is a grain old.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <memtool/store.h>

#include "helpers.h"
#include "core/memory.h"

static int (*inner_touch)(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms);
static size_t touches;

static int counting_touch(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms)
{
    touches++;
    return inner_touch(st, recorded, path, now_ms);
}

/* Written straight into the store's directory: only the views matter here. */
static void create_files(const mt_test_store *ts, size_t files)
{
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "%s/w", ts->root);
    assert_int_equal(mkdir(path, 0700), 0);
    for (size_t i = 0; i < files; i++) {
        snprintf(path, sizeof(path), "%s/w/f%03zu.md", ts->root, i);
        assert_non_null(f = fopen(path, "w"));
        assert_true(fputs("x\n", f) >= 0);
        assert_int_equal(fclose(f), 0);
    }
}

static mt_memory *counting_memory(const mt_test_store *ts)
{
    mt_store *st;
    mt_memory *mem;

    assert_int_equal(mt_store_fs_open(&st, ts->root, MT_DURABILITY_NONE), 0);
    inner_touch = st->touch;
    st->touch = counting_touch;
    touches = 0;
    assert_int_equal(mt_memory_new(&mem, st, NULL), 0);
    return mem;
}

static void view(mt_memory *mem, size_t i)
{
    char json[128], *text;
    int is_error;

    snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/w/f%03zu.md\"}", i);
    text = mt_test_call(mem, &is_error, json);
    assert_false(is_error);
    free(text);
}

/* 200 files viewed round robin, three times: the store is asked once each,
 * though 200 paths in the handle's sets must share some of them. */
static void test_working_set_asked_once(void **state)
{
    const size_t files = 200;
    mt_test_store ts;
    mt_memory *mem;
    (void)state;

    mt_test_store_init(&ts, NULL);
    create_files(&ts, files);
    mem = counting_memory(&ts);
    for (size_t round = 0; round < 3; round++) {
        for (size_t i = 0; i < files; i++)
            view(mem, i);
    }
    assert_int_equal(touches, files);
    mt_memory_free(mem);
    mt_test_store_free(&ts);
}

/* More files than the handle remembers: every view is still answered, and
 * a file pushed out is asked for again (never skipped on a guess). */
static void test_more_files_than_slots(void **state)
{
    const size_t files = MT_TOUCH_SLOTS + 200;
    mt_test_store ts;
    mt_memory *mem;
    (void)state;

    mt_test_store_init(&ts, NULL);
    create_files(&ts, files);
    mem = counting_memory(&ts);
    for (size_t i = 0; i < files; i++)
        view(mem, i);
    assert_int_equal(touches, files);
    for (size_t i = 0; i < files; i++)
        view(mem, i);
    /* At most MT_TOUCH_SLOTS are remembered: the rest were asked again. */
    assert_true(touches >= 2 * files - MT_TOUCH_SLOTS);
    mt_memory_free(mem);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_working_set_asked_once),
        cmocka_unit_test(test_more_files_than_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

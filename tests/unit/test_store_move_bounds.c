/*
 * A rename keeps what it moves within the op's max_depth and max_path_bytes
 * in the store's own step (include/memtool/store.h): a memory store's path
 * rules hold even for a file created beneath the source after the caller's
 * check. On the file store, the SQLite store and the file store encrypted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <memtool.h>
#include <memtool/store.h>

#include "helpers.h"

typedef struct {
    char dir[512];
    mt_store *st;
    mt_crypt_key *key;
} fixture;

static mt_store *open_kind(fixture *f, int kind)
{
    char path[600];
    mt_store *st = NULL;

    mt_test_scratch_make(f->dir, sizeof(f->dir), "move_bounds");
    switch (kind) {
    case 0:
        snprintf(path, sizeof(path), "%s/fs", f->dir);
        assert_int_equal(mt_store_fs_open(&st, path, 0), 0);
        break;
    case 1:
        snprintf(path, sizeof(path), "%s/store.sqlite", f->dir);
        assert_int_equal(mt_store_sqlite_open(&st, path, NULL, 0), 0);
        break;
    default:
        snprintf(path, sizeof(path), "%s/key", f->dir);
        assert_int_equal(mt_crypt_key_generate_file(path), 0);
        assert_int_equal(mt_crypt_key_load_file(&f->key, path), 0);
        snprintf(path, sizeof(path), "%s/fs", f->dir);
        assert_int_equal(mt_store_fs_open(&st, path, 0), 0);
        assert_int_equal(mt_store_crypt_wrap(&st, st, f->key), 0);
        break;
    }
    return st;
}

static void put(mt_store *st, const char *rel)
{
    mt_store_op op;

    mt_store_op_init(&op);
    assert_int_equal(st->create(st, &op, rel, "x\n", 2), 0);
}

static int present(mt_store *st, const char *rel)
{
    mt_node_type type;
    uint64_t size;

    return st->stat(st, &type, &size, rel) == 0;
}

static void check(int kind)
{
    fixture f = {0};
    mt_store *st = open_kind(&f, kind);
    mt_store_op op;

    /* Beneath a, b/c/f.md: 3 levels and 8 bytes. */
    put(st, "a/b/c/f.md");
    put(st, "a/g.md");

    mt_store_op_init(&op);
    op.max_depth = 4; /* x/y/b/c/f.md would be 5 deep */
    assert_int_equal(st->rename(st, &op, "a", "x/y"), MT_ELIMIT);
    assert_int_equal(op.refused, MT_LIMIT_DEPTH);
    assert_int_equal(op.limit, 4);
    assert_int_equal(op.would, 5);
    assert_true(present(st, "a/b/c/f.md"));
    assert_false(present(st, "x"));

    mt_store_op_init(&op);
    op.max_path_bytes = 13; /* "xyz/b/c/f.md" is 12; "xyzw/b/c/f.md" 13, "xyzwv/…" 14 */
    assert_int_equal(st->rename(st, &op, "a", "xyzwv"), MT_ELIMIT);
    assert_int_equal(op.refused, MT_LIMIT_PATH_BYTES);
    assert_int_equal(op.limit, 13);
    assert_int_equal(op.would, 14);
    assert_true(present(st, "a/b/c/f.md"));

    /* At the bounds exactly, the move goes. */
    mt_store_op_init(&op);
    op.max_depth = 4;
    op.max_path_bytes = 13;
    assert_int_equal(st->rename(st, &op, "a", "xyzw"), 0);
    assert_true(present(st, "xyzw/b/c/f.md"));

    /* A tree holding no regular file moves no file: no path to bound. */
    put(st, "e/x/f.md");
    mt_store_op_init(&op);
    assert_int_equal(st->remove(st, &op, "e/x/f.md"), 0);
    assert_true(present(st, "e/x"));
    mt_store_op_init(&op);
    op.max_path_bytes = 4;
    assert_int_equal(st->rename(st, &op, "e", "a-long-name"), 0);
    assert_true(present(st, "a-long-name/x"));
    /* A file's own path counts too; 0 keeps the store's own depth. */
    mt_store_op_init(&op);
    op.max_path_bytes = 8;
    assert_int_equal(st->rename(st, &op, "xyzw/g.md", "long/g.md"), MT_ELIMIT);
    assert_int_equal(op.refused, MT_LIMIT_PATH_BYTES);
    mt_store_op_init(&op);
    assert_int_equal(st->rename(st, &op, "xyzw/g.md", "long/g.md"), 0);

    st->free(st);
    mt_crypt_key_free(f.key);
    assert_int_equal(mt_test_scratch_remove(f.dir), 0);
}

static void test_fs(void **state)
{
    (void)state;
    check(0);
}

static void test_sqlite(void **state)
{
    (void)state;
    check(1);
}

static void test_fs_crypt(void **state)
{
    (void)state;
    check(2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fs),
        cmocka_unit_test(test_sqlite),
        cmocka_unit_test(test_fs_crypt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

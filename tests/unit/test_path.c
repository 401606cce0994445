/*
 * The path rules of SPEC section 1: every accepted and refused example, each
 * encoding form, and both sides of every limit.
 *
 * hostile_paths[] doubles as the seed list for tests/fuzz/corpus/path/
 * (hostile_NNN, one raw path per file, in table order).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/path.h"

typedef struct {
    const char *path;
    size_t len;
    mt_path_status status;
} hostile_path;

typedef struct {
    const char *path;
    size_t len;
    const char *rel;
} ordinary_path;

/* clang-format off */
#define REFUSE(lit, st) {lit, sizeof(lit) - 1, st}
#define ACCEPT(lit, rel) {lit, sizeof(lit) - 1, rel}
/* clang-format on */
#define OUT MT_PATH_NOT_UNDER_ROOT
#define ESC MT_PATH_ESCAPE

static const hostile_path hostile_paths[] = {
    /* Not under the root, including every SPEC example. */
    REFUSE("", OUT),
    REFUSE("/", OUT),
    REFUSE("/memoriesX/a", OUT),
    REFUSE("/memories_backup", OUT),
    REFUSE("//memories", OUT),
    REFUSE("memories/a", OUT),
    REFUSE("~", OUT),
    REFUSE("$HOME/x", OUT),
    REFUSE("file:///memories/a", OUT),
    REFUSE("file:///etc/passwd", OUT),
    REFUSE("/etc/passwd", OUT),
    REFUSE("/Memories/a", OUT),
    REFUSE("/MEMORIES", OUT),
    REFUSE("/memorie", OUT),
    REFUSE("/memories.", OUT),
    REFUSE("/memories..", OUT),
    REFUSE(" /memories", OUT),
    REFUSE("./memories/a", OUT),
    REFUSE("../memories/a", OUT),
    REFUSE("/tmp/../memories/a", OUT),
    REFUSE("\\memories\\a", OUT),
    REFUSE("/memories\\a", OUT),
    REFUSE("/memories%2fa", OUT),
    REFUSE("/memories\0/a", OUT),
    REFUSE("/memories\n/a", OUT),
    REFUSE("~/memories/a", OUT),
    /* Traversal. */
    REFUSE("/memories/..", ESC),
    REFUSE("/memories/../", ESC),
    REFUSE("/memories/../etc/passwd", ESC),
    REFUSE("/memories/../memories/a", ESC),
    REFUSE("/memories/a/..", ESC),
    REFUSE("/memories/a/../b", ESC),
    REFUSE("/memories/a/../../x", ESC),
    REFUSE("/memories/./../x", ESC),
    REFUSE("/memories//..//x", ESC),
    /* Percent-escapes of '.', '/', '\' and NUL, either case. */
    REFUSE("/memories/%2e%2e", ESC),
    REFUSE("/memories/%2E%2E", ESC),
    REFUSE("/memories/%2e%2E/etc/passwd", ESC),
    REFUSE("/memories/%2e", ESC),
    REFUSE("/memories/.%2e", ESC),
    REFUSE("/memories/file%2Etxt", ESC),
    REFUSE("/memories/a%2fb", ESC),
    REFUSE("/memories/a%2Fb", ESC),
    REFUSE("/memories/%2f..%2f..%2fetc", ESC),
    REFUSE("/memories/a%5cb", ESC),
    REFUSE("/memories/a%5Cb", ESC),
    REFUSE("/memories/..%5c..%5cx", ESC),
    REFUSE("/memories/a%00b", ESC),
    REFUSE("/memories/a%00", ESC),
    /* The %u form, either case. */
    REFUSE("/memories/%u002e%u002e", ESC),
    REFUSE("/memories/%u002E", ESC),
    REFUSE("/memories/%U002e", ESC),
    REFUSE("/memories/a%u002fb", ESC),
    REFUSE("/memories/a%u002Fb", ESC),
    REFUSE("/memories/a%u005cb", ESC),
    REFUSE("/memories/a%u005Cb", ESC),
    REFUSE("/memories/a%u0000b", ESC),
    /* Encoded again through %25, any number of times, and mixed levels. */
    REFUSE("/memories/%252e%252e", ESC),
    REFUSE("/memories/%252E", ESC),
    REFUSE("/memories/%25252e", ESC),
    REFUSE("/memories/%2525252e", ESC),
    REFUSE("/memories/%25252525252525252525252e", ESC),
    REFUSE("/memories/a%252fb", ESC),
    REFUSE("/memories/a%255cb", ESC),
    REFUSE("/memories/a%2500b", ESC),
    REFUSE("/memories/%25u002e", ESC),
    REFUSE("/memories/%2525u002f", ESC),
    REFUSE("/memories/%%32e", ESC),
    REFUSE("/memories/%%32%65", ESC),
    /* Percent-encoded overlong UTF-8 forms. */
    REFUSE("/memories/%c0%ae%c0%ae", ESC),
    REFUSE("/memories/%C0%AE", ESC),
    REFUSE("/memories/a%c0%afb", ESC),
    REFUSE("/memories/a%C0%AFb", ESC),
    REFUSE("/memories/a%c1%9cb", ESC),
    REFUSE("/memories/a%c0%80", ESC),
    REFUSE("/memories/%e0%80%ae", ESC),
    REFUSE("/memories/%e0%80%af", ESC),
    REFUSE("/memories/%f0%80%80%ae", ESC),
    REFUSE("/memories/%f8%80%80%80%ae", ESC),
    REFUSE("/memories/%fc%80%80%80%80%ae", ESC),
    REFUSE("/memories/%25c0%25ae", ESC),
    REFUSE("/memories/%c0%25ae", ESC),
    REFUSE("/memories/.%c0%ae", ESC),
    /* Control characters: C0, DEL, C1. */
    REFUSE("/memories/a\0b", ESC),
    REFUSE("/memories/a\x01"
           "b",
           ESC),
    REFUSE("/memories/a\tb", ESC),
    REFUSE("/memories/a\nb", ESC),
    REFUSE("/memories/a\rb", ESC),
    REFUSE("/memories/a\x1b[31mred", ESC),
    REFUSE("/memories/a\x1f", ESC),
    REFUSE("/memories/a\x7f", ESC),
    REFUSE("/memories/a\n100B\t/memories/forged", ESC),
    REFUSE("/memories/a\xC2\x80", ESC),
    REFUSE("/memories/a\xC2\x85", ESC),
    REFUSE("/memories/a\xC2\x9B", ESC),
    REFUSE("/memories/a\xC2\x9F", ESC),
    /* Backslash. */
    REFUSE("/memories/a\\b", ESC),
    REFUSE("/memories/..\\..\\etc", ESC),
    REFUSE("/memories/\\", ESC),
    /* Line and paragraph separators, bidirectional controls. */
    REFUSE("/memories/a\xE2\x80\xA8", ESC),
    REFUSE("/memories/a\xE2\x80\xA9", ESC),
    REFUSE("/memories/a\xE2\x80\xAA", ESC),
    REFUSE("/memories/a\xE2\x80\xAB", ESC),
    REFUSE("/memories/a\xE2\x80\xAC", ESC),
    REFUSE("/memories/a\xE2\x80\xAD", ESC),
    REFUSE("/memories/txt.\xE2\x80\xAEgpj.sh", ESC),
    REFUSE("/memories/a\xE2\x81\xA6", ESC),
    REFUSE("/memories/a\xE2\x81\xA7", ESC),
    REFUSE("/memories/a\xE2\x81\xA8", ESC),
    REFUSE("/memories/a\xE2\x81\xA9", ESC),
    /* Invalid UTF-8: overlong, surrogate, too high, truncated, stray. */
    REFUSE("/memories/\xC0\xAE\xC0\xAE", ESC),
    REFUSE("/memories/\xC0\xAF", ESC),
    REFUSE("/memories/\xC1\x9C", ESC),
    REFUSE("/memories/\xE0\x80\xAE\xE0\x80\xAE", ESC),
    REFUSE("/memories/\xF0\x80\x80\xAF", ESC),
    REFUSE("/memories/a\xED\xA0\x80", ESC),
    REFUSE("/memories/a\xED\xBF\xBF", ESC),
    REFUSE("/memories/a\xF4\x90\x80\x80", ESC),
    REFUSE("/memories/a\xF5\x80\x80\x80", ESC),
    REFUSE("/memories/a\xff", ESC),
    REFUSE("/memories/a\xfe", ESC),
    REFUSE("/memories/a\x80", ESC),
    REFUSE("/memories/a\xC3", ESC),
    REFUSE("/memories/a\xE2\x82", ESC),
    REFUSE("/memories/a\xF0\x9F\x98/b", ESC),
    /* A reserved temporary name as the last component. */
    REFUSE("/memories/.mt-tmp.", ESC),
    REFUSE("/memories/.mt-tmp.x", ESC),
    REFUSE("/memories/a/.mt-tmp.123456", ESC),
    REFUSE("/memories/.mt-tmp.x/", ESC),
    REFUSE("/memories/.mt-tmp.x/.", ESC),
    REFUSE("/memories/a/.mt-tmp.b//./", ESC),
    /* Reserved in every component, not only the last: a directory so named
     * would be taken for a temporary, or be the store's own. */
    REFUSE("/memories/.mt-tmp.x/a", ESC),
    REFUSE("/memories/a/.mt-tmp.x/b", ESC),
    REFUSE("/memories/.memtool", ESC),
    REFUSE("/memories/.memtool/state", ESC),
    REFUSE("/memories/.MEMTOOL/state", ESC),
    REFUSE("/memories/.MemTool", ESC),
    REFUSE("/memories/a/.memtool", ESC),
    REFUSE("/memories/./.memtool/", ESC),
};

static const ordinary_path ordinary_paths[] = {
    /* The root, however spelled. */
    ACCEPT("/memories", ""),
    ACCEPT("/memories/", ""),
    ACCEPT("/memories/.", ""),
    ACCEPT("/memories//", ""),
    ACCEPT("/memories/./", ""),
    ACCEPT("/memories/./././/.//", ""),
    /* Normalisation. */
    ACCEPT("/memories/./a//b/", "a/b"),
    ACCEPT("/memories/a/.", "a"),
    ACCEPT("/memories//a", "a"),
    ACCEPT("/memories/a/", "a"),
    ACCEPT("/memories/a/./b/./c/", "a/b/c"),
    ACCEPT("/memories/notes.txt", "notes.txt"),
    /* Ordinary names from the SPEC. */
    ACCEPT("/memories/..foo", "..foo"),
    ACCEPT("/memories/a..b", "a..b"),
    ACCEPT("/memories/...", "..."),
    ACCEPT("/memories/..../a", "..../a"),
    ACCEPT("/memories/foo..", "foo.."),
    ACCEPT("/memories/.hidden", ".hidden"),
    ACCEPT("/memories/report_50%.md", "report_50%.md"),
    ACCEPT("/memories/\xE7\xAC\x94\xE8\xAE\xB0.md", "\xE7\xAC\x94\xE8\xAE\xB0.md"),
    ACCEPT("/memories/\xEF\xBC\x8E\xEF\xBC\x8E/x", "\xEF\xBC\x8E\xEF\xBC\x8E/x"),
    ACCEPT("/memories/\xE2\x80\xA4\xE2\x80\xA4", "\xE2\x80\xA4\xE2\x80\xA4"),
    ACCEPT("/memories/\xEF\xBC\x8F", "\xEF\xBC\x8F"),
    ACCEPT("/memories/my notes/a b.txt", "my notes/a b.txt"),
    ACCEPT("/memories/ ", " "),
    ACCEPT("/memories/~", "~"),
    ACCEPT("/memories/$HOME", "$HOME"),
    ACCEPT("/memories/memories", "memories"),
    ACCEPT("/memories/\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"),
    /* Percent signs that escape nothing forbidden. */
    ACCEPT("/memories/100%", "100%"),
    ACCEPT("/memories/%", "%"),
    ACCEPT("/memories/%%", "%%"),
    ACCEPT("/memories/%2", "%2"),
    ACCEPT("/memories/%zz", "%zz"),
    ACCEPT("/memories/%.md", "%.md"),
    ACCEPT("/memories/a%20b", "a%20b"),
    ACCEPT("/memories/%41", "%41"),
    ACCEPT("/memories/a%25b", "a%25b"),
    ACCEPT("/memories/%252", "%252"),
    ACCEPT("/memories/%u", "%u"),
    ACCEPT("/memories/%u002", "%u002"),
    ACCEPT("/memories/%u00zz", "%u00zz"),
    ACCEPT("/memories/%u0041", "%u0041"),
    ACCEPT("/memories/%c3%a9", "%c3%a9"),
    ACCEPT("/memories/%ef%bc%8e", "%ef%bc%8e"),
    ACCEPT("/memories/%e2%80%ae", "%e2%80%ae"),
    ACCEPT("/memories/%c0", "%c0"),
    ACCEPT("/memories/%c0%41", "%c0%41"),
    ACCEPT("/memories/%e0%80", "%e0%80"),
    ACCEPT("/memories/%2d%5f", "%2d%5f"),
    /* Just outside each refused range. */
    ACCEPT("/memories/a\x20", "a "),
    ACCEPT("/memories/a\x7e", "a~"),
    ACCEPT("/memories/a\xC2\xA0", "a\xC2\xA0"),
    ACCEPT("/memories/a\xE2\x80\xA7", "a\xE2\x80\xA7"),
    ACCEPT("/memories/a\xE2\x80\xAF", "a\xE2\x80\xAF"),
    ACCEPT("/memories/a\xE2\x81\xA5", "a\xE2\x81\xA5"),
    ACCEPT("/memories/a\xE2\x81\xAA", "a\xE2\x81\xAA"),
    ACCEPT("/memories/a\xED\x9F\xBF", "a\xED\x9F\xBF"),
    ACCEPT("/memories/a\xEE\x80\x80", "a\xEE\x80\x80"),
    ACCEPT("/memories/a\xEF\xBF\xBD", "a\xEF\xBF\xBD"),
    ACCEPT("/memories/a\xF4\x8F\xBF\xBF", "a\xF4\x8F\xBF\xBF"),
    /* Only the reserved prefix and the exact reserved name are refused. */
    ACCEPT("/memories/.mt-tmp", ".mt-tmp"),
    ACCEPT("/memories/a.mt-tmp.x", "a.mt-tmp.x"),
    ACCEPT("/memories/.memtool2", ".memtool2"),
    ACCEPT("/memories/memtool", "memtool"),
    ACCEPT("/memories/x.memtool", "x.memtool"),
    ACCEPT("/memories/.mt-tmpx", ".mt-tmpx"),
    ACCEPT("/memories/mt-tmp.x", "mt-tmp.x"),
    ACCEPT("/memories/a.mt-tmp.x", "a.mt-tmp.x"),
    ACCEPT("/memories/.MT-TMP.x", ".MT-TMP.x"),
};

static void expect_parse(const char *path, size_t len, mt_path_status want, const char *want_rel,
                         const char *what, size_t index)
{
    char *rel = (char *)"unchanged";
    mt_path_status st = mt_path_parse(&rel, path, len);

    if (st != want)
        fail_msg("%s[%zu] (%zu bytes): status %d, want %d", what, index, len, (int)st, (int)want);
    if (want != MT_PATH_OK) {
        if (rel != NULL)
            fail_msg("%s[%zu]: *rel not NULL on failure", what, index);
        return;
    }
    if (rel == NULL || want_rel == NULL || strcmp(rel, want_rel) != 0)
        fail_msg("%s[%zu]: rel \"%s\", want \"%s\"", what, index, rel ? rel : "(null)",
                 want_rel ? want_rel : "(no success expected)");
    free(rel);
}

static void test_hostile_paths(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(hostile_paths) / sizeof(hostile_paths[0]); i++)
        expect_parse(hostile_paths[i].path, hostile_paths[i].len, hostile_paths[i].status, NULL,
                     "hostile_paths", i);
}

static void test_ordinary_paths(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ordinary_paths) / sizeof(ordinary_paths[0]); i++)
        expect_parse(ordinary_paths[i].path, ordinary_paths[i].len, MT_PATH_OK,
                     ordinary_paths[i].rel, "ordinary_paths", i);
}

/* Every C0 control, DEL and every C1 control, alone and mid-name. */
static void test_every_control(void **state)
{
    char path[32];
    char *rel;

    (void)state;
    for (unsigned c = 0; c < 0x20; c++) {
        memcpy(path, "/memories/a", 11);
        path[11] = (char)c;
        path[12] = 'b';
        rel = (char *)"unchanged";
        assert_int_equal(mt_path_parse(&rel, path, 13), MT_PATH_ESCAPE);
        assert_null(rel);
        assert_false(mt_path_name_ok(path + 10, 3));
    }
    for (unsigned c = 0x7F; c <= 0x9F; c++) {
        size_t n = 11;

        memcpy(path, "/memories/a", 11);
        if (c >= 0x80)
            path[n++] = (char)0xC2;
        path[n++] = (char)c;
        rel = (char *)"unchanged";
        assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_ESCAPE);
        assert_null(rel);
        assert_false(mt_path_name_ok(path + 10, n - 10));
    }
}

/* The length is the caller's: bytes past it are never read, NULs inside it are content. */
static void test_length_is_explicit(void **state)
{
    char *rel = NULL;

    (void)state;
    assert_int_equal(mt_path_parse(&rel, "/memories/a/../b", 11), MT_PATH_OK);
    assert_string_equal(rel, "a");
    free(rel);
    assert_int_equal(mt_path_parse(&rel, "/memoriesX", 9), MT_PATH_OK);
    assert_string_equal(rel, "");
    free(rel);
    assert_int_equal(mt_path_parse(&rel, "/memories/.mt-tmp.x", 17), MT_PATH_OK);
    assert_string_equal(rel, ".mt-tmp");
    free(rel);
    assert_int_equal(mt_path_parse(&rel, "/memories/a\0", 12), MT_PATH_ESCAPE);
    assert_null(rel);
    assert_int_equal(mt_path_parse(&rel, NULL, 0), MT_PATH_NOT_UNDER_ROOT);
    assert_null(rel);
}

/* "/memories" followed by components of the given lengths, each made of `fill`. */
static size_t build_path(char *out, size_t cap, const size_t *lens, size_t count, char fill)
{
    size_t n = 9;

    memcpy(out, "/memories", 9);
    for (size_t i = 0; i < count; i++) {
        assert_true(n + 1 + lens[i] <= cap);
        out[n++] = '/';
        memset(out + n, fill, lens[i]);
        n += lens[i];
    }
    return n;
}

static void test_component_length(void **state)
{
    static char path[MT_PATH_MAX + 64];
    size_t lens[2] = {MT_NAME_MAX, 1};
    char *rel = NULL;
    size_t n;

    (void)state;
    n = build_path(path, sizeof(path), lens, 1, 'a');
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_OK);
    assert_int_equal(strlen(rel), 255);
    free(rel);
    assert_true(mt_path_name_ok(path + 10, 255));

    lens[0] = MT_NAME_MAX + 1;
    n = build_path(path, sizeof(path), lens, 1, 'a');
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_ESCAPE);
    assert_null(rel);
    assert_false(mt_path_name_ok(path + 10, 256));

    /* A long middle component counts as much as a last one. */
    n = build_path(path, sizeof(path), lens, 2, 'a');
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_ESCAPE);
    assert_null(rel);

    /* Bytes, not characters: 85 three-byte characters fit, 86 do not. */
    memcpy(path, "/memories/", 10);
    for (size_t i = 0; i < 86; i++)
        memcpy(path + 10 + 3 * i, "\xE7\xAC\x94", 3);
    assert_int_equal(mt_path_parse(&rel, path, 10 + 3 * 85), MT_PATH_OK);
    assert_int_equal(strlen(rel), 255);
    free(rel);
    assert_int_equal(mt_path_parse(&rel, path, 10 + 3 * 86), MT_PATH_ESCAPE);
    assert_null(rel);
}

static void test_path_length(void **state)
{
    static char path[MT_PATH_MAX + 64];
    size_t lens[17];
    char *rel = NULL;
    size_t n;

    (void)state;
    /* 9 + 16 * 251 + 71 = 4096 bytes in 17 components, each under 255. */
    for (size_t i = 0; i < 16; i++)
        lens[i] = 250;
    lens[16] = 70;
    n = build_path(path, sizeof(path), lens, 17, 'x');
    assert_int_equal(n, MT_PATH_MAX);
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_OK);
    assert_int_equal(strlen(rel), MT_PATH_MAX - 10);
    free(rel);

    lens[16] = 71;
    n = build_path(path, sizeof(path), lens, 17, 'x');
    assert_int_equal(n, MT_PATH_MAX + 1);
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_ESCAPE);
    assert_null(rel);

    /* The limit is on the path as given, before slashes are squeezed. */
    memcpy(path, "/memories/a", 11);
    memset(path + 11, '/', sizeof(path) - 11);
    assert_int_equal(mt_path_parse(&rel, path, MT_PATH_MAX), MT_PATH_OK);
    assert_string_equal(rel, "a");
    free(rel);
    assert_int_equal(mt_path_parse(&rel, path, MT_PATH_MAX + 1), MT_PATH_ESCAPE);
    assert_null(rel);
}

static void test_depth(void **state)
{
    static char path[512];
    static char want[512];
    size_t lens[MT_PATH_MAX_DEPTH + 1];
    char *rel = NULL;
    size_t n;

    (void)state;
    for (size_t i = 0; i <= MT_PATH_MAX_DEPTH; i++)
        lens[i] = 1;
    n = build_path(path, sizeof(path), lens, MT_PATH_MAX_DEPTH, 'd');
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_OK);
    memcpy(want, path + 10, n - 10);
    want[n - 10] = '\0';
    assert_string_equal(rel, want);
    free(rel);

    n = build_path(path, sizeof(path), lens, MT_PATH_MAX_DEPTH + 1, 'd');
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_ESCAPE);
    assert_null(rel);

    /* "." and empty components are not counted. */
    n = build_path(path, sizeof(path), lens, MT_PATH_MAX_DEPTH, 'd');
    memcpy(path + n, "/.//./", 6);
    assert_int_equal(mt_path_parse(&rel, path, n + 6), MT_PATH_OK);
    free(rel);
    n = 9;
    memcpy(path, "/memories", 9);
    for (size_t i = 0; i < MT_PATH_MAX_DEPTH; i++) {
        memcpy(path + n, "/./d/", 5);
        n += 5;
    }
    assert_int_equal(mt_path_parse(&rel, path, n), MT_PATH_OK);
    free(rel);
    memcpy(path + n, "d", 1);
    assert_int_equal(mt_path_parse(&rel, path, n + 1), MT_PATH_ESCAPE);
    assert_null(rel);
}

#define NAME_OK(lit)  assert_true(mt_path_name_ok(lit, sizeof(lit) - 1))
#define NAME_BAD(lit) assert_false(mt_path_name_ok(lit, sizeof(lit) - 1))

static void test_name_ok(void **state)
{
    (void)state;
    NAME_OK("a");
    NAME_OK("notes.md");
    NAME_OK("..foo");
    NAME_OK("a..b");
    NAME_OK("...");
    NAME_OK(".hidden");
    NAME_OK("report_50%.md");
    NAME_OK("100%");
    NAME_OK("a%20b");
    NAME_OK("\xE7\xAC\x94\xE8\xAE\xB0.md");
    NAME_OK("\xEF\xBC\x8E\xEF\xBC\x8E");
    NAME_OK("my notes");
    NAME_OK(".mt-tmp");
    NAME_OK("x.mt-tmp.y");
    NAME_OK("node_modules");
    NAME_OK("memories");

    NAME_BAD("");
    NAME_BAD(".");
    NAME_BAD("..");
    NAME_BAD("a/b");
    NAME_BAD("/");
    NAME_BAD("a\nb");
    NAME_BAD("a\0b");
    NAME_BAD("\x7f");
    NAME_BAD("\xC2\x85");
    NAME_BAD("a\\b");
    NAME_BAD("a\xE2\x80\xA8");
    NAME_BAD("a\xE2\x80\xA9");
    NAME_BAD("a\xE2\x80\xAE");
    NAME_BAD("a\xE2\x81\xA6");
    NAME_BAD("a\xff");
    NAME_BAD("\xC0\xAE");
    NAME_BAD("\xED\xA0\x80");
    NAME_BAD("%2e%2e");
    NAME_BAD("file%2Etxt");
    NAME_BAD("a%2fb");
    NAME_BAD("a%5Cb");
    NAME_BAD("a%00");
    NAME_BAD("%u002e");
    NAME_BAD("%252e");
    NAME_BAD("%c0%ae");
    NAME_BAD(".mt-tmp.");
    NAME_BAD(".mt-tmp.123");
    assert_false(mt_path_name_ok(NULL, 0));
    /* Only `len` bytes are the name. */
    assert_true(mt_path_name_ok("ab", 1));
    assert_false(mt_path_name_ok("..x", 2));
    assert_false(mt_path_name_ok(".x", 1));
}

/* Every refused path is refused as a listing name too, where it is one name. */
static void test_name_ok_agrees_with_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ordinary_paths) / sizeof(ordinary_paths[0]); i++) {
        const char *rel = ordinary_paths[i].rel;
        size_t len = strlen(rel);

        if (len > 0 && strchr(rel, '/') == NULL)
            assert_true(mt_path_name_ok(rel, len));
    }
    for (size_t i = 0; i < sizeof(hostile_paths) / sizeof(hostile_paths[0]); i++) {
        const hostile_path *h = &hostile_paths[i];

        if (h->status == MT_PATH_ESCAPE && h->len > 10 &&
            memchr(h->path + 10, '/', h->len - 10) == NULL)
            assert_false(mt_path_name_ok(h->path + 10, h->len - 10));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_paths),
        cmocka_unit_test(test_ordinary_paths),
        cmocka_unit_test(test_every_control),
        cmocka_unit_test(test_length_is_explicit),
        cmocka_unit_test(test_component_length),
        cmocka_unit_test(test_path_length),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_name_ok),
        cmocka_unit_test(test_name_ok_agrees_with_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

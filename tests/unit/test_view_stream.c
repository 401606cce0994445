/*
 * The store's read and the streaming view at their edges: pieces as the
 * store interface promises them, a file read to the size it had when opened
 * (made certain, not raced: the test appends from inside the read), the line
 * limit and piece boundaries answered as the whole-buffer way does, advice
 * that always moves on, any view limit, and FIFOs, sockets and devices
 * never opened (inotify sees every open for reading).
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <memtool/store.h>

#include "helpers.h"
#include "core/memory.h"

#define PIECE ((size_t)MT_STORE_PIECE)

static void write_file(const mt_test_store *ts, const char *name, const char *data, size_t len)
{
    char path[400];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", ts->root, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static int open_append(const mt_test_store *ts, const char *name)
{
    char path[400];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", ts->root, name);
    fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static mt_store *fs_store(const mt_test_store *ts)
{
    mt_store *st;

    assert_int_equal(mt_store_fs_open(&st, ts->root, MT_DURABILITY_NONE), 0);
    return st;
}

/* What a read handed over, and whether it kept the interface's promises. */
typedef struct {
    char *got;
    size_t len, pieces, biggest;
    uint64_t next;  /* where the next piece must start */
    int after_last; /* a piece came after the last one */
    int lasts;
    int stop;      /* return this from the first piece */
    int append_fd; /* append `append` bytes here at every piece (-1: not) */
    size_t append;
} collect;

static int collect_cb(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    collect *c = payload;

    if (c->lasts || off != c->next)
        c->after_last = 1;
    c->got = realloc(c->got, c->len + len + 1);
    assert_non_null(c->got);
    memcpy(c->got + c->len, data, len);
    c->len += len;
    c->next = off + len;
    c->pieces++;
    c->biggest = len > c->biggest ? len : c->biggest;
    c->lasts += last != 0;
    if (c->append_fd >= 0) {
        char *more = malloc(c->append);
        assert_non_null(more);
        memset(more, '+', c->append);
        assert_int_equal(write(c->append_fd, more, c->append), (ssize_t)c->append);
        free(more);
    }
    return c->stop;
}

static void collect_init(collect *c)
{
    memset(c, 0, sizeof(*c));
    c->append_fd = -1;
}

static char *pattern(size_t len)
{
    char *s = malloc(len + 1);

    assert_non_null(s);
    for (size_t i = 0; i < len; i++)
        s[i] = i % 97 == 96 ? '\n' : (char)('a' + (i * 7 + i / 251) % 26);
    return s;
}

/* Pieces in order, each at most MT_STORE_PIECE, one last, the whole file,
 * its size; one piece when the file is at most `whole`; an empty file is
 * one empty last piece. */
static void test_read_contract(void **state)
{
    static const size_t sizes[] = {0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 12345};
    static const size_t wholes[] = {0, 1, PIECE, SIZE_MAX};
    mt_test_store ts;
    mt_store *st;
    (void)state;

    mt_test_store_init(&ts, NULL);
    st = fs_store(&ts);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *data = pattern(sizes[i]);
        write_file(&ts, "f.txt", data, sizes[i]);
        for (size_t w = 0; w < sizeof(wholes) / sizeof(wholes[0]); w++) {
            collect c;
            uint64_t size = 12345;
            collect_init(&c);
            assert_int_equal(st->read(st, &size, "f.txt", wholes[w], collect_cb, &c), 0);
            if (size != sizes[i] || c.len != sizes[i] || c.lasts != 1 || c.after_last ||
                (sizes[i] && memcmp(c.got, data, sizes[i]) != 0))
                fail_msg("size %zu, whole %zu: %zu bytes in %zu pieces, size %llu, %d lasts",
                         sizes[i], wholes[w], c.len, c.pieces, (unsigned long long)size, c.lasts);
            if (sizes[i] <= wholes[w])
                assert_int_equal(c.pieces, 1);
            else
                assert_int_equal(c.pieces, (sizes[i] + PIECE - 1) / PIECE);
            assert_true(c.biggest <= (sizes[i] <= wholes[w] ? sizes[i] : PIECE));
            free(c.got);
        }
        free(data);
    }

    /* 1 stops the read, a negative code fails it. */
    {
        char *data = pattern(3 * PIECE);
        collect c;
        uint64_t size;
        write_file(&ts, "f.txt", data, 3 * PIECE);
        collect_init(&c);
        c.stop = 1;
        assert_int_equal(st->read(st, &size, "f.txt", 0, collect_cb, &c), 0);
        assert_int_equal(c.pieces, 1);
        free(c.got);
        collect_init(&c);
        c.stop = MT_EIO;
        assert_int_equal(st->read(st, &size, "f.txt", 0, collect_cb, &c), MT_EIO);
        assert_int_equal(c.pieces, 1);
        free(c.got);
        free(data);
    }
    st->free(st);
    mt_test_store_free(&ts);
}

/* Appended to at every piece, a file is still read to the size it had when
 * opened: no race, the appends happen inside the read. */
static void test_read_stops_at_size_at_open(void **state)
{
    mt_test_store ts;
    mt_store *st;
    char *data = pattern(3 * PIECE + 5);
    collect c;
    uint64_t size;
    struct stat sb;
    char path[400];
    (void)state;

    mt_test_store_init(&ts, NULL);
    st = fs_store(&ts);
    write_file(&ts, "grows.txt", data, 3 * PIECE + 5);
    collect_init(&c);
    c.append_fd = open_append(&ts, "grows.txt");
    c.append = PIECE;
    assert_int_equal(st->read(st, &size, "grows.txt", 0, collect_cb, &c), 0);
    close(c.append_fd);
    assert_int_equal(size, 3 * PIECE + 5);
    assert_int_equal(c.len, 3 * PIECE + 5);
    assert_int_equal(c.pieces, 4);
    assert_int_equal(c.lasts, 1);
    assert_memory_equal(c.got, data, 3 * PIECE + 5);
    snprintf(path, sizeof(path), "%s/grows.txt", ts.root);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 7 * PIECE + 5); /* the appends did land */
    free(c.got);
    free(data);
    st->free(st);
    mt_test_store_free(&ts);
}

/*
 * A store that appends to the file it is reading once the first piece has
 * been handed over: a view's line count must be that of the size at open.
 */
typedef struct {
    mt_store base;
    mt_store *inner;
    int append_fd; /* one append, then -1 */
    const char *more;
    size_t more_len;
} growing_store;

typedef struct {
    growing_store *g;
    mt_read_cb cb;
    void *payload;
} relay;

static int relay_cb(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    relay *r = payload;
    int rc = r->cb(r->payload, data, len, off, last);

    if (r->g->append_fd >= 0) {
        assert_int_equal(write(r->g->append_fd, r->g->more, r->g->more_len),
                         (ssize_t)r->g->more_len);
        close(r->g->append_fd);
        r->g->append_fd = -1;
    }
    return rc;
}

static int g_read(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                  void *payload)
{
    growing_store *g = (growing_store *)st;
    relay r = {g, cb, payload};

    return g->inner->read(g->inner, size, path, whole, relay_cb, &r);
}

static int g_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *path)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->stat(in, type, size, path);
}

static int g_create(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->create(in, op, path, data, len);
}

static int g_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->edit(in, op, path, cb, payload);
}

static int g_remove(mt_store *st, mt_store_op *op, const char *path)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->remove(in, op, path);
}

static int g_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->rename(in, op, from, to);
}

static int g_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
                  size_t max_entries)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->list(in, out, path, depth, max_entries);
}

static int g_usage(mt_store *st, mt_store_usage *out)
{
    mt_store *in = ((growing_store *)st)->inner;
    return in->usage(in, out);
}

static void g_free(mt_store *st)
{
    growing_store *g = (growing_store *)st;

    g->inner->free(g->inner);
    if (g->append_fd >= 0)
        close(g->append_fd);
    free(g);
}

static void test_view_counts_lines_at_open(void **state)
{
    mt_test_store ts;
    growing_store *g = calloc(1, sizeof(*g));
    mt_memory *mem;
    char *data, *more, *text, expected[4 * 1024 * 4];
    size_t len = (size_t)8 << 20, o = 0;
    int is_error;
    (void)state;

    assert_non_null(g);
    mt_test_store_init(&ts, NULL);
    /* 8 MiB of 1 KiB lines: 8,192 of them, read in pieces. */
    data = malloc(len);
    more = malloc((size_t)2 << 20);
    assert_non_null(data);
    assert_non_null(more);
    for (size_t i = 0; i < len; i++)
        data[i] = i % 1024 == 1023 ? '\n' : 'g';
    for (size_t i = 0; i < ((size_t)2 << 20); i++)
        more[i] = i % 1024 == 1023 ? '\n' : 'h';
    write_file(&ts, "grows.log", data, len);
    g->inner = fs_store(&ts);
    g->base.version = MT_STORE_VERSION;
    g->base.stat = g_stat;
    g->base.read = g_read;
    g->base.create = g_create;
    g->base.edit = g_edit;
    g->base.remove = g_remove;
    g->base.rename = g_rename;
    g->base.list = g_list;
    g->base.usage = g_usage;
    g->base.free = g_free;
    g->append_fd = open_append(&ts, "grows.log");
    g->more = more;
    g->more_len = (size_t)2 << 20;
    assert_int_equal(mt_memory_new(&mem, &g->base, NULL), 0);

    /* The last three lines at open, and none of what came after. */
    o += (size_t)snprintf(expected, sizeof(expected),
                          "Here's the content of /memories/grows.log with line numbers:");
    for (int line = 8190; line <= 8192; line++) {
        o += (size_t)snprintf(expected + o, sizeof(expected) - o, "\n%6d\t", line);
        memset(expected + o, 'g', 1023);
        o += 1023;
    }
    expected[o] = '\0';
    text = mt_test_call(mem, &is_error,
                        "{\"command\":\"view\",\"path\":\"/memories/grows.log\","
                        "\"view_range\":[8190,-1]}");
    assert_false(is_error);
    assert_string_equal(text, expected);
    free(text);
    assert_int_equal(g->append_fd, -1); /* it did append, during the read */

    /* The appended lines are there for the next view. */
    text = mt_test_call(mem, &is_error,
                        "{\"command\":\"view\",\"path\":\"/memories/grows.log\","
                        "\"view_range\":[10240,-1]}");
    assert_false(is_error);
    assert_non_null(strstr(text, "\n 10240\thhh"));
    free(text);
    mt_memory_free(mem);
    free(data);
    free(more);
    mt_test_store_free(&ts);
}

/* Each input viewed through one buffer and in pieces; the two must agree. */
static void view_both(mt_memory *mem, const char *json, char **whole, int *e1, char **streamed,
                      int *e2)
{
    size_t saved = mt_view_whole;

    mt_view_whole = SIZE_MAX;
    *whole = mt_test_call(mem, e1, json);
    mt_view_whole = 1;
    *streamed = mt_test_call(mem, e2, json);
    mt_view_whole = saved;
}

static char *view_agrees(mt_memory *mem, const char *json, int *is_error)
{
    char *whole, *streamed;
    int e2;

    view_both(mem, json, &whole, is_error, &streamed, &e2);
    if (*is_error != e2 || strcmp(whole, streamed) != 0)
        fail_msg("%s: the streaming view differs:\n%.300s\n---\n%.300s", json, whole, streamed);
    free(streamed);
    return whole;
}

static void view_range_json(char *json, size_t size, const char *path, long a, long b)
{
    if (a == 0)
        snprintf(json, size, "{\"command\":\"view\",\"path\":\"%s\"}", path);
    else
        snprintf(json, size, "{\"command\":\"view\",\"path\":\"%s\",\"view_range\":[%ld,%ld]}",
                 path, a, b);
}

/* 999,999 lines are viewed, one more is refused, however the file comes. */
static void test_line_limit_streaming(void **state)
{
    static const struct {
        const char *name;
        size_t newlines;
        int partial; /* a last line without its newline */
        int refused;
    } files[] = {{"ok.txt", 999999, 0, 0},
                 {"ok_partial.txt", 999998, 1, 0},
                 {"over.txt", 1000000, 0, 1},
                 {"over_partial.txt", 999999, 1, 1}};
    mt_test_store ts;
    char *data = malloc(2 * 1000000 + 1), json[200], path[64];
    (void)state;

    assert_non_null(data);
    for (size_t i = 0; i < 1000000; i++)
        memcpy(data + 2 * i, "x\n", 2);
    mt_test_store_init(&ts, NULL);
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        static const long ranges[][2] = {{0, 0}, {1, 1}, {999999, -1}, {999998, 999999}};
        write_file(&ts, files[f].name, data, 2 * files[f].newlines + (size_t)files[f].partial);
        snprintf(path, sizeof(path), "/memories/%s", files[f].name);
        for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
            int is_error;
            char *text;
            view_range_json(json, sizeof(json), path, ranges[r][0], ranges[r][1]);
            text = view_agrees(ts.mem, json, &is_error);
            assert_int_equal(is_error, files[f].refused);
            if (files[f].refused) {
                char want[200];
                snprintf(want, sizeof(want), "File %s exceeds maximum line limit of 999,999 lines.",
                         path);
                assert_string_equal(text, want);
            } else if (ranges[r][0] == 999999) {
                snprintf(json, sizeof(json),
                         "Here's the content of %s with line numbers:\n999999\tx", path);
                assert_string_equal(text, json);
            }
            free(text);
        }
    }
    free(data);
    mt_test_store_free(&ts);
}

/* Lines that begin at a piece's start, a newline that is a piece's last
 * byte, a character split between pieces, a line across three pieces. */
static void test_piece_boundaries(void **state)
{
    static const long ranges[][2] = {{0, 0}, {1, 1},  {2, -1}, {3, 3},   {4, -1},
                                     {4, 4}, {5, -1}, {2, 4},  {40, -1}, {6, 6}};
    static const unsigned limits[] = {200, 1000, 16000, 3u << 20};
    mt_test_store ts;
    size_t len = 0, cap = 4 * PIECE + 4096;
    char *s = malloc(cap), json[200];
    (void)state;

    assert_non_null(s);
    memset(s, 'a', PIECE - 1); /* line 1 ends at PIECE - 1: line 2 starts a piece */
    len = PIECE - 1;
    s[len++] = '\n';
    memcpy(s + len, "b\n", 2);
    len += 2;
    memset(s + len, 'c', 2 * PIECE - 1 - len); /* line 3's newline ends piece 2 */
    len = 2 * PIECE - 1;
    s[len++] = '\n';
    memset(s + len, 'd', PIECE - 1); /* line 4: an é split between pieces 3 and 4 */
    len += PIECE - 1;
    memcpy(s + len, "\xc3\xa9 tail\n", 8);
    len += 8;
    memcpy(s + len, "\xf0\x9f\x98\x80 \xff bad\r\n", 11);
    len += 11;
    for (int i = 6; i <= 60; i++)
        len += (size_t)snprintf(s + len, cap - len, "short line %d\n", i);
    assert_true(len > 3 * PIECE);
    mt_test_store_init(&ts, NULL);
    write_file(&ts, "edges.txt", s, len);
    for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
        mt_options o;
        mt_memory *mem;
        mt_options_init(&o);
        o.view_limit = limits[l];
        assert_int_equal(mt_memory_open(&mem, ts.root, &o), 0);
        for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++) {
            int is_error;
            view_range_json(json, sizeof(json), "/memories/edges.txt", ranges[r][0], ranges[r][1]);
            free(view_agrees(mem, json, &is_error));
        }
        mt_memory_free(mem);
    }
    free(s);
    mt_test_store_free(&ts);
}

/*
 * Following the advice from the first view to the end shows every line,
 * each view starting after the one before, even when a long path makes the
 * header alone longer than the limit and lines are longer than the limit.
 */
static void follow_advice(mt_memory *mem, const char *path, size_t n, int stream)
{
    char json[1200], *seen = calloc(n + 2, 1);
    long start = 0, end = 0;
    size_t saved = mt_view_whole;

    assert_non_null(seen);
    mt_view_whole = stream ? 1 : SIZE_MAX;
    for (int calls = 0;; calls++) {
        int is_error;
        char *text, *p, *advice;
        long next_start, next_end;
        if (calls > (int)n)
            fail_msg("%s: more views than lines", path);
        view_range_json(json, sizeof(json), path, start, end);
        text = mt_test_call(mem, &is_error, json);
        assert_false(is_error);
        for (p = strchr(text, '\n'); p; p = strchr(p + 1, '\n')) {
            unsigned long line;
            if (sscanf(p + 1, "%6lu\t", &line) == 1 && p[7] == '\t' && line >= 1 && line <= n)
                seen[line] = 1;
        }
        advice = strstr(text, "; call view with view_range [");
        if (!advice) {
            free(text);
            break;
        }
        assert_int_equal(
            sscanf(advice, "; call view with view_range [%ld, %ld]", &next_start, &next_end), 2);
        if (next_start <= (start ? start : 1))
            fail_msg("%s: the advice does not move on from %ld: %s", path, start, text);
        start = next_start;
        end = next_end;
        free(text);
    }
    mt_view_whole = saved;
    for (size_t line = 1; line <= n; line++)
        if (!seen[line])
            fail_msg("%s: line %zu was never shown", path, line);
    free(seen);
}

static void test_advice_moves_forward(void **state)
{
    mt_options o;
    mt_test_store ts;
    char dir[700], json[5000], text[4000];
    size_t dlen = 0, tlen = 0;
    int is_error;
    char *res;
    (void)state;

    mt_options_init(&o);
    o.view_limit = 200;
    mt_test_store_init(&ts, &o);
    for (int i = 0; i < 20; i++)
        dlen += (size_t)snprintf(dir + dlen, sizeof(dir) - dlen, "/component%02d", i);
    /* one, 500 x, two, 300 wide characters, an empty line, last */
    tlen += (size_t)snprintf(text, sizeof(text), "one\\n");
    memset(text + tlen, 'x', 500);
    tlen += 500;
    tlen += (size_t)snprintf(text + tlen, sizeof(text) - tlen, "\\ntwo\\n");
    for (int i = 0; i < 300; i++)
        tlen += (size_t)snprintf(text + tlen, sizeof(text) - tlen, "\\u4e09");
    snprintf(text + tlen, sizeof(text) - tlen, "\\n\\nlast");
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories%s/f\",\"file_text\":\"%s\"}", dir, text);
    res = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    free(res);
    snprintf(json, sizeof(json), "/memories%s/f", dir);
    follow_advice(ts.mem, json, 6, 0);
    follow_advice(ts.mem, json, 6, 1);
    /* A short path too. */
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories/g\",\"file_text\":\"%s\"}", text);
    res = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    free(res);
    follow_advice(ts.mem, "/memories/g", 6, 0);
    follow_advice(ts.mem, "/memories/g", 6, 1);
    mt_test_store_free(&ts);
}

/* Any view limit, however big, answers as the whole-buffer way: the most a
 * streaming view keeps is computed without overflow and allocated as used. */
static void test_huge_view_limit(void **state)
{
    static const uint64_t limits[] = {UINT64_MAX, UINT64_MAX / 5 + 1, (uint64_t)1 << 40,
                                      (uint64_t)5 << 20};
    mt_test_store ts;
    size_t len = 5 * PIECE / 2;
    char *data = pattern(len);
    (void)state;

    mt_test_store_init(&ts, NULL);
    write_file(&ts, "f.txt", data, len);
    for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
        mt_options o;
        mt_memory *mem;
        int is_error;
        char *text;
        mt_options_init(&o);
        o.view_limit = limits[l];
        assert_int_equal(mt_memory_open(&mem, ts.root, &o), 0);
        text = view_agrees(mem, "{\"command\":\"view\",\"path\":\"/memories/f.txt\"}", &is_error);
        assert_false(is_error);
        assert_null(strstr(text, "[output truncated"));
        free(text);
        text = view_agrees(
            mem, "{\"command\":\"view\",\"path\":\"/memories/f.txt\",\"view_range\":[20000,-1]}",
            &is_error);
        assert_false(is_error);
        free(text);
        mt_memory_free(mem);
    }
    free(data);
    mt_test_store_free(&ts);
}

/* Whether the kernel reports O_PATH opens to inotify (it stopped in 6.x):
 * then an open for reading cannot be told from a look. */
static int inotify_sees_o_path(int in, const char *root)
{
    char path[400], buf[4096];
    int fd;

    snprintf(path, sizeof(path), "%s/probe", root);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    while (read(in, buf, sizeof(buf)) > 0) {
    }
    fd = open(path, O_PATH | O_CLOEXEC);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    return read(in, buf, sizeof(buf)) > 0;
}

/* Whether any open of `name` was seen since the last call. */
static int opened(int in, const char *name)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    int found = 0;

    while ((n = read(in, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *e = (const struct inotify_event *)p;
            if (e->len && strcmp(e->name, name) == 0)
                found = 1;
            p += sizeof(*e) + e->len;
        }
    }
    return found;
}

/* A FIFO, a socket and a device: one message for all, through view,
 * str_replace, insert and the store's stat and read, and never an open. */
static void test_special_files_never_opened(void **state)
{
    mt_test_store ts;
    mt_store *st;
    char path[400];
    const char *names[3];
    size_t count = 0;
    int in, o_path_seen;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(path, sizeof(path), "%s/fifo", ts.root);
    assert_int_equal(mkfifo(path, 0600), 0);
    names[count++] = "fifo";
    {
        struct sockaddr_un addr;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memset(&addr, 0, sizeof(addr));
        addr.sun_family = AF_UNIX;
        snprintf(path, sizeof(path), "%s/sock", ts.root);
        assert_true(strlen(path) < sizeof(addr.sun_path));
        memcpy(addr.sun_path, path, strlen(path) + 1);
        if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            names[count++] = "sock";
        close(s);
    }
    /* /dev/null's numbers: needs CAP_MKNOD and a filesystem without nodev. */
    snprintf(path, sizeof(path), "%s/dev", ts.root);
    if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            names[count++] = "dev";
        if (fd >= 0)
            close(fd);
    }
    in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(in >= 0);
    assert_true(inotify_add_watch(in, ts.root, IN_OPEN) >= 0);
    o_path_seen = inotify_sees_o_path(in, ts.root);
    if (o_path_seen)
        print_message("inotify reports O_PATH opens here: only the messages are checked\n");
    st = fs_store(&ts);
    for (size_t i = 0; i < count; i++) {
        static const char *const calls[][2] = {
            {"{\"command\":\"view\",\"path\":\"/memories/", "\"}"},
            {"{\"command\":\"view\",\"path\":\"/memories/", "\",\"view_range\":[1,1]}"},
            {"{\"command\":\"str_replace\",\"path\":\"/memories/",
             "\",\"old_str\":\"a\",\"new_str\":\"b\"}"},
            {"{\"command\":\"insert\",\"path\":\"/memories/",
             "\",\"insert_line\":0,\"insert_text\":\"b\"}"}};
        char json[300], want[100];
        mt_node_type type;
        uint64_t size;
        collect c;
        snprintf(want, sizeof(want), "Error: Unsupported file type for /memories/%s", names[i]);
        opened(in, names[i]);
        for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]); k++) {
            snprintf(json, sizeof(json), "%s%s%s", calls[k][0], names[i], calls[k][1]);
            mt_test_expect(ts.mem, json, 1, want);
        }
        assert_int_equal(st->stat(st, &type, &size, names[i]), MT_EUNSUPPORTED);
        collect_init(&c);
        assert_int_equal(st->read(st, &size, names[i], SIZE_MAX, collect_cb, &c), MT_EUNSUPPORTED);
        assert_int_equal(st->read(st, &size, names[i], 0, collect_cb, &c), MT_EUNSUPPORTED);
        assert_int_equal(c.pieces, 0);
        if (!o_path_seen && opened(in, names[i]))
            fail_msg("%s was opened", names[i]);
    }
    st->free(st);
    close(in);
    mt_test_store_free(&ts);
}

/* A big file (the streaming way) with a second hard link is refused. */
static void test_big_hard_link_refused(void **state)
{
    mt_test_store ts;
    char path[400], second[400];
    int fd;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(path, sizeof(path), "%s/big.txt", ts.root);
    snprintf(second, sizeof(second), "%s/other.txt", ts.root);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "secret\n", 7), 7);
    assert_int_equal(ftruncate(fd, (off_t)64 << 20), 0); /* sparse: no disk used */
    close(fd);
    assert_int_equal(link(path, second), 0);
    mt_test_expect(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/big.txt\"}", 1,
                   "Error: The file /memories/big.txt has more than one hard link; memtool never "
                   "reads or writes through hard links");
    mt_test_expect(
        ts.mem, "{\"command\":\"view\",\"path\":\"/memories/other.txt\",\"view_range\":[1,1]}", 1,
        "Error: The file /memories/other.txt has more than one hard link; memtool "
        "never reads or writes through hard links");
    mt_test_store_free(&ts);
}

/* Swaps a file with a hard link of the same size, flat out. */
typedef struct {
    int dirfd;
    volatile int stop;
    unsigned long swaps;
} swapper;

static void *swap_loop(void *arg)
{
    swapper *w = arg;

    while (!w->stop)
        if (renameat2(w->dirfd, "f", w->dirfd, "h", RENAME_EXCHANGE) == 0)
            w->swaps++;
    return NULL;
}

/*
 * A hard link to a file outside, swapped with a plain file of the same size
 * while views run: the one opened must be checked to be the one looked at,
 * or the outside file's content is read through the link.
 */
static void test_hard_link_swap_never_read(void **state)
{
    mt_test_store ts;
    char path[400], outside[400];
    swapper w;
    pthread_t t;
    int fd, leaked = 0, refused = 0, shown = 0;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(outside, sizeof(outside), "%s/secret", ts.dir);
    fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "SECRET!", 7), 7);
    close(fd);
    snprintf(path, sizeof(path), "%s/h", ts.root);
    assert_int_equal(link(outside, path), 0);
    write_file(&ts, "f", "public!", 7);
    w.dirfd = open(ts.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(w.dirfd >= 0);
    w.stop = 0;
    w.swaps = 0;
    assert_int_equal(pthread_create(&t, NULL, swap_loop, &w), 0);
    for (int i = 0; i < 20000 && !leaked; i++) {
        int is_error;
        char *text =
            mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories/f\"}");
        if (strstr(text, "SECRET"))
            leaked = 1;
        else if (is_error)
            refused++;
        else
            shown++;
        free(text);
    }
    w.stop = 1;
    pthread_join(t, NULL);
    close(w.dirfd);
    print_message("%lu swaps, %d shown, %d refused\n", w.swaps, shown, refused);
    if (leaked)
        fail_msg("a view read the outside file through a hard link swapped in");
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_contract),
        cmocka_unit_test(test_read_stops_at_size_at_open),
        cmocka_unit_test(test_view_counts_lines_at_open),
        cmocka_unit_test(test_line_limit_streaming),
        cmocka_unit_test(test_piece_boundaries),
        cmocka_unit_test(test_advice_moves_forward),
        cmocka_unit_test(test_huge_view_limit),
        cmocka_unit_test(test_special_files_never_opened),
        cmocka_unit_test(test_big_hard_link_refused),
        cmocka_unit_test(test_hard_link_swap_never_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

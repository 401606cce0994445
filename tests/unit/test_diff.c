/* Unified diffs: GNU diff's exact text on hand-written cases, the same text
 * and a minimal edit count on thousands of random ones (checked against GNU
 * diff and patch when they are installed, and always against a quadratic
 * LCS and a strict applier here), and bounded work on hostile input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "util/buf.h"
#include "diff/diff.h"

#define GNU_DIFF  "/usr/bin/diff"
#define GNU_PATCH "/usr/bin/patch"
#define NO_EOL    "\\ No newline at end of file\n"

/* ---- helpers ---- */

static void diff_into(mt_buf *out, const char *a, size_t alen, const char *b, size_t blen,
                      unsigned context)
{
    mt_diff_opts o = MT_DIFF_OPTS_INIT;

    o.context = context;
    assert_int_equal(mt_diff_unified(out, a, alen, b, blen, &o), 0);
}

/* The diff with labels a and b must be exactly want (text without NULs). */
static void expect_diff(const char *a, const char *b, unsigned context, const char *want)
{
    mt_buf out = MT_BUF_INIT;

    diff_into(&out, a, strlen(a), b, strlen(b), context);
    assert_string_equal(out.ptr ? out.ptr : "", want);
    assert_int_equal(out.len, strlen(want));
    mt_buf_dispose(&out);
}

/* "1\n" to "n\n", with line k (when not 0) replaced by `with`. */
static char *numbered(unsigned n, unsigned k, const char *with, unsigned k2, const char *with2)
{
    mt_buf b = MT_BUF_INIT;
    unsigned i;

    for (i = 1; i <= n; i++) {
        if (i == k)
            assert_int_equal(mt_buf_printf(&b, "%s\n", with), 0);
        else if (i == k2)
            assert_int_equal(mt_buf_printf(&b, "%s\n", with2), 0);
        else
            assert_int_equal(mt_buf_printf(&b, "%u\n", i), 0);
    }
    return mt_buf_detach(&b, NULL);
}

typedef struct {
    const char *p;
    size_t len; /* with its '\n', when it has one */
} line;

/* The lines of s; *n gets their count. */
static line *split(const char *s, size_t len, size_t *n)
{
    line *v = calloc(len + 1, sizeof(*v));
    size_t i = 0, k = 0;

    assert_non_null(v);
    while (i < len) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - s) + 1 : len;

        v[k].p = s + i;
        v[k++].len = end - i;
        i = end;
    }
    *n = k;
    return v;
}

static int line_eq(line x, line y)
{
    return x.len == y.len && !memcmp(x.p, y.p, x.len);
}

/* The fewest lines a diff of a into b can remove and add: by the LCS table. */
static size_t min_edits(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t na, nb, i, j, *t, best;
    line *la = split(a, alen, &na), *lb = split(b, blen, &nb);

    t = calloc((na + 1) * (nb + 1), sizeof(*t));
    assert_non_null(t);
    for (i = 1; i <= na; i++)
        for (j = 1; j <= nb; j++) {
            size_t up = t[(i - 1) * (nb + 1) + j], left = t[i * (nb + 1) + j - 1];

            t[i * (nb + 1) + j] = line_eq(la[i - 1], lb[j - 1]) ? t[(i - 1) * (nb + 1) + j - 1] + 1
                                  : up > left                   ? up
                                                                : left;
        }
    best = na + nb - 2 * t[na * (nb + 1) + nb];
    free(t);
    free(la);
    free(lb);
    return best;
}

/* The '-' and '+' lines of a diff's hunks, after its first `skip` lines
 * (the header: a removed "-- x" shows as "--- x" too). */
static size_t count_lines(const char *d, size_t len, size_t skip)
{
    size_t n, i, edits = 0;
    line *v = split(d, len, &n);

    for (i = skip; i < n; i++)
        if (v[i].p[0] == '-' || v[i].p[0] == '+')
            edits++;
    free(v);
    return edits;
}

/* Parse "-s[,n]" or "+s[,n]" at *p; the first line it covers, 0-based. */
static size_t parse_range(const char **p, char mark, size_t *count)
{
    char *end;
    size_t start;

    assert_int_equal(**p, mark);
    start = strtoul(*p + 1, &end, 10);
    *count = 1;
    if (*end == ',')
        *count = strtoul(end + 1, &end, 10);
    *p = end;
    /* GNU: an empty range names the line before it. */
    return *count ? start - 1 : start;
}

/* Apply diff d to a strictly: every context and removed line must be the
 * line of a it stands for, hunks in order, each body the length its header
 * says, and a line without '\n' only where the marker says so. The result
 * must be b. */
static void apply_strict(const char *a, size_t alen, const char *d, size_t dlen, const char *b,
                         size_t blen)
{
    size_t na, nd, pos = 0, k = 2;
    line *la = split(a, alen, &na), *ld = split(d, dlen, &nd);
    mt_buf res = MT_BUF_INIT;
    size_t res_lines = 0;

    if (dlen == 0) {
        assert_int_equal(alen, blen);
        assert_memory_equal(a, b, alen);
        goto done;
    }
    assert_true(nd >= 3);
    assert_true(ld[0].len > 4 && !memcmp(ld[0].p, "--- ", 4));
    assert_true(ld[1].len > 4 && !memcmp(ld[1].p, "+++ ", 4));
    while (k < nd) {
        const char *h = ld[k].p;
        size_t ocount, ncount, ofirst, nfirst;

        assert_memory_equal(h, "@@ ", 3);
        h += 3;
        ofirst = parse_range(&h, '-', &ocount);
        assert_int_equal(*h++, ' ');
        nfirst = parse_range(&h, '+', &ncount);
        assert_memory_equal(h, " @@\n", 4);
        assert_true(ofirst >= pos && ofirst <= na);
        for (; pos < ofirst; pos++, res_lines++)
            assert_int_equal(mt_buf_put(&res, la[pos].p, la[pos].len), 0);
        assert_int_equal(nfirst, res_lines);
        for (k++; k < nd && (ocount || ncount); k++) {
            char mark = ld[k].p[0];
            line body = {ld[k].p + 1, ld[k].len - 1};

            if (k + 1 < nd && ld[k + 1].p[0] == '\\') {
                assert_int_equal(ld[k + 1].len, strlen(NO_EOL));
                assert_memory_equal(ld[k + 1].p, NO_EOL, ld[k + 1].len);
                body.len--; /* the '\n' the diff added */
            }
            assert_true(mark == ' ' || mark == '-' || mark == '+');
            if (mark != '+') {
                assert_true(pos < na && ocount > 0);
                assert_true(line_eq(body, la[pos]));
                pos++;
                ocount--;
            }
            if (mark != '-') {
                assert_true(ncount > 0);
                assert_int_equal(mt_buf_put(&res, body.p, body.len), 0);
                res_lines++;
                ncount--;
            }
            if (k + 1 < nd && ld[k + 1].p[0] == '\\')
                k++;
        }
        assert_int_equal(ocount, 0);
        assert_int_equal(ncount, 0);
    }
    for (; pos < na; pos++)
        assert_int_equal(mt_buf_put(&res, la[pos].p, la[pos].len), 0);
    assert_int_equal(res.len, blen);
    if (blen)
        assert_memory_equal(res.ptr, b, blen);
done:
    mt_buf_dispose(&res);
    free(la);
    free(ld);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void make_tmpdir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, size, "%s/memtool-diff-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
}

static void remove_tmpdir(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[600];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_non_null(f = fopen(path, "wb"));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static char *read_file(const char *dir, const char *name, size_t *len)
{
    char path[600], chunk[65536];
    mt_buf b = MT_BUF_INIT;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_non_null(f = fopen(path, "rb"));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(mt_buf_put(&b, chunk, n), 0);
    fclose(f);
    return mt_buf_detach(&b, len);
}

/* Run a shell command in dir; returns its exit status. */
static int run_in(const char *dir, const char *cmd)
{
    char full[1200];
    int st;

    snprintf(full, sizeof(full), "cd '%s' && %s", dir, cmd);
    st = system(full);
    assert_true(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* ---- exact text ---- */

static void test_add_remove(void **state)
{
    (void)state;
    expect_diff("one\ntwo\nthree\n", "one\ntwo\nthree\nfour\n", 3,
                "--- a\n+++ b\n@@ -1,3 +1,4 @@\n one\n two\n three\n+four\n");
    expect_diff("one\ntwo\nthree\nfour\n", "one\nthree\nfour\n", 3,
                "--- a\n+++ b\n@@ -1,4 +1,3 @@\n one\n-two\n three\n four\n");
}

static void test_change_middle_start_end(void **state)
{
    char *a = numbered(9, 0, NULL, 0, NULL), *b = numbered(9, 5, "five", 0, NULL);
    (void)state;
    expect_diff(a, b, 3, "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
    free(a);
    free(b);
    expect_diff("1\n2\n3\n4\n5\n6\n", "zero\n2\n3\n4\n5\n6\n", 3,
                "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+zero\n 2\n 3\n 4\n");
    expect_diff("1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n5\nsix\n", 3,
                "--- a\n+++ b\n@@ -3,4 +3,4 @@\n 3\n 4\n 5\n-6\n+six\n");
}

static void test_no_newline_at_end(void **state)
{
    (void)state;
    /* A last line without '\n' differs from the same text with one. */
    expect_diff("a\nb\nc", "a\nb\nc\n", 3,
                "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n b\n-c\n" NO_EOL "+c\n");
    expect_diff("a\nb\nc\n", "a\nb\nc", 3,
                "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n b\n-c\n+c\n" NO_EOL);
    expect_diff("a\nb\nc", "a\nB\nc", 3, "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" NO_EOL);
    expect_diff("a\nb", "a\nc", 3, "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n" NO_EOL "+c\n" NO_EOL);
}

static void test_empty_sides(void **state)
{
    mt_buf out = MT_BUF_INIT;
    (void)state;
    expect_diff("", "x\ny\n", 3, "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    expect_diff("x\ny\n", "", 3, "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    expect_diff("", "x", 3, "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" NO_EOL);
    /* NULL is fine for an empty string. */
    assert_int_equal(mt_diff_unified(&out, NULL, 0, "x\n", 2, NULL), 0);
    assert_string_equal(out.ptr, "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n");
    mt_buf_dispose(&out);
}

static void test_identical(void **state)
{
    mt_buf out = MT_BUF_INIT;
    (void)state;
    assert_int_equal(mt_buf_puts(&out, "kept"), 0);
    assert_int_equal(mt_diff_unified(&out, "a\nb\n", 4, "a\nb\n", 4, NULL), 0);
    assert_int_equal(mt_diff_unified(&out, "", 0, NULL, 0, NULL), 0);
    assert_int_equal(mt_diff_unified(&out, "x", 1, "x", 1, NULL), 0);
    assert_string_equal(out.ptr, "kept");
    /* A diff is appended to what the buffer holds. */
    assert_int_equal(mt_diff_unified(&out, "x", 1, "y", 1, NULL), 0);
    assert_string_equal(out.ptr, "kept--- a\n+++ b\n@@ -1 +1 @@\n-x\n" NO_EOL "+y\n" NO_EOL);
    mt_buf_dispose(&out);
}

static void test_hunks_far_and_merged(void **state)
{
    char *a = numbered(20, 0, NULL, 0, NULL), *b = numbered(20, 2, "two", 18, "eighteen");
    (void)state;
    expect_diff(a, b, 3,
                "--- a\n+++ b\n"
                "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
                "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n");
    free(b);
    free(a);
    /* Six unchanged lines between: the two hunks' context touches, one hunk. */
    a = numbered(12, 0, NULL, 0, NULL);
    b = numbered(12, 2, "two", 9, "nine");
    expect_diff(a, b, 3,
                "--- a\n+++ b\n@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n"
                "-9\n+nine\n 10\n 11\n 12\n");
    free(b);
    /* Seven: two hunks. */
    b = numbered(12, 2, "two", 10, "ten");
    expect_diff(a, b, 3,
                "--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
                "@@ -7,6 +7,6 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n");
    /* With one line of context, three lines apart is already too far. */
    expect_diff(
        a, b, 1,
        "--- a\n+++ b\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n@@ -9,3 +9,3 @@\n 9\n-10\n+ten\n 11\n");
    /* Any amount of context: the whole file in one hunk. */
    expect_diff(a, b, (unsigned)-1,
                "--- a\n+++ b\n@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n 9\n"
                "-10\n+ten\n 11\n 12\n");
    free(a);
    free(b);
}

static void test_no_context(void **state)
{
    (void)state;
    /* GNU's ranges: one line is its number alone, none the line before. */
    expect_diff("a\nb\nc\n", "a\nb\nX\nc\n", 0, "--- a\n+++ b\n@@ -2,0 +3 @@\n+X\n");
    expect_diff("a\nb\nc\n", "a\nc\n", 0, "--- a\n+++ b\n@@ -2 +1,0 @@\n-b\n");
    expect_diff("a\nb\nc\n", "A\nb\nC\n", 0,
                "--- a\n+++ b\n@@ -1 +1 @@\n-a\n+A\n@@ -3 +3 @@\n-c\n+C\n");
}

static void test_nul_bytes(void **state)
{
    static const char a[] = "x\0y\nkeep\n", b[] = "x\0z\nkeep\n";
    static const char want[] = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-x\0y\n+x\0z\n keep\n";
    mt_buf out = MT_BUF_INIT;
    (void)state;
    diff_into(&out, a, sizeof(a) - 1, b, sizeof(b) - 1, 3);
    assert_int_equal(out.len, sizeof(want) - 1);
    assert_memory_equal(out.ptr, want, sizeof(want) - 1);
    mt_buf_dispose(&out);
}

static void test_labels_and_color(void **state)
{
    mt_diff_opts o = MT_DIFF_OPTS_INIT;
    mt_buf out = MT_BUF_INIT;
    (void)state;
    o.old_label = "memories/notes.md@3";
    o.new_label = "memories/notes.md@4";
    o.color = 1;
    assert_int_equal(mt_diff_unified(&out, "a\nb", 3, "a\nc\n", 4, &o), 0);
    assert_string_equal(out.ptr, "\033[1m--- memories/notes.md@3\033[m\n"
                                 "\033[1m+++ memories/notes.md@4\033[m\n"
                                 "\033[36m@@ -1,2 +1,2 @@\033[m\n"
                                 " a\n"
                                 "\033[31m-b\033[m\n" NO_EOL "\033[32m+c\033[m\n");
    mt_buf_dispose(&out);
}

static void test_bad_arguments(void **state)
{
    mt_buf out = MT_BUF_INIT;
    (void)state;
    assert_int_equal(mt_diff_unified(NULL, "a", 1, "b", 1, NULL), MT_EINVAL);
    assert_int_equal(mt_diff_unified(&out, NULL, 1, "b", 1, NULL), MT_EINVAL);
    assert_int_equal(mt_diff_unified(&out, "a", 1, NULL, 1, NULL), MT_EINVAL);
    assert_int_equal(out.len, 0);
    mt_buf_dispose(&out);
}

/* ---- random inputs ---- */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: the tests need no more, and the same cases every run. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
    return (unsigned)(rng_next(s) >> 33) % n;
}

/* Few distinct lines, so many match and ties are everywhere; one has a NUL. */
static const char *const tokens[] = {"a\n", "b\n", "c\n", "\n", "d\0e\n"};
static const size_t token_len[] = {2, 2, 2, 1, 4};

static void render(mt_buf *out, const unsigned *t, size_t n, int cut_last_newline)
{
    size_t i;

    for (i = 0; i < n; i++) {
        size_t len = token_len[t[i]];

        if (i + 1 == n && cut_last_newline)
            len--;
        assert_int_equal(mt_buf_put(out, tokens[t[i]], len), 0);
    }
}

/* A random small a, and b as a few edits of it (or, now and then, unrelated). */
static void random_pair(uint64_t *rng, mt_buf *a, mt_buf *b)
{
    unsigned ta[16], tb[64], kinds = 2 + rng_below(rng, 4), edits = rng_below(rng, 7), e;
    size_t na = rng_below(rng, 15), nb, i;

    for (i = 0; i < na; i++)
        ta[i] = rng_below(rng, kinds);
    memcpy(tb, ta, na * sizeof(*ta));
    nb = na;
    for (e = 0; e < edits; e++) {
        unsigned op = rng_below(rng, 3);

        if (op == 0 && nb > 0) {
            i = rng_below(rng, (unsigned)nb);
            memmove(tb + i, tb + i + 1, (nb - i - 1) * sizeof(*tb));
            nb--;
        } else if (op == 1) {
            i = rng_below(rng, (unsigned)nb + 1);
            memmove(tb + i + 1, tb + i, (nb - i) * sizeof(*tb));
            tb[i] = rng_below(rng, kinds);
            nb++;
        } else if (nb > 0) {
            tb[rng_below(rng, (unsigned)nb)] = rng_below(rng, kinds);
        }
    }
    if (rng_below(rng, 10) == 0) {
        nb = rng_below(rng, 15);
        for (i = 0; i < nb; i++)
            tb[i] = rng_below(rng, kinds);
    }
    mt_buf_truncate(a, 0);
    mt_buf_truncate(b, 0);
    render(a, ta, na, rng_below(rng, 5) == 0);
    render(b, tb, nb, rng_below(rng, 5) == 0);
}

typedef struct {
    mt_buf a, b, ours;
} random_case;

/* The GNU diff sections of `diff -r` output, by the number of the file. */
static void split_gnu(const char *out, size_t len, size_t count, const char **body,
                      size_t *body_len)
{
    size_t n, i;
    line *v = split(out, len, &n);

    for (i = 0; i < n;) {
        const char *name;
        unsigned long k;

        assert_memory_equal(v[i].p, "diff ", 5);
        name = memchr(v[i].p, '/', v[i].len);
        assert_non_null(name);
        k = strtoul(name + 1, NULL, 10);
        assert_true(k < count && !body[k]);
        assert_true(i + 2 < n && v[i + 1].p[0] == '-' && v[i + 2].p[0] == '+');
        i += 3;
        body[k] = v[i - 1].p + v[i - 1].len;
        for (; i < n && v[i].p[0] != 'd'; i++)
            ;
        body_len[k] = (size_t)((i < n ? v[i].p : out + len) - body[k]);
    }
    free(v);
}

/* `count` random pairs with `context` lines of context: each diff is
 * minimal (by the LCS table) and applies strictly to give b; with GNU diff,
 * it is GNU's text byte for byte wherever GNU's is as short (GNU diff's own
 * heuristics may make its longer); with GNU patch, patching a gives b. */
static void random_batch(unsigned context, size_t count, uint64_t seed)
{
    char dir[512], name[64], cmd[128];
    random_case *cases = calloc(count, sizeof(*cases));
    const char **body = calloc(count, sizeof(*body));
    size_t *body_len = calloc(count, sizeof(*body_len)), i, longer = 0, same = 0;
    mt_buf all = MT_BUF_INIT;
    uint64_t rng = seed;
    int have_diff = access(GNU_DIFF, X_OK) == 0, have_patch = access(GNU_PATCH, X_OK) == 0;

    assert_true(cases && body && body_len);
    make_tmpdir(dir, sizeof(dir));
    assert_int_equal(run_in(dir, "mkdir A B P"), 0);
    for (i = 0; i < count; i++) {
        random_case *c = &cases[i];
        mt_diff_opts o = MT_DIFF_OPTS_INIT;
        size_t steps = 1;

        random_pair(&rng, &c->a, &c->b);
        snprintf(name, sizeof(name), "P/%05zu", i);
        o.old_label = o.new_label = name;
        o.context = context;
        o.steps = &steps;
        assert_int_equal(mt_diff_unified(&c->ours, c->a.ptr, c->a.len, c->b.ptr, c->b.len, &o), 0);
        assert_true(steps < 10000);
        apply_strict(c->a.ptr, c->a.len, c->ours.ptr, c->ours.len, c->b.ptr, c->b.len);
        if (c->ours.len)
            assert_int_equal(count_lines(c->ours.ptr, c->ours.len, 2),
                             min_edits(c->a.ptr, c->a.len, c->b.ptr, c->b.len));
        assert_int_equal(mt_buf_put(&all, c->ours.ptr, c->ours.len), 0);
        write_file(dir, name, c->a.ptr, c->a.len);
        name[0] = 'A';
        write_file(dir, name, c->a.ptr, c->a.len);
        name[0] = 'B';
        write_file(dir, name, c->b.ptr, c->b.len);
    }

    if (have_diff) {
        size_t len;
        char *gnu;

        /* One process for every pair: -r diffs the two trees file by file. */
        snprintf(cmd, sizeof(cmd), GNU_DIFF " -r -a -U%u A B > gnu.out", context);
        assert_true(run_in(dir, cmd) <= 1);
        gnu = read_file(dir, "gnu.out", &len);
        split_gnu(gnu, len, count, body, body_len);
        for (i = 0; i < count; i++) {
            random_case *c = &cases[i];
            size_t head, ours_edits, gnu_edits;

            if (!body[i]) {
                assert_int_equal(c->ours.len, 0);
                continue;
            }
            assert_true(c->ours.len > 0);
            /* "--- P/00000\n+++ P/00000\n" */
            head = 2 * (4 + 7 + 1);
            ours_edits = count_lines(c->ours.ptr, c->ours.len, 2);
            gnu_edits = count_lines(body[i], body_len[i], 0);
            if (ours_edits == gnu_edits) {
                if (c->ours.len - head != body_len[i] ||
                    memcmp(c->ours.ptr + head, body[i], body_len[i]))
                    fail_msg("pair %zu differs from GNU diff:\n%s----\n%.*s", i, c->ours.ptr,
                             (int)body_len[i], body[i]);
                same++;
            } else {
                assert_true(ours_edits < gnu_edits);
                longer++;
            }
        }
        free(gnu);
        print_message("-U%u: %zu of %zu pairs differ, all as GNU diff prints them", context, same,
                      count);
        if (longer)
            print_message(" but %zu where GNU diff's is longer than minimal", longer);
        print_message("\n");
    } else {
        print_message("no " GNU_DIFF ": not compared with GNU diff\n");
    }

    if (have_patch) {
        write_file(dir, "all.patch", all.ptr ? all.ptr : "", all.len);
        assert_int_equal(run_in(dir, GNU_PATCH " -s -F0 -p0 --no-backup-if-mismatch < all.patch"),
                         0);
        for (i = 0; i < count; i++) {
            size_t len;
            char *got;

            snprintf(name, sizeof(name), "P/%05zu", i);
            got = read_file(dir, name, &len);
            assert_int_equal(len, cases[i].b.len);
            if (len)
                assert_memory_equal(got, cases[i].b.ptr, len);
            free(got);
        }
    } else {
        print_message("no " GNU_PATCH ": applied by the test only\n");
    }

    remove_tmpdir(dir);
    for (i = 0; i < count; i++) {
        mt_buf_dispose(&cases[i].a);
        mt_buf_dispose(&cases[i].b);
        mt_buf_dispose(&cases[i].ours);
    }
    mt_buf_dispose(&all);
    free(cases);
    free(body);
    free(body_len);
}

static void test_random_like_gnu(void **state)
{
    (void)state;
    random_batch(3, 3000, UINT64_C(0x9e3779b97f4a7c15));
    random_batch(0, 600, UINT64_C(0x1234567887654321));
    random_batch(1, 600, UINT64_C(0x0badc0ffee0ddf00));
}

/* A tiny cost bound sends nearly every search down the "too expensive"
 * path: the diffs get longer, never wrong. */
static void test_random_bounded_search(void **state)
{
    mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT, out = MT_BUF_INIT;
    uint64_t rng = UINT64_C(42);
    size_t i, longer = 0;
    (void)state;
    for (i = 0; i < 3000; i++) {
        mt_diff_opts o = MT_DIFF_OPTS_INIT;
        size_t edits, least;

        random_pair(&rng, &a, &b);
        o.max_cost = 1 + i % 3;
        mt_buf_truncate(&out, 0);
        assert_int_equal(mt_diff_unified(&out, a.ptr, a.len, b.ptr, b.len, &o), 0);
        apply_strict(a.ptr, a.len, out.ptr, out.len, b.ptr, b.len);
        if (!out.len)
            continue;
        edits = count_lines(out.ptr, out.len, 2);
        least = min_edits(a.ptr, a.len, b.ptr, b.len);
        assert_true(edits >= least);
        longer += edits > least;
    }
    assert_true(longer > 0); /* the bound did bite */
    mt_buf_dispose(&a);
    mt_buf_dispose(&b);
    mt_buf_dispose(&out);
}

/* ---- hostile input ---- */

#define BIG_LINES 50000

/* Diff a into b, check it applies (with GNU patch too when there is one) and
 * return its '-' and '+' lines; *steps and *seconds get the work. */
static size_t big_diff(const mt_buf *a, const mt_buf *b, size_t *steps, double *seconds)
{
    mt_diff_opts o = MT_DIFF_OPTS_INIT;
    mt_buf out = MT_BUF_INIT;
    double t0 = now();
    size_t edits;

    o.steps = steps;
    assert_int_equal(mt_diff_unified(&out, a->ptr, a->len, b->ptr, b->len, &o), 0);
    *seconds = now() - t0;
    apply_strict(a->ptr, a->len, out.ptr, out.len, b->ptr, b->len);
    if (access(GNU_PATCH, X_OK) == 0) {
        char dir[512];
        size_t len;
        char *got;

        make_tmpdir(dir, sizeof(dir));
        write_file(dir, "f", a->ptr, a->len);
        write_file(dir, "d", out.ptr, out.len);
        assert_int_equal(run_in(dir, GNU_PATCH " -s -F0 --no-backup-if-mismatch f < d"), 0);
        got = read_file(dir, "f", &len);
        assert_int_equal(len, b->len);
        assert_memory_equal(got, b->ptr, len);
        free(got);
        remove_tmpdir(dir);
    }
    edits = count_lines(out.ptr, out.len, 2);
    mt_buf_dispose(&out);
    return edits;
}

/* Two 1 MB files with no line in common: every line is settled before any
 * search, so there are no steps at all. */
static void test_hostile_unrelated(void **state)
{
    mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
    size_t i, steps;
    double seconds;
    (void)state;
    for (i = 0; i < BIG_LINES; i++) {
        assert_int_equal(mt_buf_printf(&a, "old line %010zu\n", i), 0);
        assert_int_equal(mt_buf_printf(&b, "new line %010zu\n", i), 0);
    }
    assert_int_equal(a.len, 1000000);
    assert_int_equal(big_diff(&a, &b, &steps, &seconds), 2 * BIG_LINES);
    assert_int_equal(steps, 0);
    /* Work is bounded by steps, which do not depend on the machine; the
     * seconds are printed for a person, never asserted. */
    print_message("50,000 unrelated lines: %.3f s\n", seconds);
    mt_buf_dispose(&a);
    mt_buf_dispose(&b);
}

/* Two 1 MB files of lines drawn from two: every line has matches by the
 * thousand, the edit distance is in the tens of thousands, and an exact
 * search would take billions of steps. The bound keeps it to tens of
 * millions (about 2^25 by the budget in diff.c). */
static void test_hostile_two_letters(void **state)
{
    mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
    uint64_t rng = UINT64_C(7);
    size_t i, steps, edits;
    double seconds;
    (void)state;
    for (i = 0; i < BIG_LINES; i++) {
        assert_int_equal(mt_buf_printf(&a, "%c------------------\n", 'a' + rng_below(&rng, 2)), 0);
        assert_int_equal(mt_buf_printf(&b, "%c------------------\n", 'a' + rng_below(&rng, 2)), 0);
    }
    assert_int_equal(a.len, 1000000);
    edits = big_diff(&a, &b, &steps, &seconds);
    print_message("50,000 lines of two kinds: %zu lines changed, %zu steps, %.3f s\n", edits, steps,
                  seconds);
    assert_true(steps < (size_t)1 << 27);
    /* Random strings over two letters have about 81% in common (the
     * Chvatal-Sankoff constant), so a minimal diff changes about 19% of the
     * lines: the bounded search must not stray far from that. */
    assert_true(edits < 2 * BIG_LINES * 21 / 100);
    mt_buf_dispose(&a);
    mt_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_remove),        cmocka_unit_test(test_change_middle_start_end),
        cmocka_unit_test(test_no_newline_at_end), cmocka_unit_test(test_empty_sides),
        cmocka_unit_test(test_identical),         cmocka_unit_test(test_hunks_far_and_merged),
        cmocka_unit_test(test_no_context),        cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_labels_and_color),  cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_random_like_gnu),   cmocka_unit_test(test_random_bounded_search),
        cmocka_unit_test(test_hostile_unrelated), cmocka_unit_test(test_hostile_two_letters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * mt_bench: the in-process suites for libmemtool and the syscall floor, and
 * the fixture builders every suite (the SDK's too) runs on.
 *
 *   mt_bench ops     --impl memtool,floor --root DIR [--iters N] [--view-iters N]
 *                    [--durabilities full,file,none] [--only OP]
 *   mt_bench listing --impl memtool,floor[,floor-cores] --root DIR --param FILES [--iters N]
 *   mt_bench bigfile --impl memtool,floor --root DIR --param BYTES [--iters N]
 *                    [--durability D] [--ops view_range,str_replace]
 *   mt_bench fixture-small FILE
 *   mt_bench fixture-tree DIR FILES
 *   mt_bench fixture-bigfile FILE BYTES
 *
 * The implementations named in --impl run interleaved, a slice of each in
 * turn, on the same store DIR and the same directories in it, so a change in
 * the machine's load, or in the filesystem's state (ext4 allocates a new
 * inode more slowly where many were freed recently), lands on all of them
 * alike and their ratios stay fair. Edits come in pairs that undo each
 * other, and every slice holds whole pairs, so each implementation finds
 * the files as the previous one left them. bigfile expects DIR/big.txt.
 *
 * Results go to stdout as CSV rows (see common.h), progress to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "common.h"

/* Files made per batch by the write suites before they are cleaned away:
 * keeps every directory small, so the numbers do not drift with its size. */
#define BATCH 250
/* Slices per implementation when interleaving repeated requests. */
#define SLICES    10
#define MAX_LANES 3

typedef struct {
    const char *impls, *root, *param, *ops;
    const char *only; /* run just this operation of the ops suite (for profiling) */
    const char *durabilities;
    const char *durability;
    size_t iters, view_iters;
} bench_args;

/* One implementation under test: its store, its open handle, its samples. */
typedef struct {
    char impl[16];
    char root[4096];
    bench_backend *b;
    bench_samples s;
    bench_req req[2];
} lane;

static void usage(void)
{
    fputs("usage: mt_bench ops|listing|bigfile --impl memtool,floor --root DIR [options]\n"
          "       mt_bench fixture-small FILE | fixture-tree DIR FILES |\n"
          "                fixture-bigfile FILE BYTES\n",
          stderr);
    exit(2);
}

static void parse_args(bench_args *a, int argc, char **argv)
{
    int i;

    memset(a, 0, sizeof(*a));
    a->iters = 1000;
    a->view_iters = 20000;
    a->durabilities = "full,file,none";
    a->durability = "file";
    a->ops = "view_range,str_replace";
    a->param = "";
    for (i = 0; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        if (strcmp(k, "--impl") == 0)
            a->impls = v;
        else if (strcmp(k, "--root") == 0)
            a->root = v;
        else if (strcmp(k, "--param") == 0)
            a->param = v;
        else if (strcmp(k, "--iters") == 0)
            a->iters = (size_t)bench_parse_u64(v, "--iters");
        else if (strcmp(k, "--view-iters") == 0)
            a->view_iters = (size_t)bench_parse_u64(v, "--view-iters");
        else if (strcmp(k, "--durabilities") == 0)
            a->durabilities = v;
        else if (strcmp(k, "--durability") == 0)
            a->durability = v;
        else if (strcmp(k, "--ops") == 0)
            a->ops = v;
        else if (strcmp(k, "--only") == 0)
            a->only = v;
        else
            usage();
    }
    if (!a->impls || !a->root || a->iters == 0)
        usage();
}

/* The next item of a comma-separated list into buf; returns where to go on, or NULL. */
static const char *next_item(char *buf, size_t size, const char *list)
{
    const char *end;

    if (!list || !*list)
        return NULL;
    end = strchr(list, ',');
    if (!end)
        end = list + strlen(list);
    bench_fmt(buf, size, "%.*s", (int)(end - list), list);
    return *end ? end + 1 : end;
}

/* The lanes named by --impl, all on the store DIR. */
static size_t make_lanes(lane *lanes, const bench_args *a)
{
    const char *p = a->impls;
    size_t n = 0;
    char name[16];

    while ((p = next_item(name, sizeof(name), p)) != NULL) {
        if (n == MAX_LANES)
            bench_die("at most %d implementations at once", MAX_LANES);
        memset(&lanes[n], 0, sizeof(lanes[n]));
        bench_fmt(lanes[n].impl, sizeof(lanes[n].impl), "%s", name);
        bench_fmt(lanes[n].root, sizeof(lanes[n].root), "%s", a->root);
        bench_mkdirs(lanes[n].root);
        n++;
    }
    if (n == 0)
        usage();
    return n;
}

static void open_lanes(lane *lanes, size_t n, mt_durability d)
{
    for (size_t i = 0; i < n; i++)
        lanes[i].b = bench_backend_open(lanes[i].impl, lanes[i].root, d);
}

static void close_lanes(lane *lanes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bench_backend_close(lanes[i].b);
        lanes[i].b = NULL;
    }
}

static mt_durability durability_of(const char *name)
{
    mt_durability d;

    if (mt_durability_parse(&d, name) < 0)
        bench_die("%s", mt_error_last()->message);
    return d;
}

/* Discard the first few runs: they pay for cold caches and lazy setup. */
static size_t warmup_of(size_t iters)
{
    return iters >= 20 ? iters / 20 : 1;
}

/* Time each request of reqs once, in order; the first `warm` are not recorded. */
static void measure(bench_backend *b, const bench_req *reqs, size_t n, size_t warm,
                    bench_samples *s)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t t0 = bench_now_ns(), t1;
        bench_run(b, &reqs[i]);
        t1 = bench_now_ns();
        if (i >= warm)
            bench_samples_add(s, t1 - t0);
    }
}

/*
 * Run each lane's req[0] (and req[1], alternating, when `pairs`) `iters`
 * times after `warm` unrecorded runs, the lanes taking turns in slices.
 * With pairs, every slice is of even length, so an edit and its undo
 * always run together.
 */
static void interleave(lane *lanes, size_t nl, size_t iters, size_t warm, int pairs)
{
    size_t done = 0, slice = (iters + SLICES - 1) / SLICES, l;

    if (pairs)
        slice += slice & 1;
    for (l = 0; l < nl; l++) {
        for (size_t i = 0; i < warm + (warm & (size_t)pairs); i++)
            bench_run(lanes[l].b, &lanes[l].req[pairs ? i & 1 : 0]);
    }
    while (done < iters) {
        size_t n = iters - done < slice ? iters - done : slice;
        if (pairs)
            n += n & 1;
        for (l = 0; l < nl; l++) {
            for (size_t i = 0; i < n; i++) {
                uint64_t t0 = bench_now_ns(), t1;
                bench_run(lanes[l].b, &lanes[l].req[pairs ? i & 1 : 0]);
                t1 = bench_now_ns();
                bench_samples_add(&lanes[l].s, t1 - t0);
            }
        }
        done += n;
    }
}

/* Untimed setup writes are flushed before timing, so an fsync in a timed
 * write never pays for the journal traffic of the setup. */
static void settle(const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || syncfs(fd) < 0)
        bench_die("cannot sync %s: %s", root, strerror(errno));
    close(fd);
}

static void path_join(char *out, size_t size, const char *root, const char *rel)
{
    bench_fmt(out, size, "%s/%s", root, rel);
}

static void fresh_dir(const char *root, const char *rel)
{
    char p[4096];

    path_join(p, sizeof(p), root, rel);
    bench_empty_dir(p);
}

static void report_lanes(lane *lanes, size_t nl, const char *suite, const char *op, const char *dur,
                         const char *param)
{
    for (size_t l = 0; l < nl; l++) {
        bench_stats st = bench_stats_of(&lanes[l].s);
        bench_row(stdout, suite, op, lanes[l].impl, dur, param, &st);
        bench_samples_free(&lanes[l].s);
        bench_req_dispose(&lanes[l].req[0]);
        bench_req_dispose(&lanes[l].req[1]);
    }
}

static int wanted(const bench_args *a, const char *op)
{
    return !a->only || strcmp(a->only, op) == 0;
}

/* ---- ops: each command on small files ----------------------------------- */

static void ops_views(const bench_args *a, lane *lanes, size_t nl, const char *small,
                      size_t small_len)
{
    char p[4096];
    size_t i, l, n;

    open_lanes(lanes, nl, MT_DURABILITY_FULL);
    for (l = 0; l < nl; l++) {
        path_join(p, sizeof(p), lanes[l].root, "small.md");
        bench_write_file(p, small, small_len);
        fresh_dir(lanes[l].root, "dir100");
        for (i = 0; i < 100; i++) {
            bench_fmt(p, sizeof(p), "%s/dir100/f%03zu.md", lanes[l].root, i);
            bench_write_file(p, small, small_len);
        }
        settle(lanes[l].root);
    }
    if (wanted(a, "view")) {
        n = a->view_iters;
        for (l = 0; l < nl; l++) {
            memset(lanes[l].req, 0, sizeof(lanes[l].req));
            lanes[l].req[0].op = OP_VIEW;
            bench_fmt(lanes[l].req[0].rel, sizeof(lanes[l].req[0].rel), "small.md");
            bench_prepare(lanes[l].b, &lanes[l].req[0]);
            bench_samples_init(&lanes[l].s, n);
        }
        interleave(lanes, nl, n, warmup_of(n), 0);
        report_lanes(lanes, nl, "inproc", "view", "-", "small file");
    }
    if (wanted(a, "view_dir")) {
        n = a->view_iters / 10 ? a->view_iters / 10 : 1;
        for (l = 0; l < nl; l++) {
            memset(lanes[l].req, 0, sizeof(lanes[l].req));
            lanes[l].req[0].op = OP_VIEW_DIR;
            bench_fmt(lanes[l].req[0].rel, sizeof(lanes[l].req[0].rel), "dir100");
            bench_prepare(lanes[l].b, &lanes[l].req[0]);
            bench_samples_init(&lanes[l].s, n);
        }
        interleave(lanes, nl, n, warmup_of(n), 0);
        report_lanes(lanes, nl, "inproc", "view_dir", "-", "100 entries");
    }
    close_lanes(lanes, nl);
}

/* Requests for one batch of a write suite, with the files they need made. */
static void batch_setup(lane *ln, bench_req *reqs, bench_op op, const char *dirname, size_t first,
                        size_t n, const char *small, size_t small_len)
{
    char p[4096];

    fresh_dir(ln->root, dirname);
    for (size_t i = 0; i < n; i++) {
        bench_req *r = &reqs[i];
        memset(r, 0, sizeof(*r));
        r->op = op;
        bench_fmt(r->rel, sizeof(r->rel), "%s/f%06zu.md", dirname, first + i);
        if (op == OP_CREATE) {
            r->text = small;
            r->text_len = small_len;
        } else {
            /* The file the timed request works on exists already. */
            path_join(p, sizeof(p), ln->root, r->rel);
            bench_write_file(p, small, small_len);
        }
        if (op == OP_INSERT) {
            r->line = BENCH_INSERT_LINE;
            r->text = BENCH_INSERT_TEXT;
            r->text_len = strlen(BENCH_INSERT_TEXT);
        } else if (op == OP_RENAME) {
            bench_fmt(r->rel2, sizeof(r->rel2), "%s/g%06zu.md", dirname, first + i);
        }
        bench_prepare(ln->b, r);
    }
    settle(ln->root);
}

/* create, insert, delete, rename: each timed request on a new file, in
 * batches of BATCH per lane, the lanes taking turns batch by batch. */
static void ops_batched(lane *lanes, size_t nl, const bench_args *a, bench_op op,
                        const char *dirname, const char *small, size_t small_len)
{
    size_t done = 0, warm = warmup_of(a->iters), total = a->iters + warm, l;
    bench_req *reqs = calloc(BATCH, sizeof(*reqs));

    if (!reqs)
        bench_die("out of memory");
    while (done < total) {
        size_t n = total - done < BATCH ? total - done : BATCH;
        for (l = 0; l < nl; l++) {
            batch_setup(&lanes[l], reqs, op, dirname, done, n, small, small_len);
            measure(lanes[l].b, reqs, n, done == 0 ? (warm < n ? warm : n) : 0, &lanes[l].s);
            for (size_t i = 0; i < n; i++)
                bench_req_dispose(&reqs[i]);
        }
        done += n;
    }
    for (l = 0; l < nl; l++) {
        fresh_dir(lanes[l].root, dirname);
        settle(lanes[l].root);
    }
    free(reqs);
}

/* The pair of requests that swap the token in `rel` and back. */
static void token_pair(lane *ln, const char *rel)
{
    memset(ln->req, 0, sizeof(ln->req));
    for (size_t i = 0; i < 2; i++) {
        ln->req[i].op = OP_STR_REPLACE;
        bench_fmt(ln->req[i].rel, sizeof(ln->req[i].rel), "%s", rel);
        ln->req[i].old = i == 0 ? BENCH_TOKEN_A : BENCH_TOKEN_B;
        ln->req[i].text = i == 0 ? BENCH_TOKEN_B : BENCH_TOKEN_A;
        ln->req[i].text_len = strlen(ln->req[i].text);
        bench_prepare(ln->b, &ln->req[i]);
    }
}

static void ops_str_replace(lane *lanes, size_t nl, const bench_args *a, const char *small,
                            size_t small_len)
{
    char p[4096];

    for (size_t l = 0; l < nl; l++) {
        path_join(p, sizeof(p), lanes[l].root, "edit.md");
        bench_write_file(p, small, small_len);
        settle(lanes[l].root);
        token_pair(&lanes[l], "edit.md");
    }
    interleave(lanes, nl, a->iters, warmup_of(a->iters), 1);
}

static int cmd_ops(int argc, char **argv)
{
    static const struct {
        const char *name;
        bench_op op;
        const char *dir;
    } writes[] = {
        {"create", OP_CREATE, "c"},   {"str_replace", OP_STR_REPLACE, ""},
        {"insert", OP_INSERT, "ins"}, {"delete", OP_DELETE, "del"},
        {"rename", OP_RENAME, "ren"},
    };
    lane lanes[MAX_LANES];
    bench_args a;
    size_t small_len, w, nl, l;
    const char *d;
    char *small, dur[16];

    parse_args(&a, argc, argv);
    nl = make_lanes(lanes, &a);
    small = bench_small_text(&small_len);
    if (a.view_iters > 0)
        ops_views(&a, lanes, nl, small, small_len);
    for (d = a.durabilities; (d = next_item(dur, sizeof(dur), d)) != NULL;) {
        open_lanes(lanes, nl, durability_of(dur));
        fprintf(stderr, "bench:   writes at %s durability\n", dur);
        for (w = 0; w < sizeof(writes) / sizeof(writes[0]); w++) {
            if (!wanted(&a, writes[w].name))
                continue;
            for (l = 0; l < nl; l++) {
                bench_samples_init(&lanes[l].s, a.iters);
                memset(lanes[l].req, 0, sizeof(lanes[l].req));
            }
            if (writes[w].op == OP_STR_REPLACE)
                ops_str_replace(lanes, nl, &a, small, small_len);
            else
                ops_batched(lanes, nl, &a, writes[w].op, writes[w].dir, small, small_len);
            report_lanes(lanes, nl, "inproc", writes[w].name, dur, "small file");
        }
        close_lanes(lanes, nl);
    }
    free(small);
    return 0;
}

/* ---- scale: a listing of a big store, edits of big files ---------------- */

static int cmd_listing(int argc, char **argv)
{
    lane lanes[MAX_LANES];
    bench_args a;
    size_t nl, l;

    parse_args(&a, argc, argv);
    nl = make_lanes(lanes, &a);
    open_lanes(lanes, nl, MT_DURABILITY_FULL);
    for (l = 0; l < nl; l++) {
        lanes[l].req[0].op = OP_VIEW_DIR;
        bench_prepare(lanes[l].b, &lanes[l].req[0]);
        bench_samples_init(&lanes[l].s, a.iters);
    }
    /* One untimed run first: the numbers are for a warm page cache. */
    interleave(lanes, nl, a.iters, 1, 0);
    report_lanes(lanes, nl, "scale", "view_root", "-", a.param);
    close_lanes(lanes, nl);
    return 0;
}

static size_t count_lines(const char *path)
{
    char buf[1 << 16];
    size_t lines = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        bench_die("cannot open %s: %s", path, strerror(errno));
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (ssize_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
    }
    close(fd);
    return lines;
}

static int cmd_bigfile(int argc, char **argv)
{
    lane lanes[MAX_LANES];
    bench_args a;
    char p[4096];
    size_t lines, nl, l;

    parse_args(&a, argc, argv);
    nl = make_lanes(lanes, &a);
    path_join(p, sizeof(p), lanes[0].root, "big.txt");
    lines = count_lines(p);
    open_lanes(lanes, nl, durability_of(a.durability));
    if (strstr(a.ops, "view_range")) {
        for (l = 0; l < nl; l++) {
            bench_req *r = &lanes[l].req[0];
            memset(lanes[l].req, 0, sizeof(lanes[l].req));
            r->op = OP_VIEW;
            bench_fmt(r->rel, sizeof(r->rel), "big.txt");
            r->range[0] = (int64_t)(lines / 2);
            r->range[1] = (int64_t)(lines / 2 + 19);
            bench_prepare(lanes[l].b, r);
            bench_samples_init(&lanes[l].s, a.iters);
        }
        interleave(lanes, nl, a.iters, 1, 0);
        report_lanes(lanes, nl, "scale", "view_range", "-", a.param);
    }
    if (strstr(a.ops, "str_replace")) {
        for (l = 0; l < nl; l++) {
            token_pair(&lanes[l], "big.txt");
            bench_samples_init(&lanes[l].s, a.iters);
            settle(lanes[l].root);
        }
        /* Even counts leave every file as it was, for the next suite. */
        interleave(lanes, nl, a.iters + (a.iters & 1), 2, 1);
        report_lanes(lanes, nl, "scale", "str_replace", a.durability, a.param);
    }
    close_lanes(lanes, nl);
    return 0;
}

/* ---- fixtures ----------------------------------------------------------- */

/* The small memory file every suite views and edits. */
static int cmd_fixture_small(int argc, char **argv)
{
    size_t len;
    char *small;

    if (argc != 1)
        usage();
    small = bench_small_text(&len);
    bench_write_file(argv[0], small, len);
    free(small);
    return 0;
}

/* FILES small notes in directories of 100, the shape of a store that grew. */
static int cmd_fixture_tree(int argc, char **argv)
{
    char p[4096], text[128];
    size_t files, i;

    if (argc != 2)
        usage();
    files = (size_t)bench_parse_u64(argv[1], "FILES");
    for (i = 0; i < files; i++) {
        int n;
        if (i % 100 == 0) {
            bench_fmt(p, sizeof(p), "%s/d%04zu", argv[0], i / 100);
            bench_mkdirs(p);
        }
        bench_fmt(p, sizeof(p), "%s/d%04zu/f%02zu.md", argv[0], i / 100, i % 100);
        n = snprintf(text, sizeof(text), "note %zu: the user prefers short answers\n", i);
        bench_write_file(p, text, (size_t)n);
    }
    settle(argv[0]);
    return 0;
}

/* BYTES of 200-byte numbered lines (so 100 MB stays under the 999,999-line
 * limit), TOKEN_A once, in the middle line. */
static int cmd_fixture_bigfile(int argc, char **argv)
{
    size_t bytes, lines, i, len = 0;
    char *data;
    const char *slash;
    char dir[4096];

    if (argc != 2)
        usage();
    bytes = (size_t)bench_parse_u64(argv[1], "BYTES");
    lines = bytes / 200;
    if (lines < 2)
        bench_die("a big file needs at least 400 bytes");
    if (!(data = malloc(lines * 200 + 1)))
        bench_die("out of memory");
    for (i = 0; i < lines; i++) {
        char *line = data + len;
        int n = snprintf(line, 201, "%09zu %s ", i + 1,
                         i == lines / 2 ? BENCH_TOKEN_A : "the quick brown fox");
        memset(line + n, i == lines / 2 ? 'y' : 'x', 199 - (size_t)n);
        line[199] = '\n';
        len += 200;
    }
    slash = strrchr(argv[0], '/');
    if (slash && slash != argv[0]) {
        bench_fmt(dir, sizeof(dir), "%.*s", (int)(slash - argv[0]), argv[0]);
        bench_mkdirs(dir);
    }
    bench_write_file(argv[0], data, len);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "ops") == 0)
        return cmd_ops(argc - 2, argv + 2);
    if (strcmp(argv[1], "listing") == 0)
        return cmd_listing(argc - 2, argv + 2);
    if (strcmp(argv[1], "bigfile") == 0)
        return cmd_bigfile(argc - 2, argv + 2);
    if (strcmp(argv[1], "fixture-small") == 0)
        return cmd_fixture_small(argc - 2, argv + 2);
    if (strcmp(argv[1], "fixture-tree") == 0)
        return cmd_fixture_tree(argc - 2, argv + 2);
    if (strcmp(argv[1], "fixture-bigfile") == 0)
        return cmd_fixture_bigfile(argc - 2, argv + 2);
    usage();
    return 2;
}

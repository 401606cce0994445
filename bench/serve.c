/*
 * mt_bench_serve: requests per second through `memtool serve`, with a
 * pipelining client: requests are written as fast as the pipe takes them
 * while another thread reads the answers, so the server never waits on the
 * client's round trip.
 *
 *   mt_bench_serve --memtool PATH --root DIR --mix view|read|write|scan
 *                  [--clients K] [--ops N] [--durability D] [--files F]
 *                  [--impl NAME] [--server-arg ARG]
 *
 * --memtool may name another server taking memtool's arguments (the floor,
 * mt_bench_floor_serve, or memtool built from an earlier commit); --impl is
 * the name the result row gives it; --server-arg adds one argument after
 * `serve` (the floor's --look).
 * --store URL (and --tenant T) serves an SQL store instead of --root: the
 * fixtures are then made through libmemtool, as no file of it can be written.
 *
 * K clients are K serve processes on the same store, each fed by its own
 * writer and reader threads. Every answer is checked to be a success; the
 * count of answers must equal the count of requests.
 *
 * Mixes (each client):
 *   view   views of one of 100 small files, round robin
 *   read   per 20 requests: 1 view of a 10-file directory, 3 view_range of a
 *          small file, 16 views of a small file
 *   write  cycles of create, str_replace, insert, view, rename, delete on a
 *          new small file of the client's own directory
 *   scan   (over a fixture-tree store of F files) 1 in 50 a view of
 *          /memories, the rest views of files spread over the store
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memtool.h>

#include "common.h"

extern char **environ;

#define MAX_CLIENTS 16

/* suite,mix,impl,clients,durability,ops,wall_s,ops_per_s,server_cpu_s,ops_per_cpu_s,max_rss_kb */
#define TPUT_FMT "serve,%s,%s,%zu,%s,%zu,%.4f,%.1f,%.4f,%.1f,%ld\n"

typedef struct {
    size_t id;
    pid_t pid;
    int to_srv, from_srv;
    char *req;      /* all request lines */
    size_t req_len; /* bytes */
    size_t ops;     /* lines */
    size_t answered, failed;
    char first_failure[256];
} client;

typedef struct {
    const char *memtool, *impl, *root, *mix, *durability, *store, *tenant, *server_arg;
    size_t clients, ops, files;
} serve_args;

typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sbuf_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            bench_die("vsnprintf failed");
        if ((size_t)n < b->cap - b->len)
            break;
        b->cap = (b->cap + (size_t)n + 1) * 2;
        if (!(b->p = realloc(b->p, b->cap)))
            bench_die("out of memory");
    }
    b->len += (size_t)n;
}

static char *json_escaped(const char *s)
{
    json_t *str = json_string(s);
    char *out = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;

    if (!out)
        bench_die("cannot encode a JSON string");
    json_decref(str);
    return out;
}

static void make_requests(client *c, const serve_args *a, const char *small_json)
{
    sbuf b = {NULL, 0, 0};
    size_t i, dirs = a->files / 100 ? a->files / 100 : 1;

    c->ops = a->ops;
    if (strcmp(a->mix, "write") == 0)
        c->ops = (a->ops + 5) / 6 * 6;
    b.cap = c->ops * 96 + 4096;
    if (!(b.p = malloc(b.cap)))
        bench_die("out of memory");
    for (i = 0; i < c->ops; i++) {
        if (strcmp(a->mix, "view") == 0) {
            sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"/memories/small/f%03zu.md\"}\n",
                        i % 100);
        } else if (strcmp(a->mix, "read") == 0) {
            if (i % 20 == 0)
                sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"/memories/dir10\"}\n");
            else if (i % 20 <= 3)
                sbuf_printf(&b,
                            "{\"command\":\"view\",\"path\":\"/memories/small/f%03zu.md\","
                            "\"view_range\":[5,14]}\n",
                            i % 100);
            else
                sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"/memories/small/f%03zu.md\"}\n",
                            i % 100);
        } else if (strcmp(a->mix, "scan") == 0) {
            if (i % 50 == 0)
                sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"/memories\"}\n");
            else
                sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"/memories/d%04zu/f%02zu.md\"}\n",
                            (i * 7919) % dirs, i % 100);
        } else {
            size_t j = i / 6;
            const char *d = "/memories/w/c";
            switch (i % 6) {
            case 0:
                sbuf_printf(&b,
                            "{\"command\":\"create\",\"path\":\"%s%zu/f%06zu.md\","
                            "\"file_text\":%s}\n",
                            d, c->id, j, small_json);
                break;
            case 1:
                sbuf_printf(&b,
                            "{\"command\":\"str_replace\",\"path\":\"%s%zu/f%06zu.md\","
                            "\"old_str\":\"" BENCH_TOKEN_A "\",\"new_str\":\"" BENCH_TOKEN_B
                            "\"}\n",
                            d, c->id, j);
                break;
            case 2:
                sbuf_printf(&b,
                            "{\"command\":\"insert\",\"path\":\"%s%zu/f%06zu.md\","
                            "\"insert_line\":%d,\"insert_text\":\"inserted\\n\"}\n",
                            d, c->id, j, BENCH_INSERT_LINE);
                break;
            case 3:
                sbuf_printf(&b, "{\"command\":\"view\",\"path\":\"%s%zu/f%06zu.md\"}\n", d, c->id,
                            j);
                break;
            case 4:
                sbuf_printf(&b,
                            "{\"command\":\"rename\",\"old_path\":\"%s%zu/f%06zu.md\","
                            "\"new_path\":\"%s%zu/g%06zu.md\"}\n",
                            d, c->id, j, d, c->id, j);
                break;
            default:
                sbuf_printf(&b, "{\"command\":\"delete\",\"path\":\"%s%zu/g%06zu.md\"}\n", d, c->id,
                            j);
                break;
            }
        }
    }
    c->req = b.p;
    c->req_len = b.len;
}

static void spawn_server(client *c, const serve_args *a)
{
    posix_spawn_file_actions_t fa;
    int in[2], out[2];
    size_t n = 0, e = 0;
    char *argv[12];
    /* The limits go in the environment, not as options: a build of memtool
     * from before an option existed ignores its variable, where it would
     * refuse the option, so an earlier build runs the same mix. */
    static char *limits[] = {"MEMTOOL_MAX_FILE_SIZE=1G", "MEMTOOL_MAX_STORE_SIZE=1024G",
                             "MEMTOOL_MAX_FILES=1000000000", "MEMTOOL_MAX_DIRS=1000000000"};
    size_t nlimits = sizeof(limits) / sizeof(limits[0]), count = 0;
    char **envp;

    while (environ[count])
        count++;
    if (!(envp = calloc(count + nlimits + 1, sizeof(*envp))))
        bench_die("out of memory");
    for (size_t i = 0; i < count; i++) {
        if (strncmp(environ[i], "MEMTOOL_MAX_", 12) != 0)
            envp[e++] = environ[i];
    }
    for (size_t i = 0; i < nlimits; i++)
        envp[e++] = limits[i];
    argv[n++] = (char *)a->memtool;
    if (a->store) {
        argv[n++] = "--store";
        argv[n++] = (char *)a->store;
        argv[n++] = "--tenant";
        argv[n++] = (char *)a->tenant;
    } else {
        argv[n++] = "--root";
        argv[n++] = (char *)a->root;
    }
    argv[n++] = "--durability";
    argv[n++] = (char *)a->durability;
    argv[n++] = "serve";
    if (a->server_arg)
        argv[n++] = (char *)a->server_arg;
    argv[n] = NULL;

    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        bench_die("pipe: %s", strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if ((errno = posix_spawn(&c->pid, a->memtool, &fa, NULL, argv, envp)) != 0)
        bench_die("cannot run %s: %s", a->memtool, strerror(errno));
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(in[0]);
    close(out[1]);
    c->to_srv = in[1];
    c->from_srv = out[0];
}

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            bench_die("cannot write to the server: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

/* Read one whole answer line (used before the clock starts). */
static void read_line(int fd, char *buf, size_t size)
{
    size_t len = 0;

    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            bench_die("the server closed its output before answering");
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return;
        }
        len++;
    }
    bench_die("a warm-up answer is longer than %zu bytes", size);
}

static void *writer(void *arg)
{
    client *c = arg;

    write_all(c->to_srv, c->req, c->req_len);
    close(c->to_srv);
    return NULL;
}

static void check_line(client *c, const char *line, size_t len)
{
    static const char ok[] = "\"is_error\":false";

    c->answered++;
    /* The flag comes last in serve's compact output; look there first. */
    if (len >= sizeof(ok) && memcmp(line + len - sizeof(ok), ok, sizeof(ok) - 1) == 0)
        return;
    if (memmem(line, len, ok, sizeof(ok) - 1))
        return;
    if (c->failed++ == 0)
        snprintf(c->first_failure, sizeof(c->first_failure), "%.*s", (int)(len < 200 ? len : 200),
                 line);
}

static void *reader(void *arg)
{
    client *c = arg;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);

    if (!buf)
        bench_die("out of memory");
    for (;;) {
        size_t start = 0;
        char *nl;
        ssize_t n;

        if (len == cap) {
            cap *= 2;
            if (!(buf = realloc(buf, cap)))
                bench_die("out of memory");
        }
        n = read(c->from_srv, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            bench_die("cannot read from the server: %s", strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
        while ((nl = memchr(buf + start, '\n', len - start)) != NULL) {
            check_line(c, buf + start, (size_t)(nl - (buf + start)));
            start = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
    if (len > 0)
        bench_die("the server's last answer has no newline");
    free(buf);
    return NULL;
}

/* The view and read mixes' files, made through libmemtool in an SQL store. */
static void store_fixtures(const serve_args *a)
{
    mt_options o;
    mt_memory *mem;
    char p[64], *small;
    size_t len, i;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.tenant = a->tenant;
    if (mt_memory_open_url(&mem, a->store, &o) < 0)
        bench_die("cannot open %s: %s", a->store, mt_error_last()->message);
    small = bench_small_text(&len);
    for (i = 0; i < 110; i++) {
        json_t *req;
        mt_result res;
        if (i < 100)
            bench_fmt(p, sizeof(p), "/memories/small/f%03zu.md", i);
        else
            bench_fmt(p, sizeof(p), "/memories/dir10/f%02zu.md", i - 100);
        req = json_pack("{s:s, s:s, s:s}", "command", "create", "path", p, "file_text", small);
        if (!req || mt_memory_call_object(&res, mem, req) < 0 || res.is_error)
            bench_die("cannot create %s in %s", p, a->store);
        mt_result_dispose(&res);
        json_decref(req);
    }
    free(small);
    mt_memory_free(mem);
}

static void fixtures(const serve_args *a)
{
    char p[4096], *small;
    size_t len, i;
    int fd;

    if (strcmp(a->mix, "scan") == 0)
        return;
    if (a->store) {
        store_fixtures(a);
        return;
    }
    small = bench_small_text(&len);
    bench_fmt(p, sizeof(p), "%s/small", a->root);
    bench_mkdirs(p);
    for (i = 0; i < 100; i++) {
        bench_fmt(p, sizeof(p), "%s/small/f%03zu.md", a->root, i);
        bench_write_file(p, small, len);
    }
    bench_fmt(p, sizeof(p), "%s/dir10", a->root);
    bench_mkdirs(p);
    for (i = 0; i < 10; i++) {
        bench_fmt(p, sizeof(p), "%s/dir10/f%02zu.md", a->root, i);
        bench_write_file(p, small, len);
    }
    for (i = 0; i < a->clients; i++) {
        bench_fmt(p, sizeof(p), "%s/w/c%zu", a->root, i);
        bench_mkdirs(p);
    }
    free(small);
    /* Flushed before the clock starts, so the write mix's fsyncs do not pay for it. */
    fd = open(a->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) < 0)
        bench_die("cannot sync %s: %s", a->root, strerror(errno));
    close(fd);
}

int main(int argc, char **argv)
{
    serve_args a = {NULL, "memtool", NULL, "view", "file", NULL, "default", NULL, 1, 10000, 0};
    client cl[MAX_CLIENTS];
    pthread_t wt[MAX_CLIENTS], rt[MAX_CLIENTS];
    char line[1 << 16], *small, *small_json;
    size_t i, total = 0, small_len;
    double cpu = 0, wall;
    long rss = 0;
    uint64_t t0, t1;
    int k;

    for (k = 1; k < argc; k += 2) {
        const char *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (!v)
            bench_die("%s needs a value", argv[k]);
        if (strcmp(argv[k], "--memtool") == 0)
            a.memtool = v;
        else if (strcmp(argv[k], "--root") == 0)
            a.root = v;
        else if (strcmp(argv[k], "--store") == 0)
            a.store = v;
        else if (strcmp(argv[k], "--tenant") == 0)
            a.tenant = v;
        else if (strcmp(argv[k], "--impl") == 0)
            a.impl = v;
        else if (strcmp(argv[k], "--server-arg") == 0)
            a.server_arg = v;
        else if (strcmp(argv[k], "--mix") == 0)
            a.mix = v;
        else if (strcmp(argv[k], "--durability") == 0)
            a.durability = v;
        else if (strcmp(argv[k], "--clients") == 0)
            a.clients = (size_t)bench_parse_u64(v, "--clients");
        else if (strcmp(argv[k], "--ops") == 0)
            a.ops = (size_t)bench_parse_u64(v, "--ops");
        else if (strcmp(argv[k], "--files") == 0)
            a.files = (size_t)bench_parse_u64(v, "--files");
        else
            bench_die("unknown option %s", argv[k]);
    }
    if (a.store && strcmp(a.mix, "scan") == 0)
        bench_die("the scan mix needs a file store (--root)");
    if (!a.memtool || (!a.root && !a.store) || a.clients < 1 || a.clients > MAX_CLIENTS ||
        a.ops == 0)
        bench_die("usage: mt_bench_serve --memtool PATH --root DIR --mix MIX [--clients K] "
                  "[--ops N] [--durability D] [--files F]");
    if (strcmp(a.mix, "view") && strcmp(a.mix, "read") && strcmp(a.mix, "write") &&
        strcmp(a.mix, "scan"))
        bench_die("unknown mix '%s'", a.mix);
    if (strcmp(a.mix, "scan") == 0 && a.files < 100)
        bench_die("the scan mix needs --files, the size of the fixture tree");
    /* A server that dies must show up as a failed write, not kill us. */
    signal(SIGPIPE, SIG_IGN);

    fixtures(&a);
    small = bench_small_text(&small_len);
    small_json = json_escaped(small);
    for (i = 0; i < a.clients; i++) {
        static const char warm[] = "{\"command\":\"view\",\"path\":\"/memories/small/f000.md\"}\n";
        memset(&cl[i], 0, sizeof(cl[i]));
        cl[i].id = i;
        make_requests(&cl[i], &a, small_json);
        spawn_server(&cl[i], &a);
        /* The server has opened its store and answered once before the
         * clock starts: start-up is the per-process suite's business. */
        if (strcmp(a.mix, "scan") != 0) {
            write_all(cl[i].to_srv, warm, sizeof(warm) - 1);
            read_line(cl[i].from_srv, line, sizeof(line));
        } else {
            static const char warm_file[] =
                "{\"command\":\"view\",\"path\":\"/memories/d0000/f00.md\"}\n";
            write_all(cl[i].to_srv, warm_file, sizeof(warm_file) - 1);
            read_line(cl[i].from_srv, line, sizeof(line));
        }
        if (!strstr(line, "\"is_error\":false"))
            bench_die("the warm-up request failed: %.300s", line);
    }
    t0 = bench_now_ns();
    for (i = 0; i < a.clients; i++) {
        if (pthread_create(&wt[i], NULL, writer, &cl[i]) != 0 ||
            pthread_create(&rt[i], NULL, reader, &cl[i]) != 0)
            bench_die("cannot start a thread");
    }
    for (i = 0; i < a.clients; i++) {
        pthread_join(wt[i], NULL);
        pthread_join(rt[i], NULL);
    }
    t1 = bench_now_ns();
    for (i = 0; i < a.clients; i++) {
        struct rusage ru;
        int status;
        if (wait4(cl[i].pid, &status, 0, &ru) < 0)
            bench_die("wait4: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bench_die("serve %zu exited with status %d", i, status);
        if (cl[i].answered != cl[i].ops)
            bench_die("client %zu: %zu requests, %zu answers", i, cl[i].ops, cl[i].answered);
        if (cl[i].failed)
            bench_die("client %zu: %zu requests failed; the first: %s", i, cl[i].failed,
                      cl[i].first_failure);
        cpu += (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        if (ru.ru_maxrss > rss)
            rss = ru.ru_maxrss;
        total += cl[i].ops;
        close(cl[i].from_srv);
        free(cl[i].req);
    }
    wall = (double)(t1 - t0) / 1e9;
    printf(TPUT_FMT, a.mix, a.impl, a.clients, a.durability, total, wall, (double)total / wall, cpu,
           cpu > 0 ? (double)total / cpu : 0.0, rss);
    free(small);
    free(small_json);
    return 0;
}

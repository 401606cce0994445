#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_die(const char *fmt, ...)
{
    va_list ap;

    fputs("bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void bench_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        bench_die("a %zu-byte buffer is too small for '%s'", size, fmt);
}

uint64_t bench_parse_u64(const char *s, const char *what)
{
    unsigned long long v;
    char *end;

    if (!s || *s < '0' || *s > '9')
        bench_die("%s: not a number: '%s'", what, s ? s : "");
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end)
        bench_die("%s: not a number: '%s'", what, s);
    return (uint64_t)v;
}

void bench_samples_init(bench_samples *s, size_t cap)
{
    s->n = 0;
    s->cap = cap ? cap : 16;
    s->ns = malloc(s->cap * sizeof(*s->ns));
    if (!s->ns)
        bench_die("out of memory");
}

void bench_samples_add(bench_samples *s, uint64_t ns)
{
    if (s->n == s->cap) {
        uint64_t *grown = realloc(s->ns, s->cap * 2 * sizeof(*s->ns));
        if (!grown)
            bench_die("out of memory");
        s->ns = grown;
        s->cap *= 2;
    }
    s->ns[s->n++] = ns;
}

void bench_samples_free(bench_samples *s)
{
    free(s->ns);
    s->ns = NULL;
    s->n = s->cap = 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least p of them at or below it. */
static double rank_us(const bench_samples *s, double p)
{
    size_t k = (size_t)(p * (double)s->n + 0.999999);

    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return (double)s->ns[k - 1] / 1000.0;
}

bench_stats bench_stats_of(bench_samples *s)
{
    bench_stats st = {0, 0, 0, 0, 0};
    double sum = 0;
    size_t i;

    if (s->n == 0)
        return st;
    qsort(s->ns, s->n, sizeof(*s->ns), cmp_u64);
    for (i = 0; i < s->n; i++)
        sum += (double)s->ns[i];
    st.n = s->n;
    st.median_us = rank_us(s, 0.5);
    st.p99_us = rank_us(s, 0.99);
    st.mean_us = sum / (double)s->n / 1000.0;
    st.min_us = (double)s->ns[0] / 1000.0;
    return st;
}

void bench_row(FILE *out, const char *suite, const char *op, const char *impl,
               const char *durability, const char *param, const bench_stats *st)
{
    fprintf(out, "%s,%s,%s,%s,%s,%zu,%.3f,%.3f,%.3f,%.3f\n", suite, op, impl, durability, param,
            st->n, st->median_us, st->p99_us, st->mean_us, st->min_us);
    fflush(out);
}

char *bench_small_text(size_t *len)
{
    size_t cap = 4096, used = 0;
    char *text = malloc(cap);
    int line;

    if (!text)
        bench_die("out of memory");
    for (line = 1; line <= BENCH_SMALL_LINES; line++) {
        int n;
        if (line == 10)
            n = snprintf(text + used, cap - used,
                         "line %02d: the release token is " BENCH_TOKEN_A
                         " and it must stay unique\n",
                         line);
        else
            n = snprintf(text + used, cap - used,
                         "line %02d: the build uses cmake and ninja; tests run under ctest\n",
                         line);
        if (n < 0 || (size_t)n >= cap - used)
            bench_die("small text overflow");
        used += (size_t)n;
    }
    *len = used;
    return text;
}

void bench_write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0)
        bench_die("cannot create %s: %s", path, strerror(errno));
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            bench_die("cannot write %s: %s", path, strerror(errno));
        data += n;
        len -= (size_t)n;
    }
    if (close(fd) < 0)
        bench_die("cannot close %s: %s", path, strerror(errno));
}

void bench_mkdirs(const char *path)
{
    char buf[4096];
    size_t len = strlen(path), i;

    if (len == 0 || len >= sizeof(buf))
        bench_die("bad directory path '%s'", path);
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            bench_die("cannot create %s: %s", buf, strerror(errno));
        buf[i] = i == len ? '\0' : '/';
    }
}

static void remove_at(int dirfd)
{
    DIR *dir;
    struct dirent *de;
    int fd = dup(dirfd);

    if (fd < 0 || !(dir = fdopendir(fd)))
        bench_die("cannot list a directory to remove: %s", strerror(errno));
    while ((de = readdir(dir)) != NULL) {
        const char *n = de->d_name;
        int child;

        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        if (unlinkat(dirfd, n, 0) == 0 || errno == ENOENT)
            continue;
        if (errno != EISDIR && errno != EPERM)
            bench_die("cannot remove %s: %s", n, strerror(errno));
        child = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0)
            bench_die("cannot open %s: %s", n, strerror(errno));
        remove_at(child);
        close(child);
        if (unlinkat(dirfd, n, AT_REMOVEDIR) < 0)
            bench_die("cannot remove %s: %s", n, strerror(errno));
    }
    closedir(dir);
}

void bench_empty_dir(const char *path)
{
    int fd;

    bench_mkdirs(path);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        bench_die("cannot open %s: %s", path, strerror(errno));
    remove_at(fd);
    close(fd);
}

void bench_remove_tree(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT)
            return;
        bench_die("cannot open %s: %s", path, strerror(errno));
    }
    remove_at(fd);
    close(fd);
    if (rmdir(path) < 0)
        bench_die("cannot remove %s: %s", path, strerror(errno));
}

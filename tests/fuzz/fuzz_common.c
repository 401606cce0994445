/* The scratch store, its traps and the shared invariants of the fuzz targets. */
#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

fuzz_scratch fuzz_env;

/* The outside files and what their stat looked like once laid. */
static const char *const outside_files[] = {"canary.txt", "hl_target", "dir/canary2.txt"};
#define N_OUTSIDE (sizeof(outside_files) / sizeof(outside_files[0]))
static struct stat outside_sb[N_OUTSIDE];

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "\n%s:%d: invariant broken: %s\n  ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

int fuzz_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        unsigned c = p[i];
        size_t n;
        uint32_t cp, min;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
            cp = c & 0x1F;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            cp = c & 0x0F;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return 0;
        }
        if (len - i < n)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n;
    }
    return 1;
}

static void join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    FUZZ_CHECK(n > 0 && (size_t)n < cap, "path too long: %s/%s", a, b);
}

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text);

    FUZZ_CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    FUZZ_CHECK(write(fd, text, len) == (ssize_t)len, "write %s", path);
    close(fd);
}

/* rm -rf below dirfd, never following links. */
static void remove_below(int dirfd)
{
    DIR *d;
    struct dirent *de;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    FUZZ_CHECK(fd >= 0, "open for removal: %s", strerror(errno));
    d = fdopendir(fd);
    FUZZ_CHECK(d != NULL, "fdopendir");
    while ((de = readdir(d)) != NULL) {
        int sub;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd, de->d_name, 0) == 0)
            continue;
        sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        FUZZ_CHECK(sub >= 0, "cannot open %s to remove it: %s", de->d_name, strerror(errno));
        remove_below(sub);
        close(sub);
        FUZZ_CHECK(unlinkat(dirfd, de->d_name, AT_REMOVEDIR) == 0, "rmdir %s: %s", de->d_name,
                   strerror(errno));
    }
    closedir(d);
}

/*
 * Whether hay holds needle, compared by hand: a libc or compiler-traced
 * comparison would hand the canary to libFuzzer's dictionary, and the fuzzer
 * would then type it in itself.
 */
static int contains(const char *hay, size_t len, const char *needle)
{
    size_t n = 0;

    while (needle[n])
        n++;
    for (size_t i = 0; n <= len && i <= len - n; i++) {
        size_t k = 0;
        while (k < n && hay[i + k] == needle[k])
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

static int read_noatime(char *buf, size_t cap, const char *path)
{
    /* O_NOATIME: the check itself must not look like a read by memtool. */
    int fd = open(path, O_RDONLY | O_NOATIME | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

/* Old atime, older still than mtime: under relatime any read moves it. */
static void age_atime(const char *path)
{
    struct timespec ts[2];

    clock_gettime(CLOCK_REALTIME, &ts[1]);
    ts[1].tv_sec -= 3600;
    ts[0] = ts[1];
    ts[0].tv_sec -= 3600;
    FUZZ_CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0, "utimensat %s", path);
}

/* The scratch tree goes when the process exits normally (the replay driver,
 * libFuzzer's -runs and -max_total_time); after a crash it stays as evidence. */
static void scratch_remove(void)
{
    int fd = open(fuzz_env.base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return;
    remove_below(fd);
    close(fd);
    rmdir(fuzz_env.base);
}

void fuzz_scratch_init(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[512], buf[128];
    struct timespec now;
    struct stat sb;
    size_t i;

    if (fuzz_env.base[0])
        return;
    if (!tmp || !*tmp)
        tmp = "/tmp";
    snprintf(fuzz_env.base, sizeof(fuzz_env.base), "%s/mt-fuzz.XXXXXX", tmp);
    FUZZ_CHECK(mkdtemp(fuzz_env.base) != NULL, "mkdtemp: %s", strerror(errno));
    join(fuzz_env.store, sizeof(fuzz_env.store), fuzz_env.base, "store");
    join(fuzz_env.outside, sizeof(fuzz_env.outside), fuzz_env.base, "outside");
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(fuzz_env.canary, sizeof(fuzz_env.canary), "CANARY-%08lx%08lx",
             (unsigned long)now.tv_nsec, (unsigned long)getpid());
    FUZZ_CHECK(mkdir(fuzz_env.outside, 0700) == 0, "mkdir outside");
    join(path, sizeof(path), fuzz_env.outside, "dir");
    FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir outside/dir");
    for (i = 0; i < N_OUTSIDE; i++) {
        join(path, sizeof(path), fuzz_env.outside, outside_files[i]);
        write_file(path, fuzz_env.canary);
        age_atime(path);
    }
    /* Does a read show in the atime here (not on noatime mounts)? */
    join(path, sizeof(path), fuzz_env.outside, "probe");
    write_file(path, "probe");
    age_atime(path);
    {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        FUZZ_CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) > 0, "probe read");
        close(fd);
    }
    FUZZ_CHECK(stat(path, &sb) == 0, "stat probe");
    fuzz_env.atime_works = sb.st_atime > sb.st_mtime;
    unlink(path);
    for (i = 0; i < N_OUTSIDE; i++) {
        join(path, sizeof(path), fuzz_env.outside, outside_files[i]);
        FUZZ_CHECK(stat(path, &outside_sb[i]) == 0, "stat %s", path);
    }
    FUZZ_CHECK(mkdir(fuzz_env.store, 0700) == 0, "mkdir store");
    atexit(scratch_remove);
    fuzz_store_reset();
}

mt_memory *fuzz_open_store(uint64_t view_limit)
{
    mt_options opts;
    mt_memory *mem;

    fuzz_scratch_init();
    fuzz_store_reset();
    mt_options_init(&opts);
    opts.durability = MT_DURABILITY_NONE;
    if (view_limit)
        opts.view_limit = view_limit;
    FUZZ_CHECK(mt_memory_open(&mem, fuzz_env.store, &opts) == 0, "open: %s",
               mt_error_last()->message);
    return mem;
}

void fuzz_store_reset(void)
{
    char path[512], target[512];
    int fd = open(fuzz_env.store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    FUZZ_CHECK(fd >= 0, "open store: %s", strerror(errno));
    remove_below(fd);
    close(fd);
    join(path, sizeof(path), fuzz_env.store, "notes");
    FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir notes");
    join(path, sizeof(path), fuzz_env.store, "notes/a.md");
    write_file(path, "alpha\nbeta\ngamma\n");
    join(path, sizeof(path), fuzz_env.store, "notes/sub");
    FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir notes/sub");
    join(path, sizeof(path), fuzz_env.store, "notes/sub/deep.md");
    write_file(path, "deep\n");
    /* The traps. */
    join(path, sizeof(path), fuzz_env.store, "link");
    FUZZ_CHECK(symlink("../outside", path) == 0, "symlink link");
    join(path, sizeof(path), fuzz_env.store, "abs");
    FUZZ_CHECK(symlink(fuzz_env.outside, path) == 0, "symlink abs");
    join(path, sizeof(path), fuzz_env.store, "notes/up.md");
    FUZZ_CHECK(symlink("../../outside/canary.txt", path) == 0, "symlink up.md");
    join(path, sizeof(path), fuzz_env.store, "hl.md");
    join(target, sizeof(target), fuzz_env.outside, "hl_target");
    FUZZ_CHECK(link(target, path) == 0, "link hl.md: %s", strerror(errno));
    join(path, sizeof(path), fuzz_env.store, "fifo");
    FUZZ_CHECK(mkfifo(path, 0600) == 0, "mkfifo");
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t digest_dir(uint64_t h, int dirfd, unsigned depth)
{
    int i, fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;
    struct dirent *de;
    char **list = NULL;
    size_t count = 0, cap = 0;

    FUZZ_CHECK(fd >= 0, "open for digest");
    d = fdopendir(fd);
    FUZZ_CHECK(d != NULL, "fdopendir");
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        /* The store's own directory holds its lock and usage counter, which
         * every change (a refused one too) touches: not a memory. */
        if (depth == 0 && strcmp(de->d_name, ".memtool") == 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            list = realloc(list, cap * sizeof(*list));
            FUZZ_CHECK(list != NULL, "out of memory");
        }
        list[count] = strdup(de->d_name);
        FUZZ_CHECK(list[count] != NULL, "out of memory");
        count++;
    }
    closedir(d);
    /* readdir order is not stable across changes; sort for a stable digest. */
    for (size_t a = 1; a < count; a++) {
        for (size_t b = a; b > 0 && strcmp(list[b - 1], list[b]) > 0; b--) {
            char *t = list[b];
            list[b] = list[b - 1];
            list[b - 1] = t;
        }
    }
    for (i = 0; (size_t)i < count; i++) {
        struct stat sb;
        FUZZ_CHECK(fstatat(dirfd, list[i], &sb, AT_SYMLINK_NOFOLLOW) == 0, "fstatat %s", list[i]);
        h = fnv(h, list[i], strlen(list[i]) + 1);
        h = fnv(h, &sb.st_mode, sizeof(sb.st_mode));
        h = fnv(h, &sb.st_ino, sizeof(sb.st_ino));
        if (!S_ISDIR(sb.st_mode)) {
            h = fnv(h, &sb.st_size, sizeof(sb.st_size));
            h = fnv(h, &sb.st_mtim, sizeof(sb.st_mtim));
        } else if (depth < 64) {
            int sub = openat(dirfd, list[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            FUZZ_CHECK(sub >= 0, "open %s", list[i]);
            h = digest_dir(h, sub, depth + 1);
            close(sub);
        }
        free(list[i]);
    }
    free(list);
    return h;
}

uint64_t fuzz_store_digest(void)
{
    int fd = open(fuzz_env.store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint64_t h;

    FUZZ_CHECK(fd >= 0, "open store");
    h = digest_dir(1469598103934665603ULL, fd, 0);
    close(fd);
    return h;
}

void fuzz_check_outside(void)
{
    char path[512], buf[128];
    DIR *d;
    struct dirent *de;
    size_t i, n = 0;

    for (i = 0; i < N_OUTSIDE; i++) {
        struct stat sb;
        join(path, sizeof(path), fuzz_env.outside, outside_files[i]);
        FUZZ_CHECK(stat(path, &sb) == 0, "outside file %s is gone", path);
        FUZZ_CHECK(sb.st_ino == outside_sb[i].st_ino && sb.st_size == outside_sb[i].st_size &&
                       sb.st_mtim.tv_sec == outside_sb[i].st_mtim.tv_sec &&
                       sb.st_mtim.tv_nsec == outside_sb[i].st_mtim.tv_nsec,
                   "outside file %s was replaced or written", path);
        FUZZ_CHECK(!fuzz_env.atime_works || sb.st_atim.tv_sec == outside_sb[i].st_atim.tv_sec,
                   "outside file %s was read", path);
        FUZZ_CHECK(read_noatime(buf, sizeof(buf), path) == (int)strlen(fuzz_env.canary) &&
                       contains(buf, strlen(buf), fuzz_env.canary),
                   "outside file %s changed", path);
    }
    /* Nothing new outside, nor beside the store. */
    d = opendir(fuzz_env.outside);
    FUZZ_CHECK(d != NULL, "opendir outside");
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    FUZZ_CHECK(n == 3, "%zu entries in the outside directory, expected 3", n);
    join(path, sizeof(path), fuzz_env.outside, "dir");
    d = opendir(path);
    FUZZ_CHECK(d != NULL, "opendir outside/dir");
    n = 0;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    FUZZ_CHECK(n == 1, "%zu entries in outside/dir, expected 1", n);
    d = opendir(fuzz_env.base);
    FUZZ_CHECK(d != NULL, "opendir base");
    n = 0;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    FUZZ_CHECK(n == 2, "%zu entries beside the store, expected 2", n);
}

void fuzz_check_text(const char *text, size_t len)
{
    FUZZ_CHECK(text != NULL, "a result without text");
    FUZZ_CHECK(text[len] == '\0', "result text not NUL-terminated");
    FUZZ_CHECK(fuzz_utf8_valid(text, len), "result text is not valid UTF-8: %.200s", text);
    FUZZ_CHECK(!contains(text, len, fuzz_env.canary),
               "the outside canary showed in a result: %.300s", text);
}

/* Helpers of the stress tests. */
#include "stress_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Helpers run in forked children too, where cmocka's assertions cannot
 * report: a broken helper stops the process loudly instead. */
_Noreturn static void die(const char *what, const char *path)
{
    fprintf(stderr, "stress helper: %s %s: %s\n", what, path ? path : "", strerror(errno));
    abort();
}

long st_scaled(long base)
{
    const char *s = getenv("MT_STRESS_SCALE");
    double f = 1.0;
    long n;

    if (s && *s) {
        char *end;
        f = strtod(s, &end);
        if (*end || f <= 0)
            f = 1.0;
    }
    n = (long)((double)base * f);
    return n < 1 ? 1 : n;
}

char *st_mkdtemp(const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    size_t n;
    char *p;

    if (!tmp || !*tmp)
        tmp = "/tmp";
    n = strlen(tmp) + strlen(tag) + 16;
    if (!(p = malloc(n)))
        die("out of memory", NULL);
    snprintf(p, n, "%s/mt-%s.XXXXXX", tmp, tag);
    if (!mkdtemp(p))
        die("mkdtemp", p);
    return p;
}

static void rm_below(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;
    struct dirent *de;

    if (fd < 0 || !(d = fdopendir(fd)))
        die("open for removal", NULL);
    while ((de = readdir(d)) != NULL) {
        int sub;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd, de->d_name, 0) == 0 || errno == ENOENT)
            continue;
        sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            die("open to remove", de->d_name);
        rm_below(sub);
        close(sub);
        if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            die("rmdir", de->d_name);
    }
    closedir(d);
}

void st_rmrf(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0) {
        unlink(path);
        return;
    }
    rm_below(fd);
    close(fd);
    rmdir(path);
}

char *st_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);

    if (!p)
        die("out of memory", NULL);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

void st_mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        die("path too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                die("mkdir", buf);
            buf[i] = c;
        }
    }
}

void st_write(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        die("write", path);
    close(fd);
}

char *st_read(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME | O_CLOEXEC);
    struct stat sb;
    char *buf;
    size_t got = 0;

    if (fd < 0 && errno == EPERM)
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) < 0 || !(buf = malloc((size_t)sb.st_size + 1)))
        die("read", path);
    while (got < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

int st_equals(const char *path, const char *data, size_t len)
{
    size_t n = 0;
    char *got = st_read(path, &n);
    int same = got && n == len && memcmp(got, data, len) == 0;

    free(got);
    return same;
}

char *st_call(mt_memory *mem, int *is_error, json_t *input)
{
    mt_result res;
    char *text;
    int rc = mt_memory_call_object(&res, mem, input);

    json_decref(input);
    if (rc < 0)
        return NULL;
    *is_error = res.is_error;
    text = res.text;
    res.text = NULL;
    mt_result_dispose(&res);
    return text;
}

char *st_call_text(mt_memory *mem, int *is_error, const char *json)
{
    mt_result res;
    char *text;

    if (mt_memory_call(&res, mem, json, strlen(json)) < 0)
        return NULL;
    *is_error = res.is_error;
    text = res.text;
    res.text = NULL;
    mt_result_dispose(&res);
    return text;
}

json_t *st_view(const char *path)
{
    return json_pack("{s:s, s:s}", "command", "view", "path", path);
}

json_t *st_create(const char *path, const char *text, size_t len)
{
    return json_pack("{s:s, s:s, s:s%}", "command", "create", "path", path, "file_text", text, len);
}

json_t *st_replace(const char *path, const char *old_str, const char *new_str)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path", path, "old_str",
                     old_str, "new_str", new_str);
}

json_t *st_insert(const char *path, long line, const char *text)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "command", "insert", "path", path, "insert_line",
                     (json_int_t)line, "insert_text", text);
}

json_t *st_delete(const char *path)
{
    return json_pack("{s:s, s:s}", "command", "delete", "path", path);
}

json_t *st_rename(const char *from, const char *to)
{
    return json_pack("{s:s, s:s, s:s}", "command", "rename", "old_path", from, "new_path", to);
}

static int is_temp(const char *name)
{
    return strncmp(name, ".mt-tmp.", 8) == 0;
}

/* Call fn on every .mt-tmp. entry below dirfd (entering only real directories). */
static size_t walk_temps(int dirfd, void (*fn)(int, const char *, void *), void *arg)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;
    struct dirent *de;
    size_t count = 0;

    if (fd < 0 || !(d = fdopendir(fd)))
        die("open for a walk", NULL);
    while ((de = readdir(d)) != NULL) {
        int sub;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (is_temp(de->d_name)) {
            count++;
            if (fn)
                fn(dirfd, de->d_name, arg);
        }
        sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            count += walk_temps(sub, fn, arg);
            close(sub);
        }
    }
    closedir(d);
    return count;
}

size_t st_count_temps(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t n;

    if (fd < 0)
        die("open", dir);
    n = walk_temps(fd, NULL, NULL);
    close(fd);
    return n;
}

static void age_one(int dirfd, const char *name, void *arg)
{
    struct timespec ts[2];

    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= *(int *)arg;
    ts[1] = ts[0];
    utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

void st_age_temps(const char *dir, int seconds)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        die("open", dir);
    walk_temps(fd, age_one, &seconds);
    close(fd);
}

int st_shows_temp(const char *text)
{
    return text && strstr(text, "/.mt-tmp.") != NULL;
}

uint64_t st_rand(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void usage_walk(int dirfd, int top, mt_usage *u)
{
    DIR *d;
    struct dirent *de;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || !(d = fdopendir(fd)))
        die("cannot walk", NULL);
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || is_temp(de->d_name) ||
            (top && strcmp(de->d_name, ".memtool") == 0))
            continue;
        if (fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            die("cannot stat", de->d_name);
        if (S_ISREG(sb.st_mode)) {
            u->files++;
            u->bytes += (uint64_t)sb.st_size;
        } else if (S_ISDIR(sb.st_mode)) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                die("cannot open", de->d_name);
            u->dirs++;
            usage_walk(sub, 0, u);
            close(sub);
        }
    }
    closedir(d);
}

char *st_usage_mismatch(mt_memory *mem, const char *root)
{
    mt_usage want = {0, 0, 0}, got;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *msg;

    if (fd < 0)
        die("cannot open", root);
    usage_walk(fd, 1, &want);
    close(fd);
    if (!(msg = malloc(512)))
        die("out of memory", NULL);
    if (mt_memory_usage(&got, mem) != 0) {
        snprintf(msg, 512, "mt_memory_usage: %s", mt_error_last()->message);
        return msg;
    }
    if (got.bytes == want.bytes && got.files == want.files && got.dirs == want.dirs) {
        free(msg);
        return NULL;
    }
    snprintf(msg, 512,
             "the usage counter says %llu bytes, %llu files, %llu dirs; the store holds %llu, "
             "%llu, %llu",
             (unsigned long long)got.bytes, (unsigned long long)got.files,
             (unsigned long long)got.dirs, (unsigned long long)want.bytes,
             (unsigned long long)want.files, (unsigned long long)want.dirs);
    return msg;
}

void st_forget_usage(const char *root)
{
    static const char zeros[128];
    char *state = st_join(root, ".memtool/state");
    int fd = open(state, O_WRONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (pwrite(fd, zeros, sizeof(zeros), 0) != (ssize_t)sizeof(zeros))
            die("cannot damage", state);
        close(fd);
    }
    free(state);
}

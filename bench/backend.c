#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

#define FLOOR_DIRS 8
/* floor-cores' threads at most: memtool's walk uses up to 7 helpers and the caller. */
#define FLOOR_THREADS 8

struct bench_backend {
    int is_floor;
    int threads; /* floor-cores: the walk's threads, one per core */
    mt_durability durability;
    /* memtool */
    mt_memory *mem;
    /* floor: the root and a few parent directories, opened once and kept,
     * because holding a descriptor is the cheapest way the kernel allows. */
    int root_fd;
    struct {
        char rel[256];
        int fd;
    } dirs[FLOOR_DIRS];
    char *buf;
    size_t cap;
    unsigned tmp_counter;
};

bench_backend *bench_backend_open(const char *impl, const char *root, mt_durability d)
{
    bench_backend *b = calloc(1, sizeof(*b));
    size_t i;

    if (!b)
        bench_die("out of memory");
    b->durability = d;
    b->root_fd = -1;
    for (i = 0; i < FLOOR_DIRS; i++)
        b->dirs[i].fd = -1;
    if (strcmp(impl, "memtool") == 0) {
        mt_options opts;
        mt_options_init(&opts);
        opts.durability = d;
        /* The suites go far past the defaults on purpose (100 MB files,
         * 100k-file stores): the limits are not what is measured. */
        opts.max_file_size = (uint64_t)1 << 30;
        opts.max_store_size = (uint64_t)1 << 40;
        opts.max_files = (uint64_t)1 << 32;
        opts.max_dirs = (uint64_t)1 << 32;
        if (mt_memory_open(&b->mem, root, &opts) < 0)
            bench_die("cannot open the store %s: %s", root, mt_error_last()->message);
    } else if (strcmp(impl, "floor") == 0 || strcmp(impl, "floor-cores") == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        b->is_floor = 1;
        b->threads = 1;
        if (strcmp(impl, "floor-cores") == 0)
            b->threads = cores < 1 ? 1 : cores > FLOOR_THREADS ? FLOOR_THREADS : (int)cores;
        b->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (b->root_fd < 0)
            bench_die("cannot open %s: %s", root, strerror(errno));
    } else {
        bench_die("unknown implementation '%s' (memtool, floor or floor-cores)", impl);
    }
    return b;
}

void bench_backend_close(bench_backend *b)
{
    size_t i;

    if (b->mem)
        mt_memory_free(b->mem);
    for (i = 0; i < FLOOR_DIRS; i++) {
        if (b->dirs[i].fd >= 0)
            close(b->dirs[i].fd);
    }
    if (b->root_fd >= 0)
        close(b->root_fd);
    free(b->buf);
    free(b);
}

void bench_req_dispose(bench_req *r)
{
    free(r->json);
    r->json = NULL;
}

/* ---- memtool ---------------------------------------------------------- */

static json_t *vpath(const char *rel)
{
    char buf[300];

    bench_fmt(buf, sizeof(buf), "/memories%s%s", *rel ? "/" : "", rel);
    return json_string(buf);
}

void bench_prepare(bench_backend *b, bench_req *r)
{
    json_t *in = NULL;

    if (b->is_floor)
        return;
    switch (r->op) {
    case OP_VIEW:
    case OP_VIEW_DIR:
        in = json_pack("{s:s, s:o}", "command", "view", "path", vpath(r->rel));
        if (in && r->range[0] != 0)
            json_object_set_new(
                in, "view_range",
                json_pack("[I, I]", (json_int_t)r->range[0], (json_int_t)r->range[1]));
        break;
    case OP_CREATE:
        in = json_pack("{s:s, s:o, s:s%}", "command", "create", "path", vpath(r->rel), "file_text",
                       r->text, r->text_len);
        break;
    case OP_STR_REPLACE:
        in = json_pack("{s:s, s:o, s:s, s:s%}", "command", "str_replace", "path", vpath(r->rel),
                       "old_str", r->old, "new_str", r->text, r->text_len);
        break;
    case OP_INSERT:
        in = json_pack("{s:s, s:o, s:I, s:s%}", "command", "insert", "path", vpath(r->rel),
                       "insert_line", (json_int_t)r->line, "insert_text", r->text, r->text_len);
        break;
    case OP_DELETE:
        in = json_pack("{s:s, s:o}", "command", "delete", "path", vpath(r->rel));
        break;
    case OP_RENAME:
        in = json_pack("{s:s, s:o, s:o}", "command", "rename", "old_path", vpath(r->rel),
                       "new_path", vpath(r->rel2));
        break;
    }
    if (!in || !(r->json = json_dumps(in, JSON_COMPACT)))
        bench_die("cannot build the JSON input for %s", r->rel);
    r->json_len = strlen(r->json);
    json_decref(in);
}

static void memtool_run(bench_backend *b, const bench_req *r)
{
    mt_result res;

    if (mt_memory_call(&res, b->mem, r->json, r->json_len) < 0)
        bench_die("mt_memory_call failed: %s", mt_error_last()->message);
    if (res.is_error)
        bench_die("memtool answered an error to %s: %.300s", r->json, res.text);
    mt_result_dispose(&res);
}

/* ---- floor ------------------------------------------------------------ */

static int floor_dir(bench_backend *b, const char **name, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    char dir[256];
    size_t i, len = slash ? (size_t)(slash - rel) : 0;

    *name = slash ? slash + 1 : rel;
    if (len == 0)
        return b->root_fd;
    memcpy(dir, rel, len);
    dir[len] = '\0';
    for (i = 0; i < FLOOR_DIRS && b->dirs[i].fd >= 0; i++) {
        if (strcmp(b->dirs[i].rel, dir) == 0)
            return b->dirs[i].fd;
    }
    if (i == FLOOR_DIRS) {
        /* Evict the oldest: the suites use one or two directories at a time. */
        close(b->dirs[0].fd);
        memmove(&b->dirs[0], &b->dirs[1], sizeof(b->dirs[0]) * (FLOOR_DIRS - 1));
        i = FLOOR_DIRS - 1;
    }
    b->dirs[i].fd = openat(b->root_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b->dirs[i].fd < 0)
        bench_die("floor: cannot open %s: %s", dir, strerror(errno));
    memcpy(b->dirs[i].rel, dir, len + 1);
    return b->dirs[i].fd;
}

/* A new buffer per call, freed when the call ends, as a program that reads a
 * file once gets it: for a big file that means fresh pages from the kernel,
 * which reading it once costs too. */
static void floor_reserve(bench_backend *b, size_t want)
{
    free(b->buf);
    b->buf = malloc(want);
    if (!b->buf)
        bench_die("out of memory");
    b->cap = want;
}

static void floor_release(bench_backend *b)
{
    free(b->buf);
    b->buf = NULL;
    b->cap = 0;
}

/* open, fstat, read, close: the whole of what showing a file needs from the kernel. */
static size_t floor_read(bench_backend *b, int dirfd, const char *name, int keep_fd, int *out_fd)
{
    struct stat sb;
    size_t len = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        bench_die("floor: cannot open %s: %s", name, strerror(errno));
    /* An edit reads and replaces under the same exclusive lock memtool takes. */
    if (keep_fd && flock(fd, LOCK_EX) < 0)
        bench_die("floor: cannot lock %s: %s", name, strerror(errno));
    if (fstat(fd, &sb) < 0)
        bench_die("floor: cannot stat %s: %s", name, strerror(errno));
    floor_reserve(b, (size_t)sb.st_size + 1);
    while (len < (size_t)sb.st_size) {
        ssize_t n = read(fd, b->buf + len, (size_t)sb.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            bench_die("floor: cannot read %s", name);
        len += (size_t)n;
    }
    if (keep_fd)
        *out_fd = fd;
    else
        close(fd);
    return len;
}

/*
 * floor-cores: the same walk with the top directory's subdirectories shared
 * out to one thread per core, each taking the next one not yet taken and
 * walking it whole. No sorting, no recording, no queue: what the kernel's
 * calls cost when every core makes them, the least a parallel walk can take.
 */
typedef struct {
    int fd;
    char (*names)[256];
    size_t n, cap;
    atomic_size_t next;
} floor_share;

/* Walk the directory fd (closed at the end); with share, its subdirectories
 * are only listed there, for floor_share_walk. */
static void floor_walk(int fd, floor_share *share)
{
    DIR *dir = fdopendir(fd);
    struct dirent *de;

    if (!dir)
        bench_die("floor: fdopendir: %s", strerror(errno));
    while ((de = readdir(dir)) != NULL) {
        struct stat sb;
        if (de->d_name[0] == '.')
            continue;
        if (fstatat(dirfd(dir), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            bench_die("floor: cannot stat %s: %s", de->d_name, strerror(errno));
        /* Sizes are totals of everything beneath, so every level is walked. */
        if (!S_ISDIR(sb.st_mode))
            continue;
        if (share) {
            if (share->n == share->cap) {
                share->cap = share->cap ? 2 * share->cap : 64;
                share->names = realloc(share->names, share->cap * sizeof(*share->names));
                if (!share->names)
                    bench_die("out of memory");
            }
            bench_fmt(share->names[share->n++], sizeof(*share->names), "%s", de->d_name);
            continue;
        }
        {
            int child = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (child < 0)
                bench_die("floor: cannot open %s: %s", de->d_name, strerror(errno));
            floor_walk(child, NULL);
        }
    }
    closedir(dir);
}

static void *floor_share_walk(void *arg)
{
    floor_share *s = arg;
    size_t i;

    while ((i = atomic_fetch_add(&s->next, 1)) < s->n) {
        int child = openat(s->fd, s->names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (child < 0)
            bench_die("floor: cannot open %s: %s", s->names[i], strerror(errno));
        floor_walk(child, NULL);
    }
    return NULL;
}

static void floor_walk_cores(bench_backend *b, int fd)
{
    pthread_t helpers[FLOOR_THREADS];
    floor_share s = {.fd = dup(fd)};
    int k, started = 0;

    if (s.fd < 0)
        bench_die("floor: dup: %s", strerror(errno));
    floor_walk(fd, &s);
    for (k = 1; k < b->threads; k++, started++) {
        if (pthread_create(&helpers[started], NULL, floor_share_walk, &s) != 0)
            bench_die("floor: cannot start a thread");
    }
    floor_share_walk(&s);
    for (k = 0; k < started; k++)
        pthread_join(helpers[k], NULL);
    free(s.names);
    close(s.fd);
}

static void floor_write_new(bench_backend *b, int dirfd, const char *name, const struct iovec *iov,
                            int iovcnt, int noreplace)
{
    char tmp[64];
    size_t want = 0, done;
    int fd, i;

    bench_fmt(tmp, sizeof(tmp), ".floor-tmp.%u", b->tmp_counter++);
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        bench_die("floor: cannot create %s: %s", tmp, strerror(errno));
    for (i = 0; i < iovcnt; i++)
        want += iov[i].iov_len;
    done = (size_t)writev(fd, iov, iovcnt);
    if (done != want)
        bench_die("floor: short write to %s", tmp);
    if (b->durability != MT_DURABILITY_NONE && fsync(fd) < 0)
        bench_die("floor: fsync: %s", strerror(errno));
    if (noreplace ? renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE)
                  : renameat(dirfd, tmp, dirfd, name))
        bench_die("floor: cannot rename onto %s: %s", name, strerror(errno));
    if (b->durability == MT_DURABILITY_FULL && fsync(dirfd) < 0)
        bench_die("floor: fsync: %s", strerror(errno));
    close(fd);
}

static void floor_run(bench_backend *b, const bench_req *r)
{
    const char *name, *name2;
    struct iovec iov[3];
    int dirfd = floor_dir(b, &name, r->rel), dirfd2, fd;
    size_t len, at, k;
    char *hit;

    switch (r->op) {
    case OP_VIEW:
        floor_read(b, dirfd, name, 0, NULL);
        floor_release(b);
        return;
    case OP_VIEW_DIR:
        fd = openat(dirfd, *name ? name : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            bench_die("floor: cannot open %s: %s", r->rel, strerror(errno));
        if (b->threads > 1)
            floor_walk_cores(b, fd);
        else
            floor_walk(fd, NULL);
        return;
    case OP_CREATE:
        iov[0].iov_base = (void *)r->text;
        iov[0].iov_len = r->text_len;
        floor_write_new(b, dirfd, name, iov, 1, 1);
        return;
    case OP_STR_REPLACE:
    case OP_INSERT:
        len = floor_read(b, dirfd, name, 1, &fd);
        if (r->op == OP_STR_REPLACE) {
            hit = memmem(b->buf, len, r->old, strlen(r->old));
            if (!hit)
                bench_die("floor: '%s' is not in %s", r->old, r->rel);
            at = (size_t)(hit - b->buf);
            k = strlen(r->old);
        } else {
            for (at = 0, k = 0; k < r->line; k++) {
                hit = memchr(b->buf + at, '\n', len - at);
                if (!hit)
                    bench_die("floor: %s has fewer than %zu lines", r->rel, r->line);
                at = (size_t)(hit - b->buf) + 1;
            }
            k = 0;
        }
        /* Written straight from the read buffer: no copy of the file is made. */
        iov[0].iov_base = b->buf;
        iov[0].iov_len = at;
        iov[1].iov_base = (void *)r->text;
        iov[1].iov_len = r->text_len;
        iov[2].iov_base = b->buf + at + k;
        iov[2].iov_len = len - at - k;
        floor_write_new(b, dirfd, name, iov, 3, 0);
        close(fd);
        floor_release(b);
        return;
    case OP_DELETE:
        if (unlinkat(dirfd, name, 0) < 0)
            bench_die("floor: cannot delete %s: %s", r->rel, strerror(errno));
        if (b->durability == MT_DURABILITY_FULL && fsync(dirfd) < 0)
            bench_die("floor: fsync: %s", strerror(errno));
        return;
    case OP_RENAME:
        dirfd2 = floor_dir(b, &name2, r->rel2);
        dirfd = floor_dir(b, &name, r->rel); /* the lookup above may have evicted it */
        if (renameat2(dirfd, name, dirfd2, name2, RENAME_NOREPLACE) < 0)
            bench_die("floor: cannot rename %s: %s", r->rel, strerror(errno));
        if (b->durability == MT_DURABILITY_FULL &&
            (fsync(dirfd2) < 0 || (dirfd2 != dirfd && fsync(dirfd) < 0)))
            bench_die("floor: fsync: %s", strerror(errno));
        return;
    }
}

void bench_run(bench_backend *b, const bench_req *r)
{
    if (b->is_floor)
        floor_run(b, r);
    else
        memtool_run(b, r);
}

/* The files a search brings its index up to, on helper threads when there are many directories. */
#include "fs_search_walk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Helpers start once this many directories were found: a small store is
 * walked sooner than a thread starts. */
#define HELPERS_AFTER 8
#define MAX_HELPERS   7

/* One directory: waiting to be walked, then the files found in it, in name
 * order. Paths are offsets into `names` until the walk ends. */
struct mt_fs_dir_files {
    mt_fs_dir_files *next;
    char *path; /* relative to the store's root, "" the root */
    unsigned depth;
    mt_buf names;
    mt_search_doc *docs;
    size_t count, cap;
};

typedef struct {
    mt_fs *fs;
    size_t indexed;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    mt_fs_dir_files *waiting; /* most recent first */
    mt_fs_dir_files *done;
    size_t found, busy;
    int rc;         /* the first error met: the walk stops */
    char why[1024]; /* its message, set on the thread that met it (errors are per thread) */
    pthread_t helpers[MAX_HELPERS];
    int nhelpers, started;
} search_walk;

static void dir_free(mt_fs_dir_files *d)
{
    free(d->path);
    mt_buf_dispose(&d->names);
    free(d->docs);
    free(d);
}

static char *put_u64(char *p, uint64_t v)
{
    char digits[20];
    size_t n = 0;

    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = digits[--n];
    return p;
}

static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* seconds.nanoseconds, the nanoseconds as nine digits */
static char *put_time(char *p, const struct timespec *t)
{
    long ns = t->tv_nsec;
    int i;

    p = put_i64(p, (int64_t)t->tv_sec);
    *p++ = '.';
    for (i = 8; i >= 0; i--) {
        p[i] = (char)('0' + (ns < 0 ? 0 : ns % 10));
        ns /= 10;
    }
    return p + 9;
}

/* What snprintf("%llu:%lld:%lld.%09ld:%lld.%09ld[<%zu]") wrote before: an
 * index made by an earlier version is not indexed again. A search formats
 * one per file, so it is done by hand. */
void mt_fs_search_stamp(char *out, size_t size, const struct stat *sb, size_t indexed)
{
    char buf[160], *p = buf;

    p = put_u64(p, (uint64_t)sb->st_ino);
    *p++ = ':';
    p = put_i64(p, (int64_t)sb->st_size);
    *p++ = ':';
    p = put_time(p, &sb->st_mtim);
    *p++ = ':';
    p = put_time(p, &sb->st_ctim);
    if ((uint64_t)sb->st_size > indexed) {
        *p++ = '<';
        p = put_u64(p, (uint64_t)indexed);
    }
    if ((size_t)(p - buf) >= size)
        p = buf + (size ? size - 1 : 0);
    if (size) {
        memcpy(out, buf, (size_t)(p - buf));
        out[p - buf] = '\0';
    }
}

static int add_doc(mt_fs_dir_files *d, const char *name, size_t n, const struct stat *sb,
                   size_t indexed)
{
    mt_search_doc *grown;
    size_t at = d->names.len;

    if (d->count == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;

        if (!(grown = realloc(d->docs, cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory searching the store");
        d->docs = grown;
        d->cap = cap;
    }
    if ((*d->path && (mt_buf_puts(&d->names, d->path) < 0 || mt_buf_putc(&d->names, '/') < 0)) ||
        mt_buf_put(&d->names, name, n) < 0 || mt_buf_putc(&d->names, '\0') < 0)
        return mt_error_set(MT_ENOMEM, "out of memory searching the store");
    d->docs[d->count].path = (char *)(uintptr_t)at;
    mt_fs_search_stamp(d->docs[d->count].stamp, sizeof(d->docs[d->count].stamp), sb, indexed);
    d->count++;
    return 0;
}

static void *helper(void *arg);

/* A directory found beneath d: to walk, here or on a helper. */
static int push(search_walk *w, const mt_fs_dir_files *d, const char *name, size_t n)
{
    mt_fs_dir_files *c = calloc(1, sizeof(*c));
    size_t len = strlen(d->path);
    int start;

    if (!c || !(c->path = malloc(len + n + 2))) {
        free(c);
        return mt_error_set(MT_ENOMEM, "out of memory searching the store");
    }
    memcpy(c->path, d->path, len);
    if (len)
        c->path[len++] = '/';
    memcpy(c->path + len, name, n);
    c->path[len + n] = '\0';
    c->depth = d->depth + 1;
    pthread_mutex_lock(&w->lock);
    c->next = w->waiting;
    w->waiting = c;
    start = ++w->found == HELPERS_AFTER;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (start) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int want = cpus > MAX_HELPERS ? MAX_HELPERS : cpus > 1 ? (int)(cpus - 1) : 0;

        /* A helper that cannot start is no loss: the work waits for the others. */
        while (w->nhelpers < want && pthread_create(&w->helpers[w->nhelpers], NULL, helper, w) == 0)
            w->nhelpers++;
    }
    return 0;
}

/* The same choices as fs_each.c's walk: the store's own directory and
 * temporaries are no memories, names no request could give are never
 * entered, and a directory swapped for a link or a file meanwhile is not
 * one of the store's any more. */
static int walk_dir(search_walk *w, mt_fs_dir_files *d)
{
    mt_dir list;
    size_t i;
    int fd, rc;

    if (d->depth > MT_WALK_MAX_DEPTH)
        return mt_error_set(MT_ELIMIT,
                            "%s is nested more than %d directories deep; memtool does not walk "
                            "deeper (move it up, then try again)",
                            d->path, MT_WALK_MAX_DEPTH);
    fd = mt_fs_openat(w->fs->root_fd, d->path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        if (d->depth > 0 && (fd == -ENOENT || fd == -ELOOP || fd == -ENOTDIR))
            return 0;
        return mt_fs_error(-fd, "cannot walk", d->path);
    }
    if ((rc = mt_fs_read_dir(&list, fd)) < 0) {
        close(fd);
        return rc;
    }
    for (i = 0; i < list.count && rc == 0; i++) {
        const char *name = list.names.ptr + list.list[i].name;
        size_t n = strlen(name);
        struct stat sb;

        if (!*d->path && strcasecmp(name, MT_FS_RESERVED) == 0)
            continue;
        if (strncmp(name, MT_TMP_PREFIX, sizeof(MT_TMP_PREFIX) - 1) == 0)
            continue;
        if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
            char full[4096];
            int err = errno;

            if (err == ENOENT)
                continue; /* removed since it was listed */
            snprintf(full, sizeof(full), "%s%s%s", d->path, *d->path ? "/" : "", name);
            rc = mt_fs_error(err, "cannot look at", full);
            break;
        }
        if (!mt_path_name_ok(name, n))
            continue;
        if (S_ISREG(sb.st_mode))
            rc = add_doc(d, name, n, &sb, w->indexed);
        else if (S_ISDIR(sb.st_mode))
            rc = push(w, d, name, n);
    }
    mt_fs_dir_dispose(&list);
    close(fd);
    return rc;
}

/* Take directories until there are none and no more can come, or the walk failed. */
static void work(search_walk *w)
{
    pthread_mutex_lock(&w->lock);
    for (;;) {
        mt_fs_dir_files *d = w->waiting;
        int rc;

        if (w->rc < 0)
            break;
        if (!d) {
            if (w->busy == 0)
                break;
            pthread_cond_wait(&w->wake, &w->lock);
            continue;
        }
        w->waiting = d->next;
        w->busy++;
        pthread_mutex_unlock(&w->lock);
        rc = walk_dir(w, d);
        pthread_mutex_lock(&w->lock);
        d->next = w->done;
        w->done = d;
        if (rc < 0 && w->rc == 0) {
            w->rc = rc;
            snprintf(w->why, sizeof(w->why), "%s", mt_error_last()->message);
        }
        w->busy--;
        if (rc < 0 || (w->busy == 0 && !w->waiting))
            pthread_cond_broadcast(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
}

static void *helper(void *arg)
{
    work(arg);
    return NULL;
}

static int by_dir(const void *a, const void *b)
{
    return strcmp((*(mt_fs_dir_files *const *)a)->path, (*(mt_fs_dir_files *const *)b)->path);
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mt_search_doc *)a)->path, ((const mt_search_doc *)b)->path);
}

/* The docs of every directory in one array sorted by path. Directories
 * taken in path order give it at once when no directory holds both files
 * and directories whose names sort around each other; else it is sorted. */
static int gather(mt_fs_search_files *out, mt_fs_dir_files *done)
{
    mt_fs_dir_files **dirs = NULL, *d;
    size_t ndirs = 0, total = 0, i, j, at = 0;
    int rc = 0, sorted = 1;

    for (d = done; d; d = d->next) {
        ndirs++;
        total += d->count;
    }
    if (!(dirs = malloc((ndirs ? ndirs : 1) * sizeof(mt_fs_dir_files *))) ||
        !(out->docs = malloc((total ? total : 1) * sizeof(*out->docs)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching the store");
        goto done;
    }
    for (i = 0, d = done; d; d = d->next)
        dirs[i++] = d;
    qsort(dirs, ndirs, sizeof(mt_fs_dir_files *), by_dir);
    for (i = 0; i < ndirs; i++) {
        d = dirs[i];
        for (j = 0; j < d->count; j++) {
            out->docs[at] = d->docs[j];
            out->docs[at].path = d->names.ptr + (uintptr_t)d->docs[j].path;
            if (at && sorted && strcmp(out->docs[at - 1].path, out->docs[at].path) > 0)
                sorted = 0;
            at++;
        }
        free(d->docs);
        d->docs = NULL;
        d->count = d->cap = 0;
    }
    if (!sorted)
        qsort(out->docs, total, sizeof(*out->docs), by_path);
    out->count = total;
done:
    free(dirs);
    return rc;
}

int mt_fs_search_walk(mt_fs_search_files *out, mt_fs *fs, const char *rel, size_t indexed)
{
    search_walk w;
    mt_fs_dir_files *root = NULL, *d;
    int i, rc = 0, inited = 0;

    memset(out, 0, sizeof(*out));
    memset(&w, 0, sizeof(w));
    w.fs = fs;
    w.indexed = indexed;
    if (pthread_mutex_init(&w.lock, NULL) != 0)
        return mt_error_set(MT_ENOMEM, "cannot make a lock to search the store");
    if (pthread_cond_init(&w.wake, NULL) != 0) {
        pthread_mutex_destroy(&w.lock);
        return mt_error_set(MT_ENOMEM, "cannot make a lock to search the store");
    }
    inited = 1;
    if (!(root = calloc(1, sizeof(*root))) || !(root->path = strdup(rel))) {
        free(root);
        rc = mt_error_set(MT_ENOMEM, "out of memory searching the store");
        goto done;
    }
    w.waiting = root;
    work(&w);
    for (i = 0; i < w.nhelpers; i++)
        pthread_join(w.helpers[i], NULL);
    if (w.rc < 0)
        rc = mt_error_set(w.rc, "%s", w.why);
    else
        rc = gather(out, w.done);
done:
    /* A failed walk may leave directories it never took. */
    while ((d = w.waiting)) {
        w.waiting = d->next;
        dir_free(d);
    }
    out->dirs = w.done;
    if (rc < 0)
        mt_fs_search_files_dispose(out);
    if (inited) {
        pthread_cond_destroy(&w.wake);
        pthread_mutex_destroy(&w.lock);
    }
    return rc;
}

void mt_fs_search_files_dispose(mt_fs_search_files *f)
{
    mt_fs_dir_files *d;

    free(f->docs);
    while ((d = f->dirs)) {
        f->dirs = d->next;
        dir_free(d);
    }
    memset(f, 0, sizeof(*f));
}

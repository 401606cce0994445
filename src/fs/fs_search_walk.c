/* The files a search brings its index up to, on the store's shared walk (fs_pool.c). */
#include "fs/fs_search_walk.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_pool.h"

/* How many times a walk that raced with a change to the tree is made again
 * before its answer is taken as it is (the next search sees the rest). */
#define WALK_TRIES 3

/* One directory: the directories found in it, then the files, sorted by
 * path once it is walked (till then their paths are offsets into `names`). */
struct mt_fs_dir_files {
    mt_fs_dir_files *kids, *sibling;
    char *path;  /* relative to the store's root, "" the root */
    size_t name; /* where its own name starts in path */
    int walked;  /* `seen` is how it was as it was walked */
    struct stat seen;
    mt_buf names;
    mt_search_doc *docs;
    size_t count, cap;
    unsigned char sum[MT_SEARCH_SUM_BYTES]; /* of its files, once sorted */
};

static void dir_free(mt_fs_dir_files *d)
{
    mt_fs_dir_files *k;

    if (!d)
        return;
    while ((k = d->kids)) {
        d->kids = k->sibling;
        dir_free(k);
    }
    free(d->path);
    mt_buf_dispose(&d->names);
    free(d->docs);
    free(d);
}

/* "00" to "99": two digits a division, as a search formats some fifty per file. */
static const char PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                            "34353637383940414243444546474849505152535455565758596061626364656667"
                            "6869707172737475767778798081828384858687888990919293949596979899";

static char *put_u64(char *p, uint64_t v)
{
    char digits[20], *d = digits + sizeof(digits);
    size_t n;

    while (v >= 100) {
        d -= 2;
        memcpy(d, PAIRS + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        d -= 2;
        memcpy(d, PAIRS + 2 * v, 2);
    } else {
        *--d = (char)('0' + v);
    }
    n = (size_t)(digits + sizeof(digits) - d);
    memcpy(p, d, n);
    return p + n;
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
    unsigned long ns = t->tv_nsec < 0 ? 0 : (unsigned long)t->tv_nsec % 1000000000;
    int i;

    p = put_i64(p, (int64_t)t->tv_sec);
    *p++ = '.';
    p[0] = (char)('0' + ns / 100000000);
    ns %= 100000000;
    for (i = 7; i >= 1; i -= 2) {
        memcpy(p + i, PAIRS + 2 * (ns % 100), 2);
        ns /= 100;
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

static const char *dir_path(void *payload, void *dir)
{
    (void)payload;
    return ((mt_fs_dir_files *)dir)->path;
}

static int dir_enter(void *payload, void *dir, int fd)
{
    mt_fs_dir_files *d = dir;

    (void)payload;
    if (fstat(fd, &d->seen) < 0)
        return mt_fs_error(errno, "cannot walk", d->path);
    d->walked = 1;
    return 0;
}

static int dir_file(void *payload, void *dir, const char *name, size_t n, const struct stat *sb)
{
    return add_doc(dir, name, n, sb, *(const size_t *)payload);
}

static mt_fs_dir_files *dir_new(const char *parent, const char *name, size_t n)
{
    mt_fs_dir_files *c = calloc(1, sizeof(*c));
    size_t len = strlen(parent);

    if (!c || !(c->path = malloc(len + n + 2))) {
        free(c);
        return NULL;
    }
    memcpy(c->path, parent, len);
    if (len && n)
        c->path[len++] = '/';
    memcpy(c->path + len, name, n);
    c->path[len + n] = '\0';
    c->name = len;
    return c;
}

/* Only the thread walking dir adds to its kids; the tree is read once every thread is done. */
static int dir_subdir(void *payload, void **child, void *dir, const char *name, size_t n)
{
    mt_fs_dir_files *d = dir, *c;

    (void)payload;
    if (!(c = dir_new(d->path, name, n)))
        return mt_error_set(MT_ENOMEM, "out of memory searching the store");
    c->sibling = d->kids;
    d->kids = c;
    *child = c;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mt_search_doc *)a)->path, ((const mt_search_doc *)b)->path);
}

/* A file of one directory to sort: its name's first 8 bytes as a number
 * (zero beyond its end) order names as strcmp does, the rest only ties. */
typedef struct {
    uint64_t key;
    const char *name;
    size_t at;
} by_name_item;

static int by_name(const void *pa, const void *pb)
{
    const by_name_item *a = pa, *b = pb;

    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The bytes after the first 8 of a name ("" when it is shorter: then the
 * key holds all of it, and a tie is the same name). */
static const char *name_rest(const char *name, uint64_t *key)
{
    uint64_t k = 0;
    int i;

    for (i = 0; i < 8; i++) {
        k <<= 8;
        if (*name)
            k |= (unsigned char)*name++;
    }
    *key = k;
    return name;
}

/* The digest of a directory's files, in path order: each one's path and
 * stamp with their ends, so no two lists give the same bytes. */
static void dir_sum(mt_fs_dir_files *d)
{
    crypto_generichash_state h;
    size_t i;

    crypto_generichash_init(&h, NULL, 0, sizeof(d->sum));
    for (i = 0; i < d->count; i++) {
        crypto_generichash_update(&h, (const unsigned char *)d->docs[i].path,
                                  strlen(d->docs[i].path) + 1);
        crypto_generichash_update(&h, (const unsigned char *)d->docs[i].stamp,
                                  strlen(d->docs[i].stamp) + 1);
    }
    crypto_generichash_final(&h, d->sum, sizeof(d->sum));
}

/* A directory's files sorted by their names alone (they share the
 * directory's path, skip bytes of it), each moved once (a doc is big); -1
 * short of memory, when they are as they were. */
static int sort_by_name(mt_fs_dir_files *d, size_t skip)
{
    by_name_item *items = malloc(d->count * sizeof(*items));
    mt_search_doc *sorted = malloc(d->count * sizeof(*sorted));
    size_t i;

    if (!items || !sorted) {
        free(items);
        free(sorted);
        return -1;
    }
    for (i = 0; i < d->count; i++) {
        items[i].name = name_rest(d->docs[i].path + skip, &items[i].key);
        items[i].at = i;
    }
    qsort(items, d->count, sizeof(*items), by_name);
    for (i = 0; i < d->count; i++)
        sorted[i] = d->docs[items[i].at];
    free(items);
    free(d->docs);
    d->docs = sorted;
    d->cap = d->count;
    return 0;
}

/* A directory's files in path order, and their digest, on the thread that
 * walked it: the names are all in, so offsets become pointers. */
static void dir_leave(void *payload, void *dir)
{
    mt_fs_dir_files *d = dir;
    size_t i;

    (void)payload;
    for (i = 0; i < d->count; i++)
        d->docs[i].path = d->names.ptr + (uintptr_t)d->docs[i].path;
    if (d->count > 1 && sort_by_name(d, *d->path ? strlen(d->path) + 1 : 0) < 0)
        qsort(d->docs, d->count, sizeof(*d->docs), by_path);
    dir_sum(d);
}

/* The same memories as fs_each.c's walk (mt_fs_entry's rule): a walk that
 * cannot open a directory replaced meanwhile goes on without it. */
static const mt_fs_walker search_walker = {
    .memories_only = 1,
    .complete = 0,
    .clean = -1,
    .what = "cannot walk",
    .path = dir_path,
    .enter = dir_enter,
    .file = dir_file,
    .subdir = dir_subdir,
    .leave = dir_leave,
};

static int same_dir(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_nlink == b->st_nlink &&
           a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
           a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * Whether every directory walked is still where it was found, as it was:
 * a directory renamed, or an entry renamed in or out, while the walk ran
 * changes the directories it left and entered (their times, their inode at
 * that name), and the walk may have missed it at both places or found it
 * under a name it no longer has. One fstatat per directory, beneath the
 * one that holds it.
 */
static int unchanged(const mt_fs_dir_files *d, int fd)
{
    const mt_fs_dir_files *k;
    struct stat now;
    int same = 1;

    if (!d->walked || fstat(fd, &now) < 0 || !same_dir(&now, &d->seen))
        return 0;
    for (k = d->kids; k && same; k = k->sibling) {
        const char *name = k->path + k->name;

        if (k->kids) {
            int cfd = mt_fs_openat(fd, name, O_PATH | O_DIRECTORY, 0);

            if (cfd < 0)
                return 0;
            same = unchanged(k, cfd);
            close(cfd);
        } else {
            same = k->walked && fstatat(fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                   same_dir(&now, &k->seen);
        }
    }
    return same;
}

/* Begin one walk of the tree beneath fd (rel), into *root. */
static int walk_begin(mt_fs_dir_files **root, mt_fs_pool *pool, int fd, const char *rel,
                      size_t *indexed)
{
    int rc, dfd;

    if (!(*root = dir_new(rel, "", 0)))
        return mt_error_set(MT_ENOMEM, "out of memory searching the store");
    if ((rc = mt_fs_pool_init(pool, &search_walker, indexed)) < 0)
        return rc;
    /* A descriptor of its own: a directory's offset is its open file's. */
    if ((dfd = mt_fs_openat(fd, "", O_RDONLY | O_DIRECTORY, 0)) < 0)
        mt_fs_pool_fail(pool, mt_fs_error(-dfd, "cannot walk", rel));
    else
        mt_fs_pool_dir(pool, dfd, 0, *root);
    return 0;
}

/* One walk of the tree beneath fd (rel), into *root. */
static int walk_once(mt_fs_dir_files **root, int fd, const char *rel, size_t *indexed)
{
    mt_fs_pool pool;
    int rc;

    if ((rc = walk_begin(root, &pool, fd, rel, indexed)) < 0)
        return rc;
    return mt_fs_pool_finish(&pool);
}

static void count_dirs(size_t *ndirs, size_t *total, mt_fs_dir_files *d)
{
    mt_fs_dir_files *k;

    (*ndirs)++;
    *total += d->count;
    for (k = d->kids; k; k = k->sibling)
        count_dirs(ndirs, total, k);
}

static void list_dirs(mt_fs_dir_files **dirs, size_t *at, mt_fs_dir_files *d)
{
    mt_fs_dir_files *k;

    dirs[(*at)++] = d;
    for (k = d->kids; k; k = k->sibling)
        list_dirs(dirs, at, k);
}

static int by_dir(const void *a, const void *b)
{
    return strcmp((*(mt_fs_dir_files *const *)a)->path, (*(mt_fs_dir_files *const *)b)->path);
}

/* The docs of every directory in one array sorted by path. Directories,
 * each sorted as it was walked, taken in path order give it at once when
 * no directory holds both files and directories whose names sort around
 * each other; else it is sorted. */
static int gather(mt_fs_search_files *out, mt_fs_dir_files *root)
{
    mt_fs_dir_files **dirs = NULL, *d;
    crypto_generichash_state h;
    size_t ndirs = 0, total = 0, i, at = 0;
    int rc = 0, sorted = 1;

    count_dirs(&ndirs, &total, root);
    if (!(dirs = malloc((ndirs ? ndirs : 1) * sizeof(mt_fs_dir_files *))) ||
        !(out->docs = malloc((total ? total : 1) * sizeof(*out->docs)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory searching the store");
        goto done;
    }
    i = 0;
    list_dirs(dirs, &i, root);
    qsort(dirs, ndirs, sizeof(mt_fs_dir_files *), by_dir);
    /* The files' digest: of the directories that hold files, in path
     * order, each one's path and its files' digest (which names them in
     * full: a file moved between two directories changes both). */
    crypto_generichash_init(&h, NULL, 0, sizeof(out->sum));
    for (i = 0; i < ndirs; i++) {
        d = dirs[i];
        if (d->count) {
            crypto_generichash_update(&h, (const unsigned char *)d->path, strlen(d->path) + 1);
            crypto_generichash_update(&h, d->sum, sizeof(d->sum));
            /* each directory's own files are in order: only where two meet may not be */
            if (at && sorted && strcmp(out->docs[at - 1].path, d->docs[0].path) > 0)
                sorted = 0;
            memcpy(out->docs + at, d->docs, d->count * sizeof(*d->docs));
            at += d->count;
        }
        free(d->docs);
        d->docs = NULL;
        d->count = d->cap = 0;
    }
    crypto_generichash_final(&h, out->sum, sizeof(out->sum));
    if (!sorted)
        qsort(out->docs, total, sizeof(*out->docs), by_path);
    out->count = total;
done:
    free(dirs);
    return rc;
}

void mt_fs_search_walk_begin(mt_fs_search_walking *w, mt_fs *fs, const char *rel, size_t indexed,
                             int helpers)
{
    memset(w, 0, sizeof(*w));
    w->rel = rel;
    w->indexed = indexed;
    if ((w->fd = mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0)) < 0)
        w->rc = mt_fs_error(-w->fd, "cannot walk", rel);
    else if ((w->rc = walk_begin(&w->root, &w->pool, w->fd, rel, &w->indexed)) == 0 && helpers)
        mt_fs_pool_start(&w->pool);
    if (w->rc < 0)
        snprintf(w->why, sizeof(w->why), "%s", mt_error_last()->message);
}

int mt_fs_search_walk_end(mt_fs_search_files *out, mt_fs_search_walking *w)
{
    int tries, rc;

    memset(out, 0, sizeof(*out));
    if (w->rc < 0) {
        rc = mt_error_set(w->rc, "%s", w->why);
        goto done;
    }
    rc = mt_fs_pool_finish(&w->pool);
    for (tries = 1; rc == 0 && tries < WALK_TRIES && !unchanged(w->root, w->fd); tries++) {
        dir_free(w->root);
        w->root = NULL;
        rc = walk_once(&w->root, w->fd, w->rel, &w->indexed);
    }
    if (rc == 0)
        rc = gather(out, w->root);
done:
    out->dirs = w->root;
    w->root = NULL;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->rc = MT_EINVAL; /* ended: once only */
    snprintf(w->why, sizeof(w->why), "the search's walk has ended");
    if (rc < 0)
        mt_fs_search_files_dispose(out);
    return rc;
}

void mt_fs_search_files_dispose(mt_fs_search_files *f)
{
    free(f->docs);
    dir_free(f->dirs);
    memset(f, 0, sizeof(*f));
}

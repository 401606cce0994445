/* Adding up the regular files beneath directories, on the store's shared walk. */
#include "fs/fs_count.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One directory's totals, added to its sum once it is walked: one atomic
 * add per directory, not per file. */
typedef struct {
    mt_fs_sum *sum;
    uint64_t bytes, files, dirs;
} count_dir;

static int count_file(void *payload, void *dir, const char *name, size_t len, const struct stat *sb)
{
    count_dir *d = dir;

    (void)payload;
    (void)name;
    (void)len;
    d->bytes += (uint64_t)sb->st_size;
    d->files++;
    return 0;
}

static count_dir *new_dir(mt_fs_sum *sum)
{
    count_dir *d = calloc(1, sizeof(*d));

    if (d)
        d->sum = sum;
    return d;
}

static int count_subdir(void *payload, void **child, void *dir, const char *name, size_t len)
{
    count_dir *d = dir;

    (void)payload;
    (void)name;
    (void)len;
    if (!(*child = new_dir(d->sum)))
        return mt_error_set(MT_ENOMEM, "out of memory counting the store");
    d->dirs++;
    return 0;
}

static void count_leave(void *payload, void *dir)
{
    mt_fs_count *c = payload;
    count_dir *d = dir;

    atomic_fetch_add_explicit(&d->sum->counted, d->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->sum->counted_files, d->files, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->files, d->files, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->dirs, d->dirs, memory_order_relaxed);
    free(d);
}

int mt_fs_count_init(mt_fs_count *c, int clean)
{
    memset(c, 0, sizeof(*c));
    atomic_init(&c->files, 0);
    atomic_init(&c->dirs, 0);
    /* Every file and directory, named as a memory can be or not: the disk
     * they take is the store's, and the limits must see all of it. */
    c->walker.memories_only = 0;
    c->walker.complete = 1;
    c->walker.clean = clean;
    c->walker.what = "cannot count";
    c->walker.file = count_file;
    c->walker.subdir = count_subdir;
    c->walker.leave = count_leave;
    return mt_fs_pool_init(&c->pool, &c->walker, c);
}

void mt_fs_count_dir(mt_fs_count *c, int fd, unsigned depth, mt_fs_sum *sum)
{
    count_dir *d = new_dir(sum);

    if (!d) {
        close(fd);
        mt_fs_pool_fail(&c->pool, mt_error_set(MT_ENOMEM, "out of memory counting the store"));
        return;
    }
    mt_fs_pool_dir(&c->pool, fd, depth, d);
}

int mt_fs_count_finish(mt_fs_count *c)
{
    return mt_fs_pool_finish(&c->pool);
}

/*
 * Walking the filesystem store: listings and full counts. A listing records the entries of its
 * first levels, in order, on the calling thread; every directory it does not list (hidden, below
 * the levels shown, or past the entries asked for) is only added up, by fs_count.c, on helper
 * threads when there are many (the store's shared walk, fs_pool.c).
 */
#include "util/path.h"
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_count.h"
#include "util/buf.h"

typedef struct {
    mt_store_listing *out;
    size_t cap, max_entries;
    unsigned max_depth;
    mt_buf path;
    mt_fs_count count;
    mt_fs_sum *sums; /* every sum made, the newest first */
} mt_walk;

static const char *dir_name(const mt_dir *d, size_t i)
{
    return d->names.ptr + d->list[i].name;
}

/* qsort has no context argument in C17: the names buffer rides along. */
static _Thread_local const char *sort_names;

static int dirent_cmp(const void *a, const void *b)
{
    return strcmp(sort_names + ((const mt_dirent *)a)->name,
                  sort_names + ((const mt_dirent *)b)->name);
}

void mt_fs_dir_dispose(mt_dir *d)
{
    mt_buf_dispose(&d->names);
    free(d->list);
}

int mt_fs_read_dir(mt_dir *d, int dirfd)
{
    size_t cap = 0;
    struct dirent *de;
    mt_dirent *grown;
    DIR *dir;
    int fd, rc = 0;

    memset(d, 0, sizeof(*d));
    /* A new open file description, not dup(): the store root's descriptor is
     * shared by every thread, and a dup would share its directory offset. */
    fd = mt_fs_openat(dirfd, "", O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot list", "");
    if (!(dir = fdopendir(fd))) {
        close(fd);
        return mt_fs_error(errno, "cannot list", "");
    }
    while ((de = readdir(dir)) != NULL) {
        const char *nm = de->d_name;
        if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
            continue;
        if (d->count == cap) {
            cap = cap ? cap * 2 : 32;
            if (!(grown = realloc(d->list, cap * sizeof(*grown)))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
                goto done;
            }
            d->list = grown;
        }
        d->list[d->count].name = d->names.len;
        d->list[d->count].type = de->d_type;
        if (mt_buf_put(&d->names, nm, strlen(nm) + 1) < 0) {
            rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
            goto done;
        }
        d->count++;
    }
    if (d->count > 1) {
        sort_names = d->names.ptr;
        qsort(d->list, d->count, sizeof(*d->list), dirent_cmp);
    }
done:
    closedir(dir);
    if (rc < 0)
        mt_fs_dir_dispose(d);
    return rc;
}

static mt_fs_sum *new_sum(mt_walk *w, mt_fs_sum *parent, size_t entry)
{
    mt_fs_sum *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->parent = parent;
    s->entry = entry;
    atomic_init(&s->counted, 0);
    atomic_init(&s->counted_files, 0);
    s->older = w->sums;
    w->sums = s;
    return s;
}

static int add_entry(mt_walk *w, size_t *index, mt_node_type type, unsigned depth)
{
    mt_store_listing *l = w->out;
    mt_store_entry *grown;

    if (l->count == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        if (!(grown = realloc(l->entries, w->cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory listing a directory");
        l->entries = grown;
    }
    if (!(l->entries[l->count].path = strdup(w->path.ptr)))
        return mt_error_set(MT_ENOMEM, "out of memory listing a directory");
    l->entries[l->count].type = type;
    l->entries[l->count].depth = depth;
    l->entries[l->count].size = 0;
    l->entries[l->count].files = 0;
    *index = l->count++;
    return 0;
}

/* Record the entries of dirfd at `level` (and below, up to max_depth) in
 * order, adding sizes into sum; what is not listed is handed to the count. */
static int walk(mt_walk *w, int dirfd, unsigned level, mt_fs_sum *sum)
{
    mt_dir d;
    size_t i, path_len = w->path.len;
    int rc;

    if ((rc = mt_fs_read_dir(&d, dirfd)) < 0)
        return rc;
    for (i = 0; i < d.count && rc == 0; i++) {
        const char *name = dir_name(&d, i);
        int show = level <= w->max_depth && !mt_path_is_hidden(name, strlen(name));
        mt_fs_sum *child_sum = sum;
        struct stat sb;
        size_t index = 0;
        int child, named, kind, type;

        /* Every entry counts toward the sizes, named as a memory can be or
         * not (the view leaves out what no path can name). */
        kind = mt_fs_entry(&sb, &named, dirfd, name, d.list[i].type, path_len);
        if (kind < 0) {
            rc = mt_fs_error(-kind, "cannot list", name);
            break;
        }
        if (kind == MT_FS_SKIP) {
            if (mt_fs_is_temp(name))
                mt_fs_clean_temp(dirfd, name, 0);
            continue;
        }
        if (kind == MT_FS_OTHER)
            continue; /* links, FIFOs, sockets, devices: neither listed nor counted */
        type = kind == MT_FS_FILE ? DT_REG : DT_DIR;
        if (show && w->max_entries && w->out->count == w->max_entries) {
            w->out->more = 1; /* from here on, only sizes */
            show = 0;
        }
        if (show) {
            mt_buf_truncate(&w->path, path_len);
            if ((path_len && (rc = mt_buf_putc(&w->path, '/')) < 0) ||
                (rc = mt_buf_puts(&w->path, name)) < 0 ||
                (rc = add_entry(w, &index, type == DT_REG ? MT_NODE_FILE : MT_NODE_DIR, level)) < 0)
                break;
        }
        if (type == DT_REG) {
            sum->local += (uint64_t)sb.st_size;
            sum->local_files++;
            if (show) {
                w->out->entries[index].size = (uint64_t)sb.st_size;
                w->out->entries[index].files = 1;
            }
            continue;
        }
        if ((child = mt_fs_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0)) < 0) {
            if (child == -ENOENT || child == -ELOOP || child == -ENOTDIR)
                continue; /* replaced by a link or removed meanwhile */
            /* Out of descriptors or the like: sizes would come out short. */
            rc = mt_fs_error(-child, "cannot list", name);
            break;
        }
        if (show && !(child_sum = new_sum(w, sum, index))) {
            close(child);
            rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
            break;
        }
        if (show && level < w->max_depth && level < MT_WALK_MAX_DEPTH) {
            rc = walk(w, child, level + 1, child_sum);
            close(child);
        } else {
            mt_fs_count_dir(&w->count, child, level, child_sum);
        }
    }
    mt_buf_truncate(&w->path, path_len);
    mt_fs_dir_dispose(&d);
    return rc;
}

/* Wait for the count, then pass each sum on to its parent (children were
 * made after their parents, so newest first is bottom up). */
static int finish(mt_walk *w, int rc, uint64_t *total, uint64_t *total_files)
{
    int crc = mt_fs_count_finish(&w->count);
    mt_fs_sum *s;

    if (rc == 0)
        rc = crc;
    while ((s = w->sums) != NULL) {
        uint64_t t = s->local + atomic_load(&s->counted) + s->below;
        uint64_t f = s->local_files + atomic_load(&s->counted_files) + s->below_files;
        if (s->parent) {
            s->parent->below += t;
            s->parent->below_files += f;
        } else {
            *total = t;
            if (total_files)
                *total_files = f;
        }
        if (rc == 0 && s->entry != MT_FS_NO_ENTRY) {
            w->out->entries[s->entry].size = t;
            w->out->entries[s->entry].files = f;
        }
        w->sums = s->older;
        free(s);
    }
    mt_buf_dispose(&w->path);
    return rc;
}

int mt_fs_list(mt_store *st, mt_store_listing *out, const char *rel, unsigned depth,
               size_t max_entries)
{
    mt_fs *fs = (mt_fs *)st;
    mt_fs_sum *root;
    mt_walk w;
    int fd, rc;

    memset(out, 0, sizeof(*out));
    memset(&w, 0, sizeof(w));
    w.out = out;
    w.max_depth = depth;
    w.max_entries = max_entries;
    fd = mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot list", rel);
    if ((rc = mt_fs_count_init(&w.count, 0)) < 0) {
        close(fd);
        return rc;
    }
    if (!(root = new_sum(&w, NULL, MT_FS_NO_ENTRY)))
        rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
    else if ((rc = mt_buf_puts(&w.path, rel)) == 0)
        rc = walk(&w, fd, 1, root);
    close(fd);
    rc = finish(&w, rc, &out->size, &out->files);
    if (rc < 0)
        mt_store_listing_dispose(out);
    return rc;
}

int mt_fs_count_tree(mt_store_usage *out, int dirfd, int clean)
{
    mt_fs_sum *root;
    mt_walk w;
    int fd, rc;

    memset(&w, 0, sizeof(w));
    memset(out, 0, sizeof(*out));
    if ((rc = mt_fs_count_init(&w.count, clean)) < 0)
        return rc;
    if (!(root = new_sum(&w, NULL, MT_FS_NO_ENTRY))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory counting the store");
    } else if ((fd = mt_fs_openat(dirfd, "", O_RDONLY | O_DIRECTORY, 0)) < 0) {
        rc = mt_fs_error(-fd, "cannot count what is beneath", "");
    } else {
        mt_fs_count_dir(&w.count, fd, 0, root);
    }
    rc = finish(&w, rc, &out->bytes, NULL);
    out->files = atomic_load(&w.count.files);
    out->dirs = atomic_load(&w.count.dirs);
    return rc;
}

/* Walking the filesystem store: listings, usage, and stale temporary files. */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/path.h"

#define MT_WALK_MAX_DEPTH 256

typedef struct {
    mt_store_listing *out; /* NULL when only counting */
    size_t cap;
    unsigned max_depth;
    mt_buf path;
    uint64_t files;
} mt_walk;

typedef struct {
    char *name;
    unsigned char type;
} mt_dirent;

static int dirent_cmp(const void *a, const void *b)
{
    return strcmp(((const mt_dirent *)a)->name, ((const mt_dirent *)b)->name);
}

static int is_hidden(const char *name)
{
    return name[0] == '.' || strcmp(name, "node_modules") == 0;
}

/* All names of a directory but . and .., sorted when asked. */
static int read_names(mt_dirent **out, size_t *count, int dirfd, int sorted)
{
    mt_dirent *names = NULL, *grown;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *dir;
    int fd, rc = 0;

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
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            if (!(grown = realloc(names, cap * sizeof(*names)))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
                goto done;
            }
            names = grown;
        }
        if (!(names[n].name = strdup(nm))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
            goto done;
        }
        names[n++].type = de->d_type;
    }
    if (sorted && n > 1)
        qsort(names, n, sizeof(*names), dirent_cmp);
done:
    closedir(dir);
    if (rc < 0) {
        while (n > 0)
            free(names[--n].name);
        free(names);
        return rc;
    }
    *out = names;
    *count = n;
    return 0;
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
    *index = l->count++;
    return 0;
}

/*
 * Add up the regular files beneath dirfd into *total (hidden ones and
 * node_modules too, links never followed); while `listed`, record the
 * entries of levels up to max_depth in order.
 */
static int walk(mt_walk *w, int dirfd, unsigned level, int listed, uint64_t *total)
{
    mt_dirent *names = NULL;
    size_t count = 0, i, path_len = w->path.len;
    int rc;

    if (level > MT_WALK_MAX_DEPTH)
        return 0; /* deeper than memtool ever makes; not entered */
    if ((rc = read_names(&names, &count, dirfd, listed)) < 0)
        return rc;
    for (i = 0; i < count && rc == 0; i++) {
        const char *name = names[i].name;
        unsigned char type = names[i].type;
        int show = listed && level <= w->max_depth && !is_hidden(name);
        struct stat sb;
        size_t index = 0;

        if (mt_fs_is_temp(name)) {
            mt_fs_clean_temp(dirfd, name);
            continue;
        }
        if (type == DT_UNKNOWN || type == DT_REG) {
            if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                continue; /* gone meanwhile */
            type = S_ISREG(sb.st_mode) ? DT_REG : S_ISDIR(sb.st_mode) ? DT_DIR : DT_UNKNOWN;
        }
        if (type != DT_REG && type != DT_DIR)
            continue; /* links, FIFOs, sockets, devices: neither listed nor counted */
        if (show) {
            mt_buf_truncate(&w->path, path_len);
            if ((path_len && (rc = mt_buf_putc(&w->path, '/')) < 0) ||
                (rc = mt_buf_puts(&w->path, name)) < 0 ||
                (rc = add_entry(w, &index, type == DT_REG ? MT_NODE_FILE : MT_NODE_DIR, level)) < 0)
                break;
        }
        if (type == DT_REG) {
            *total += (uint64_t)sb.st_size;
            w->files++;
            if (show)
                w->out->entries[index].size = (uint64_t)sb.st_size;
        } else {
            uint64_t sub = 0;
            int child = mt_fs_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
            if (child < 0)
                continue; /* replaced by a link or removed meanwhile */
            rc = walk(w, child, level + 1, show, &sub);
            close(child);
            *total += sub;
            if (show)
                w->out->entries[index].size = sub;
        }
    }
    mt_buf_truncate(&w->path, path_len);
    for (i = 0; i < count; i++)
        free(names[i].name);
    free(names);
    return rc;
}

void mt_store_listing_dispose(mt_store_listing *listing)
{
    size_t i;

    if (!listing)
        return;
    for (i = 0; i < listing->count; i++)
        free(listing->entries[i].path);
    free(listing->entries);
    memset(listing, 0, sizeof(*listing));
}

int mt_fs_list(mt_store *st, mt_store_listing *out, const char *rel, unsigned depth)
{
    mt_fs *fs = (mt_fs *)st;
    mt_walk w;
    int fd, rc;

    memset(out, 0, sizeof(*out));
    memset(&w, 0, sizeof(w));
    w.out = out;
    w.max_depth = depth;
    fd = mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot list", rel);
    if ((rc = mt_buf_puts(&w.path, rel)) == 0)
        rc = walk(&w, fd, 1, 1, &out->size);
    close(fd);
    mt_buf_dispose(&w.path);
    if (rc < 0)
        mt_store_listing_dispose(out);
    return rc;
}

int mt_fs_usage(mt_store *st, uint64_t *bytes, uint64_t *files)
{
    mt_fs *fs = (mt_fs *)st;
    mt_walk w;
    int rc;

    memset(&w, 0, sizeof(w));
    *bytes = 0;
    rc = walk(&w, fs->root_fd, 1, 0, bytes);
    *files = w.files;
    mt_buf_dispose(&w.path);
    return rc;
}

/*
 * Every node of the filesystem store, hidden ones included: what moving a
 * store elsewhere (migrate) must see. Each directory is opened beneath the
 * one above it with openat2's confinement, so a symlink or a directory
 * swapped in while the walk runs is never followed; links, FIFOs and names
 * that no request path could name are reported as MT_NODE_OTHER, never
 * opened. Which entries those are is mt_fs_entry's rule, every walk's.
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    mt_walk_cb cb;
    void *payload;
    mt_buf path;
} each_state;

static int each_dir(each_state *s, int dirfd, unsigned depth)
{
    mt_dir d;
    size_t i, base = s->path.len;
    int rc;

    if (depth > MT_WALK_MAX_DEPTH)
        return mt_error_set(MT_ELIMIT,
                            "%s is nested more than %d directories deep; memtool does not walk "
                            "deeper (move it up, then try again)",
                            s->path.ptr, MT_WALK_MAX_DEPTH);
    if ((rc = mt_fs_read_dir(&d, dirfd)) < 0)
        return rc;
    for (i = 0; i < d.count && rc == 0; i++) {
        const char *name = d.names.ptr + d.list[i].name;
        size_t n = strlen(name);
        struct stat sb;
        mt_node_type type = MT_NODE_OTHER;
        int named, kind;

        kind = mt_fs_entry(&sb, &named, dirfd, name, d.list[i].type, base);
        if (kind == MT_FS_SKIP)
            continue;
        mt_buf_truncate(&s->path, base);
        if ((base && mt_buf_putc(&s->path, '/') < 0) || mt_buf_put(&s->path, name, n) < 0) {
            rc = mt_error_set(MT_ENOMEM, "out of memory walking the store");
            break;
        }
        if (kind < 0) {
            rc = mt_fs_error(-kind, "cannot look at", s->path.ptr);
            break;
        }
        if (named && kind == MT_FS_FILE)
            type = MT_NODE_FILE;
        else if (named && kind == MT_FS_DIR)
            type = MT_NODE_DIR;
        rc = s->cb(s->payload, s->path.ptr, type, type == MT_NODE_FILE ? (uint64_t)sb.st_size : 0);
        if (rc == 0 && type == MT_NODE_DIR) {
            int fd = mt_fs_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
            /* Removed, or swapped for a link or a file, since it was looked
             * at: not a directory of the store any more. */
            if (fd == -ENOENT || fd == -ELOOP || fd == -ENOTDIR)
                continue;
            if (fd < 0) {
                rc = mt_fs_error(-fd, "cannot walk", s->path.ptr);
                break;
            }
            rc = each_dir(s, fd, depth + 1);
            close(fd);
        }
    }
    mt_buf_truncate(&s->path, base);
    mt_fs_dir_dispose(&d);
    return rc;
}

static int walk(mt_fs *fs, const char *rel, each_state *s)
{
    int fd, rc;

    fd = mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot walk", rel);
    if (mt_buf_grow(&s->path, 256) < 0 || mt_buf_puts(&s->path, rel) < 0) {
        rc = mt_error_set(MT_ENOMEM, "out of memory walking the store");
        goto done;
    }
    rc = each_dir(s, fd, 0);
done:
    close(fd);
    mt_buf_dispose(&s->path);
    return rc;
}

int mt_fs_walk(mt_store *st, const char *rel, mt_walk_cb cb, void *payload)
{
    each_state s = {cb, payload, MT_BUF_INIT};

    return walk((mt_fs *)st, rel, &s);
}

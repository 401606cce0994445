/* The filesystem store's writes: atomic (temporary file, fsync, rename) and
 * never through a link. */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "lib/path.h"

/* Stale temporary files are removed only once this old, so a writer that has
 * just made one and not yet locked it is never robbed of it. */
#define MT_TEMP_STALE_SECONDS 10
#define MT_TREE_MAX_DEPTH     256
#define MT_EDIT_TRIES         1000

static atomic_uint temp_counter;

static void fs_temp_name(char name[64])
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    /* The backslash at the end is a byte the path rules refuse: no request
     * can name a temporary file, nor make a directory the cleaner would take
     * for one. */
    snprintf(name, 64, MT_TMP_PREFIX "%ld.%u.%lx\\", (long)getpid(),
             atomic_fetch_add(&temp_counter, 1), (unsigned long)ts.tv_nsec);
}

static int fs_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int fs_flock(int fd, int op)
{
    while (flock(fd, op) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return 0;
}

int mt_fs_write_temp(mt_fs *fs, int *out_fd, char name[64], int dirfd, const char *data, size_t len,
                     const char *rel)
{
    int fd = -1, rc, tries;

    for (tries = 0; tries < 16; tries++) {
        fs_temp_name(name);
        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0)
        return mt_fs_error(errno, "cannot write", rel);
    if ((rc = fs_flock(fd, LOCK_EX)) < 0 || (rc = fs_write_all(fd, data, len)) < 0) {
        rc = mt_fs_error(-rc, "cannot write", rel);
        goto fail;
    }
    if (fs->durability != MT_DURABILITY_NONE && (rc = mt_fs_sync(fd, rel)) < 0)
        goto fail;
    *out_fd = fd;
    return 0;
fail:
    unlinkat(dirfd, name, 0);
    close(fd);
    return rc;
}

/* renameat2(RENAME_NOREPLACE), or link+unlink where the filesystem lacks it:
 * both refuse atomically when the name is taken. */
static int fs_rename_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
    if (renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (linkat(fromfd, from, tofd, to, 0) < 0)
        return -errno;
    unlinkat(fromfd, from, 0);
    return 0;
}

/* Put data at name in dirfd atomically: a temporary file, synced as the
 * durability asks, renamed into place (never replacing unless asked). */
static int fs_put(mt_fs *fs, int dirfd, const char *name, const char *data, size_t len, int replace,
                  const char *rel)
{
    char tmp[64];
    int fd = -1, rc;

    if ((rc = mt_fs_write_temp(fs, &fd, tmp, dirfd, data, len, rel)) < 0)
        return rc;
    rc = replace ? (renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0)
                 : fs_rename_noreplace(dirfd, tmp, dirfd, name);
    if (rc < 0) {
        unlinkat(dirfd, tmp, 0);
        rc = mt_fs_error(-rc, replace ? "cannot replace" : "cannot create", rel);
    } else if (fs->durability == MT_DURABILITY_FULL) {
        rc = mt_fs_sync_done(dirfd, rel);
    }
    close(fd);
    return rc;
}

int mt_fs_create(mt_store *st, const char *rel, const char *data, size_t len)
{
    mt_fs *fs = (mt_fs *)st;
    const char *name;
    int dirfd = -1, rc;

    if (!*rel)
        return mt_fs_error(EEXIST, "cannot create", rel);
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel, 1)) < 0)
        return rc;
    /* Fail early without writing when the name is taken (the rename checks again). */
    if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = mt_fs_error(EEXIST, "cannot create", rel);
        goto done;
    }
    rc = fs_put(fs, dirfd, name, data, len, 0, rel);
done:
    close(dirfd);
    return rc;
}

/*
 * Open and lock the file at name, making sure the lock is on the file that is
 * there now: a writer that held it before may have renamed a new file in, in
 * which case the lock we waited for guards a dead inode and we go again.
 */
static int fs_lock_current(int *out_fd, struct stat *out_sb, int dirfd, const char *name,
                           const char *rel)
{
    struct stat now;
    int fd, rc, tries;

    for (tries = 0; tries < MT_EDIT_TRIES; tries++) {
        fd = mt_fs_openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
            return mt_fs_error(-fd, "cannot edit", rel);
        if (fstat(fd, out_sb) < 0) {
            rc = mt_fs_error(errno, "cannot edit", rel);
            goto fail;
        }
        if (S_ISDIR(out_sb->st_mode)) {
            rc = mt_fs_error(EISDIR, "cannot edit", rel);
            goto fail;
        }
        if (!S_ISREG(out_sb->st_mode)) {
            rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file", rel);
            goto fail;
        }
        if ((rc = fs_flock(fd, LOCK_EX)) < 0) {
            rc = mt_fs_error(-rc, "cannot lock", rel);
            goto fail;
        }
        if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == out_sb->st_dev &&
            now.st_ino == out_sb->st_ino) {
            if (fstat(fd, out_sb) < 0) {
                rc = mt_fs_error(errno, "cannot edit", rel);
                goto fail;
            }
            if (out_sb->st_nlink > 1) {
                rc = mt_error_set(MT_EMULTILINK, "%s has more than one hard link", rel);
                goto fail;
            }
            *out_fd = fd;
            return 0;
        }
        close(fd);
    }
    return mt_error_set(MT_EBUSY, "cannot edit %s: it kept being replaced while waiting for it",
                        rel);
fail:
    close(fd);
    return rc;
}

int mt_fs_edit(mt_store *st, const char *rel, mt_edit_cb cb, void *payload)
{
    mt_fs *fs = (mt_fs *)st;
    const char *name;
    struct stat sb;
    char *data = NULL, *out = NULL;
    size_t len = 0, out_len = 0;
    int dirfd = -1, fd = -1, rc;

    if (!*rel)
        return mt_fs_error(EISDIR, "cannot edit", rel);
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel, 0)) < 0)
        return rc;
    if ((rc = fs_lock_current(&fd, &sb, dirfd, name, rel)) < 0)
        goto done;
    if ((rc = mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, rel)) < 0)
        goto done;
    if ((rc = cb(&out, &out_len, data, len, payload)) < 0)
        goto done;
    rc = fs_put(fs, dirfd, name, out, out_len, 1, rel);
done:
    /* Closing fd releases the lock, after the new content is in place. */
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    free(data);
    free(out);
    return rc;
}

int mt_fs_remove_tree(int dirfd, unsigned depth)
{
    DIR *dir;
    struct dirent *de;
    int fd, rc = 0;

    if (depth > MT_TREE_MAX_DEPTH)
        return mt_error_set(MT_EIO, "the directory tree is more than %d levels deep",
                            MT_TREE_MAX_DEPTH);
    fd = mt_fs_openat(dirfd, "", O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot delete in", "");
    dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return mt_fs_error(errno, "cannot delete in", "");
    }
    while ((de = readdir(dir)) != NULL) {
        const char *n = de->d_name;
        int child;

        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        if (unlinkat(dirfd, n, 0) == 0 || errno == ENOENT)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            rc = mt_fs_error(errno, "cannot delete", n);
            break;
        }
        /* A directory: empty it through a descriptor that cannot follow a link. */
        child = mt_fs_openat(dirfd, n, O_RDONLY | O_DIRECTORY, 0);
        if (child == -ENOENT)
            continue;
        if (child < 0) {
            rc = mt_fs_error(-child, "cannot delete", n);
            break;
        }
        rc = mt_fs_remove_tree(child, depth + 1);
        close(child);
        if (rc < 0)
            break;
        if (unlinkat(dirfd, n, AT_REMOVEDIR) < 0 && errno != ENOENT) {
            rc = mt_fs_error(errno, "cannot delete", n);
            break;
        }
    }
    closedir(dir);
    return rc;
}

int mt_fs_remove(mt_store *st, const char *rel)
{
    mt_fs *fs = (mt_fs *)st;
    const char *name;
    struct stat sb;
    char tmp[64];
    int dirfd = -1, fd = -1, rc;

    if (!*rel)
        return mt_error_set(MT_EINVAL, "the store root cannot be deleted");
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel, 0)) < 0)
        return rc;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = mt_fs_error(errno, "cannot delete", rel);
        goto done;
    }
    if (!S_ISDIR(sb.st_mode)) {
        /* A file, a link (never its target), a FIFO...: the name goes. */
        if (unlinkat(dirfd, name, 0) < 0)
            rc = mt_fs_error(errno, "cannot delete", rel);
        goto sync;
    }
    /* A tree vanishes from view at once: renamed to a hidden temporary name,
     * then emptied. A crash half way leaves only a hidden stale entry that
     * the next walk of the store cleans. */
    fs_temp_name(tmp);
    /* The temporary name is fresh, so a plain rename is as safe where the
     * filesystem lacks RENAME_NOREPLACE (and link() cannot take a directory). */
    if (renameat2(dirfd, name, dirfd, tmp, RENAME_NOREPLACE) < 0 &&
        (errno != EINVAL || renameat(dirfd, name, dirfd, tmp) < 0)) {
        rc = mt_fs_error(errno, "cannot delete", rel);
        goto done;
    }
    /* From here the tree is gone from the store. Emptying it is tidying up:
     * if that fails part way, what is left is a hidden stale entry that
     * later walks of the store remove, and the delete has still happened. */
    fd = mt_fs_openat(dirfd, tmp, O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0 && fs_flock(fd, LOCK_EX) == 0 && mt_fs_remove_tree(fd, 1) == 0)
        unlinkat(dirfd, tmp, AT_REMOVEDIR);
sync:
    if (rc == 0 && fs->durability == MT_DURABILITY_FULL)
        rc = mt_fs_sync_done(dirfd, rel);
done:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

int mt_fs_rename(mt_store *st, const char *from, const char *to)
{
    mt_fs *fs = (mt_fs *)st;
    const char *from_name, *to_name;
    struct stat sb;
    int fromfd = -1, tofd = -1, rc;

    if (!*from)
        return mt_error_set(MT_EINVAL, "the store root cannot be renamed");
    if (!*to)
        return mt_fs_error(EEXIST, "cannot rename to", to);
    if ((rc = mt_fs_open_parent(fs, &fromfd, &from_name, from, 0)) < 0)
        return rc;
    if (fstatat(fromfd, from_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = mt_fs_error(errno, "cannot rename", from);
        goto done;
    }
    /* Look before making the destination's parents, so a refused rename
     * leaves no new directories behind. */
    rc = mt_fs_open_parent(fs, &tofd, &to_name, to, 0);
    if (rc == 0 && fstatat(tofd, to_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = mt_fs_error(EEXIST, "cannot rename to", to);
        goto done;
    }
    if (rc == MT_ENOTFOUND)
        rc = mt_fs_open_parent(fs, &tofd, &to_name, to, 1);
    if (rc < 0)
        goto done;
    if ((rc = fs_rename_noreplace(fromfd, from_name, tofd, to_name)) < 0) {
        rc = mt_fs_error(-rc, rc == -ENOENT ? "cannot rename" : "cannot rename to",
                         rc == -ENOENT ? from : to);
        goto done;
    }
    if (fs->durability == MT_DURABILITY_FULL && (rc = mt_fs_sync_done(tofd, to)) == 0)
        rc = mt_fs_sync_done(fromfd, from);
done:
    if (fromfd >= 0)
        close(fromfd);
    if (tofd >= 0)
        close(tofd);
    return rc;
}

int mt_fs_is_temp(const char *name)
{
    size_t len = strlen(name);

    return strncmp(name, MT_TMP_PREFIX, sizeof(MT_TMP_PREFIX) - 1) == 0 && name[len - 1] == '\\';
}

void mt_fs_clean_temp(int dirfd, const char *name)
{
    struct stat sb;
    int fd;

    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
        time(NULL) - sb.st_mtime < MT_TEMP_STALE_SECONDS)
        return;
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        unlinkat(dirfd, name, 0);
        return;
    }
    fd = mt_fs_openat(dirfd, name, O_RDONLY | O_NONBLOCK | (S_ISDIR(sb.st_mode) ? O_DIRECTORY : 0),
                      0);
    if (fd < 0)
        return;
    /* A live writer or deleter holds the lock; only an abandoned entry is free. */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            if (mt_fs_remove_tree(fd, 1) == 0)
                unlinkat(dirfd, name, AT_REMOVEDIR);
        } else {
            unlinkat(dirfd, name, 0);
        }
    }
    close(fd);
}

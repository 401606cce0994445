/*
 * The filesystem store's record of last access (fs.h): the inode's own
 * times, so that it moves with the file and costs no second file. A view's
 * touch sets the atime alone (UTIME_OMIT for the mtime) and only when the
 * recorded time is more than a grain old; it is never synced. Setting the
 * atime changes the ctime, which the history's fingerprint includes: the
 * next change of a touched file re-reads and hashes it once, finds the
 * content the same and records no version (fs_history.c, settle_file), and
 * goes on through the history's log all the same (mt_hist_refresh). The
 * ctime stays in the fingerprint: it is what shows a write in place that
 * kept the size and put the modification time back.
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t mt_fs_last_access(const struct stat *sb)
{
    int64_t a = (int64_t)sb->st_atim.tv_sec * 1000 + sb->st_atim.tv_nsec / 1000000;
    int64_t m = (int64_t)sb->st_mtim.tv_sec * 1000 + sb->st_mtim.tv_nsec / 1000000;

    return a > m ? a : m;
}

void mt_fs_access_now(int dirfd, const char *name)
{
    struct timespec ts[2];

    /* The clock itself, not UTIME_NOW: the kernel's file times come from a
     * coarse clock, up to a tick behind the time a caller read just before. */
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[1].tv_sec = 0;
    ts[1].tv_nsec = UTIME_OMIT;
    /* Best effort: a rename that could not mark its file is still a rename;
     * the file then looks as idle as it was before. */
    (void)utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

/* The longest a view waits for a change to finish before it skips recording
 * its access (a touch never fails a view). */
#define TOUCH_LOCK_MS 1000

int mt_fs_touch(mt_store *st, int64_t *recorded, const char *rel, int64_t now_ms)
{
    mt_fs *fs = (mt_fs *)st;
    struct timespec ts[2];
    const char *name;
    struct stat sb;
    int64_t at = 0;
    int dirfd = -1, rc;

    if (!*rel)
        return mt_fs_error(EISDIR, "cannot touch", rel);
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        return rc;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = mt_fs_error(errno, "cannot touch", rel);
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        rc = mt_fs_error(EISDIR, "cannot touch", rel);
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file", rel);
        goto done;
    }
    /* Recorded within the grain: nothing to write, whatever the links (a
     * second one may be a change's, half done: a removal links the file
     * aside first; that, and a file with more links, is decided under the
     * lock below, where no change is). */
    if ((at = mt_fs_last_access(&sb)) >= now_ms - MT_ACCESS_GRAIN_MS)
        goto done;
    /* A read-only store keeps the times it has: a view is still a view. */
    if (fs->read_only)
        goto done;
    /* The write is made under the store's lock, so that a removal that
     * checks the time and then unlinks (gc's) is ordered wholly before or
     * after it: a view never finds a file a removal then takes as idle.
     * Once a grain per memory at most, so views rarely wait. */
    if ((rc = mt_fs_lock(fs, TOUCH_LOCK_MS)) < 0) {
        rc = rc == MT_FS_LOCK_TIMEOUT
                 ? mt_error_set(MT_EBUSY, "the store is locked: %s not touched", rel)
                 : rc;
        goto done;
    }
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        rc = mt_fs_error(errno, "cannot touch", rel);
    else if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file", rel);
    else if ((at = mt_fs_last_access(&sb)) < now_ms - MT_ACCESS_GRAIN_MS) {
        ts[0].tv_sec = (time_t)(now_ms / 1000);
        ts[0].tv_nsec = (long)(now_ms % 1000) * 1000000;
        ts[1].tv_sec = 0;
        ts[1].tv_nsec = UTIME_OMIT;
        if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
            rc = mt_fs_error(errno, "cannot touch", rel);
        else
            at = now_ms;
    }
    mt_fs_unlock(fs);
done:
    close(dirfd);
    if (rc == 0 && recorded)
        *recorded = at;
    return rc;
}

/* A memory's times as they were elsewhere (store.h, `times`): the mtime and
 * the atime, under the lock as a touch's. The ctime the kernel sets then is
 * seen by the history as a touch's is: the content, hashed again, is the
 * same, and no version is recorded. */
int mt_fs_times(mt_store *st, const char *rel, int64_t accessed_ms, int64_t modified_ms)
{
    mt_fs *fs = (mt_fs *)st;
    struct timespec ts[2];
    const char *name;
    struct stat sb;
    int dirfd = -1, rc;

    if (!*rel)
        return mt_fs_error(EISDIR, "cannot set the times of", rel);
    if (fs->read_only)
        return mt_error_set(MT_EINVAL, "the store is read-only: %s keeps its times", rel);
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        return rc;
    if ((rc = mt_fs_lock(fs, TOUCH_LOCK_MS)) < 0) {
        rc = rc == MT_FS_LOCK_TIMEOUT
                 ? mt_error_set(MT_EBUSY, "the store is locked: %s keeps its times", rel)
                 : rc;
        goto done;
    }
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        rc = mt_fs_error(errno, "cannot set the times of", rel);
    else if (S_ISDIR(sb.st_mode))
        rc = mt_fs_error(EISDIR, "cannot set the times of", rel);
    else if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file", rel);
    else {
        ts[0].tv_sec = (time_t)(accessed_ms / 1000);
        ts[0].tv_nsec = (long)(accessed_ms % 1000) * 1000000;
        ts[1].tv_sec = (time_t)(modified_ms / 1000);
        ts[1].tv_nsec = (long)(modified_ms % 1000) * 1000000;
        if (modified_ms <= 0) {
            ts[1].tv_sec = 0;
            ts[1].tv_nsec = UTIME_OMIT;
        }
        if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
            rc = mt_fs_error(errno, "cannot set the times of", rel);
    }
    mt_fs_unlock(fs);
done:
    close(dirfd);
    return rc;
}

typedef struct {
    mt_fs *fs;
    mt_idle_cb cb;
    void *payload;
} idle_state;

/* One file: its times, looked at through a confined O_PATH descriptor. */
static int idle_file(idle_state *s, const char *path)
{
    struct stat sb;
    int fd = mt_fs_openat(s->fs->root_fd, path, O_PATH, 0), rc;

    if (fd == -ENOENT || fd == -ELOOP)
        return 0; /* gone, or swapped for a link, since the walk saw it */
    if (fd < 0)
        return mt_fs_error(-fd, "cannot look at", path);
    rc = fstat(fd, &sb);
    close(fd);
    if (rc < 0)
        return mt_fs_error(errno, "cannot look at", path);
    if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        return 0;
    return s->cb(s->payload, path, (uint64_t)sb.st_size, mt_fs_last_access(&sb),
                 (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000);
}

static int idle_node(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    (void)size;
    return type == MT_NODE_FILE ? idle_file(payload, path) : 0;
}

int mt_fs_idle(mt_store *st, const char *rel, mt_idle_cb cb, void *payload)
{
    mt_fs *fs = (mt_fs *)st;
    idle_state s = {fs, cb, payload};
    struct stat sb;
    int fd;

    if (*rel) {
        fd = mt_fs_openat(fs->root_fd, rel, O_PATH, 0);
        if (fd < 0)
            return mt_fs_error(-fd, "cannot look at", rel);
        if (fstat(fd, &sb) < 0) {
            int err = errno;
            close(fd);
            return mt_fs_error(err, "cannot look at", rel);
        }
        close(fd);
        if (!S_ISDIR(sb.st_mode))
            return idle_file(&s, rel);
    }
    return mt_fs_walk(st, rel, idle_node, &s);
}

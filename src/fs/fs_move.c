/* Removing and renaming: a name taken away or moved, a whole tree at once,
 * its new parents made as a create makes them (fs_write.c). */
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* The precondition of a remove or a rename: the file at name holds content
 * of op->expect_sha256. Its content is read (into *data, for the history). */
static int fs_expect_file(mt_store_op *op, int dirfd, const char *name, const char *rel,
                          struct stat *sb, char **data, size_t *len)
{
    int fd, rc;

    if (!op->expect_sha256)
        return 0;
    if (!S_ISREG(sb->st_mode))
        return mt_error_set(MT_EINVAL, "an expected SHA-256 applies only to a regular file");
    if ((rc = mt_fs_open_regular(&fd, sb, dirfd, name, "cannot read", rel)) < 0)
        return rc;
    rc = mt_fs_read_fd(data, len, fd, (size_t)sb->st_size, rel);
    close(fd);
    return rc < 0 ? rc : mt_fs_hist_expect(op, rel, *data, *len);
}

int mt_fs_remove(mt_store *st, mt_store_op *op, const char *rel)
{
    mt_fs *fs = (mt_fs *)st;
    const char *name;
    struct stat sb;
    char tmp[64], *data = NULL;
    size_t len = 0;
    int dirfd = -1, fd = -1, rc;
    mt_fs_txn t;

    if (!*rel)
        return mt_error_set(MT_EINVAL, "the store root cannot be deleted");
    if ((rc = mt_fs_begin(fs, &t, op, rel, 1)) < 0)
        return rc;
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        goto gone;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = mt_fs_error(errno, "cannot delete", rel);
        goto gone;
    }
    if ((rc = fs_expect_file(op, dirfd, name, rel, &sb, &data, &len)) < 0)
        goto done;
    if (op->empty_dir) {
        mt_store_usage held = {0};
        int dfd = S_ISDIR(sb.st_mode) ? mt_fs_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0) : -1;
        rc = dfd >= 0 ? mt_fs_count_tree(&held, dfd, 0) : -1;
        if (dfd >= 0)
            close(dfd);
        if (rc < 0 || held.files) {
            rc = mt_error_set(MT_ECONFLICT, "%s is not an empty directory", rel);
            goto done;
        }
    }
    /* Expiry: only a file still idle goes, checked under the lock that
     * every other change and this removal hold. */
    if (op->idle_before_ms &&
        (!S_ISREG(sb.st_mode) || mt_fs_last_access(&sb) >= op->idle_before_ms)) {
        rc = mt_error_set(MT_ECONFLICT, "%s was accessed since it was found idle", rel);
        goto done;
    }
    if (!S_ISDIR(sb.st_mode)) {
        int regular = S_ISREG(sb.st_mode) && sb.st_nlink == 1;

        mt_fs_hist_settle(fs, op, dirfd, name, rel, regular ? &sb : NULL, data, len);
        /* A file, a link (never its target), a FIFO...: the name goes. */
        if (unlinkat(dirfd, name, 0) < 0) {
            rc = mt_fs_error(errno, "cannot delete", rel);
            goto done;
        }
        if (S_ISREG(sb.st_mode))
            mt_fs_account(&t, -(int64_t)sb.st_size, -1, 0);
        if (regular)
            mt_fs_hist_record(fs, op, MT_VERSION_DELETED, rel, NULL, NULL, 0, NULL, -1, -1, NULL);
        goto sync;
    }
    mt_fs_hist_settle_tree(fs, op, rel);
    /* A tree vanishes from view at once: renamed to a hidden temporary name,
     * then emptied. A crash half way leaves only a temporary, which the next
     * recount (the counter is dirty then) removes. */
    mt_fs_temp_name(tmp);
    if ((rc = mt_fs_rename_dir_noreplace(dirfd, name, dirfd, tmp)) < 0) {
        rc = mt_fs_error(-rc, "cannot delete", rel);
        goto done;
    }
    mt_fs_hist_tree(fs, op, rel, NULL);
    fd = mt_fs_openat(dirfd, tmp, O_RDONLY | O_DIRECTORY, 0);
    /* Held while it is emptied, so that no walk takes it for a dead one. */
    if (fd >= 0)
        flock(fd, LOCK_EX | LOCK_NB);
    {
        mt_store_usage gone;
        /* What the tree held comes off the counter; a tree that cannot be
         * counted (or emptied) is counted again, whole store, next time. */
        if (fd >= 0 && mt_fs_count_tree(&gone, fd, 0) == 0)
            mt_fs_account(&t, -(int64_t)gone.bytes, -(int64_t)gone.files, -(int64_t)gone.dirs - 1);
        else
            t.recount = 1;
    }
    /* From here the tree is gone from the store; emptying it frees the disk. */
    if (fd >= 0 && mt_fs_remove_tree(fd) == 0 && unlinkat(dirfd, tmp, AT_REMOVEDIR) == 0)
        goto sync;
    t.recount = 1;
sync:
    if (fs->durability == MT_DURABILITY_FULL)
        rc = mt_fs_sync_done(dirfd, rel);
    goto done;
gone:
    /* Nothing there: a retried delete whose first try went through. */
    if (rc == MT_ENOTFOUND && op->expect_sha256)
        rc = 0;
done:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    mt_fs_end(fs, &t);
    free(data);
    return rc;
}

/* How many levels of entries are beneath dirfd (0: it is empty, 1: it
 * holds only files and empty directories), looking no further than `limit`
 * levels (beyond it the answer is only "more"). */
static int fs_tree_height(unsigned *height, int at, unsigned limit)
{
    DIR *dir;
    struct dirent *de;
    int fd, rc = 0;

    *height = 0;
    fd = mt_fs_openat(at, "", O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot look into", "");
    if (!(dir = fdopendir(fd))) {
        close(fd);
        return mt_fs_error(errno, "cannot look into", "");
    }
    for (errno = 0; (de = readdir(dir)) != NULL && *height <= limit; errno = 0) {
        const char *n = de->d_name;
        unsigned below = 0;
        int child;

        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        if (*height < 1)
            *height = 1;
        if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) || limit == 0)
            continue;
        child = mt_fs_openat(dirfd(dir), n, O_RDONLY | O_DIRECTORY, 0);
        if (child == -ENOENT || child == -ENOTDIR || child == -ELOOP)
            continue;
        if (child < 0) {
            rc = mt_fs_error(-child, "cannot look into", n);
            break;
        }
        rc = fs_tree_height(&below, child, limit - 1);
        close(child);
        if (rc < 0)
            break;
        if (below + 1 > *height)
            *height = below + 1;
    }
    if (rc == 0 && errno != 0)
        rc = mt_fs_error(errno, "cannot look into", "");
    closedir(dir);
    return rc;
}

int mt_fs_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    mt_fs *fs = (mt_fs *)st;
    int fds[MT_STORE_MAX_DEPTH];
    mt_fs_parents p = {-1, NULL, 0, 0, NULL};
    const char *from_name;
    struct stat sb, dst;
    unsigned height = 0;
    int fromfd = -1, rc, made = 0;
    mt_fs_txn t;
    char top[64], *data = NULL;
    size_t len = 0;

    if (!*from)
        return mt_error_set(MT_EINVAL, "the store root cannot be renamed");
    if (!*to)
        return mt_fs_error(EEXIST, "cannot rename to", to);
    if ((rc = mt_fs_begin(fs, &t, op, from, 0)) < 0)
        return rc;
    /* Everything about the source first, so an error about it names it. */
    op->culprit = 0;
    if ((rc = mt_fs_open_parent(fs, &fromfd, &from_name, from)) < 0)
        goto gone;
    if (fstatat(fromfd, from_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = mt_fs_error(errno, "cannot rename", from);
        goto gone;
    }
    /* A file with another name, perhaps outside the store, is no memory's:
     * moving it would stamp the shared inode (its ctime by the kernel, its
     * atime by the access mark below), and SPEC has such files never read or
     * written through. Only delete takes its name away. */
    if (S_ISREG(sb.st_mode) && sb.st_nlink > 1) {
        rc = mt_error_set(MT_EMULTILINK, "%s has more than one hard link", from);
        goto done;
    }
    if ((rc = fs_expect_file(op, fromfd, from_name, from, &sb, &data, &len)) < 0)
        goto done;
    if (S_ISDIR(sb.st_mode)) {
        int sfd = mt_fs_openat(fromfd, from_name, O_RDONLY | O_DIRECTORY, 0);
        if (sfd < 0) {
            rc = mt_fs_error(-sfd, "cannot rename", from);
            goto done;
        }
        rc = fs_tree_height(&height, sfd, MT_STORE_MAX_DEPTH);
        close(sfd);
        if (rc < 0)
            goto done;
    }
    op->culprit = 1;
    if ((rc = mt_fs_find_parents(&p, fs, to, "cannot rename to")) < 0)
        goto done;
    if (!p.missing && fstatat(p.fd, p.name, &dst, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = mt_fs_error(EEXIST, "cannot rename to", to);
        goto done;
    }
    /* Everything moved must stay within the depth a request can name (and
     * every walk sees in full): `height` levels beneath the destination. */
    if (p.depth + height > MT_STORE_MAX_DEPTH) {
        op->refused = MT_LIMIT_DEPTH;
        op->limit = MT_STORE_MAX_DEPTH;
        op->held = height;
        op->would = p.depth + height;
        rc = mt_error_set(MT_ELIMIT, "moving %s to %s would nest it too deep", from, to);
        goto done;
    }
    if ((rc = mt_fs_quota(&t, op, to, 0, 0, p.count)) < 0)
        goto done;
    if (S_ISDIR(sb.st_mode)) {
        mt_fs_hist_settle_tree(fs, op, from);
        mt_fs_hist_settle_tree(fs, op, to);
    } else {
        int regular = S_ISREG(sb.st_mode) && sb.st_nlink == 1;
        mt_fs_hist_settle(fs, op, fromfd, from_name, from, regular ? &sb : NULL, data, len);
        mt_fs_hist_settle(fs, op, p.missing ? -1 : p.fd, p.name, to, NULL, NULL, 0);
    }
    if (p.missing) {
        /* The new parents appear in one rename, then the source moves in;
         * should that fail, they go again. */
        char first[MT_NAME_MAX + 1];
        size_t n = (size_t)(strchr(p.missing, '/') - p.missing);

        memcpy(first, p.missing, n);
        first[n] = '\0';
        if ((rc = mt_fs_make_dirs(&p, 1, fds, top, to)) == 0 &&
            (rc = mt_fs_sync_dirs(fs, fds, p.count, to)) == 0 &&
            (rc = mt_fs_rename_dir_noreplace(p.fd, top, p.fd, first)) < 0)
            rc = mt_fs_error(-rc, "cannot rename to", to);
        if (rc < 0) {
            mt_fs_close_dirs(fds, p.count);
            mt_fs_drop_temp(&t, p.fd, top);
            goto done;
        }
        made = 1;
        mt_fs_account(&t, 0, 0, p.count);
    }
    rc = S_ISDIR(sb.st_mode)
             ? mt_fs_rename_dir_noreplace(fromfd, from_name, made ? fds[p.count - 1] : p.fd, p.name)
             : mt_fs_rename_noreplace(fromfd, from_name, made ? fds[p.count - 1] : p.fd, p.name);
    if (rc < 0) {
        op->culprit = rc == -ENOENT ? 0 : 1;
        rc = mt_fs_error(-rc, rc == -ENOENT ? "cannot rename" : "cannot rename to",
                         rc == -ENOENT ? from : to);
        if (made) {
            mt_fs_unmake_dirs(&p, fds);
            t.recount = 1; /* whether every one went is not worth tracking here */
        }
        goto close_made;
    }
    /* A rename writes the memory: it counts as an access (a directory's
     * files keep theirs). Before the version, whose fingerprint sees the
     * ctime this sets. */
    if (S_ISREG(sb.st_mode))
        mt_fs_access_now(made ? fds[p.count - 1] : p.fd, p.name);
    if (S_ISDIR(sb.st_mode))
        mt_fs_hist_tree(fs, op, from, to);
    else if (S_ISREG(sb.st_mode))
        mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, to, from, NULL, 0, NULL, -1,
                          made ? fds[p.count - 1] : p.fd, p.name);
    if (fs->durability == MT_DURABILITY_FULL &&
        (rc = mt_fs_sync_done(made ? fds[p.count - 1] : p.fd, to)) == 0)
        rc = mt_fs_sync_done(fromfd, from);
close_made:
    if (made)
        mt_fs_close_dirs(fds, p.count);
    goto done;
gone:
    /* Nothing at the source: a retried rename whose first try went through
     * finds the expected content at the destination. */
    if (rc == MT_ENOTFOUND && op->expect_sha256) {
        mt_store_op probe = *op;
        const char *to_name;
        int tofd;

        probe.culprit = 0;
        if (mt_fs_open_parent(fs, &tofd, &to_name, to) == 0) {
            if (fstatat(tofd, to_name, &dst, AT_SYMLINK_NOFOLLOW) == 0 &&
                fs_expect_file(&probe, tofd, to_name, to, &dst, &data, &len) == 0)
                rc = 0;
            close(tofd);
        }
    }
done:
    if (fromfd >= 0)
        close(fromfd);
    mt_fs_parents_close(&p);
    mt_fs_end(fs, &t);
    free(data);
    return rc;
}

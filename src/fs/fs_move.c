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

#include "machinery/usage.h"
#include "util/sha256.h"

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
static int fs_tree_height(unsigned *height, size_t *longest, int at, unsigned limit)
{
    DIR *dir;
    struct dirent *de;
    int fd, rc = 0;

    *height = 0;
    *longest = 0;
    fd = mt_fs_openat(at, "", O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot look into", "");
    if (!(dir = fdopendir(fd))) {
        close(fd);
        return mt_fs_error(errno, "cannot look into", "");
    }
    for (errno = 0; (de = readdir(dir)) != NULL && *height <= limit; errno = 0) {
        const char *n = de->d_name;
        size_t len = strlen(n), deepest = 0;
        unsigned below = 0;
        int child;

        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        if (*height < 1)
            *height = 1;
        if (de->d_type == DT_REG && len > *longest)
            *longest = len;
        if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) || limit == 0)
            continue;
        child = mt_fs_openat(dirfd(dir), n, O_RDONLY | O_DIRECTORY, 0);
        if ((child == -ENOTDIR || child == -ELOOP) && len > *longest)
            *longest = len; /* DT_UNKNOWN: a file, or a link, counted as one */
        if (child == -ENOENT || child == -ENOTDIR || child == -ELOOP)
            continue;
        if (child < 0) {
            rc = mt_fs_error(-child, "cannot look into", n);
            break;
        }
        rc = fs_tree_height(&below, &deepest, child, limit - 1);
        close(child);
        if (rc < 0)
            break;
        if (below + 1 > *height)
            *height = below + 1;
        if (deepest && len + 1 + deepest > *longest)
            *longest = len + 1 + deepest;
    }
    if (rc == 0 && errno != 0)
        rc = mt_fs_error(errno, "cannot look into", "");
    closedir(dir);
    return rc;
}

/*
 * A retried rename with content (op->rename_content) that finds nothing at
 * the source: done when the destination holds the new content; finished
 * when it holds the expected one, which a crash between the move and the
 * write leaves (the new content goes in, with the rename's one version);
 * else rc, the source's MT_ENOTFOUND, stands.
 */
static int fs_rename_finish(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *from,
                            const char *to, int rc)
{
    const char *name;
    struct stat sb;
    const char *content = op->rename_data ? op->rename_data : "";
    char *data = NULL, now[65], sha[65], said[256];
    size_t len = 0;
    int dirfd = -1, fd = -1, moved;

    snprintf(said, sizeof(said), "%s", mt_error_last()->message);
    if (mt_fs_open_parent(fs, &dirfd, &name, to) < 0)
        goto gone;
    if (mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot read", to) < 0 ||
        mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, to) < 0)
        goto gone;
    mt_sha256_hex(now, data, len);
    mt_sha256_hex(sha, content, op->rename_len);
    if (strcmp(now, sha) == 0) {
        rc = 0;
        goto done;
    }
    if (strcmp(now, op->expect_sha256) != 0)
        goto gone;
    op->culprit = 1;
    if ((rc = mt_store_content_limit(op, to, (uint64_t)sb.st_size, op->rename_len)) < 0 ||
        (rc = mt_fs_quota(t, op, to, (int64_t)op->rename_len - (int64_t)sb.st_size, 0, 0)) < 0)
        goto done;
    /* The history has the memory at the source when the crash came before
     * its version; else the move was recorded (a rename without content
     * came first), and this is only a change of content. */
    moved = mt_fs_hist_knows(fs, from);
    if (!moved)
        mt_fs_hist_settle(fs, op, dirfd, name, to, &sb, data, len);
    rc = mt_fs_put(fs, dirfd, name, content, op->rename_len, 1, to, NULL);
    if (rc == 0 || rc == MT_ENOTDURABLE) {
        mt_fs_account(t, (int64_t)op->rename_len - (int64_t)sb.st_size, 0, 0);
        mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, to, moved ? from : NULL, content,
                          op->rename_len, sha, -1, dirfd, name);
    }
    goto done;
gone:
    /* The source's absence in its own words, not the destination's look. */
    rc = mt_error_set(rc, "%s", said);
done:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    free(data);
    return rc;
}

/* A rename with content whose new content could not be renamed over the
 * moved file (err): the file goes back, so nothing has changed; should even
 * that fail, the move stands and is recorded, so the history follows the
 * disk. The error either way. */
static int fs_rename_unwrite(mt_fs *fs, mt_store_op *op, int err, int fromfd, const char *from_name,
                             int dstfd, const char *to_name, const char *from, const char *to)
{
    int rc = mt_fs_error(err, "cannot replace", to);

    if (mt_fs_rename_noreplace(dstfd, to_name, fromfd, from_name) == 0)
        return rc;
    mt_fs_access_now(dstfd, to_name);
    mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, to, from, NULL, 0, NULL, -1, dstfd, to_name);
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
    size_t longest = 0;
    int fromfd = -1, dstfd = -1, tfd = -1, rc, made = 0;
    int with = op->rename_content;
    const char *content = op->rename_data ? op->rename_data : "";
    mt_fs_txn t;
    char top[64], tmp[64] = "", sha[65] = "", *data = NULL;
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
    if (with && !S_ISREG(sb.st_mode)) {
        rc = mt_error_set(MT_EINVAL, "%s is not a regular file: only a file takes new content",
                          from);
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
        rc = fs_tree_height(&height, &longest, sfd, MT_STORE_MAX_DEPTH);
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
    if ((rc = mt_store_move_limit(op, from, to, S_ISREG(sb.st_mode), p.depth, height, longest)) < 0)
        goto done;
    if (with && (rc = mt_store_content_limit(op, to, (uint64_t)sb.st_size, op->rename_len)) < 0)
        goto done;
    if ((rc = mt_fs_quota(&t, op, to, with ? (int64_t)op->rename_len - (int64_t)sb.st_size : 0, 0,
                          p.count)) < 0)
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
    dstfd = made ? fds[p.count - 1] : p.fd;
    /* The new content is written (and synced) before the move, so that what
     * is left after it is one rename over the moved file: a crash between
     * the two leaves the old content at the destination, which a retry
     * finishes (fs_rename_finish), and a full disk stops it unmoved. */
    if (with && (rc = mt_fs_write_temp(fs, &tfd, tmp, dstfd, content, op->rename_len, to,
                                       fs->hist_active ? sha : NULL)) < 0) {
        tmp[0] = '\0';
        goto unmake;
    }
    rc = S_ISDIR(sb.st_mode) ? mt_fs_rename_dir_noreplace(fromfd, from_name, dstfd, p.name)
                             : mt_fs_rename_noreplace(fromfd, from_name, dstfd, p.name);
    if (rc < 0) {
        op->culprit = rc == -ENOENT ? 0 : 1;
        rc = mt_fs_error(-rc, rc == -ENOENT ? "cannot rename" : "cannot rename to",
                         rc == -ENOENT ? from : to);
        goto unmake;
    }
    if (with) {
        if (renameat(dstfd, tmp, dstfd, p.name) < 0) {
            rc = fs_rename_unwrite(fs, op, errno, fromfd, from_name, dstfd, p.name, from, to);
            goto unmake;
        }
        tmp[0] = '\0';
        mt_fs_account(&t, (int64_t)op->rename_len - (int64_t)sb.st_size, 0, 0);
        mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, to, from, content, op->rename_len, sha, tfd,
                          -1, NULL);
        goto sync;
    }
    /* A rename writes the memory: it counts as an access (a directory's
     * files keep theirs). Before the version, whose fingerprint sees the
     * ctime this sets. */
    if (S_ISREG(sb.st_mode))
        mt_fs_access_now(dstfd, p.name);
    if (S_ISDIR(sb.st_mode))
        mt_fs_hist_tree(fs, op, from, to);
    else if (S_ISREG(sb.st_mode))
        mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, to, from, NULL, 0, NULL, -1, dstfd, p.name);
sync:
    if (fs->durability == MT_DURABILITY_FULL && (rc = mt_fs_sync_done(dstfd, to)) == 0)
        rc = mt_fs_sync_done(fromfd, from);
    goto close_made;
unmake:
    /* Nothing moved (or moved back): the temporary and the new parents go. */
    if (tmp[0])
        unlinkat(dstfd, tmp, 0);
    if (made) {
        mt_fs_unmake_dirs(&p, fds);
        t.recount = 1; /* whether every one went is not worth tracking here */
    }
close_made:
    if (made)
        mt_fs_close_dirs(fds, p.count);
    goto done;
gone:
    /* Nothing at the source: a retried rename whose first try went through
     * finds the expected content at the destination. */
    if (rc == MT_ENOTFOUND && op->expect_sha256 && with) {
        rc = fs_rename_finish(fs, &t, op, from, to, rc);
    } else if (rc == MT_ENOTFOUND && op->expect_sha256) {
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
    if (tfd >= 0)
        close(tfd);
    if (fromfd >= 0)
        close(fromfd);
    mt_fs_parents_close(&p);
    mt_fs_end(fs, &t);
    free(data);
    return rc;
}

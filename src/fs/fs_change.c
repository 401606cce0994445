/* Creating and editing a memory: each written to a temporary and renamed in
 * (fs_write.c), prepared outside the store's lock where it can be, done under
 * it otherwise. */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machinery/usage.h"

/* An edit with op->keep_access: the new file gets the times the old one
 * had (its last access and last change, fs_access.c), since the edit is no
 * use of the memory. Best effort, as a rename's mark is: a file that could
 * not be given them looks freshly used, never idler than it was. */
static void fs_keep_times(int fd, const struct stat *was)
{
    struct timespec ts[2];

    ts[0] = was->st_atim;
    ts[1] = was->st_mtim;
    (void)futimens(fd, ts);
}

static void fs_keep_times_at(int dirfd, const char *name, const struct stat *was)
{
    struct timespec ts[2];

    ts[0] = was->st_atim;
    ts[1] = was->st_mtim;
    (void)utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

int mt_fs_create_txn(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *rel, const char *data,
                     size_t len)
{
    int fds[MT_STORE_MAX_DEPTH];
    mt_fs_parents p = {-1, NULL, 0, 0, NULL};
    char top[64], sha[65] = "";
    int fd = -1, rc;

    if ((rc = mt_fs_find_parents(&p, fs, rel, "cannot create")) < 0)
        goto done;
    if ((rc = mt_fs_quota(t, op, rel, (int64_t)len, 1, p.count)) < 0)
        goto done;
    mt_fs_hist_settle(fs, op, p.missing ? -1 : p.fd, p.name, rel, NULL, NULL, 0);
    if (!p.missing) {
        /* Fail early without writing when the name is taken (the rename checks again). */
        if (faccessat(p.fd, p.name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
            rc = mt_fs_error(EEXIST, "cannot create", rel);
        } else if ((rc = mt_fs_put(fs, p.fd, p.name, data, len, 0, rel,
                                   fs->hist_active ? sha : NULL)) == 0 ||
                   rc == MT_ENOTDURABLE) {
            mt_fs_account(t, (int64_t)len, 1, 0);
            mt_fs_hist_record(fs, op, MT_VERSION_CREATED, rel, NULL, data, len, sha, -1, p.fd,
                              p.name);
        }
        goto done;
    }
    /* New parents: build them and the file under a hidden name, then one
     * rename shows them all at once. */
    if ((rc = mt_fs_make_dirs(&p, 1, fds, top, rel)) < 0)
        goto cleanup;
    fd = openat(fds[p.count - 1], p.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
    if (fd < 0) {
        rc = mt_fs_error(errno, "cannot write", rel);
        goto cleanup;
    }
    if ((rc = mt_fs_write_all(fd, data, len)) < 0) {
        rc = mt_fs_error(-rc, "cannot write", rel);
        goto cleanup;
    }
    if ((fs->durability != MT_DURABILITY_NONE && (rc = mt_fs_sync(fd, rel)) < 0) ||
        (rc = mt_fs_sync_dirs(fs, fds, p.count, rel)) < 0)
        goto cleanup;
    {
        char first[MT_NAME_MAX + 1];
        size_t n = (size_t)(strchr(p.missing, '/') - p.missing);
        memcpy(first, p.missing, n);
        first[n] = '\0';
        if ((rc = mt_fs_rename_dir_noreplace(p.fd, top, p.fd, first)) < 0) {
            rc = mt_fs_error(-rc, "cannot create", rel);
            goto cleanup;
        }
    }
    mt_fs_account(t, (int64_t)len, 1, p.count);
    mt_fs_hist_record(fs, op, MT_VERSION_CREATED, rel, NULL, data, len, NULL, fd, -1, NULL);
    if (fs->durability == MT_DURABILITY_FULL)
        rc = mt_fs_sync_done(p.fd, rel);
    mt_fs_close_dirs(fds, p.count);
    goto done;
cleanup:
    /* Descriptors first: the removal may need them. */
    mt_fs_close_dirs(fds, p.count);
    if (fd >= 0)
        close(fd);
    fd = -1;
    mt_fs_drop_temp(t, p.fd, top);
done:
    if (fd >= 0)
        close(fd);
    mt_fs_parents_close(&p);
    return rc;
}

static int fs_create_locked(mt_fs *fs, mt_store_op *op, const char *rel, const char *data,
                            size_t len)
{
    mt_fs_txn t;
    int rc;

    if ((rc = mt_fs_begin(fs, &t, op, rel, 0)) < 0)
        return rc;
    rc = mt_fs_create_txn(fs, &t, op, rel, data, len);
    mt_fs_end(fs, &t);
    return rc;
}

static int fs_edit_locked(mt_fs *fs, mt_store_op *op, const char *rel, mt_edit_cb cb,
                          void *payload);

/* A file bigger than any write may make (put there from outside) is not
 * read at all: memory stays bounded by the limits, not by the file. */
static int fs_size_check(mt_store_op *op, const struct stat *sb, const char *rel)
{
    uint64_t size = mt_store_file_memory(op, (uint64_t)sb->st_size);

    if (!op->max_file_size || size <= op->max_file_size)
        return 0;
    op->refused = MT_LIMIT_FILE_SIZE;
    op->limit = op->max_file_size;
    op->held = op->would = size;
    return mt_error_set(MT_ELIMIT, "%s is over the max file size", rel);
}

/* Whether name in dirfd is still the very file that was read: memtool
 * replaces files whole (a new inode), and an editor writing in place
 * changes the size or the times. */
static int fs_unchanged(int dirfd, const char *name, const struct stat *was)
{
    struct stat now;

    return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == was->st_dev &&
           now.st_ino == was->st_ino && now.st_size == was->st_size &&
           now.st_mtim.tv_sec == was->st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == was->st_mtim.tv_nsec &&
           now.st_ctim.tv_sec == was->st_ctim.tv_sec && now.st_ctim.tv_nsec == was->st_ctim.tv_nsec;
}

/* A prepared change is renamed in: count it and let the lock go, then sync
 * the directory (no other change waits for that disk write). Returns 1, the
 * change done; *out_rc says whether it is also durable. */
static int fs_prepared_done(int *out_rc, mt_fs *fs, mt_fs_txn *t, int dirfd, const char *rel,
                            int64_t bytes, int64_t files)
{
    mt_fs_account(t, bytes, files, 0);
    mt_fs_end(fs, t);
    if (fs->durability == MT_DURABILITY_FULL)
        *out_rc = mt_fs_sync_done(dirfd, rel);
    return 1;
}

/* A prepared change that does not go in: its temporary goes, and the lock. */
static void fs_prepared_drop(mt_fs *fs, mt_fs_txn *t, int locked, int dirfd, const char *tmp)
{
    unlinkat(dirfd, tmp, 0);
    if (locked)
        mt_fs_end(fs, t);
}

/*
 * An edit prepared outside the store's lock: read, edit and write the new
 * content to a synced temporary with other changes going on, then, under the
 * lock, check that the file is still the one read and rename the new one in.
 * The lock is held for a few system calls, not for the reading, writing and
 * syncing, so changes to different files go on side by side. Returns 1 when
 * the edit is in place (rc in *out_rc), 0 when the file changed meanwhile
 * (the edit is then done again under the lock, so it always ends), or the
 * failure, which takes effect when the file was read.
 */
static int fs_edit_prepared(int *out_rc, mt_fs *fs, mt_store_op *op, const char *rel, mt_edit_cb cb,
                            void *payload)
{
    const char *name;
    struct stat sb;
    char *data = NULL, *out = NULL, tmp[64], sha[65] = "";
    size_t len = 0, out_len = 0;
    int dirfd = -1, fd = -1, tfd = -1, rc, locked = 0;
    mt_fs_txn t;

    *out_rc = 0;
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        goto done;
    if ((rc = mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot edit", rel)) < 0) {
        if (rc == MT_EBUSY)
            rc = 0; /* swapped while looking: the locked way sorts it out */
        goto done;
    }
    if ((rc = fs_size_check(op, &sb, rel)) < 0 ||
        (rc = mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, rel)) < 0 ||
        (rc = mt_fs_hist_expect(op, rel, data, len)) < 0 ||
        (rc = cb(&out, &out_len, data, len, payload)) < 0 ||
        (rc = mt_fs_write_temp(fs, &tfd, tmp, dirfd, out, out_len, rel, op->history ? sha : NULL)) <
            0)
        goto done;
    if (op->keep_access)
        fs_keep_times(tfd, &sb);
    if ((rc = mt_fs_begin(fs, &t, op, rel, 0)) < 0)
        goto drop;
    locked = 1;
    if (!fs_unchanged(dirfd, name, &sb)) {
        rc = 0;
        goto drop;
    }
    mt_fs_hist_settle(fs, op, dirfd, name, rel, &sb, data, len);
    if ((rc = mt_fs_quota(&t, op, rel, (int64_t)out_len - (int64_t)len, 0, 0)) < 0)
        goto drop;
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        /* ENOENT: a recount took the temporary for a dead writer's: go again. */
        rc = errno == ENOENT ? 0 : mt_fs_error(errno, "cannot replace", rel);
        goto drop;
    }
    mt_fs_hist_modified(fs, op, rel, out, out_len, sha, tfd, -1, NULL);
    rc = fs_prepared_done(out_rc, fs, &t, dirfd, rel, (int64_t)out_len - (int64_t)len, 0);
    goto done;
drop:
    fs_prepared_drop(fs, &t, locked, dirfd, tmp);
done:
    if (tfd >= 0)
        close(tfd);
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    free(data);
    free(out);
    return rc;
}

int mt_fs_edit(mt_store *st, mt_store_op *op, const char *rel, mt_edit_cb cb, void *payload)
{
    mt_fs *fs = (mt_fs *)st;
    int rc, done_rc;

    if (!*rel)
        return mt_fs_error(EISDIR, "cannot edit", rel);
    /* Before a temporary is written beside the file. */
    if (fs->read_only)
        return mt_store_read_only_error();
    rc = fs_edit_prepared(&done_rc, fs, op, rel, cb, payload);
    if (rc == 1)
        rc = done_rc;
    else if (rc == 0)
        rc = fs_edit_locked(fs, op, rel, cb, payload);
    /* After the file holds the new content: a search that reads it from
     * here on indexes only that. */
    if (rc == 0 && op->scrub)
        rc = mt_fs_search_scrub(fs, rel);
    return rc;
}

/* A create whose parent exists, prepared outside the lock as an edit is
 * (see fs_edit_prepared): 1 when done (rc in *out_rc), 0 to do it under the
 * lock (parents to make, or the temporary was taken), or the failure. */
static int fs_create_prepared(int *out_rc, mt_fs *fs, mt_store_op *op, const char *rel,
                              const char *data, size_t len)
{
    const char *name;
    char tmp[64], sha[65] = "";
    int dirfd = -1, tfd = -1, rc, locked = 0;
    mt_fs_txn t;

    *out_rc = 0;
    rc = mt_fs_open_parent(fs, &dirfd, &name, rel);
    if (rc == MT_ENOTFOUND)
        return 0;
    if (rc < 0)
        return rc;
    /* Taken already: fail without writing (the rename checks again). */
    if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = mt_fs_error(EEXIST, "cannot create", rel);
        goto done;
    }
    if ((rc = mt_fs_write_temp(fs, &tfd, tmp, dirfd, data, len, rel, op->history ? sha : NULL)) < 0)
        goto done;
    if ((rc = mt_fs_begin(fs, &t, op, rel, 0)) < 0)
        goto drop;
    locked = 1;
    if ((rc = mt_fs_quota(&t, op, rel, (int64_t)len, 1, 0)) < 0)
        goto drop;
    mt_fs_hist_settle(fs, op, dirfd, name, rel, NULL, NULL, 0);
    if ((rc = mt_fs_rename_noreplace(dirfd, tmp, dirfd, name)) < 0) {
        /* ENOENT: the temporary or the parent went meanwhile: go again. */
        rc = rc == -ENOENT ? 0 : mt_fs_error(-rc, "cannot create", rel);
        goto drop;
    }
    mt_fs_hist_record(fs, op, MT_VERSION_CREATED, rel, NULL, data, len, sha, tfd, -1, NULL);
    rc = fs_prepared_done(out_rc, fs, &t, dirfd, rel, (int64_t)len, 1);
    goto done;
drop:
    fs_prepared_drop(fs, &t, locked, dirfd, tmp);
done:
    if (tfd >= 0)
        close(tfd);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

int mt_fs_create(mt_store *st, mt_store_op *op, const char *rel, const char *data, size_t len)
{
    mt_fs *fs = (mt_fs *)st;
    int rc, done_rc;

    if (!*rel)
        return mt_fs_error(EEXIST, "cannot create", rel);
    if (fs->read_only)
        return mt_store_read_only_error();
    rc = fs_create_prepared(&done_rc, fs, op, rel, data, len);
    if (rc == 1)
        return done_rc;
    if (rc < 0)
        return rc;
    return fs_create_locked(fs, op, rel, data, len);
}

static int fs_edit_locked(mt_fs *fs, mt_store_op *op, const char *rel, mt_edit_cb cb, void *payload)
{
    const char *name;
    struct stat sb;
    char *data = NULL, *out = NULL, sha[65] = "";
    size_t len = 0, out_len = 0;
    int dirfd = -1, fd = -1, rc;
    mt_fs_txn t;

    if ((rc = mt_fs_begin(fs, &t, op, rel, 0)) < 0)
        return rc;
    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        goto done;
    if ((rc = mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot edit", rel)) < 0 ||
        (rc = fs_size_check(op, &sb, rel)) < 0)
        goto done;
    if ((rc = mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, rel)) < 0 ||
        (rc = mt_fs_hist_expect(op, rel, data, len)) < 0)
        goto done;
    mt_fs_hist_settle(fs, op, dirfd, name, rel, &sb, data, len);
    if ((rc = cb(&out, &out_len, data, len, payload)) < 0)
        goto done;
    if ((rc = mt_fs_quota(&t, op, rel, (int64_t)out_len - (int64_t)len, 0, 0)) < 0)
        goto done;
    rc = mt_fs_put(fs, dirfd, name, out, out_len, 1, rel, fs->hist_active ? sha : NULL);
    if (rc == 0 || rc == MT_ENOTDURABLE) {
        if (op->keep_access)
            fs_keep_times_at(dirfd, name, &sb);
        mt_fs_account(&t, (int64_t)out_len - (int64_t)len, 0, 0);
        mt_fs_hist_modified(fs, op, rel, out, out_len, sha, -1, dirfd, name);
    }
done:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    mt_fs_end(fs, &t);
    free(data);
    free(out);
    return rc;
}

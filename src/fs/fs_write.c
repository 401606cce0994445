/* The filesystem store's changes: each under the store's lock (fs_state.c),
 * atomic (a temporary, synced, renamed into place) and never through a link. */
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "machinery/history.h"
#include "machinery/usage.h"

/* Levels of a tree being removed that hold a descriptor each; a directory
 * deeper than this is moved up to the top first, so removal needs a bounded
 * number of descriptors however deep the tree. */
#define MT_REMOVE_HOLD 64

static atomic_uint temp_counter;

void mt_fs_temp_name(char name[64])
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    /* The backslash at the end is a byte the path rules refuse: no request
     * can name a temporary file. */
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

/* A content at least this big is hashed for its version on another thread
 * while this one writes it: below it, a thread costs more than it saves. */
#define HASH_AHEAD_MIN (1u << 20)

typedef struct {
    const char *data;
    size_t len;
    char *hex;
} hash_job;

static void *hash_run(void *payload)
{
    hash_job *j = payload;

    mt_hist_sha256(j->hex, j->data, j->len);
    return NULL;
}

int mt_fs_write_temp(mt_fs *fs, int *out_fd, char name[64], int dirfd, const char *data, size_t len,
                     const char *rel, char sha256[65])
{
    hash_job job = {data, len, sha256};
    pthread_t hasher;
    int fd = -1, rc, tries, hashing = 0;

    /* The version's SHA-256 and the write of a big content are each about
     * one pass over it; the write mostly waits for the kernel and the disk,
     * so the hash is had for the price of a thread. Not started: history
     * hashes the content itself, as it does a small one. */
    if (sha256) {
        sha256[0] = '\0';
        hashing = len >= HASH_AHEAD_MIN && pthread_create(&hasher, NULL, hash_run, &job) == 0;
    }
    /* Locked while it lives: a recount after a crash removes every
     * temporary it can lock, and a change prepared outside the store's lock
     * may own this one. A cleaner that tried its lock in the instant after
     * it was made will remove it: then another name. */
    for (tries = 0; tries < 16; tries++) {
        mt_fs_temp_name(name);
        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK) {
            rc = mt_fs_error(errno, "cannot lock a temporary file for", rel);
            goto fail;
        }
        close(fd);
        fd = -1;
        errno = EAGAIN;
    }
    if (fd < 0) {
        rc = mt_fs_error(errno, "cannot write", rel);
        goto done;
    }
    if ((rc = fs_write_all(fd, data, len)) < 0) {
        rc = mt_fs_error(-rc, "cannot write", rel);
        goto fail;
    }
    if (fs->durability != MT_DURABILITY_NONE && (rc = mt_fs_sync(fd, rel)) < 0)
        goto fail;
    *out_fd = fd;
    rc = 0;
    goto done;
fail:
    unlinkat(dirfd, name, 0);
    close(fd);
done:
    if (hashing)
        pthread_join(hasher, NULL);
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

/* The same for a directory, which link() cannot take: without
 * RENAME_NOREPLACE, look then rename; under the store's lock only a process
 * that is not memtool could slip in between. */
static int fs_rename_dir_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
    if (renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (faccessat(tofd, to, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return -EEXIST;
    return renameat(fromfd, from, tofd, to) < 0 ? -errno : 0;
}

/* Put data at name in dirfd atomically: a temporary file, synced as the
 * durability asks, renamed into place (never replacing unless asked). */
static int fs_put(mt_fs *fs, int dirfd, const char *name, const char *data, size_t len, int replace,
                  const char *rel, char sha256[65])
{
    char tmp[64];
    int fd = -1, rc;

    if ((rc = mt_fs_write_temp(fs, &fd, tmp, dirfd, data, len, rel, sha256)) < 0)
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

/* Where a path's directories stop existing. */
typedef struct {
    int fd;              /* the deepest directory on the way that exists */
    const char *missing; /* in rel: the first component that does not exist, or NULL */
    unsigned count;      /* components from `missing` to the parent of the last */
    unsigned depth;      /* components in rel */
    const char *name;    /* in rel: the last component */
} fs_parents;

/* Find the parent directories of rel's last component, as far as they
 * exist. A component that is a file or a link is an error (naming what). */
static int fs_find_parents(fs_parents *p, mt_fs *fs, const char *rel, const char *what)
{
    char comp[MT_NAME_MAX + 1];
    const char *slash = strrchr(rel, '/'), *c = rel;
    size_t dir_len = slash ? (size_t)(slash - rel) : 0;
    int fd, next;

    memset(p, 0, sizeof(*p));
    p->fd = -1;
    p->name = slash ? slash + 1 : rel;
    p->depth = 1;
    for (c = rel; *c; c++)
        p->depth += *c == '/';
    /* Usually the parent is there: one lookup. Else, component by component. */
    if (dir_len <= MT_PATH_MAX) {
        char dir[MT_PATH_MAX + 1];
        memcpy(dir, rel, dir_len);
        dir[dir_len] = '\0';
        fd = mt_fs_openat(fs->root_fd, dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd >= 0) {
            p->fd = fd;
            return 0;
        }
        if (fd != -ENOENT)
            return mt_fs_error(-fd, what, rel);
    }
    fd = dup(fs->root_fd);
    if (fd < 0)
        return mt_fs_error(errno, what, rel);
    c = rel;
    while ((size_t)(c - rel) < dir_len) {
        const char *end = memchr(c, '/', dir_len - (size_t)(c - rel));
        size_t n = end ? (size_t)(end - c) : dir_len - (size_t)(c - rel);

        memcpy(comp, c, n);
        comp[n] = '\0';
        next = mt_fs_openat(fd, comp, O_RDONLY | O_DIRECTORY, 0);
        if (next == -ENOENT) {
            const char *q;
            p->missing = c;
            p->count = 1;
            for (q = c; q < rel + dir_len; q++)
                p->count += *q == '/';
            break;
        }
        close(fd);
        if (next < 0)
            return mt_fs_error(-next, what, rel);
        fd = next;
        c += n + 1;
    }
    p->fd = fd;
    return 0;
}

static void fs_parents_close(fs_parents *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

/*
 * Make the missing directories p->missing ... (p->count of them) inside
 * p->fd. With `hidden`, they are made under a temporary name standing for
 * the first one, to be renamed into place by the caller: then nothing shows
 * until that rename, and a crash leaves only a temporary that the next
 * recount removes. fds[i] gets the i-th new directory, fds[count-1] the
 * innermost; names[0] the temporary name.
 */
static int fs_make_dirs(const fs_parents *p, int hidden, int *fds, char first[64], const char *rel)
{
    char comp[MT_NAME_MAX + 1];
    const char *c = p->missing;
    unsigned i;
    int parent = p->fd, rc = 0;

    for (i = 0; i < p->count; i++)
        fds[i] = -1;
    for (i = 0; i < p->count; i++) {
        const char *end = strchr(c, '/');
        size_t n = (size_t)(end - c);

        memcpy(comp, c, n);
        comp[n] = '\0';
        if (i == 0 && hidden)
            mt_fs_temp_name(first);
        if (mkdirat(parent, i == 0 && hidden ? first : comp, 0700) < 0) {
            rc = mt_fs_error(errno, "cannot create a directory for", rel);
            break;
        }
        fds[i] = mt_fs_openat(parent, i == 0 && hidden ? first : comp, O_RDONLY | O_DIRECTORY, 0);
        if (fds[i] < 0) {
            rc = mt_fs_error(-fds[i], "cannot create a directory for", rel);
            break;
        }
        parent = fds[i];
        c = end + 1;
    }
    return rc;
}

/* Sync the new directories bottom up: each one's entry in its parent. */
static int fs_sync_dirs(mt_fs *fs, int *fds, unsigned count, const char *rel)
{
    unsigned i;
    int rc;

    if (fs->durability != MT_DURABILITY_FULL)
        return 0;
    for (i = count; i-- > 0;)
        if (fds[i] >= 0 && (rc = mt_fs_sync(fds[i], rel)) < 0)
            return rc;
    return 0;
}

static void fs_close_dirs(int *fds, unsigned count)
{
    unsigned i;

    for (i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Remove the directories that p->missing named, deepest first, once they
 * are empty again: a failed rename leaves the store as it found it. */
static void fs_unmake_dirs(const fs_parents *p, int *fds)
{
    char comp[MT_NAME_MAX + 1];
    const char *names[MT_STORE_MAX_DEPTH] = {NULL};
    const char *c = p->missing;
    unsigned i, count = p->count < MT_STORE_MAX_DEPTH ? p->count : MT_STORE_MAX_DEPTH;

    for (i = 0; i < count; i++) {
        names[i] = c;
        c = strchr(c, '/') + 1;
    }
    for (i = count; i-- > 0;) {
        size_t n = (size_t)(strchr(names[i], '/') - names[i]);
        memcpy(comp, names[i], n);
        comp[n] = '\0';
        if (unlinkat(i ? fds[i - 1] : p->fd, comp, AT_REMOVEDIR) < 0)
            return;
    }
}

/* Remove the hidden tree `top` in dirfd that a failed change made; what
 * cannot be removed now (out of descriptors, say) is left to the next
 * recount, which removes every temporary. */
static void fs_drop_temp(mt_fs_txn *t, int dirfd, const char *top)
{
    int fd = mt_fs_openat(dirfd, top, O_RDONLY | O_DIRECTORY, 0);

    if (fd == -ENOENT)
        return;
    if (fd < 0 || mt_fs_remove_tree(fd) < 0 || unlinkat(dirfd, top, AT_REMOVEDIR) < 0)
        t->recount = 1;
    if (fd >= 0)
        close(fd);
}

int mt_fs_create_txn(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *rel, const char *data,
                     size_t len)
{
    int fds[MT_STORE_MAX_DEPTH];
    fs_parents p = {-1, NULL, 0, 0, NULL};
    char top[64], sha[65] = "";
    int fd = -1, rc;

    if ((rc = fs_find_parents(&p, fs, rel, "cannot create")) < 0)
        goto done;
    if ((rc = mt_fs_quota(t, op, rel, (int64_t)len, 1, p.count)) < 0)
        goto done;
    mt_fs_hist_settle(fs, op, p.missing ? -1 : p.fd, p.name, rel, NULL, NULL, 0);
    if (!p.missing) {
        /* Fail early without writing when the name is taken (the rename checks again). */
        if (faccessat(p.fd, p.name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
            rc = mt_fs_error(EEXIST, "cannot create", rel);
        } else if ((rc = fs_put(fs, p.fd, p.name, data, len, 0, rel,
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
    if ((rc = fs_make_dirs(&p, 1, fds, top, rel)) < 0)
        goto cleanup;
    fd = openat(fds[p.count - 1], p.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
    if (fd < 0) {
        rc = mt_fs_error(errno, "cannot write", rel);
        goto cleanup;
    }
    if ((rc = fs_write_all(fd, data, len)) < 0) {
        rc = mt_fs_error(-rc, "cannot write", rel);
        goto cleanup;
    }
    if ((fs->durability != MT_DURABILITY_NONE && (rc = mt_fs_sync(fd, rel)) < 0) ||
        (rc = fs_sync_dirs(fs, fds, p.count, rel)) < 0)
        goto cleanup;
    {
        char first[MT_NAME_MAX + 1];
        size_t n = (size_t)(strchr(p.missing, '/') - p.missing);
        memcpy(first, p.missing, n);
        first[n] = '\0';
        if ((rc = fs_rename_dir_noreplace(p.fd, top, p.fd, first)) < 0) {
            rc = mt_fs_error(-rc, "cannot create", rel);
            goto cleanup;
        }
    }
    mt_fs_account(t, (int64_t)len, 1, p.count);
    mt_fs_hist_record(fs, op, MT_VERSION_CREATED, rel, NULL, data, len, NULL, fd, -1, NULL);
    if (fs->durability == MT_DURABILITY_FULL)
        rc = mt_fs_sync_done(p.fd, rel);
    fs_close_dirs(fds, p.count);
    goto done;
cleanup:
    /* Descriptors first: the removal may need them. */
    fs_close_dirs(fds, p.count);
    if (fd >= 0)
        close(fd);
    fd = -1;
    fs_drop_temp(t, p.fd, top);
done:
    if (fd >= 0)
        close(fd);
    fs_parents_close(&p);
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
    if ((rc = fs_rename_noreplace(dirfd, tmp, dirfd, name)) < 0) {
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
    rc = fs_put(fs, dirfd, name, out, out_len, 1, rel, fs->hist_active ? sha : NULL);
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

/* Empty dirfd, `level` levels below the top of the removal (`top`). */
static int fs_remove_level(int top, int dirfd, unsigned level, int *hoisted)
{
    DIR *dir;
    struct dirent *de;
    int fd, rc = 0;

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
        if (level >= MT_REMOVE_HOLD) {
            /* Too deep to hold a descriptor for each level: move it up to
             * the top under a fresh name, for a later pass. */
            char tmp[64];
            mt_fs_temp_name(tmp);
            if (renameat(dirfd, n, top, tmp) < 0) {
                rc = mt_fs_error(errno, "cannot delete", n);
                break;
            }
            *hoisted = 1;
            continue;
        }
        /* A directory: empty it through a descriptor that cannot follow a link. */
        child = mt_fs_openat(dirfd, n, O_RDONLY | O_DIRECTORY, 0);
        if (child == -ENOENT)
            continue;
        if (child < 0) {
            rc = mt_fs_error(-child, "cannot delete", n);
            break;
        }
        rc = fs_remove_level(top, child, level + 1, hoisted);
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

int mt_fs_remove_tree(int dirfd)
{
    int hoisted, rc;

    /* Each pass empties all but what it moved up, which is 63 levels
     * shallower than it was: the passes end however deep the tree. */
    do {
        hoisted = 0;
        rc = fs_remove_level(dirfd, dirfd, 1, &hoisted);
    } while (rc == 0 && hoisted);
    return rc;
}

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
    if ((rc = fs_rename_dir_noreplace(dirfd, name, dirfd, tmp)) < 0) {
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
    fs_parents p = {-1, NULL, 0, 0, NULL};
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
    if ((rc = fs_find_parents(&p, fs, to, "cannot rename to")) < 0)
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
        if ((rc = fs_make_dirs(&p, 1, fds, top, to)) == 0 &&
            (rc = fs_sync_dirs(fs, fds, p.count, to)) == 0 &&
            (rc = fs_rename_dir_noreplace(p.fd, top, p.fd, first)) < 0)
            rc = mt_fs_error(-rc, "cannot rename to", to);
        if (rc < 0) {
            fs_close_dirs(fds, p.count);
            fs_drop_temp(&t, p.fd, top);
            goto done;
        }
        made = 1;
        mt_fs_account(&t, 0, 0, p.count);
    }
    rc = S_ISDIR(sb.st_mode)
             ? fs_rename_dir_noreplace(fromfd, from_name, made ? fds[p.count - 1] : p.fd, p.name)
             : fs_rename_noreplace(fromfd, from_name, made ? fds[p.count - 1] : p.fd, p.name);
    if (rc < 0) {
        op->culprit = rc == -ENOENT ? 0 : 1;
        rc = mt_fs_error(-rc, rc == -ENOENT ? "cannot rename" : "cannot rename to",
                         rc == -ENOENT ? from : to);
        if (made) {
            fs_unmake_dirs(&p, fds);
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
        fs_close_dirs(fds, p.count);
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
    fs_parents_close(&p);
    mt_fs_end(fs, &t);
    free(data);
    return rc;
}

int mt_fs_is_temp(const char *name)
{
    size_t len = strlen(name);

    return strncmp(name, MT_TMP_PREFIX, sizeof(MT_TMP_PREFIX) - 1) == 0 && name[len - 1] == '\\';
}

void mt_fs_clean_temp(int dirfd, const char *name, int locked)
{
    struct stat sb;
    int fd;

    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
        (!locked && time(NULL) - sb.st_mtime < MT_TEMP_STALE_SECONDS))
        return;
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        unlinkat(dirfd, name, 0); /* never opened: it may be a FIFO */
        return;
    }
    fd = mt_fs_openat(
        dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | (S_ISDIR(sb.st_mode) ? O_DIRECTORY : 0), 0);
    if (fd < 0)
        return;
    /* A change prepared outside the store's lock holds its temporary's
     * lock; only what nobody holds is a dead writer's. */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        if (!S_ISDIR(sb.st_mode))
            unlinkat(dirfd, name, 0);
        else if (mt_fs_remove_tree(fd) == 0)
            unlinkat(dirfd, name, AT_REMOVEDIR);
    }
    close(fd);
}

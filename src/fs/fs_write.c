/* How the filesystem store's changes are put in place: each under the store's
 * lock (fs_state.c), atomic (a temporary, synced, renamed into place) and
 * never through a link; missing parents built under a hidden name and shown
 * in one rename; what a failed or dead change left removed. The changes
 * themselves: fs_change.c (create, edit) and fs_move.c (remove, rename). */
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "machinery/history.h"

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

int mt_fs_write_all(int fd, const char *data, size_t len)
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
    if ((rc = mt_fs_write_all(fd, data, len)) < 0) {
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

int mt_fs_rename_noreplace(int fromfd, const char *from, int tofd, const char *to)
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

int mt_fs_rename_dir_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
    if (renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (faccessat(tofd, to, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return -EEXIST;
    return renameat(fromfd, from, tofd, to) < 0 ? -errno : 0;
}

int mt_fs_put(mt_fs *fs, int dirfd, const char *name, const char *data, size_t len, int replace,
              const char *rel, char sha256[65])
{
    char tmp[64];
    int fd = -1, rc;

    if ((rc = mt_fs_write_temp(fs, &fd, tmp, dirfd, data, len, rel, sha256)) < 0)
        return rc;
    rc = replace ? (renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0)
                 : mt_fs_rename_noreplace(dirfd, tmp, dirfd, name);
    if (rc < 0) {
        unlinkat(dirfd, tmp, 0);
        rc = mt_fs_error(-rc, replace ? "cannot replace" : "cannot create", rel);
    } else if (fs->durability == MT_DURABILITY_FULL) {
        rc = mt_fs_sync_done(dirfd, rel);
    }
    close(fd);
    return rc;
}

int mt_fs_find_parents(mt_fs_parents *p, mt_fs *fs, const char *rel, const char *what)
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

void mt_fs_parents_close(mt_fs_parents *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

int mt_fs_make_dirs(const mt_fs_parents *p, int hidden, int *fds, char first[64], const char *rel)
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

int mt_fs_sync_dirs(mt_fs *fs, int *fds, unsigned count, const char *rel)
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

void mt_fs_close_dirs(int *fds, unsigned count)
{
    unsigned i;

    for (i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

void mt_fs_unmake_dirs(const mt_fs_parents *p, int *fds)
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

void mt_fs_drop_temp(mt_fs_txn *t, int dirfd, const char *top)
{
    int fd = mt_fs_openat(dirfd, top, O_RDONLY | O_DIRECTORY, 0);

    if (fd == -ENOENT)
        return;
    if (fd < 0 || mt_fs_remove_tree(fd) < 0 || unlinkat(dirfd, top, AT_REMOVEDIR) < 0)
        t->recount = 1;
    if (fd >= 0)
        close(fd);
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

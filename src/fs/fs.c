/* The filesystem store: opening it, resolving paths beneath it, reading. */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/path.h"

/* How often a resolution that raced with a rename elsewhere is tried again. */
#define MT_OPENAT2_TRIES 256

int mt_fs_error(int err, const char *what, const char *rel)
{
    const char *shown = rel && *rel ? rel : MT_STORE_SHOWN_ROOT;

    /* The four every store words alike (contract/store_contract.h). */
    switch (err) {
    case ENOENT:
        return mt_store_path_error(MT_ENOTFOUND, what, rel);
    case EEXIST:
    case ENOTEMPTY:
        return mt_store_path_error(MT_EEXISTS, what, rel);
    case ENOTDIR:
        return mt_store_path_error(MT_ENOTDIR, what, rel);
    case EISDIR:
        return mt_store_path_error(MT_EISDIR, what, rel);
    case ELOOP:
        return mt_error_set(MT_ESYMLINK, "%s %s: the path goes through a symbolic link", what,
                            shown);
    case EXDEV:
        return mt_error_set(MT_EUNSUPPORTED, "%s %s: the path crosses into another filesystem",
                            what, shown);
    case ENOMEM:
        return mt_error_set(MT_ENOMEM, "%s %s: out of memory", what, shown);
    case ENOSYS:
        return mt_error_set(MT_ENOSYS, "%s %s: the kernel does not support it", what, shown);
    case EAGAIN:
        return mt_error_set(MT_EBUSY, "%s %s: the store kept changing during the operation", what,
                            shown);
    case ENAMETOOLONG:
        return mt_error_set(MT_EINVAL, "%s %s: the name is too long", what, shown);
    default:
        return mt_error_set(MT_EIO, "%s %s: %s", what, shown, strerror(err));
    }
}

int mt_fs_openat(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    int tries, fd = -1;

    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    /* EAGAIN means a rename elsewhere raced with the lookup; the kernel asks us to retry. */
    for (tries = 0; tries < MT_OPENAT2_TRIES; tries++) {
        fd = (int)syscall(SYS_openat2, dirfd, *rel ? rel : ".", &how, sizeof(how));
        if (fd >= 0 || errno != EAGAIN)
            break;
    }
    if (fd < 0)
        return -errno;
    return fd;
}

int mt_fs_sync(int fd, const char *rel)
{
    if (fsync(fd) < 0)
        return mt_fs_error(errno, "cannot sync", rel);
    return 0;
}

int mt_fs_sync_done(int fd, const char *rel)
{
    if (fsync(fd) < 0)
        return mt_error_set(MT_ENOTDURABLE, "syncing %s to disk failed: %s", rel, strerror(errno));
    return 0;
}

int mt_fs_open_parent(mt_fs *fs, int *out_fd, const char **name, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    char dir[MT_PATH_MAX + 1];
    size_t dir_len = slash ? (size_t)(slash - rel) : 0;
    int fd;

    *name = slash ? slash + 1 : rel;
    if (dir_len > MT_PATH_MAX)
        return mt_fs_error(ENAMETOOLONG, "cannot open", rel);
    memcpy(dir, rel, dir_len);
    dir[dir_len] = '\0';
    fd = mt_fs_openat(fs->root_fd, dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot open", rel);
    *out_fd = fd;
    return 0;
}

static int fs_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *rel)
{
    mt_fs *fs = (mt_fs *)st;
    struct stat sb;
    int fd, rc = 0;

    /* O_PATH looks without opening: a FIFO or a device is never touched. */
    fd = mt_fs_openat(fs->root_fd, rel, O_PATH, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot look at", rel);
    if (fstat(fd, &sb) < 0) {
        rc = mt_fs_error(errno, "cannot look at", rel);
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        *type = MT_NODE_DIR;
        *size = 0;
    } else if (S_ISREG(sb.st_mode)) {
        *type = MT_NODE_FILE;
        *size = (uint64_t)sb.st_size;
    } else {
        rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file or directory", rel);
    }
done:
    close(fd);
    return rc;
}

/*
 * The type is known before anything is opened. The quick way: fstatat, and
 * only a regular file is opened, confined, then checked to be the one seen.
 * Anything else, or a file replaced between the two, goes the strict way: an
 * O_PATH descriptor, which opens nothing, tells what is there. So a FIFO,
 * socket or device at the path is never opened; only one swapped in during
 * the microseconds between fstatat and the open (by a process that can write
 * the store) is opened, non-blocking, and then refused. The quick way costs
 * one fstatat; the strict way two more calls, a third of a small view.
 */
/* A file opened for reading by the store itself: O_NOATIME where the kernel
 * allows it (the file's owner, or CAP_FOWNER), so that only a view's touch
 * marks a memory accessed, not the store's own reads (history, migrate). */
static int open_read(int dirfd, const char *name)
{
    int fd = mt_fs_openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOATIME, 0);

    if (fd == -EPERM)
        fd = mt_fs_openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
    return fd;
}

/* The strict way, once: 1 when the file was replaced meanwhile (go again). */
static int open_regular_strict(int *out_fd, struct stat *sb, int dirfd, const char *name,
                               const char *what, const char *rel)
{
    struct stat seen;
    int pfd, fd = -1, rc = 0;

    pfd = mt_fs_openat(dirfd, name, O_PATH, 0);
    if (pfd < 0)
        return mt_fs_error(-pfd, what, rel);
    if (fstat(pfd, &seen) < 0) {
        rc = mt_fs_error(errno, what, rel);
        goto done;
    }
    if (S_ISDIR(seen.st_mode)) {
        rc = mt_fs_error(EISDIR, what, rel);
        goto done;
    }
    if (!S_ISREG(seen.st_mode)) {
        rc = mt_error_set(MT_EUNSUPPORTED, "%s is not a regular file", rel);
        goto done;
    }
    if (seen.st_nlink > 1) {
        rc = mt_error_set(MT_EMULTILINK, "%s has more than one hard link", rel);
        goto done;
    }
    fd = open_read(dirfd, name);
    if (fd == -ENOENT) {
        rc = 1; /* replaced and gone, or renamed: look again */
        goto done;
    }
    if (fd < 0) {
        rc = mt_fs_error(-fd, what, rel);
        goto done;
    }
    if (fstat(fd, sb) < 0) {
        rc = mt_fs_error(errno, what, rel);
        goto done;
    }
    if (sb->st_dev != seen.st_dev || sb->st_ino != seen.st_ino) {
        rc = 1; /* a writer renamed a new file in: the usual case, not an attack */
        goto done;
    }
    *out_fd = fd;
    fd = -1;
done:
    if (fd >= 0)
        close(fd);
    close(pfd);
    return rc;
}

int mt_fs_open_regular(int *out_fd, struct stat *sb, int dirfd, const char *name, const char *what,
                       const char *rel)
{
    struct stat seen;
    int fd, rc, tries;

    *out_fd = -1;
    for (tries = 0; tries < 64; tries++) {
        if (fstatat(dirfd, name, &seen, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(seen.st_mode) &&
            seen.st_nlink == 1) {
            fd = open_read(dirfd, name);
            if (fd < 0 && fd != -ENOENT)
                return mt_fs_error(-fd, what, rel);
            if (fd >= 0 && fstat(fd, sb) == 0 && S_ISREG(sb->st_mode) && sb->st_nlink == 1 &&
                sb->st_dev == seen.st_dev && sb->st_ino == seen.st_ino) {
                *out_fd = fd;
                return 0;
            }
            if (fd >= 0)
                close(fd);
        }
        if ((rc = open_regular_strict(out_fd, sb, dirfd, name, what, rel)) <= 0)
            return rc;
    }
    return mt_error_set(MT_EBUSY, "%s %s: it kept being replaced while it was opened", what, rel);
}

/* Exactly the size fstat gave into data (size + 1 bytes, NUL-terminated):
 * a file someone keeps appending to is not chased. */
static int read_exact(size_t *out_len, char *data, int fd, size_t size, const char *rel)
{
    size_t len = 0;

    while (len < size) {
        ssize_t n = pread(fd, data + len, size - len, (off_t)len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return mt_fs_error(errno, "cannot read", rel);
        if (n == 0)
            break;
        len += (size_t)n;
    }
    data[len] = '\0';
    *out_len = len;
    return 0;
}

int mt_fs_read_fd(char **out, size_t *out_len, int fd, size_t size, const char *rel)
{
    char *data = mt_alloc_big(size + 1);
    int rc;

    if (!data)
        return mt_error_set(MT_ENOMEM, "out of memory reading %s", rel);
    if ((rc = read_exact(out_len, data, fd, size, rel)) < 0) {
        free(data);
        return rc;
    }
    *out = data;
    return 0;
}

/* A big file in pieces through one buffer, up to the size it had when opened. */
static int fs_read_pieces(int fd, uint64_t size, const char *rel, mt_read_cb cb, void *payload)
{
    char *buf = malloc(MT_STORE_PIECE);
    uint64_t off = 0;
    int rc = 0;

    if (!buf)
        return mt_error_set(MT_ENOMEM, "out of memory reading %s", rel);
    while (off < size) {
        size_t want = size - off < MT_STORE_PIECE ? (size_t)(size - off) : MT_STORE_PIECE;
        size_t got = 0;
        while (got < want) {
            ssize_t n = pread(fd, buf + got, want - got, (off_t)(off + got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = mt_fs_error(errno, "cannot read", rel);
                goto done;
            }
            if (n == 0)
                break;
            got += (size_t)n;
        }
        /* A file cut short meanwhile ends where it ends. */
        rc = cb(payload, buf, got, off, got < want || off + got == size);
        if (rc != 0 || got < want)
            break;
        off += got;
    }
done:
    free(buf);
    return rc < 0 ? rc : 0;
}

/* Files up to this size are read onto the stack: most memories are a few
 * KiB, and a view of one then allocates nothing to read it. */
#define READ_ON_STACK 4096

static int fs_read(mt_store *st, uint64_t *size, const char *rel, size_t whole, mt_read_cb cb,
                   void *payload)
{
    mt_fs *fs = (mt_fs *)st;
    struct stat sb;
    char *data = NULL, small[READ_ON_STACK + 1];
    size_t len = 0;
    int fd, rc;

    /* A small file, the common case: fstatat, open, fstat, one pread, close. */
    if ((rc = mt_fs_open_regular(&fd, &sb, fs->root_fd, *rel ? rel : ".", "cannot read", rel)) < 0)
        return rc;
    *size = (uint64_t)sb.st_size;
    if ((uint64_t)sb.st_size > whole) {
        rc = fs_read_pieces(fd, (uint64_t)sb.st_size, rel, cb, payload);
    } else if ((uint64_t)sb.st_size <= READ_ON_STACK) {
        if ((rc = read_exact(&len, small, fd, (size_t)sb.st_size, rel)) == 0) {
            *size = len;
            rc = cb(payload, small, len, 0, 1);
            if (rc > 0)
                rc = 0;
        }
    } else if ((rc = mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, rel)) == 0) {
        *size = len;
        rc = cb(payload, data, len, 0, 1);
        if (rc > 0)
            rc = 0;
    }
    close(fd);
    free(data);
    return rc;
}

static void fs_free(mt_store *st)
{
    mt_fs *fs = (mt_fs *)st;

    if (!fs)
        return;
    mt_fs_hist_close(fs);
    mt_fs_search_close(fs);
    mt_fs_ids_close(fs);
    close(fs->root_fd);
    mt_fs_state_close(fs);
    pthread_mutex_destroy(&fs->lock);
    pthread_mutex_destroy(&fs->search_lock);
    pthread_mutex_destroy(&fs->ids_lock);
    free(fs);
}

/* This boot's id, so that a usage counter written before a reboot (which a
 * power cut may have lost or kept stale) is counted again. Without one, the
 * counter is trusted across reboots. */
static void fs_boot_id(char id[40])
{
    ssize_t n;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

    memset(id, 0, 40);
    if (fd < 0)
        return;
    n = read(fd, id, 39);
    close(fd);
    while (n > 0 && (id[n - 1] == '\n' || id[n - 1] == '\0'))
        id[--n] = '\0';
    if (n < 0)
        memset(id, 0, 40);
}

/* mkdir -p for the root itself: it is the caller's configuration, trusted. */
static int fs_make_root(const char *root)
{
    char path[MT_PATH_MAX + 1];
    size_t len = strlen(root), i;

    if (len == 0 || len > MT_PATH_MAX)
        return mt_error_set(MT_EINVAL, "the store root '%s' is not a usable path", root);
    memcpy(path, root, len + 1);
    for (i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            return mt_error_set(MT_EIO, "cannot create the store root %s: %s", path,
                                strerror(errno));
        path[i] = i == len ? '\0' : '/';
    }
    return 0;
}

/* Whether this process may write in the store: a read-only mount, or a
 * root it has no permission to write, is read and never changed. */
static int fs_writable(const char *root)
{
    return access(root, W_OK) == 0 || (errno != EROFS && errno != EACCES && errno != EPERM);
}

int mt_store_fs_open(mt_store **out, const char *root, mt_durability durability)
{
    return mt_store_fs_open_with(out, NULL, root, durability, 0);
}

int mt_store_fs_open_with(mt_store **out, int *read_only, const char *root,
                          mt_durability durability, unsigned flags)
{
    mt_fs *fs = NULL;
    struct stat sb;
    int fd = -1, probe, rc;

    *out = NULL;
    if (read_only)
        *read_only = 0;
    if (!root)
        return mt_error_set(MT_EINVAL, "no store root given");
    /* A read names a store that is there: a typo must not make an empty one. */
    if (flags & MT_STORE_OPEN_EXISTING) {
        if (stat(root, &sb) < 0 && errno == ENOENT)
            return mt_error_set(MT_ENOTFOUND,
                                "no store at %s: check --root/--store, or create it with a write",
                                root);
    } else if (fs_writable(root) && (rc = fs_make_root(root)) < 0) {
        return rc;
    }
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mt_error_set(errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                            "cannot open the store root %s: %s", root, strerror(errno));
    probe = mt_fs_openat(fd, "", O_RDONLY | O_DIRECTORY, 0);
    if (probe == -ENOSYS || probe == -E2BIG || probe == -EINVAL) {
        rc = mt_error_set(MT_ENOSYS,
                          "this kernel has no openat2(2) with RESOLVE_BENEATH (Linux 5.6 or "
                          "later is needed); memtool will not fall back to checking paths as "
                          "strings, so the store %s cannot be opened",
                          root);
        goto done;
    }
    if (probe < 0) {
        rc = mt_error_set(MT_EIO, "cannot open the store root %s: %s", root, strerror(-probe));
        goto done;
    }
    close(probe);
    fs = calloc(1, sizeof(*fs));
    if (!fs) {
        rc = mt_error_set(MT_ENOMEM, "out of memory opening %s", root);
        goto done;
    }
    if (pthread_mutex_init(&fs->lock, NULL) != 0) {
        free(fs);
        fs = NULL;
        rc = mt_error_set(MT_ENOMEM, "cannot make a lock for %s", root);
        goto done;
    }
    if (pthread_mutex_init(&fs->search_lock, NULL) != 0) {
        pthread_mutex_destroy(&fs->lock);
        free(fs);
        fs = NULL;
        rc = mt_error_set(MT_ENOMEM, "cannot make a lock for %s", root);
        goto done;
    }
    if (pthread_mutex_init(&fs->ids_lock, NULL) != 0) {
        pthread_mutex_destroy(&fs->search_lock);
        pthread_mutex_destroy(&fs->lock);
        free(fs);
        fs = NULL;
        rc = mt_error_set(MT_ENOMEM, "cannot make a lock for %s", root);
        goto done;
    }
    fs->state_fd = -1;
    fs_boot_id(fs->boot_id);
    fs->base.version = MT_STORE_VERSION;
    fs->base.stat = fs_stat;
    fs->base.read = fs_read;
    fs->base.create = mt_fs_create;
    fs->base.edit = mt_fs_edit;
    fs->base.remove = mt_fs_remove;
    fs->base.rename = mt_fs_rename;
    fs->base.list = mt_fs_list;
    fs->base.usage = mt_fs_usage;
    fs->base.free = fs_free;
    fs->base.versions = mt_fs_versions;
    fs->base.version_get = mt_fs_version;
    fs->base.version_content = mt_fs_version_content;
    fs->base.redact = mt_fs_redact;
    fs->base.catch_up = mt_fs_catch_up;
    fs->base.walk = mt_fs_walk;
    fs->base.touch = mt_fs_touch;
    fs->base.times = mt_fs_times;
    fs->base.idle = mt_fs_idle;
    fs->base.version_count = mt_fs_version_count;
    fs->base.search = mt_fs_search;
    fs->base.version_reseal = mt_fs_version_reseal;
    fs->base.memory_id = mt_fs_memory_id;
    fs->base.import = mt_fs_import;
    fs->base.encryption = mt_fs_encryption;
    fs->base.first_head = mt_fs_first_head;
    fs->root_fd = fd;
    fs->durability = durability;
    fs->read_only = !fs_writable(root);
    if (read_only)
        *read_only = fs->read_only;
    fd = -1;
    *out = &fs->base;
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    return rc;
}

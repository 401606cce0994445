/*
 * The file store's record that it is encrypted: RESERVED/encryption, a
 * line the encryption layer wrote. Beneath each tenant's own root (a
 * tenant is a store of its own), so each tenant has its own.
 *
 * Made with link(2) from a synced temporary: the name appears whole or not
 * at all, and of two processes that make it at once, one link fails with
 * EEXIST and that one reads the winner's. A rekey replaces it with
 * rename(2), under the store's lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"

#define RECORD_NAME "encryption"

/* 1 with *out the record, 0 none. */
static int record_read(mt_fs *fs, char **out)
{
    char buf[MT_STORE_RECORD_MAX + 2];
    ssize_t n;
    size_t len = 0;
    int fd, rc;

    *out = NULL;
    fd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED "/" RECORD_NAME,
                      O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return mt_error_set(MT_EIO, "cannot read the store's encryption record %s/%s: %s",
                            MT_FS_RESERVED, RECORD_NAME, strerror(-fd));
    while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mt_error_set(MT_EIO, "cannot read the store's encryption record %s/%s: %s",
                              MT_FS_RESERVED, RECORD_NAME, strerror(errno));
            goto done;
        }
        len += (size_t)n;
    }
    /* An empty or overlong record is damage, not the absence of one: a
     * store that was encrypted must never be taken for a plain one. */
    if (len == 0 || len > MT_STORE_RECORD_MAX) {
        rc = mt_error_set(MT_ECRYPT,
                          "the store's encryption record %s/%s is damaged (%zu bytes): restore "
                          "it from a backup",
                          MT_FS_RESERVED, RECORD_NAME, len);
        goto done;
    }
    buf[len] = '\0';
    if (!(*out = strdup(buf))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    rc = 1;
done:
    close(fd);
    return rc;
}

static int record_write(mt_fs *fs, const char *put, int replace)
{
    char temp[64];
    int dirfd = -1, fd = -1, rc;

    dirfd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dirfd < 0)
        return mt_error_set(MT_EIO, "cannot open the store's own directory %s: %s", MT_FS_RESERVED,
                            strerror(-dirfd));
    /* Synced whatever the durability: a store whose record a crash lost
     * would be taken for a plain one. */
    if ((rc = mt_fs_write_temp(fs, &fd, temp, dirfd, put, strlen(put), MT_FS_RESERVED, NULL)) < 0)
        goto done;
    if (fs->durability == MT_DURABILITY_NONE && (rc = mt_fs_sync(fd, MT_FS_RESERVED)) < 0) {
        unlinkat(dirfd, temp, 0);
        goto done;
    }
    if (replace == 1 ? renameat(dirfd, temp, dirfd, RECORD_NAME) < 0
                     : linkat(dirfd, temp, dirfd, RECORD_NAME, 0) < 0 && errno != EEXIST) {
        rc = mt_error_set(MT_EIO, "cannot write the store's encryption record %s/%s: %s",
                          MT_FS_RESERVED, RECORD_NAME, strerror(errno));
        unlinkat(dirfd, temp, 0);
        goto done;
    }
    if (replace != 1)
        unlinkat(dirfd, temp, 0);
    rc = mt_fs_sync(dirfd, MT_FS_RESERVED);
done:
    if (fd >= 0)
        close(fd);
    close(dirfd);
    return rc;
}

int mt_fs_sealed(mt_fs *fs)
{
    struct stat sb;

    if (fstatat(fs->root_fd, MT_FS_RESERVED "/" RECORD_NAME, &sb, AT_SYMLINK_NOFOLLOW) == 0)
        return 1;
    return errno == ENOENT ? 0
                           : mt_error_set(MT_EIO,
                                          "cannot look for the store's encryption record "
                                          "%s/%s: %s",
                                          MT_FS_RESERVED, RECORD_NAME, strerror(errno));
}

/* Under the lock, for a claim of a new store: 1 when a record is there
 * already (the caller reads it), 0 when the store is empty, MT_ECONFLICT
 * when it holds a file (written meanwhile without the key). */
static int claim_empty(mt_fs *fs)
{
    char head[MT_STORE_HEAD_MAX], *path = NULL;
    size_t len = sizeof(head);
    int rc;

    if ((rc = mt_fs_sealed(fs)) != 0)
        return rc;
    if ((rc = mt_fs_first_head(&fs->base, head, &len, &path)) < 0)
        return rc;
    free(path);
    return rc == 1 ? mt_error_set(MT_ECONFLICT, "the store gained a memory while it was being "
                                                "made encrypted")
                   : 0;
}

int mt_fs_encryption(mt_store *st, char **out, const char *put, int replace,
                     unsigned lock_timeout_ms)
{
    mt_fs *fs = (mt_fs *)st;
    int rc;

    if (!out)
        return mt_error_set(MT_EINVAL, "the encryption record needs an out pointer");
    *out = NULL;
    if (!put)
        return record_read(fs, out);
    if (!*put || strlen(put) > MT_STORE_RECORD_MAX || strchr(put, '\n'))
        return mt_error_set(MT_EINVAL, "an encryption record is one line of 1 to %d bytes",
                            MT_STORE_RECORD_MAX);
    /* The lock makes the reserved directory, and orders a rekey's
     * replacement with a first record. */
    if ((rc = mt_fs_lock(fs, lock_timeout_ms)) < 0)
        return rc == MT_FS_LOCK_TIMEOUT
                   ? mt_error_set(MT_EBUSY, "the store stayed locked by another change for %u ms",
                                  lock_timeout_ms)
                   : rc;
    if (replace == MT_STORE_RECORD_IF_EMPTY && (rc = claim_empty(fs)) < 0) {
        mt_fs_unlock(fs);
        return rc;
    }
    rc = rc == 1 ? 0 : record_write(fs, put, replace);
    mt_fs_unlock(fs);
    if (rc < 0)
        return rc;
    return (rc = record_read(fs, out)) == 0
               ? mt_error_set(MT_EIO,
                              "the store's encryption record %s/%s went away as it was "
                              "written",
                              MT_FS_RESERVED, RECORD_NAME)
           : rc < 0 ? rc
                    : 0;
}

/* At most this many names are looked at by a first_head: bounded work at
 * every open of a plain store, whatever its size. */
#define FIRST_LOOK 4096
/* And at most this many directories queued to look into. */
#define FIRST_DIRS 64

/* rel's directory read as it comes (unsorted, one pass): a regular file's
 * head into head/len and its path into *path (1); subdirectories queued
 * (dirs, *ndirs); 0 when none is here. *seen counts the names looked at. */
static int first_in(mt_fs *fs, char *head, size_t *len, char **path, const char *rel, char **dirs,
                    size_t *ndirs, size_t *seen)
{
    struct dirent *de;
    DIR *dir;
    int dfd, fd, rc = 0;

    dfd = mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return dfd == -ENOENT ? 0 : mt_fs_error(-dfd, "cannot list", rel);
    if (!(dir = fdopendir(dfd))) {
        close(dfd);
        return mt_fs_error(errno, "cannot list", rel);
    }
    while (rc == 0 && *seen < FIRST_LOOK && (de = readdir(dir)) != NULL) {
        const char *nm = de->d_name;
        unsigned char type = de->d_type;
        struct stat sb;
        mt_buf b = MT_BUF_INIT;
        size_t blen;
        char *child;
        ssize_t n;

        if ((nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) ||
            mt_fs_is_internal(nm))
            continue;
        (*seen)++;
        if (type == DT_UNKNOWN && fstatat(dirfd(dir), nm, &sb, AT_SYMLINK_NOFOLLOW) == 0)
            type = S_ISREG(sb.st_mode) ? DT_REG : S_ISDIR(sb.st_mode) ? DT_DIR : DT_UNKNOWN;
        if (type != DT_REG && (type != DT_DIR || *ndirs == FIRST_DIRS))
            continue;
        if (mt_buf_printf(&b, "%s%s%s", rel, *rel ? "/" : "", nm) < 0 ||
            !(child = mt_buf_detach(&b, &blen))) {
            mt_buf_dispose(&b);
            rc = mt_error_set(MT_ENOMEM, "out of memory looking at the store");
            break;
        }
        if (type == DT_DIR) {
            dirs[(*ndirs)++] = child;
            continue;
        }
        /* A file a view would refuse (more links, not regular by now) says
         * nothing of the store: the next one is asked. */
        if (mt_fs_open_regular(&fd, &sb, dirfd(dir), nm, "cannot read", child) < 0) {
            free(child);
            continue;
        }
        n = pread(fd, head, MT_STORE_HEAD_MAX, 0);
        close(fd);
        if (n < 0) {
            rc = mt_fs_error(errno, "cannot read", child);
            free(child);
            break;
        }
        *len = (size_t)n;
        *path = child;
        rc = 1;
    }
    closedir(dir);
    return rc;
}

int mt_fs_first_head(mt_store *st, char *head, size_t *len, char **path)
{
    mt_fs *fs = (mt_fs *)st;
    char *dirs[FIRST_DIRS];
    size_t ndirs = 0, next = 0, seen = 0;
    int rc;

    /* Any one memory tells a store sealed before records were kept, so not
     * the first in path order: the first file the directories give, breadth
     * first, where a sorted walk would read the whole root at every open. */
    *path = NULL;
    *len = 0;
    rc = first_in(fs, head, len, path, "", dirs, &ndirs, &seen);
    while (rc == 0 && next < ndirs && seen < FIRST_LOOK)
        rc = first_in(fs, head, len, path, dirs[next++], dirs, &ndirs, &seen);
    while (ndirs > 0)
        free(dirs[--ndirs]);
    return rc;
}

/*
 * The filesystem store's import (memtool/store.h, mt_store_import): under
 * the store's lock, a memory's versions go into the history's transaction,
 * then its current file is made as a create makes it (limits, parents,
 * atomic rename), then the transaction commits. The file and the history
 * are two things on disk, so a crash between the rename and the commit
 * leaves a file the history has not recorded; the next import of that
 * memory finds it at its path with the newest version's content and takes
 * it as the memory's own instead of refusing the path.
 */
#include "fs/fs.h"
#include "machinery/hist_import.h"
#include "machinery/history.h"
#include "machinery/import_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "machinery/usage.h"

static void fingerprint(mt_hist_fp *fp, const struct stat *sb)
{
    fp->ino = (uint64_t)sb->st_ino;
    fp->size = (uint64_t)sb->st_size;
    fp->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
    fp->ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000LL + sb->st_ctim.tv_nsec;
}

/* What is at the current file's path: nothing (0), a file the history has
 * not recorded (1, its SHA-256 in sha: the memory's own if it holds the
 * newest content), or MT_EEXISTS / MT_ENOTDIR. */
static int path_state(mt_fs *fs, mt_store_op *op, char sha[65], const char *rel)
{
    const char *name;
    struct stat sb;
    mt_hist_mem m;
    char *data = NULL;
    size_t len = 0;
    int dirfd = -1, fd = -1, rc;

    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        return rc == MT_ENOTFOUND ? 0 : rc;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = errno == ENOENT ? 0 : mt_fs_error(errno, "cannot create", rel);
        goto done;
    }
    rc = mt_fs_error(EEXIST, "cannot create", rel);
    if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
        (op->max_file_size && mt_store_file_memory(op, (uint64_t)sb.st_size) > op->max_file_size))
        goto done;
    if ((rc = mt_hist_find(fs->hist, &m, rel)) != 0) {
        rc = rc < 0 ? rc : mt_fs_error(EEXIST, "cannot create", rel);
        goto done;
    }
    if ((rc = mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot read", rel)) < 0 ||
        (rc = mt_fs_read_fd(&data, &len, fd, (size_t)sb.st_size, rel)) < 0)
        goto done;
    mt_hist_sha256(sha, data, len);
    rc = 1;
done:
    free(data);
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

static int file_look(mt_fs *fs, mt_hist_fp *fp, const char *rel)
{
    const char *name;
    struct stat sb;
    int dirfd, rc = 0;

    if ((rc = mt_fs_open_parent(fs, &dirfd, &name, rel)) < 0)
        return rc;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        rc = mt_fs_error(errno, "cannot look at", rel);
    else
        fingerprint(fp, &sb);
    close(dirfd);
    return rc;
}

static void ms_time(struct timespec *ts, int64_t ms)
{
    ts->tv_sec = (time_t)(ms / 1000);
    ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

/* The file's last access and change as they were where it came from (the
 * inode's times are this store's record of them, fs_access.c), so expiry
 * sees it as idle as before; before its fingerprint is taken, which holds
 * the times. Best effort, as a view's touch is: the file is in either way. */
static void file_times(mt_fs *fs, const char *rel, const mt_store_import *in)
{
    struct timespec ts[2];
    const char *name;
    int dirfd;

    if (in->accessed_ms <= 0 && in->modified_ms <= 0)
        return;
    if (mt_fs_open_parent(fs, &dirfd, &name, rel) < 0)
        return;
    ts[1].tv_nsec = UTIME_OMIT;
    if (in->modified_ms > 0)
        ms_time(&ts[1], in->modified_ms);
    ts[0] = ts[1];
    if (in->accessed_ms > 0)
        ms_time(&ts[0], in->accessed_ms);
    (void)utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
    close(dirfd);
}

/* The versions, in the history's open transaction; *data the newest's
 * content when the memory is live (for its file). */
static int record_versions(mt_fs *fs, mt_store_import *in, int live, char **data, size_t *len,
                           char sha[65])
{
    size_t i;
    int rc = 0;

    for (i = 0; i < in->count; i++) {
        const mt_version *v = &in->versions[i];
        int current = live && i == in->count - 1;
        char got[65] = "";
        uint64_t size = v->content_size;
        int64_t id;

        if (mt_import_has_content(v)) {
            /* Content kept already is not asked for, but the current file's is. */
            if (!current && v->content_sha256[0] &&
                (rc = mt_hist_content_ref(fs->hist, v->content_sha256)) != 0) {
                if (rc < 0)
                    return rc;
                memcpy(got, v->content_sha256, sizeof(got));
            } else {
                char *d;
                size_t n;
                if ((rc = mt_import_fetch(&d, &n, got, in, i)) < 0)
                    return rc;
                rc = mt_hist_content_keep(fs->hist, got, d, n);
                size = n;
                if (current && rc == 0) {
                    *data = d;
                    *len = n;
                    memcpy(sha, got, 65);
                } else {
                    sodium_memzero(d, n);
                    free(d);
                }
                if (rc < 0)
                    return rc;
            }
        }
        if ((rc = mt_hist_import_version(fs->hist, &id, in->memory_id, v, got, size)) < 0)
            return rc;
        in->made++;
    }
    return 0;
}

int mt_fs_import(mt_store *st, mt_store_op *op, mt_store_import *in)
{
    mt_fs *fs = (mt_fs *)st;
    unsigned keep = op->history_keep, days = op->history_days;
    const char *rel;
    char *data = NULL, sha[65] = "", there[65] = "";
    size_t len = 0;
    mt_fs_txn t;
    int live, held = 0, made = 0, unsynced = 0, rc;

    if ((rc = mt_import_start(op, in)) < 0)
        return rc;
    live = mt_import_live(in);
    rel = in->versions[in->count - 1].path;
    /* The versions brought in are kept whole: the caps apply at the next change. */
    op->history_keep = 0;
    op->history_days = 0;
    if ((rc = mt_fs_begin(fs, &t, op, live ? rel : "", 0)) < 0)
        goto out;
    if (!fs->hist_active) {
        rc = mt_error_set(MT_EIO, "cannot import memory %s: the history cannot be kept (%s)",
                          in->memory_id, op->history_error ? op->history_error : "unknown");
        goto end;
    }
    /* The import writes the database itself: the change goes on in a transaction. */
    if ((rc = mt_hist_solid(fs->hist)) < 0)
        goto end;
    if ((rc = mt_hist_import_present(fs->hist, in->memory_id)) != 0) {
        in->present = rc > 0;
        rc = rc > 0 ? 0 : rc;
        goto end;
    }
    if (live && (rc = held = path_state(fs, op, there, rel)) < 0)
        goto end;
    if ((rc = record_versions(fs, in, live, &data, &len, sha)) < 0)
        goto end;
    if (live) {
        if (held && strcmp(there, sha) != 0) {
            rc = mt_fs_error(EEXIST, "cannot create", rel);
            goto end;
        }
        if (!held) {
            /* The file as a create makes it; its version is the ones above. */
            fs->hist_active = 0;
            rc = mt_fs_create_txn(fs, &t, op, rel, data, len);
            fs->hist_active = 1;
            if (rc == MT_ENOTDURABLE) {
                unsynced = 1; /* made: said once the history is in */
                rc = 0;
            }
            if (rc < 0)
                goto end;
            made = 1;
        }
        file_times(fs, rel, in);
        {
            mt_hist_mem m;
            int look;
            memset(&m, 0, sizeof(m));
            look = file_look(fs, &m.fp, rel);
            snprintf(m.id, sizeof(m.id), "%s", in->memory_id);
            memcpy(m.sha256, sha, sizeof(m.sha256));
            m.size = len;
            if (look < 0 || (look = mt_hist_memory_set(fs->hist, rel, &m)) < 0) {
                rc = look;
                goto end;
            }
        }
    }
end:
    if ((rc < 0 || in->present) && fs->hist_active) {
        mt_hist_rollback(fs->hist);
        fs->hist_active = 0;
    }
    mt_fs_end(fs, &t);
    if (rc >= 0 && !in->present && op->history_error) {
        rc = mt_error_set(MT_EIO, "memory %s: its history could not be recorded (%s)%s",
                          in->memory_id, op->history_error,
                          made ? "; its file was made: an import of it again takes that file" : "");
    } else if (rc < 0 && made) {
        char why[256];
        snprintf(why, sizeof(why), "%s", mt_error_last()->message);
        rc = mt_error_set(rc,
                          "memory %s: %s; its file was made without its history: an import of "
                          "it again takes that file",
                          in->memory_id, why);
    } else if (rc >= 0 && unsynced) {
        rc = mt_error_set(MT_ENOTDURABLE,
                          "memory %s was imported, but syncing its file to disk failed",
                          in->memory_id);
    }
out:
    op->history_keep = keep;
    op->history_days = days;
    if (data) {
        sodium_memzero(data, len);
        free(data);
    }
    if (rc < 0 && in)
        in->made = 0;
    return rc;
}

/*
 * The filesystem store's history: a SQLite database in the reserved
 * directory (RESERVED/history.db), so `cp -a` of the root takes it along and
 * no request path can reach it.
 *
 * Versions are recorded under the store's lock, after the change is on
 * disk and before the lock goes, so they follow the changes' serial order (a
 * plain store's as one append to the history's log, history.h). A change
 * killed between its rename and its record leaves a file the history has
 * not seen; so does a person with an editor. Before a change touches a
 * path it settles it: a file whose inode, size or times differ from what was
 * recorded is read, and if its content differs too, that content becomes a
 * version by "external". Reads settle nothing: a view stays a read.
 */
#include "fs/fs.h"
#include "machinery/history.h"
#include "machinery/usage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define EXTERNAL "external"

static void hist_fail(mt_fs *fs, mt_store_op *op)
{
    snprintf(fs->hist_error, sizeof(fs->hist_error), "%s", mt_error_last()->message);
    op->history_error = fs->hist_error;
}

int mt_fs_hist_open_db(struct mt_hist **out, mt_fs *fs)
{
    int dirfd, rc;

    if (!fs->read_only && mkdirat(fs->root_fd, MT_FS_RESERVED, 0700) < 0 && errno != EEXIST)
        return mt_error_set(MT_EIO, "cannot make the store's own directory: %s", strerror(errno));
    dirfd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED, O_RDONLY | O_DIRECTORY, 0);
    /* A read-only store that never had its own directory has an empty
     * history (dirfd -1: none). */
    if (dirfd < 0 && !(fs->read_only && dirfd == -ENOENT))
        return mt_error_set(MT_EIO, "cannot open the store's own directory: %s", strerror(-dirfd));
    rc = mt_hist_open_with(out, dirfd, MT_FS_HISTORY_DB, fs->durability, fs->read_only);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

static int hist_open(mt_fs *fs)
{
    int rc;

    if (fs->hist && fs->hist_forks == mt_fs_forks())
        return 0;
    /* A child of a fork leaves its parent's connection alone (closing it
     * could drop the parent's locks) and opens its own. */
    fs->hist = NULL;
    fs->ids_exact = 0;
    if ((rc = mt_fs_hist_open_db(&fs->hist, fs)) == 0)
        fs->hist_forks = mt_fs_forks();
    return rc;
}

void mt_fs_hist_close(mt_fs *fs)
{
    if (fs->hist && fs->hist_forks == mt_fs_forks())
        mt_hist_close(fs->hist);
    fs->hist = NULL;
}

static int ids_upgrade(mt_fs *fs, mt_store_op *op);

int mt_fs_hist_begin(mt_fs *fs, mt_store_op *op)
{
    fs->hist_active = 0;
    fs->hist_track = 0;
    op->version = 0;
    op->history_error = NULL;
    /* A plain store with history off never touches the database. */
    if (!op->history && !op->track_ids)
        return 0;
    if (hist_open(fs) < 0) {
        hist_fail(fs, op);
        return 0;
    }
    /* A plain store's versions go to the history's log, one append each;
     * an encrypted store's changes keep the record of ids, which its views
     * check files against, in the database itself. */
    mt_hist_log_attach(fs->hist, mt_fs_log_slot(fs));
    if ((op->history && !op->track_ids ? mt_hist_begin_logged(fs->hist, op->history_days)
                                       : mt_hist_begin(fs->hist)) < 0) {
        hist_fail(fs, op);
        return 0;
    }
    if (op->track_ids && !fs->ids_exact && ids_upgrade(fs, op) < 0) {
        hist_fail(fs, op);
        mt_hist_rollback(fs->hist);
        return 0;
    }
    if (op->history)
        fs->hist_active = 1;
    else
        fs->hist_track = 1;
    return 1;
}

void mt_fs_hist_end(mt_fs *fs, mt_store_op *op)
{
    if (fs->hist_track) {
        /* The record of ids alone: no versions, so none to prune. */
        fs->hist_track = 0;
        if (mt_hist_commit(fs->hist, NULL) < 0)
            hist_fail(fs, op);
        return;
    }
    if (!fs->hist_active)
        return;
    fs->hist_active = 0;
    if (mt_hist_commit(fs->hist, op) < 0) {
        op->version = 0;
        hist_fail(fs, op);
    }
}

static void fingerprint(mt_hist_fp *fp, const struct stat *sb)
{
    fp->ino = (uint64_t)sb->st_ino;
    fp->size = (uint64_t)sb->st_size;
    fp->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
    fp->ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000LL + sb->st_ctim.tv_nsec;
}

static int same_fp(const mt_hist_fp *a, const mt_hist_fp *b)
{
    return a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
           a->ctime_ns == b->ctime_ns;
}

/* A failure of the history ends its part of this change (the change goes
 * on); returns 0 so callers carry on. */
static int hist_drop(mt_fs *fs, mt_store_op *op)
{
    hist_fail(fs, op);
    mt_hist_rollback(fs->hist);
    fs->hist_active = 0;
    fs->hist_track = 0;
    op->version = 0;
    return 0;
}

/* The memory a file found without a record is: the one its content names
 * (an encrypted store's header), unless the record has that memory at
 * another path, which makes this file a copy; NULL for a new memory. */
static int named_memory(const char **out, char id[24], mt_fs *fs, mt_store_op *op, const char *rel,
                        const char *data, size_t len)
{
    int rc;

    *out = NULL;
    if (!op->memory_id_of || op->memory_id_of(id, data, len) != 1)
        return 0;
    if ((rc = mt_hist_id_elsewhere(fs->hist, id, rel)) < 0)
        return rc;
    if (rc == 0)
        *out = id;
    return 0;
}

/* A recorded memory whose file is gone: deleted, by "external". One
 * recorded only by which memory it is (sha256 "", see history.h) just goes
 * from the record: there is no content of it to make a version of. */
static int settle_gone(mt_fs *fs, const char *rel, const mt_hist_mem *m)
{
    mt_hist_event e = {MT_VERSION_DELETED, rel, NULL, m->id, EXTERNAL, NULL, 0, NULL, NULL};
    int64_t id;

    if (!m->sha256[0])
        return mt_hist_track_drop(fs->hist, rel);
    return mt_hist_record(fs->hist, &id, &e);
}

/* Record what the file holds now when it is not what was recorded. */
static int settle_file(mt_fs *fs, mt_store_op *op, int dirfd, const char *name, const char *rel,
                       const struct stat *given, const char *data, size_t len, int found,
                       const mt_hist_mem *m)
{
    struct stat sb;
    mt_hist_fp fp;
    char *read = NULL, named_id[24];
    const char *named = NULL;
    char sha[65];
    int64_t id;
    int rc = 0, fd = -1;

    if (given) {
        sb = *given;
    } else if (dirfd < 0 || fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
               !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        /* Nothing (a memory can only be a plain file) where one was recorded. */
        return found ? settle_gone(fs, rel, m) : 0;
    }
    fingerprint(&fp, &sb);
    /* A memory recorded without its content (history was off) is read. */
    if (found && m->sha256[0] && same_fp(&fp, &m->fp))
        return 0;
    if (!data) {
        /* Bounded like any edit: a file over the size limit is not read. */
        if (op->max_file_size && mt_store_file_memory(op, (uint64_t)sb.st_size) > op->max_file_size)
            return 0;
        if ((rc = mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot read", rel)) < 0)
            return rc == MT_ENOTFOUND ? 0 : rc;
        rc = mt_fs_read_fd(&read, &len, fd, (size_t)sb.st_size, rel);
        close(fd);
        if (rc < 0)
            return rc;
        data = read;
        fingerprint(&fp, &sb);
    }
    mt_hist_sha256(sha, data, len);
    if (!found && (rc = named_memory(&named, named_id, fs, op, rel, data, len)) < 0)
        goto done;
    {
        /* The memory recorded at the path stays the one there, whatever
         * its file holds now: a file swapped in from elsewhere keeps
         * failing the encryption layer's check. */
        mt_hist_event e = {found && m->sha256[0] ? MT_VERSION_MODIFIED : MT_VERSION_CREATED,
                           rel,
                           NULL,
                           found ? m->id : named,
                           EXTERNAL,
                           data,
                           len,
                           &fp,
                           sha};
        /* Same content, new look (touched, copied back): only the look is new. */
        if (found && strcmp(sha, m->sha256) == 0)
            e.actor = NULL;
        if (e.actor)
            rc = mt_hist_record(fs->hist, &id, &e);
        else
            rc = mt_hist_refresh(fs->hist, rel, &fp);
    }
done:
    free(read);
    return rc;
}

int mt_fs_hist_settle(mt_fs *fs, mt_store_op *op, int dirfd, const char *name, const char *rel,
                      const struct stat *sb, const char *data, size_t len)
{
    mt_hist_mem m;
    int found, rc;

    if (!fs->hist_active)
        return 0;
    if ((found = mt_hist_find(fs->hist, &m, rel)) < 0 ||
        (rc = settle_file(fs, op, dirfd, name, rel, sb, data, len, found, &m)) < 0)
        return hist_drop(fs, op);
    return 0;
}

/* The memories recorded beneath a path, sorted, to be ticked off by a walk. */
typedef struct {
    char *path;
    mt_hist_mem m;
    int seen;
} known;

typedef struct {
    known *k;
    size_t n, cap;
} known_list;

static int collect(void *payload, const char *path, const mt_hist_mem *m)
{
    known_list *l = payload;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        known *p = realloc(l->k, cap * sizeof(*p));
        if (!p)
            return mt_error_set(MT_ENOMEM, "out of memory reading the history");
        l->k = p;
        l->cap = cap;
    }
    if (!(l->k[l->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory reading the history");
    l->k[l->n].m = *m;
    l->k[l->n].seen = 0;
    l->n++;
    return 0;
}

static void known_free(known_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->k[i].path);
    free(l->k);
}

static known *known_find(known_list *l, const char *path)
{
    size_t lo = 0, hi = l->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->k[mid].path, path);
        if (c == 0)
            return &l->k[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Settle every regular file beneath dirfd (store path `rel`, "" the root). */
static int settle_walk(mt_fs *fs, mt_store_op *op, known_list *l, int at, char *rel, size_t rel_len,
                       unsigned depth)
{
    DIR *dir;
    struct dirent *de;
    int fd, rc = 0;

    if (depth > MT_WALK_MAX_DEPTH)
        return 0;
    if ((fd = mt_fs_openat(at, "", O_RDONLY | O_DIRECTORY, 0)) < 0)
        return 0;
    if (!(dir = fdopendir(fd))) {
        close(fd);
        return 0;
    }
    while (rc == 0 && (de = readdir(dir)) != NULL) {
        const char *n = de->d_name;
        size_t nlen = strlen(n);
        struct stat sb;
        int kind, named;

        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
            continue;
        /* What every walk takes for a memory (fs_entry.c): a name no request
         * could give is no memory's, so it gets no version either. */
        kind = mt_fs_entry(&sb, &named, dirfd(dir), n, de->d_type, rel_len);
        if ((kind != MT_FS_FILE && kind != MT_FS_DIR) || !named)
            continue;
        if (rel_len)
            rel[rel_len] = '/';
        memcpy(rel + rel_len + (rel_len ? 1 : 0), n, nlen + 1);
        if (kind == MT_FS_DIR) {
            int child = mt_fs_openat(dirfd(dir), n, O_RDONLY | O_DIRECTORY, 0);
            if (child >= 0) {
                rc = settle_walk(fs, op, l, child, rel, rel_len + (rel_len ? 1 : 0) + nlen,
                                 depth + 1);
                close(child);
            }
        } else if (sb.st_nlink == 1) { /* a file, looked at (sb) by mt_fs_entry */
            known *k = known_find(l, rel);
            if (k)
                k->seen = 1;
            rc = settle_file(fs, op, dirfd(dir), n, rel, &sb, NULL, 0, k != NULL, k ? &k->m : NULL);
        }
        rel[rel_len] = '\0';
    }
    closedir(dir);
    return rc;
}

/* A recorded memory's file, before the record is known exact: kept when
 * its file is the one recorded, or names the memory recorded; else (the
 * file was replaced since, by memtool with history off or from outside)
 * its record goes, and the next change there records what the file names. */
static int ids_check(mt_fs *fs, mt_store_op *op, const char *rel, const mt_hist_mem *m)
{
    char head[256], id[24];
    const char *name;
    struct stat sb;
    mt_hist_fp fp;
    ssize_t n;
    int dirfd = -1, fd = -1, rc = 0;

    if (mt_fs_open_parent(fs, &dirfd, &name, rel) < 0 ||
        mt_fs_open_regular(&fd, &sb, dirfd, name, "cannot read", rel) < 0)
        goto done; /* gone, or no plain file: a change or catch-up settles it */
    fingerprint(&fp, &sb);
    if (m->sha256[0] && same_fp(&fp, &m->fp))
        goto done;
    while ((n = pread(fd, head, sizeof(head), 0)) < 0 && errno == EINTR)
        ;
    if (n < 0 || !op->memory_id_of || op->memory_id_of(id, head, (size_t)n) != 1 ||
        strcmp(id, m->id) != 0)
        rc = mt_hist_track_drop(fs->hist, rel);
done:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}

/*
 * Once per database, at the first change of an encrypted store: a memtool
 * that kept the record of which memory is where only with history on left
 * it stale wherever it replaced a file with history off. Each recorded file
 * is checked (ids_check), then the database is marked: from then on every
 * change keeps the record, and memory_id answers from it (before, it
 * answers 0: unchecked rather than a false alarm).
 */
static int ids_upgrade(mt_fs *fs, mt_store_op *op)
{
    known_list l = {NULL, 0, 0};
    size_t i;
    int rc;

    if ((rc = mt_hist_ids_exact(fs->hist)) != 0) {
        fs->ids_exact = rc > 0;
        return rc < 0 ? rc : 0;
    }
    if ((rc = mt_hist_each(fs->hist, "", collect, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++)
        if ((rc = ids_check(fs, op, l.k[i].path, &l.k[i].m)) < 0)
            goto done;
    /* Marked in this change's transaction: known exact once it commits. */
    rc = mt_hist_ids_mark_exact(fs->hist);
done:
    known_free(&l);
    return rc;
}

int mt_fs_hist_settle_tree(mt_fs *fs, mt_store_op *op, const char *rel)
{
    known_list l = {NULL, 0, 0};
    char path[4096];
    size_t i;
    int fd = -1, rc;

    if (!fs->hist_active)
        return 0;
    if ((rc = mt_hist_each(fs->hist, rel, collect, &l)) < 0)
        goto done;
    fd = *rel ? mt_fs_openat(fs->root_fd, rel, O_RDONLY | O_DIRECTORY, 0)
              : mt_fs_openat(fs->root_fd, "", O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0) {
        snprintf(path, sizeof(path), "%s", rel);
        rc = settle_walk(fs, op, &l, fd, path, strlen(path), 0);
        close(fd);
        if (rc < 0)
            goto done;
    } else if (*rel) {
        /* A file (or nothing) at rel: settle just it. */
        const char *slash = strrchr(rel, '/');
        known *k = known_find(&l, rel);
        int dirfd;

        if (k)
            k->seen = 1;
        snprintf(path, sizeof(path), "%.*s", slash ? (int)(slash - rel) : 0, rel);
        dirfd = mt_fs_openat(fs->root_fd, path, O_RDONLY | O_DIRECTORY, 0);
        if (dirfd >= 0) {
            rc = settle_file(fs, op, dirfd, slash ? slash + 1 : rel, rel, NULL, NULL, 0, k != NULL,
                             k ? &k->m : NULL);
            close(dirfd);
        } else if (k) {
            rc = settle_gone(fs, rel, &k->m);
        }
        if (rc < 0)
            goto done;
    }
    /* Recorded, and gone from the disk. */
    for (i = 0; i < l.n; i++) {
        if (l.k[i].seen)
            continue;
        if ((rc = settle_gone(fs, l.k[i].path, &l.k[i].m)) < 0)
            goto done;
    }
done:
    known_free(&l);
    return rc < 0 ? hist_drop(fs, op) : 0;
}

/* The record of ids alone, for a change with history off (see fs.h). */
static int track_record(mt_fs *fs, mt_store_op *op, mt_version_op what, const char *rel,
                        const char *previous, const char *data, size_t len)
{
    mt_hist_mem m;
    const char *named;
    char id[24];
    int rc;

    if (what == MT_VERSION_DELETED)
        return mt_hist_track_drop(fs->hist, rel);
    if (previous)
        return mt_hist_track_move(fs->hist, previous, rel);
    if (what == MT_VERSION_CREATED)
        return op->memory_id ? mt_hist_track_put(fs->hist, rel, op->memory_id)
                             : mt_hist_track_drop(fs->hist, rel);
    /* An edit keeps the memory recorded there; a file without a record
     * (written before ids were kept) gets the one its content names. */
    if ((rc = mt_hist_find(fs->hist, &m, rel)) != 0 || !data)
        return rc < 0 ? rc : 0;
    if ((rc = named_memory(&named, id, fs, op, rel, data, len)) < 0 || !named)
        return rc;
    return mt_hist_track_put(fs->hist, rel, named);
}

int mt_fs_hist_record(mt_fs *fs, mt_store_op *op, mt_version_op what, const char *rel,
                      const char *previous, const char *data, size_t len, const char *sha256,
                      int fd, int dirfd, const char *name)
{
    struct stat sb;
    mt_hist_fp fp;
    mt_hist_event e = {what, rel, previous, op->memory_id, op->actor, data, len, NULL, NULL};
    int ok;

    if (fs->hist_track && track_record(fs, op, what, rel, previous, data, len) < 0)
        return hist_drop(fs, op);
    if (!fs->hist_active)
        return 0;
    if (what != MT_VERSION_DELETED) {
        ok = fd >= 0 ? fstat(fd, &sb) == 0 : fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        if (ok) {
            fingerprint(&fp, &sb);
            e.fp = &fp;
        }
    }
    if (what != MT_VERSION_CREATED)
        e.memory_id = NULL; /* the memory is the one recorded at the path */
    if (data && sha256 && sha256[0])
        e.sha256 = sha256;
    if (mt_hist_record(fs->hist, &op->version, &e) < 0)
        return hist_drop(fs, op);
    if (what != MT_VERSION_DELETED && op->history_keep) {
        mt_hist_mem m;
        if (mt_hist_find(fs->hist, &m, rel) > 0 &&
            mt_hist_prune(fs->hist, m.id, op->history_keep) < 0)
            return hist_drop(fs, op);
    }
    return 0;
}

int mt_fs_hist_modified(mt_fs *fs, mt_store_op *op, const char *rel, const char *data, size_t len,
                        const char *sha256, int fd, int dirfd, const char *name)
{
    if (op->reseal && fs->hist_active && data) {
        struct stat sb;
        mt_hist_fp fp;
        char sha[65];
        int ok, rc;

        /* A re-encryption: the newest version takes the new bytes, no version. */
        ok = fd >= 0 ? fstat(fd, &sb) == 0 : fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        if (ok)
            fingerprint(&fp, &sb);
        if (sha256 && sha256[0])
            snprintf(sha, sizeof(sha), "%s", sha256);
        else
            mt_hist_sha256(sha, data, len);
        rc = mt_hist_reseal_current(fs->hist, rel, data, len, sha, ok ? &fp : NULL);
        if (rc < 0)
            return hist_drop(fs, op);
        if (rc == 0)
            return 0;
    }
    return mt_fs_hist_record(fs, op, MT_VERSION_MODIFIED, rel, NULL, data, len, sha256, fd, dirfd,
                             name);
}

typedef struct {
    mt_fs *fs;
    mt_store_op *op;
    const char *rel, *to;
} tree_change;

static int tree_one(void *payload, const char *path, const mt_hist_mem *m)
{
    tree_change *c = payload;
    char moved[8192];
    mt_hist_event e = {MT_VERSION_DELETED, path, NULL, m->id, c->op->actor, NULL, 0, NULL, NULL};
    int64_t id;
    int rc;

    if (c->to)
        snprintf(moved, sizeof(moved), "%s%s", c->to, path + strlen(c->rel));
    /* Recorded without content (history was off): the record alone follows. */
    if (!m->sha256[0])
        return c->to ? mt_hist_track_move(c->fs->hist, path, moved)
                     : mt_hist_track_drop(c->fs->hist, path);
    if (c->to) {
        e.op = MT_VERSION_MODIFIED;
        e.path = moved;
        e.previous = path;
        e.memory_id = NULL;
        e.fp = &m->fp; /* a rename moves the inode, its look the same but for ctime */
    }
    rc = mt_hist_record(c->fs->hist, &id, &e);
    if (rc == 0)
        c->op->version = id;
    return rc;
}

int mt_fs_hist_tree(mt_fs *fs, mt_store_op *op, const char *rel, const char *to)
{
    tree_change c = {fs, op, rel, to};
    known_list l = {NULL, 0, 0};
    size_t i;
    int rc;

    if (fs->hist_track) {
        rc = to ? mt_hist_track_move(fs->hist, rel, to) : mt_hist_track_drop(fs->hist, rel);
        return rc < 0 ? hist_drop(fs, op) : 0;
    }
    if (!fs->hist_active)
        return 0;
    /* Collected first: renaming rows while SQLite walks them would revisit them. */
    if ((rc = mt_hist_each(fs->hist, rel, collect, &l)) == 0)
        for (i = 0; rc == 0 && i < l.n; i++)
            rc = tree_one(&c, l.k[i].path, &l.k[i].m);
    known_free(&l);
    return rc < 0 ? hist_drop(fs, op) : 0;
}

int mt_fs_hist_knows(mt_fs *fs, const char *rel)
{
    mt_hist_mem m;

    return (fs->hist_active || fs->hist_track) && mt_hist_find(fs->hist, &m, rel) > 0;
}

int mt_fs_hist_expect(mt_store_op *op, const char *rel, const char *data, size_t len)
{
    char sha[65];

    if (!op->expect_sha256)
        return 0;
    mt_hist_sha256(sha, data, len);
    if (strcmp(sha, op->expect_sha256) == 0)
        return 0;
    memcpy(op->current_sha256, sha, sizeof(sha));
    return mt_error_set(MT_ECONFLICT, "%s was changed by someone else", rel);
}

/* Whether the history's log holds versions not yet in the database. */
static int log_pending(mt_fs *fs)
{
    struct stat sb;

    return fstatat(fs->root_fd, MT_FS_RESERVED "/" MT_HIST_LOG, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
           sb.st_size > 0;
}

/* Load the history's log into the database, under the store's lock. */
static int log_load(mt_fs *fs)
{
    mt_store_op op;
    int rc;

    mt_store_op_init(&op);
    if ((rc = mt_fs_lock(fs, op.lock_timeout_ms)) < 0)
        return rc == MT_FS_LOCK_TIMEOUT
                   ? mt_error_set(MT_EBUSY,
                                  "another process has held the store's lock for over %u ms, "
                                  "and the newest versions wait for it; try again later",
                                  op.lock_timeout_ms)
                   : rc;
    if ((rc = hist_open(fs)) == 0) {
        mt_hist_log_attach(fs->hist, mt_fs_log_slot(fs));
        rc = mt_hist_load(fs->hist);
    }
    mt_fs_unlock(fs);
    return rc;
}

/* The history functions of the store interface: each takes the store's
 * lock (a read of the history settles nothing, but must not meet a
 * half-made change's versions: SQLite's own isolation sees to that). A
 * read first loads the versions the log holds: every change that returned
 * is in what it reads. */
/* How long a read-only handle waits for a writer elsewhere to finish. */
#define RO_WAIT_MS 5000

/*
 * A read-only handle copies the history database, then loads the log into
 * the copy: both under a shared lock on the store's lock file, so that a
 * writer elsewhere (one who may write the store) can neither fold the log
 * into the database nor add to it between the two, which would leave the
 * copy without versions. *fd is the lock's descriptor (-1: the store was
 * never written, so there is nothing to wait for).
 */
static int ro_lock(mt_fs *fs, int *fd)
{
    struct timespec pause = {0, 1000000};
    long long deadline, now;
    int rc = 0;

    *fd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED "/state", O_RDONLY | O_NOCTTY | O_CLOEXEC, 0);
    if (*fd == -ENOENT) {
        *fd = -1;
        return 0;
    }
    if (*fd < 0)
        return mt_error_set(MT_EIO, "cannot open the store's lock %s/state: %s", MT_FS_RESERVED,
                            strerror(-*fd));
    mt_fs_monotonic_ms(&deadline);
    deadline += RO_WAIT_MS;
    while (rc == 0 && flock(*fd, LOCK_SH | LOCK_NB) < 0) {
        int err = errno;

        if (err == EINTR)
            continue;
        mt_fs_monotonic_ms(&now);
        if (err != EWOULDBLOCK)
            rc = mt_error_set(MT_EIO, "cannot lock the store's lock %s/state: %s", MT_FS_RESERVED,
                              strerror(err));
        else if (now >= deadline)
            rc = mt_error_set(MT_EBUSY,
                              "another process held the store's lock for %d ms while this one "
                              "read its history: nothing was read; try again",
                              RO_WAIT_MS);
        else
            nanosleep(&pause, NULL);
    }
    if (rc < 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

static int hist_ready(mt_fs *fs)
{
    int rc, lock_fd;

    /* A read-only store's history is a copy in memory: its log is loaded
     * there, once (again in a forked child, which copies afresh), under
     * ro_lock; nothing changes it through this handle. */
    if (fs->read_only) {
        pthread_mutex_lock(&fs->lock);
        rc = 0;
        if (!(fs->hist && fs->hist_forks == mt_fs_forks()) || fs->ro_loaded != fs->hist) {
            if ((rc = ro_lock(fs, &lock_fd)) == 0) {
                if ((rc = hist_open(fs)) == 0) {
                    fs->ro_slot = 0;
                    mt_hist_log_attach(fs->hist, &fs->ro_slot);
                    if ((rc = mt_hist_load(fs->hist)) == 0)
                        fs->ro_loaded = fs->hist;
                }
                if (lock_fd >= 0)
                    close(lock_fd);
            }
        }
        pthread_mutex_unlock(&fs->lock);
        return rc;
    }
    if (log_pending(fs))
        return log_load(fs);
    pthread_mutex_lock(&fs->lock);
    rc = hist_open(fs);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

int mt_fs_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *q)
{
    mt_fs *fs = (mt_fs *)st;
    int rc;

    *out = NULL;
    *count = 0;
    if ((rc = hist_ready(fs)) < 0)
        return rc;
    pthread_mutex_lock(&fs->lock);
    rc = mt_hist_versions(fs->hist, out, count, q);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

int mt_fs_version(mt_store *st, mt_version *out, int64_t id)
{
    mt_fs *fs = (mt_fs *)st;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = hist_ready(fs)) < 0)
        return rc;
    pthread_mutex_lock(&fs->lock);
    rc = mt_hist_version(fs->hist, out, id);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

int mt_fs_version_content(mt_store *st, char **out, size_t *len, int64_t id)
{
    mt_fs *fs = (mt_fs *)st;
    int rc;

    *out = NULL;
    *len = 0;
    if ((rc = hist_ready(fs)) < 0)
        return rc;
    pthread_mutex_lock(&fs->lock);
    rc = mt_hist_content(fs->hist, out, len, id);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

/* What changes one version (a redaction, a re-encryption): made under the
 * store's lock, but in a transaction of its own, not a change's. */
typedef struct {
    int64_t id;
    mt_edit_cb cb; /* a re-encryption's; NULL: a redaction */
    void *payload;
} version_change;

static int change_version(mt_fs *fs, mt_store_op *op, const version_change *v)
{
    mt_store_op locked = *op;
    mt_fs_txn t;
    int rc;

    locked.history = 0;
    locked.track_ids = 0;
    if ((rc = mt_fs_begin(fs, &t, &locked, "", 1)) < 0)
        return rc;
    /* Its transaction loads the log first (mt_hist_begin), and empties it
     * once committed: a version still in the log is redacted in the
     * database, and its content is in neither. */
    if ((rc = hist_open(fs)) == 0) {
        mt_hist_log_attach(fs->hist, mt_fs_log_slot(fs));
        rc = v->cb ? mt_hist_reseal(fs->hist, v->id, v->cb, v->payload)
                   : mt_hist_redact(fs->hist, v->id, op->scrub_later);
    }
    mt_fs_end(fs, &t);
    return rc;
}

int mt_fs_redact(mt_store *st, mt_store_op *op, int64_t id)
{
    version_change v = {id, NULL, NULL};

    return change_version((mt_fs *)st, op, &v);
}

int mt_fs_version_reseal(mt_store *st, mt_store_op *op, int64_t id, mt_edit_cb cb, void *payload)
{
    version_change v = {id, cb, payload};

    return cb ? change_version((mt_fs *)st, op, &v)
              : mt_error_set(MT_EINVAL, "a re-encryption needs a callback");
}

int mt_fs_catch_up(mt_store *st, mt_store_op *op, const char *rel)
{
    mt_fs *fs = (mt_fs *)st;
    mt_fs_txn t;
    int rc;

    /* A read-only store cannot record what was changed outside memtool:
     * its history is read as it is. */
    if (fs->read_only)
        return 0;
    /* mt_fs_begin opens the history's transaction, mt_fs_end commits it. */
    if ((rc = mt_fs_begin(fs, &t, op, rel, 1)) < 0)
        return rc;
    mt_fs_hist_settle_tree(fs, op, rel);
    mt_fs_end(fs, &t);
    if (op->history && op->history_error)
        return mt_error_set(MT_EIO, "%s", op->history_error);
    return 0;
}

int mt_fs_version_count(mt_store *st, uint64_t *out)
{
    mt_fs *fs = (mt_fs *)st;
    int rc;

    *out = 0;
    if ((rc = hist_ready(fs)) < 0)
        return rc;
    pthread_mutex_lock(&fs->lock);
    rc = mt_hist_count(fs->hist, out);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

void mt_fs_ids_close(mt_fs *fs)
{
    if (fs->ids && fs->ids_forks == mt_fs_forks())
        mt_hist_close(fs->ids);
    fs->ids = NULL;
}

int mt_fs_memory_id(mt_store *st, char out[24], const char *rel)
{
    mt_fs *fs = (mt_fs *)st;
    struct stat sb;
    int fd, rc;

    fd = mt_fs_openat(fs->root_fd, rel, O_PATH, 0);
    if (fd < 0)
        return mt_fs_error(-fd, "cannot look at", rel);
    rc = fstat(fd, &sb) < 0 ? mt_fs_error(errno, "cannot look at", rel) : 0;
    close(fd);
    if (rc < 0)
        return rc;
    if (S_ISDIR(sb.st_mode))
        return mt_fs_error(EISDIR, "cannot look at", rel);
    if (log_pending(fs) && (rc = log_load(fs)) < 0)
        return rc;
    /* Its own connection, so that a lookup never waits for a change (which
     * holds the history's under the store's lock), and none made where
     * nothing was ever recorded: no database, no record. */
    pthread_mutex_lock(&fs->ids_lock);
    if (!fs->ids || fs->ids_forks != mt_fs_forks()) {
        fs->ids = NULL;
        fd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED "/" MT_FS_HISTORY_DB, O_PATH, 0);
        if (fd == -ENOENT) {
            rc = 0;
            goto done;
        }
        if (fd >= 0)
            close(fd);
        if ((rc = mt_fs_hist_open_db(&fs->ids, fs)) < 0)
            goto done;
        fs->ids_forks = mt_fs_forks();
    }
    rc = mt_hist_lookup_id(fs->ids, out, rel);
done:
    pthread_mutex_unlock(&fs->ids_lock);
    return rc;
}

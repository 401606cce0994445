/*
 * A change's transaction: begun, logged or written to the database, and
 * committed; the log of versions loaded in batches, and the paths its
 * appends touched since (the overlay).
 */
#include "machinery/hist_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

/* The paths this handle's appends touched since the log was last loaded:
 * few (a load comes every LOG_BATCH records), so a list. */
static int log_apply(mt_hist *h);

static uint64_t path_hash(const char *p)
{
    uint64_t k = 14695981039346656037ULL;

    while (*p) {
        k ^= (unsigned char)*p++;
        k *= 1099511628211ULL;
    }
    return k;
}

struct over *mt_hist_over_find(mt_hist *h, const char *path)
{
    uint64_t k = path_hash(path);
    size_t i;

    for (i = h->over_n; i-- > 0;)
        if (h->over[i].hash == k && strcmp(h->over[i].path, path) == 0)
            return &h->over[i];
    return NULL;
}

int mt_hist_over_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m, int has_fp)
{
    struct over *o = mt_hist_over_find(h, path);

    if (!o) {
        if (h->over_n == h->over_cap) {
            size_t cap = h->over_cap ? h->over_cap * 2 : 64;
            struct over *p = realloc(h->over, cap * sizeof(*p));
            if (!p)
                return mt_error_set(MT_ENOMEM, "out of memory recording a version");
            h->over = p;
            h->over_cap = cap;
        }
        o = &h->over[h->over_n];
        if (!(o->path = strdup(path)))
            return mt_error_set(MT_ENOMEM, "out of memory recording a version");
        o->hash = path_hash(path);
        h->over_n++;
    }
    o->found = found;
    o->has_fp = has_fp;
    if (found)
        o->m = *m;
    else
        memset(&o->m, 0, sizeof(o->m));
    return 0;
}

void mt_hist_over_clear(mt_hist *h)
{
    size_t i;

    for (i = 0; i < h->over_n; i++)
        free(h->over[i].path);
    h->over_n = 0;
}

void mt_hist_log_attach(mt_hist *h, volatile uint64_t *owner)
{
    h->owner = owner;
}

static void log_close(mt_hist *h)
{
    if (h->logfd >= 0)
        close(h->logfd);
    h->logfd = -1;
}

/* The log, opened at its first use (made only to append to it), and at
 * each load checked to be the file its name holds now. Like the database's
 * files it must be a plain single-link file. 1 open, 0 there is none, or an
 * error. */
static int log_open(mt_hist *h, int create, int check)
{
    struct stat sb, there;
    int fd;

    if (h->logfd >= 0 && check &&
        (fstatat(h->dirfd, LOG_NAME, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
         there.st_ino != h->log_ino || there.st_dev != h->log_dev))
        log_close(h);
    if (h->logfd >= 0)
        return 1;
    if (h->dirfd < 0)
        return 0; /* a read-only store's empty history: no log */
    fd = openat(h->dirfd, LOG_NAME,
                (h->read_only ? O_RDONLY : O_RDWR | O_APPEND) | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
                    O_NONBLOCK | (create && !h->read_only ? O_CREAT : 0),
                0600);
    if (fd < 0 && errno == ENOENT && !create)
        return 0;
    if (fd < 0)
        return mt_error_set(MT_EIO, "history's log %s: cannot open it: %s (move it away)", LOG_NAME,
                            strerror(errno));
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        close(fd);
        return mt_error_set(MT_EIO, "history's log %s is not a plain file; move it away", LOG_NAME);
    }
    h->logfd = fd;
    h->log_dev = sb.st_dev;
    h->log_ino = sb.st_ino;
    return 1;
}

/* The size of the log, 0 when there is none. */
static int log_size(mt_hist *h, uint64_t *out, int check)
{
    struct stat sb;
    int rc;

    *out = 0;
    if ((rc = log_open(h, 0, check)) <= 0)
        return rc;
    if (fstat(h->logfd, &sb) < 0)
        return mt_error_set(MT_EIO, "history's log: %s", strerror(errno));
    *out = (uint64_t)sb.st_size;
    return 0;
}

static int sql_begin(mt_hist *h)
{
    /* Claimed before anything is written (under the store's lock): a
     * transaction may give new versions the next ids, and a handle that
     * still thought itself in step after a kill between this commit and a
     * later claim would append under the same ids. */
    if (h->owner) {
        *h->owner = h->token;
        h->synced = 0;
    }
    if (sqlite3_step(mt_hist_stmt(h, S_BEGIN)) != SQLITE_DONE)
        return mt_hist_db_error(h, "cannot begin");
    h->mode = H_SQL;
    return 0;
}

/* Leave no change in progress: a transaction some failure left open must
 * not swallow the next. */
static void begin_clean(mt_hist *h)
{
    mt_hist_seen_forget(h);
    mt_hist_reset_all(h);
    h->dropped = 0;
    if (h->mode != H_IDLE || !sqlite3_get_autocommit(h->db))
        mt_hist_rollback(h);
    h->change.len = 0;
    h->change_recs = 0;
}

int mt_hist_begin(mt_hist *h)
{
    int rc;

    begin_clean(h);
    if ((rc = sql_begin(h)) < 0)
        return rc;
    /* The versions in the log come first: they are older than this change's. */
    if (h->owner && (rc = log_apply(h)) < 0) {
        mt_hist_rollback(h);
        return rc;
    }
    return 0;
}

void mt_hist_rollback(mt_hist *h)
{
    mt_hist_seen_forget(h);
    if (h->mode != H_LOGGED)
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    /* A logged change's records are dropped before they were appended; the
     * overlay has them, so it goes (the log is loaded before the next
     * append). A transaction's load of the log is undone with it. */
    h->change.len = 0;
    h->change_recs = 0;
    h->log_loaded = 0;
    h->synced = 0;
    h->mode = H_IDLE;
}

static int memory_put(mt_hist *h, const char *path, const mt_hist_mem *m, int has_fp)
{
    sqlite3_stmt *s = mt_hist_stmt(h, S_MEMORY_PUT);

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, m->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)m->size);
    if (has_fp) {
        sqlite3_bind_int64(s, 5, (int64_t)m->fp.ino);
        sqlite3_bind_int64(s, 6, m->fp.mtime_ns);
        sqlite3_bind_int64(s, 7, m->fp.ctime_ns);
    }
    return sqlite3_step(s) == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot record a memory");
}

int mt_hist_memory_set(mt_hist *h, const char *path, const mt_hist_mem *m)
{
    int rc = memory_put(h, path, m, 1);

    /* What S_FIND reads back now (a find earlier in the transaction may
     * have cached the path as it was). */
    if (rc == 0)
        mt_hist_seen_set(h, path, 1, m);
    else
        mt_hist_seen_forget(h);
    return rc;
}

static int memory_gone(mt_hist *h, const char *path)
{
    sqlite3_stmt *s = mt_hist_stmt(h, S_MEMORY_GONE);

    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : mt_hist_db_error(h, "cannot record a memory");
}

/* Put one version into the database, in the open transaction. In a
 * batch (c->batch) the live memories' rows are only noted, in the overlay,
 * and written as the batch ends (batch_end): a memory made, edited and
 * deleted within one batch costs its row nothing. */
int mt_hist_apply_rec(mt_hist *h, const mt_hist_rec *r, apply_ctx *c)
{
    sqlite3_stmt *s;
    int rc;

    mt_hist_seen_forget(h);
    if (r->op != MT_VERSION_DELETED &&
        (rc = r->data ? mt_hist_content_keep(h, r->sha256, r->data, r->len)
                      : mt_hist_content_ref(h, r->sha256)) < 0)
        return rc;
    s = mt_hist_stmt(h, S_VERSION_PUT);
    sqlite3_bind_text(s, 1, r->memory_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, (int)r->op);
    sqlite3_bind_text(s, 3, r->path, -1, SQLITE_STATIC);
    if (r->previous)
        sqlite3_bind_text(s, 4, r->previous, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, r->actor, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, r->at);
    if (r->op != MT_VERSION_DELETED)
        sqlite3_bind_text(s, 7, r->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 8, r->op == MT_VERSION_DELETED ? 0 : (int64_t)r->size);
    if (r->id > 0)
        sqlite3_bind_int64(s, 9, r->id);
    if (sqlite3_step(s) != SQLITE_DONE)
        return mt_hist_db_error(h, "cannot record a version");
    /* The live memories: where each is and how its file looks. */
    if (r->op == MT_VERSION_DELETED || r->previous) {
        const char *gone = r->previous ? r->previous : r->path;
        if ((rc = c && c->batch ? mt_hist_over_set(h, gone, 0, NULL, 0) : memory_gone(h, gone)) < 0)
            return rc;
    }
    if (r->op != MT_VERSION_DELETED) {
        mt_hist_mem m;
        memset(&m, 0, sizeof(m));
        snprintf(m.id, sizeof(m.id), "%s", r->memory_id);
        snprintf(m.sha256, sizeof(m.sha256), "%s", r->sha256);
        m.size = m.fp.size = r->size;
        if (r->has_fp) {
            m.fp.ino = r->fp.ino;
            m.fp.mtime_ns = r->fp.mtime_ns;
            m.fp.ctime_ns = r->fp.ctime_ns;
        }
        if ((rc = c && c->batch ? mt_hist_over_set(h, r->path, 1, &m, r->has_fp)
                                : memory_put(h, r->path, &m, r->has_fp)) < 0)
            return rc;
        /* After the version its change pruned after (only that one
         * carries the cap): a memory is pruned at the same versions
         * whichever way they came. */
        if (r->keep)
            return mt_hist_prune_memory(h, r->memory_id, r->keep);
    }
    return 0;
}

/* The end of a batch: the live memories' rows as the batch left them. The
 * overlay is empty again. */
static int batch_end(mt_hist *h)
{
    size_t i;
    int rc = 0;

    for (i = 0; rc == 0 && i < h->over_n; i++)
        rc = h->over[i].found ? memory_put(h, h->over[i].path, &h->over[i].m, h->over[i].has_fp)
                              : memory_gone(h, h->over[i].path);
    mt_hist_over_clear(h);
    return rc;
}

/* A load's prune by days: what the changes since the last one would have
 * pruned as each committed. Changes in a row with the same days prune the
 * same as the last of them alone (the cut only moves later, and a version
 * no longer a memory's newest stays so), so one prune per such run. */
static int batch_days(apply_ctx *c)
{
    int rc = 0;

    if (c->batch && c->days_due && c->days) {
        c->h->last_days_run = mt_hist_now_ms();
        rc = mt_hist_prune_days_at(c->h, c->days, c->days_at);
    }
    c->days = 0;
    return rc;
}

static int apply_cb(void *payload, const mt_hist_rec *r)
{
    apply_ctx *c = payload;
    int rc;

    /* Loaded already: a load whose commit was made, and whose process was
     * killed before it emptied the log (the newest version is never
     * pruned, so the database's newest id says how far it got). */
    if (r->id <= c->max)
        return 0;
    c->max = r->id;
    if (r->days != c->days && (rc = batch_days(c)) < 0)
        return rc;
    c->days = r->days;
    c->days_at = r->at;
    return mt_hist_apply_rec(c->h, r, c);
}

/* Load the log into the open transaction; it is emptied once that commits. */
static int log_apply(mt_hist *h)
{
    apply_ctx c;
    uint64_t size, end;
    int rc;

    if ((rc = log_size(h, &size, 1)) < 0 || size == 0)
        return rc;
    memset(&c, 0, sizeof(c));
    c.h = h;
    c.batch = 1;
    c.days_due = mt_hist_days_due(h);
    /* The overlay notes the batch's live memories (a change's overlay is
     * no use once the log is loaded). */
    mt_hist_over_clear(h);
    if ((rc = mt_hist_max_id(h, &c.max)) == 0 &&
        (rc = mt_hist_log_each(h->logfd, &end, apply_cb, &c)) == 0 && (rc = batch_end(h)) == 0)
        rc = batch_days(&c);
    mt_hist_over_clear(h);
    if (rc == 0)
        h->log_loaded = 1;
    return rc;
}

/* After the commit of a transaction that loaded the log. A log that cannot
 * be emptied is loaded again, and what is in the database already skipped. */
/* -1 (errno set) when the loaded log could not be emptied. */
static int log_emptied(mt_hist *h)
{
    int rc = 0;

    /* A read-only store's log stays as it is: it was loaded into the copy. */
    if (h->log_loaded && h->logfd >= 0 && !h->read_only && ftruncate(h->logfd, 0) < 0) {
        h->synced = 0;
        rc = -1;
    }
    h->log_loaded = 0;
    return rc;
}

int mt_hist_load(mt_hist *h)
{
    uint64_t size;
    int rc;

    if (!h->owner || (rc = log_size(h, &size, 1)) < 0 || size == 0)
        return h->owner ? rc : 0;
    if ((rc = mt_hist_begin(h)) < 0)
        return rc;
    return mt_hist_commit(h, NULL);
}

/* Load the log and empty it, so that this handle's appends are all it holds. */
static int log_sync(mt_hist *h)
{
    uint64_t size;
    int rc;

    h->synced = 0;
    mt_hist_over_clear(h);
    h->pending = 0;
    if ((rc = mt_hist_load(h)) < 0 || (rc = log_open(h, 1, 1)) < 0 ||
        (rc = log_size(h, &size, 0)) < 0)
        return rc;
    /* Nothing is ever appended after what a load left (a record cut short). */
    if (size != 0)
        return mt_error_set(MT_EIO, "history's log: cannot empty it");
    if ((rc = mt_hist_max_id(h, &h->next_id)) < 0)
        return rc;
    h->next_id++;
    h->log_end = 0;
    *h->owner = h->token;
    h->synced = 1;
    return 0;
}

/* Whether the log the name holds is the one this handle appends to, as
 * its last append left it: a log moved away, replaced or cut by anything
 * but memtool (which only ever empties it, loaded, and says so in the
 * slot) would take the next appends where no load finds them. */
static int log_intact(mt_hist *h)
{
    struct stat there;

    /* One look at the name: the file it holds is the open one (the inode
     * noted at the open), so its size is the open one's. */
    return h->logfd >= 0 && fstatat(h->dirfd, LOG_NAME, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
           there.st_ino == h->log_ino && there.st_dev == h->log_dev &&
           (uint64_t)there.st_size == h->log_end;
}

int mt_hist_begin_logged(mt_hist *h, unsigned days)
{
    if (!h->owner)
        return mt_hist_begin(h);
    begin_clean(h);
    if ((!h->synced || *h->owner != h->token || h->pending >= LOG_BATCH ||
         h->log_end >= LOG_BATCH_BYTES || !log_intact(h)) &&
        log_sync(h) < 0)
        return mt_hist_begin(h); /* which says what is wrong, or records all the same */
    h->mode = H_LOGGED;
    h->days = days;
    return 0;
}

/* A logged change that needs the database itself (a walk of the memories,
 * the record of ids alone): the log and the change's records so far go
 * into a transaction, and the change goes on in it. */
int mt_hist_escalate(mt_hist *h)
{
    apply_ctx c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.h = h;
    if (h->mode != H_LOGGED)
        return 0;
    h->mode = H_IDLE;
    h->synced = 0;
    mt_hist_over_clear(h);
    mt_hist_seen_forget(h);
    if ((rc = sql_begin(h)) == 0 && (rc = log_apply(h)) == 0 &&
        (rc = mt_hist_max_id(h, &c.max)) == 0)
        rc = mt_hist_rec_each(h->change.ptr, h->change.len, apply_cb, &c);
    h->change.len = 0;
    h->change_recs = 0;
    return rc; /* a failure: the caller's rollback ends the transaction */
}

int mt_hist_solid(mt_hist *h)
{
    return mt_hist_escalate(h);
}

/* A logged change's records, appended in one write. */
static int log_commit(mt_hist *h)
{
    size_t done = 0;
    int rc = 0;

    h->mode = H_IDLE;
    mt_hist_seen_forget(h);
    if (!h->change.len)
        return 0;
    if ((rc = log_open(h, 1, 0)) < 0)
        goto fail;
    while (done < h->change.len) {
        ssize_t n = write(h->logfd, h->change.ptr + done, h->change.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = mt_error_set(MT_EIO, "history's log: cannot append to it: %s",
                              n < 0 ? strerror(errno) : "nothing written");
            /* No part of a record stays before the next append: cut it off
             * (and, should that fail, the next change loads the log first,
             * which stops at it, and empties it). */
            if (done && ftruncate(h->logfd, (off_t)h->log_end) < 0)
                h->synced = 0;
            goto fail;
        }
        done += (size_t)n;
    }
    h->log_end += h->change.len;
    h->pending += h->change_recs;
    *h->owner = h->token;
    h->change.len = 0;
    h->change_recs = 0;
    return 0;
fail:
    h->synced = 0;
    h->change.len = 0;
    h->change_recs = 0;
    return rc;
}

int mt_hist_commit(mt_hist *h, const mt_store_op *op)
{
    int kept = 0;

    if (h->mode == H_LOGGED)
        return log_commit(h);
    if (op && mt_hist_prune_days(h, op->history_days) < 0) {
        mt_hist_rollback(h);
        return mt_error_last()->code;
    }
    mt_hist_seen_forget(h);
    mt_hist_reset_all(h);
    if (sqlite3_step(mt_hist_stmt(h, S_COMMIT)) != SQLITE_DONE) {
        int rc = mt_hist_db_error(h, "cannot commit");
        mt_hist_rollback(h);
        return rc;
    }
    h->mode = H_IDLE;
    /* Versions may have come into the database: no handle goes on from
     * what it knew (this one included, whose next id may have moved). */
    h->synced = 0;
    /* A redaction or a prune whose log keeps what it erased says so. */
    if (log_emptied(h) < 0 && h->dropped)
        kept = errno;
    if (h->owner)
        *h->owner = h->token;
    if (h->dropped || h->truncate_due) {
        /* The pages that held it are zeros in the database now; the log's
         * copies of them go with the log. The store's lock is held here, so
         * readers (another process's log) are waited for briefly, and a
         * truncation they hold up is tried again at the next commit. */
        int log = -1, done = -1;

        sqlite3_busy_timeout(h->db, 250);
        h->truncate_due = sqlite3_wal_checkpoint_v2(h->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log,
                                                    &done) != SQLITE_OK ||
                          log != 0;
        sqlite3_busy_timeout(h->db, BUSY_MS);
        h->dropped = 0;
    }
    if (kept)
        return mt_error_set(MT_EIO,
                            "history: content was erased from the database, but the history's "
                            "log could not be emptied (%s); run the command again to empty it",
                            strerror(kept));
    return 0;
}

/*
 * The history's SQLite VFS (history.h): the default one, except that the
 * frames of one commit reach the write-ahead log as one pwrite.
 *
 * SQLite writes each frame as two pwrites, its 24-byte header and then its
 * page, and a change of a memory is five or six frames: at durability
 * "none", where nothing is synced, those ten-odd system calls were a third
 * of what a version cost a write. Here the log's writes are gathered while
 * they follow each other in the file, and written at the end of the commit
 * frame (the one whose header gives the database size), inside SQLite's own
 * xWrite call, so a failure is SQLite's to see, as before, and nothing of a
 * commit is published to readers (the wal-index header) before its frames
 * are in the file. Any other use of the log file (a read, a sync, a
 * truncation, a lock) writes what is gathered first, and so does a barrier
 * on the shared memory, which SQLite makes before it publishes a commit: a
 * path that ends a commit without a commit frame still publishes nothing
 * the file lacks. A process killed with frames gathered dies before their
 * commit was published, which is what it was without the gathering.
 */
#include "history.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define FRAME_HEADER 24
/* Gathered bytes are written before they pass this (a big content's many
 * frames): the default VFS writes at most 128 KiB - 1 in one call (it masks
 * the length to 17 bits) and takes a write of 0 for a full disk. */
#define GATHER_MAX (64 * 1024)

typedef struct hfile {
    sqlite3_file base;
    sqlite3_file *real; /* the default VFS's file, just after this struct */
    int wal;
    char *buf;
    size_t len, cap;
    sqlite3_int64 at; /* where buf goes in the file */
    int commit;       /* buf ends with a commit frame's header: its page ends the commit */
    struct hfile *prev, *next;
} hfile;

static sqlite3_vfs vfs;
static sqlite3_vfs *root;
static sqlite3_io_methods methods;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;
/* Every open log, for the barrier; and their buffers, which a barrier on
 * another thread's connection may write. */
static pthread_mutex_t wal_lock = PTHREAD_MUTEX_INITIALIZER;
static hfile *wals;

static int flush_locked(hfile *h)
{
    int rc;

    if (!h->len)
        return SQLITE_OK;
    rc = h->real->pMethods->xWrite(h->real, h->buf, (int)h->len, h->at);
    h->len = 0;
    h->commit = 0;
    return rc;
}

static int flush(hfile *h)
{
    int rc;

    if (!h->wal)
        return SQLITE_OK;
    pthread_mutex_lock(&wal_lock);
    rc = flush_locked(h);
    pthread_mutex_unlock(&wal_lock);
    return rc;
}

static int h_close(sqlite3_file *f)
{
    hfile *h = (hfile *)f;
    int rc = flush(h), rc2;

    if (h->wal) {
        pthread_mutex_lock(&wal_lock);
        if (h->prev)
            h->prev->next = h->next;
        else
            wals = h->next;
        if (h->next)
            h->next->prev = h->prev;
        pthread_mutex_unlock(&wal_lock);
    }
    free(h->buf);
    rc2 = h->real->pMethods->xClose(h->real);
    return rc != SQLITE_OK ? rc : rc2;
}

static int h_read(sqlite3_file *f, void *p, int n, sqlite3_int64 at)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xRead(h->real, p, n, at);
}

static int gather(hfile *h, const void *p, int n, sqlite3_int64 at)
{
    size_t need = h->len + (size_t)n;

    if (h->len && at != h->at + (sqlite3_int64)h->len) {
        int rc = flush_locked(h);
        if (rc != SQLITE_OK)
            return rc;
        need = (size_t)n;
    }
    if (need > GATHER_MAX) {
        int rc = flush_locked(h);
        if (rc != SQLITE_OK || (size_t)n > GATHER_MAX)
            return rc != SQLITE_OK ? rc : h->real->pMethods->xWrite(h->real, p, n, at);
        need = (size_t)n;
    }
    if (need > h->cap) {
        size_t cap = h->cap ? h->cap : 32768;
        char *b;
        while (cap < need)
            cap *= 2;
        if (!(b = realloc(h->buf, cap))) {
            int rc = flush_locked(h);
            return rc != SQLITE_OK ? rc : h->real->pMethods->xWrite(h->real, p, n, at);
        }
        h->buf = b;
        h->cap = cap;
    }
    if (!h->len)
        h->at = at;
    memcpy(h->buf + h->len, p, (size_t)n);
    h->len += (size_t)n;
    if (n == FRAME_HEADER) {
        /* A frame's header: bytes 4-7 are the database's size in pages
         * after the commit in a commit frame, zero in any other. */
        const unsigned char *b = p;
        h->commit = (b[4] | b[5] | b[6] | b[7]) != 0;
        return SQLITE_OK;
    }
    return h->commit ? flush_locked(h) : SQLITE_OK;
}

static int h_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 at)
{
    hfile *h = (hfile *)f;
    int rc;

    if (!h->wal)
        return h->real->pMethods->xWrite(h->real, p, n, at);
    pthread_mutex_lock(&wal_lock);
    rc = gather(h, p, n, at);
    pthread_mutex_unlock(&wal_lock);
    return rc;
}

static int h_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xTruncate(h->real, size);
}

static int h_sync(sqlite3_file *f, int flags)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xSync(h->real, flags);
}

static int h_size(sqlite3_file *f, sqlite3_int64 *size)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xFileSize(h->real, size);
}

static int h_lock(sqlite3_file *f, int level)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xLock(h->real, level);
}

static int h_unlock(sqlite3_file *f, int level)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xUnlock(h->real, level);
}

static int h_reserved(sqlite3_file *f, int *out)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xCheckReservedLock(h->real, out);
}

static int h_control(sqlite3_file *f, int op, void *arg)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xFileControl(h->real, op, arg);
}

static int h_sector(sqlite3_file *f)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xSectorSize(h->real);
}

static int h_device(sqlite3_file *f)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xDeviceCharacteristics(h->real);
}

static int h_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **p)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xShmMap(h->real, page, size, extend, p);
}

static int h_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xShmLock(h->real, offset, n, flags);
}

/* SQLite's barrier before it publishes a commit: nothing gathered may be
 * left out of the file then. Which log is this database's is not known
 * here, so every gathered byte goes (there is none on the usual path). */
static void h_shm_barrier(sqlite3_file *f)
{
    hfile *h = (hfile *)f, *w;

    pthread_mutex_lock(&wal_lock);
    for (w = wals; w; w = w->next)
        (void)flush_locked(w);
    pthread_mutex_unlock(&wal_lock);
    h->real->pMethods->xShmBarrier(h->real);
}

static int h_shm_unmap(sqlite3_file *f, int del)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xShmUnmap(h->real, del);
}

static int h_fetch(sqlite3_file *f, sqlite3_int64 at, int n, void **p)
{
    hfile *h = (hfile *)f;
    int rc = flush(h);

    return rc != SQLITE_OK ? rc : h->real->pMethods->xFetch(h->real, at, n, p);
}

static int h_unfetch(sqlite3_file *f, sqlite3_int64 at, void *p)
{
    hfile *h = (hfile *)f;

    return h->real->pMethods->xUnfetch(h->real, at, p);
}

static int h_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    hfile *h = (hfile *)f;
    int rc;

    (void)v;
    memset(h, 0, sizeof(*h));
    h->real = (sqlite3_file *)(h + 1);
    rc = root->xOpen(root, name, h->real, flags, out_flags);
    if (rc != SQLITE_OK || !h->real->pMethods || h->real->pMethods->iVersion < 3) {
        if (h->real->pMethods) {
            h->real->pMethods->xClose(h->real);
            if (rc == SQLITE_OK)
                rc = SQLITE_CANTOPEN;
        }
        h->base.pMethods = NULL;
        return rc;
    }
    h->base.pMethods = &methods;
    if (flags & SQLITE_OPEN_WAL) {
        h->wal = 1;
        pthread_mutex_lock(&wal_lock);
        h->next = wals;
        if (wals)
            wals->prev = h;
        wals = h;
        pthread_mutex_unlock(&wal_lock);
    }
    return SQLITE_OK;
}

/* A fork in the middle of another thread's write must not leave the child
 * a lock no thread of its own will release. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&wal_lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&wal_lock);
}

static void setup(void)
{
    static const sqlite3_io_methods m = {
        3,          h_close,       h_read,      h_write,   h_truncate, h_sync,   h_size,
        h_lock,     h_unlock,      h_reserved,  h_control, h_sector,   h_device, h_shm_map,
        h_shm_lock, h_shm_barrier, h_shm_unmap, h_fetch,   h_unfetch,
    };

    if (!(root = sqlite3_vfs_find(NULL)))
        return;
    methods = m;
    /* Everything but the files is the default VFS's own. */
    vfs = *root;
    vfs.szOsFile = (int)sizeof(hfile) + root->szOsFile;
    vfs.zName = MT_HIST_VFS;
    vfs.pNext = NULL;
    vfs.xOpen = h_open;
    if (pthread_atfork(fork_prepare, fork_done, fork_done) != 0)
        return;
    registered = sqlite3_vfs_register(&vfs, 0);
}

int mt_hist_vfs_register(void)
{
    pthread_once(&once, setup);
    return registered == SQLITE_OK ? 0 : -1;
}

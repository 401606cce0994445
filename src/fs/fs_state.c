/*
 * The filesystem store's lock and usage counter.
 *
 * Every change runs under one lock for the whole store: a mutex among the
 * threads of a process, then an flock on RESERVED/state among processes. So
 * changes happen one at a time, each at one instant, and the outcome of any
 * concurrent changes is that of some serial order of them. Reads take no
 * lock: a file is only ever replaced whole by a rename, so a reader has
 * either the old file or the new one.
 *
 * The same file holds what the store holds (bytes, files, directories), so a
 * limit is checked against the true usage of the moment, whatever other
 * processes did, without walking the store. A change marks the counter dirty
 * before it touches anything and clean with the new numbers after; a change
 * that died half way leaves it dirty, and the next change counts the store
 * again (and removes the temporaries the dead one left). The counter is not
 * synced to disk (it is a shared mapping of the file): it records the boot it was written in, and
 * after a reboot (a power cut may have lost it, or kept it while losing the data) the store is
 * counted again once.
 */
#include "fs/fs.h"
#include "machinery/usage.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAGIC   "MTSTATE\n"
#define STATE_VERSION 1u

/* The counter as it is on disk (host byte order: it never leaves the machine). */
typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t dirty;
    char boot_id[40];
    uint64_t bytes, files, dirs;
    uint64_t check; /* FNV-1a of everything above */
} state_record;

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ULL;

    while (n--) {
        h ^= *b++;
        h *= 1099511628211ULL;
    }
    return h;
}

void mt_fs_monotonic_ms(long long *ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    *ms = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Forks this process has made: a child (whose count is one more than its
 * parent's was) opens the state file anew. Counted with pthread_atfork, so a
 * change does not ask the kernel for its pid. */
static atomic_uint forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void forked(void)
{
    atomic_fetch_add(&forks, 1);
}

static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, forked);
}

unsigned mt_fs_forks(void)
{
    pthread_once(&forks_once, watch_forks);
    return atomic_load(&forks);
}

/* The state file is mapped: the counter is read and written with plain
 * loads and stores under the lock, which saves three system calls a change
 * (a pwrite also costs a journal entry on ext4 for the mtime). Only a process
 * that may write the store's own files (its owner) could truncate it, and
 * that one could as well kill memtool. */
#define STATE_SIZE 4096

static void state_close(mt_fs *fs)
{
    mt_fs_waiter_free(fs->waiter);
    fs->waiter = NULL;
    if (fs->state_map)
        munmap(fs->state_map, STATE_SIZE);
    fs->state_map = NULL;
    if (fs->state_fd >= 0)
        close(fs->state_fd);
    fs->state_fd = -1;
}

/* The state file, made at the first change: a store that is only read (on a
 * read-only filesystem, say) never needs it. A forked child opens its own:
 * sharing the parent's open file description would share its lock. */
static int state_open(mt_fs *fs)
{
    struct stat sb;
    void *map;
    int fd, rc;

    pthread_once(&forks_once, watch_forks);
    if (fs->state_fd >= 0 && fs->state_forks == atomic_load(&forks))
        return 0;
    state_close(fs);
    if (mkdirat(fs->root_fd, MT_FS_RESERVED, 0700) < 0 && errno != EEXIST)
        return mt_error_set(MT_EIO, "cannot make the store's own directory %s: %s", MT_FS_RESERVED,
                            strerror(errno));
    fd = mt_fs_openat(fs->root_fd, MT_FS_RESERVED "/state", O_RDWR | O_CREAT | O_NOCTTY, 0600);
    if (fd < 0)
        return mt_error_set(fd == -ELOOP || fd == -ENOTDIR ? MT_EUNSUPPORTED : MT_EIO,
                            "cannot open the store's lock and counter %s/state: %s", MT_FS_RESERVED,
                            strerror(-fd));
    /* A new file is made its full size (zeros: no valid counter, so the
     * first change counts the store); two processes doing so at once agree. */
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
        (sb.st_size < STATE_SIZE && ftruncate(fd, STATE_SIZE) < 0)) {
        rc = mt_error_set(MT_EIO, "cannot use the store's lock and counter %s/state: %s",
                          MT_FS_RESERVED, S_ISREG(sb.st_mode) ? strerror(errno) : "not a file");
        close(fd);
        return rc;
    }
    map = mmap(NULL, STATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        rc = mt_error_set(MT_EIO, "cannot map the store's counter %s/state: %s", MT_FS_RESERVED,
                          strerror(errno));
        close(fd);
        return rc;
    }
    if ((rc = mt_fs_waiter_new(&fs->waiter, fd)) < 0) {
        munmap(map, STATE_SIZE);
        close(fd);
        return rc;
    }
    fs->state_fd = fd;
    fs->state_map = map;
    fs->state_forks = atomic_load(&forks);
    fs->state_dev = sb.st_dev;
    fs->state_ino = sb.st_ino;
    return 0;
}

static int state_read(mt_fs *fs, mt_store_usage *out)
{
    state_record r;

    memcpy(&r, fs->state_map, sizeof(r));
    if (memcmp(r.magic, STATE_MAGIC, 8) != 0 || r.version != STATE_VERSION ||
        r.check != fnv1a(&r, offsetof(state_record, check)) || r.dirty ||
        strncmp(r.boot_id, fs->boot_id, sizeof(r.boot_id)) != 0)
        return -1;
    out->bytes = r.bytes;
    out->files = r.files;
    out->dirs = r.dirs;
    return 0;
}

static void state_write(mt_fs *fs, const mt_store_usage *u, int dirty)
{
    state_record r;

    memset(&r, 0, sizeof(r));
    memcpy(r.magic, STATE_MAGIC, 8);
    r.version = STATE_VERSION;
    r.dirty = (uint32_t)dirty;
    memcpy(r.boot_id, fs->boot_id, sizeof(r.boot_id));
    r.bytes = u->bytes;
    r.files = u->files;
    r.dirs = u->dirs;
    r.check = fnv1a(&r, offsetof(state_record, check));
    memcpy(fs->state_map, &r, sizeof(r));
}

/* Whether the open state file is still the one at RESERVED/state. */
static int state_current(mt_fs *fs)
{
    struct stat there;

    return fstatat(fs->root_fd, MT_FS_RESERVED "/state", &there, AT_SYMLINK_NOFOLLOW) == 0 &&
           there.st_dev == fs->state_dev && there.st_ino == fs->state_ino;
}

/* Past the counter's record, in the same shared page: a memtool that does
 * not know it leaves it alone (it writes only the record). */
#define LOG_SLOT 512

volatile uint64_t *mt_fs_log_slot(mt_fs *fs)
{
    return (volatile uint64_t *)((char *)fs->state_map + LOG_SLOT);
}

void mt_fs_state_close(mt_fs *fs)
{
    state_close(fs);
}

static int lock_busy(mt_store_op *op, const char *rel)
{
    (void)rel;
    return mt_error_set(MT_EBUSY,
                        "another process has held the store's lock for over %u ms; nothing "
                        "was changed, try again later",
                        op->lock_timeout_ms);
}

int mt_fs_lock(mt_fs *fs, unsigned timeout_ms)
{
    long long deadline, now;
    int tries;
    struct timespec abs;
    int rc;

    mt_fs_monotonic_ms(&deadline);
    deadline += timeout_ms;
    clock_gettime(CLOCK_REALTIME, &abs);
    abs.tv_sec += timeout_ms / 1000;
    abs.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (abs.tv_nsec >= 1000000000L) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000L;
    }
    if ((rc = pthread_mutex_trylock(&fs->lock)) != 0 &&
        (rc = pthread_mutex_timedlock(&fs->lock, &abs)) != 0)
        return rc == ETIMEDOUT ? MT_FS_LOCK_TIMEOUT
                               : mt_error_set(MT_EIO, "cannot lock the store: %s", strerror(rc));
    for (tries = 0;; tries++) {
        if ((rc = state_open(fs)) < 0)
            goto fail;
        mt_fs_monotonic_ms(&now);
        if ((rc = mt_fs_lock_wait(fs->waiter, fs->state_fd,
                                  now < deadline ? (unsigned)(deadline - now) : 0)) < 0) {
            rc = rc == -EWOULDBLOCK
                     ? MT_FS_LOCK_TIMEOUT
                     : mt_error_set(MT_EIO, "cannot lock the store: %s", strerror(-rc));
            goto fail;
        }
        /* The lock is only the store's while its file is the one at
         * RESERVED/state: a file deleted or replaced from outside (a user
         * tidying up, a restore) would leave this process locking one file
         * and others another. Then open the one that is there now. */
        if (state_current(fs))
            return 0;
        flock(fs->state_fd, LOCK_UN);
        state_close(fs);
        if (tries == 8) {
            rc = mt_error_set(MT_EBUSY, "the store's lock file %s/state keeps being replaced",
                              MT_FS_RESERVED);
            goto fail;
        }
    }
fail:
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

void mt_fs_unlock(mt_fs *fs)
{
    flock(fs->state_fd, LOCK_UN);
    pthread_mutex_unlock(&fs->lock);
}

int mt_fs_begin(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *rel, int shrinks)
{
    int rc;

    memset(t, 0, sizeof(*t));
    if (fs->read_only)
        return mt_store_read_only_error();
    if ((rc = mt_fs_lock(fs, op->lock_timeout_ms)) < 0)
        return rc == MT_FS_LOCK_TIMEOUT ? lock_busy(op, rel) : rc;
    /* A handle without the key writes only while the store is plain. */
    if (op->plain && (rc = mt_fs_sealed(fs)) != 0) {
        mt_fs_unlock(fs);
        return rc < 0 ? rc : mt_store_sealed_error();
    }
    if (state_read(fs, &t->usage) < 0) {
        /* Missing, damaged, from another boot, or dirty: count it all, and
         * remove what changes that died left behind. A count that cannot see
         * everything fails, so the limits are never checked against too little. */
        rc = mt_fs_count_tree(&t->usage, fs->root_fd, 1);
        if (rc < 0 && shrinks && rc != MT_ENOMEM) {
            /* Counted again at the next change, when this one may have freed the cause. */
            memset(&t->usage, 0, sizeof(t->usage));
            t->recount = 1;
            rc = 0;
        }
        if (rc < 0) {
            char why[256];
            snprintf(why, sizeof(why), "%s", mt_error_last()->message);
            rc = mt_error_set(rc == MT_ENOMEM ? MT_ENOMEM : MT_EIO,
                              "cannot count what the store holds, so its limits cannot be "
                              "checked (%s); nothing was changed",
                              why);
            mt_fs_unlock(fs);
            return rc;
        }
    }
    /* Dirty until the change is done: if it dies half way, the next one counts again. */
    ((volatile state_record *)fs->state_map)->dirty = 1;
    t->op = op;
    mt_fs_hist_begin(fs, op);
    return 0;
}

void mt_fs_end(mt_fs *fs, mt_fs_txn *t)
{
    /* The versions first, still under the lock, so they follow the changes' order. */
    mt_fs_hist_end(fs, t->op);
    /* A failed write leaves the counter dirty, which only costs a recount. */
    state_write(fs, &t->usage, t->recount);
    flock(fs->state_fd, LOCK_UN);
    pthread_mutex_unlock(&fs->lock);
}

void mt_fs_account(mt_fs_txn *t, int64_t bytes, int64_t files, int64_t dirs)
{
    /* Going below zero means the store was changed outside memtool: the
     * counter is clamped now and counted again at the next change. */
    if ((bytes < 0 && (uint64_t)-bytes > t->usage.bytes) ||
        (files < 0 && (uint64_t)-files > t->usage.files) ||
        (dirs < 0 && (uint64_t)-dirs > t->usage.dirs))
        t->recount = 1;
    t->usage.bytes = mt_store_usage_add(t->usage.bytes, bytes);
    t->usage.files = mt_store_usage_add(t->usage.files, files);
    t->usage.dirs = mt_store_usage_add(t->usage.dirs, dirs);
}

int mt_fs_quota(mt_fs_txn *t, mt_store_op *op, const char *rel, int64_t bytes, int64_t files,
                int64_t dirs)
{
    return mt_store_quota(op, &t->usage, rel, bytes, files, dirs);
}

int mt_fs_usage(mt_store *st, mt_store_usage *out)
{
    mt_fs *fs = (mt_fs *)st;
    mt_store_op op;
    mt_fs_txn t;
    int rc;

    /* Nothing can change a read-only store through memtool, and its
     * counter cannot be locked: counted as it is (temporaries left alone). */
    if (fs->read_only)
        return mt_fs_count_tree(out, fs->root_fd, 0);
    mt_store_op_init(&op);
    if ((rc = mt_fs_begin(fs, &t, &op, "", 0)) < 0)
        return rc;
    *out = t.usage;
    mt_fs_end(fs, &t);
    return 0;
}

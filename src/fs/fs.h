/* The filesystem store's internals, shared by its source files. */
#ifndef MT_STORE_FS_H
#define MT_STORE_FS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <memtool/store.h>

#include "util/buf.h"
#include "util/path.h"

typedef struct mt_fs_waiter mt_fs_waiter;

typedef struct {
    mt_store base;
    int root_fd;
    mt_durability durability;
    /* Every change holds the store's lock: this mutex among the threads of
     * this process, then an flock on the state file among processes. */
    pthread_mutex_t lock;
    int state_fd;         /* RESERVED/state, opened at the first change; -1 before */
    mt_fs_waiter *waiter; /* waits for the flock when another process holds it */
    void *state_map;      /* the counter, mapped from the state file */
    unsigned state_forks; /* the forks counted when it was opened (fs_state.c) */
    dev_t state_dev;      /* and which file it is */
    ino_t state_ino;
    char boot_id[40];       /* this boot's id: a counter written in another boot is recounted */
    struct mt_hist *hist;   /* the history database, opened at the first change that records */
    unsigned hist_forks;    /* the forks counted when it was opened: a child opens its own */
    int hist_active;        /* a change in progress records versions (its transaction is open) */
    int hist_track;         /* one keeps only the record of memory ids (history off, encrypted) */
    int ids_exact;          /* the database says its record of memory ids is exact */
    char hist_error[256];   /* why the history could not be kept, for the front ends to say */
    struct mt_hist *search; /* the search index's connection to the same database */
    unsigned search_forks;  /* the forks counted when it was opened */
    struct mt_search_index *search_index; /* its statements, on that connection */
    pthread_mutex_t search_lock; /* one search of this handle at a time brings it up to date */
    struct mt_hist *ids;         /* memory_id's connection to the same database, for reading */
    unsigned ids_forks;          /* the forks counted when it was opened */
    pthread_mutex_t ids_lock;    /* one lookup of this handle at a time */
    /* The store cannot be written (a read-only mount, no permission): reads
     * work, the history is read into a copy in memory (its log loaded there,
     * `ro_slot` standing in for the shared state's), and every change fails. */
    int read_only;
    volatile uint64_t ro_slot;
    struct mt_hist *ro_loaded; /* the history copy whose log was loaded (read-only) */
} mt_fs;

#include "contract/store_contract.h"

/* mt_store_fs_open with flags; *read_only (may be NULL) is set when the
 * store cannot be written. */
int mt_store_fs_open_with(mt_store **out, int *read_only, const char *root,
                          mt_durability durability, unsigned flags);

/* The store's own directory, beside the memories: the lock and the usage
 * counter live there. The path rules refuse this name as any component, so
 * no request can read, write, list or move it. */
#define MT_FS_RESERVED MT_RESERVED_NAME
/* The history's (and the search index's) database in it. */
#define MT_FS_HISTORY_DB "history.db"

/* Directories deeper than this are neither entered nor counted; a count
 * that meets one fails. memtool never makes a tree deeper than
 * MT_STORE_MAX_DEPTH, so only a tree made outside it can be this deep. */
#define MT_WALK_MAX_DEPTH 256

/* A change in progress: the store's lock is held from mt_fs_begin to
 * mt_fs_end, and `usage` is what the store holds, kept up to date by the
 * change as it goes. */
typedef struct {
    mt_store_usage usage;
    int recount;     /* the change may have left the counter wrong: count again next time */
    mt_store_op *op; /* its history is committed at mt_fs_end */
} mt_fs_txn;

/* Take the store's lock (waiting at most op->lock_timeout_ms) and read the
 * usage counter, counting the store again when the counter is missing,
 * damaged, from another boot, or left dirty by a change that died. A count
 * that fails refuses the change, unless `shrinks` (a delete, which no limit
 * stops: it must stay possible, to remove what cannot be counted). */
int mt_fs_begin(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *rel, int shrinks);

/* The store's lock alone (mt_fs_begin takes it first): 0 held,
 * MT_FS_LOCK_TIMEOUT (no message set) when timeout_ms passed, or another
 * error. Release with mt_fs_unlock. */
#define MT_FS_LOCK_TIMEOUT (-1001)
int mt_fs_lock(mt_fs *fs, unsigned timeout_ms);
void mt_fs_unlock(mt_fs *fs);

/* The bounded wait for the flock on fd (fs_wait.c): 0 with the lock held,
 * -EWOULDBLOCK when timeout_ms passed, or another -errno. */
int mt_fs_waiter_new(mt_fs_waiter **out, int fd);
int mt_fs_lock_wait(mt_fs_waiter *w, int fd, unsigned timeout_ms);
void mt_fs_waiter_free(mt_fs_waiter *w);

/* How many times this process has forked (a handle opened before a fork is
 * not the child's to use). */
unsigned mt_fs_forks(void);

/*
 * History (fs_history.c), all under the store's lock. mt_fs_begin opens a
 * history transaction (when op->history is set), the change records what it
 * does: first what was changed outside memtool at the paths it touches
 * (settle), then its own versions, and mt_fs_end commits them all. A
 * history that cannot be kept never stops a change: op->history_error says
 * why, and the next change tries again. With history off and op->track_ids
 * set (an encrypted store), the transaction keeps only the record of which
 * memory is at each path: mt_fs_hist_record and mt_fs_hist_tree update it,
 * nothing is settled and no version is made.
 */
int mt_fs_hist_begin(mt_fs *fs, mt_store_op *op);
void mt_fs_hist_end(mt_fs *fs, mt_store_op *op);
/* The file name in dirfd (store path rel), as it is now; given `sb` and its
 * content when the caller has read them already; dirfd -1: nothing is there. */
int mt_fs_hist_settle(mt_fs *fs, mt_store_op *op, int dirfd, const char *name, const char *rel,
                      const struct stat *sb, const char *data, size_t len);
/* Every file at rel or beneath it, and every memory recorded there. */
int mt_fs_hist_settle_tree(mt_fs *fs, mt_store_op *op, const char *rel);
/* A version of the change just made: the file is now open as fd (or
 * name in dirfd) with this content (NULL: unchanged, for a rename), whose
 * SHA-256 is sha256 when it was hashed already (NULL or "": not yet). */
int mt_fs_hist_record(mt_fs *fs, mt_store_op *op, mt_version_op what, const char *rel,
                      const char *previous, const char *data, size_t len, const char *sha256,
                      int fd, int dirfd, const char *name);
/* An edit's version: with op->reseal, the newest version's content
 * replaced instead when it can be (mt_hist_reseal_current). */
int mt_fs_hist_modified(mt_fs *fs, mt_store_op *op, const char *rel, const char *data, size_t len,
                        const char *sha256, int fd, int dirfd, const char *name);
/* Every memory at or beneath rel deleted, or moved to `to`. */
int mt_fs_hist_tree(mt_fs *fs, mt_store_op *op, const char *rel, const char *to);
/* Whether the history of the change in progress records a memory at rel
 * (0 also when it keeps none). */
int mt_fs_hist_knows(mt_fs *fs, const char *rel);
/* The SHA-256 of what the file (already open) holds, checked against
 * op->expect_sha256: 0 when it matches, MT_ECONFLICT when not. */
int mt_fs_hist_expect(mt_store_op *op, const char *rel, const char *data, size_t len);
void mt_fs_hist_close(mt_fs *fs);
int mt_fs_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *q);
int mt_fs_version(mt_store *st, mt_version *out, int64_t id);
int mt_fs_version_content(mt_store *st, char **out, size_t *len, int64_t id);
int mt_fs_redact(mt_store *st, mt_store_op *op, int64_t id);
int mt_fs_version_reseal(mt_store *st, mt_store_op *op, int64_t id, mt_edit_cb cb, void *payload);
int mt_fs_catch_up(mt_store *st, mt_store_op *op, const char *rel);
int mt_fs_version_count(mt_store *st, uint64_t *out);
/* The memory the history database records at rel (a read: no catching up,
 * and no database made where there is none). */
int mt_fs_memory_id(mt_store *st, char out[24], const char *rel);
void mt_fs_ids_close(mt_fs *fs);

/*
 * Expiry (fs_access.c). A file's last access is the newest of its atime and
 * mtime: a change writes a new file (both set), a rename sets the atime, and
 * a view's touch sets the atime (only, never the mtime) when it is more than
 * a grain old. The store's own reads open files O_NOATIME where the kernel
 * allows it, so only views count; a read by anyone else may count (see
 * SECURITY.md).
 */
int64_t mt_fs_last_access(const struct stat *sb);
/* Set name's atime in dirfd to now (a rename: the memory was written). */
void mt_fs_access_now(int dirfd, const char *name);
int mt_fs_touch(mt_store *st, int64_t *recorded, const char *rel, int64_t now_ms);
int mt_fs_idle(mt_store *st, const char *rel, mt_idle_cb cb, void *payload);
int mt_fs_times(mt_store *st, const char *rel, int64_t accessed_ms, int64_t modified_ms);

/* The history log's slot in the state file's mapping (history.h,
 * mt_hist_log_attach): valid while the store's lock is held. */
volatile uint64_t *mt_fs_log_slot(mt_fs *fs);

/* Unmap and close the state file (when the store is freed). */
void mt_fs_state_close(mt_fs *fs);

/* Write the counter back and release the lock. */
void mt_fs_end(mt_fs *fs, mt_fs_txn *t);

/* Whether the change (adding these to the usage) keeps every limit of op;
 * fills op's refusal and returns MT_ELIMIT when it does not. */
int mt_fs_quota(mt_fs_txn *t, mt_store_op *op, const char *rel, int64_t bytes, int64_t files,
                int64_t dirs);

/* Add to the usage (never below zero: a store changed outside memtool may
 * hold less than the counter says, and is then counted again). */
void mt_fs_account(mt_fs_txn *t, int64_t bytes, int64_t files, int64_t dirs);

/* A directory's names, read whole. */
typedef struct {
    size_t name; /* offset in the directory's name buffer */
    unsigned char type;
} mt_dirent;

typedef struct {
    mt_buf names; /* the names, each NUL-terminated */
    mt_dirent *list;
    size_t count;
} mt_dir;

/* All names of a directory but . and .., sorted by bytes. */
int mt_fs_read_dir(mt_dir *d, int dirfd);
void mt_fs_dir_dispose(mt_dir *d);

/* Every node beneath rel, hidden names included (fs_each.c). */
int mt_fs_walk(mt_store *st, const char *rel, mt_walk_cb cb, void *payload);

/* Search (fs_search.c): an index beside the history, brought up to date by
 * each search from the files' inode, size, modification and change times
 * (fs_search_walk.c). */
int mt_fs_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                 const char *path, size_t limit);
void mt_fs_search_close(mt_fs *fs);
/* The memory at rel's words erased from the search index (store.h,
 * mt_store_op.scrub); 0 where there is no index. */
int mt_fs_search_scrub(mt_fs *fs, const char *rel);

/* Open (creating) a database in the store's own directory. */
int mt_fs_hist_open_db(struct mt_hist **out, mt_fs *fs);

/* Open rel (a normalised relative path; "" is the root) beneath dirfd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV): the kernel, not string checks, keeps it inside. Returns
 * an fd or a negative errno. */
int mt_fs_openat(int dirfd, const char *rel, int flags, mode_t mode);

/* Milliseconds of the monotonic clock, for the bounds of waits. */
void mt_fs_monotonic_ms(long long *ms);

/* Open the directory that holds rel's last component (which must exist);
 * *name points into rel at that component. */
int mt_fs_open_parent(mt_fs *fs, int *out_fd, const char **name, const char *rel);

/* Open the regular file at name (beneath dirfd) for reading. A FIFO, a
 * socket or a device found there is never opened (MT_EUNSUPPORTED), nor is
 * a file with more than one hard link (MT_EMULTILINK); a directory is
 * MT_EISDIR. *sb is the opened file's. */
int mt_fs_open_regular(int *out_fd, struct stat *sb, int dirfd, const char *name, const char *what,
                       const char *rel);

/* errno as an mt_error_code, with a message naming what was being done. */
int mt_fs_error(int err, const char *what, const char *rel);

/* fsync after the change is already in place: a failure is MT_ENOTDURABLE,
 * so the caller can say the change was made. */
int mt_fs_sync_done(int fd, const char *rel);

/* Read exactly `size` bytes of fd (a regular file whose fstat gave that
 * size) into a malloc'd, NUL-terminated buffer; a file that shrank since is
 * read to its end, one that grew is not read past `size`. */
int mt_fs_read_fd(char **out, size_t *out_len, int fd, size_t size, const char *rel);

/* fsync with the error made an mt_error_code. */
int mt_fs_sync(int fd, const char *rel);

/* A fresh temporary name: ".mt-tmp." and a closing backslash, a byte the
 * path rules refuse, so no request can name one. */
void mt_fs_temp_name(char name[64]);

/* Write data to a new temporary file in dirfd; returns its fd and fills
 * name. With sha256 set, a big content's SHA-256 is put there (hashed while
 * it is written), else "" (the caller hashes it if it must). */
int mt_fs_write_temp(mt_fs *fs, int *out_fd, char name[64], int dirfd, const char *data, size_t len,
                     const char *rel, char sha256[65]);

/*
 * The rest of putting a change in place (fs_write.c), shared by the changes
 * (fs_change.c: create, edit; fs_move.c: remove, rename).
 */
/* Write all of data to fd: 0, or a negative errno. */
int mt_fs_write_all(int fd, const char *data, size_t len);

/* renameat2(RENAME_NOREPLACE), or link+unlink where the filesystem lacks it:
 * both refuse atomically when the name is taken. */
int mt_fs_rename_noreplace(int fromfd, const char *from, int tofd, const char *to);

/* The same for a directory, which link() cannot take: without
 * RENAME_NOREPLACE, look then rename; under the store's lock only a process
 * that is not memtool could slip in between. */
int mt_fs_rename_dir_noreplace(int fromfd, const char *from, int tofd, const char *to);

/* Put data at name in dirfd atomically: a temporary file, synced as the
 * durability asks, renamed into place (never replacing unless asked). */
int mt_fs_put(mt_fs *fs, int dirfd, const char *name, const char *data, size_t len, int replace,
              const char *rel, char sha256[65]);

/* Where a path's directories stop existing. */
typedef struct {
    int fd;              /* the deepest directory on the way that exists */
    const char *missing; /* in rel: the first component that does not exist, or NULL */
    unsigned count;      /* components from `missing` to the parent of the last */
    unsigned depth;      /* components in rel */
    const char *name;    /* in rel: the last component */
} mt_fs_parents;

/* Find the parent directories of rel's last component, as far as they
 * exist. A component that is a file or a link is an error (naming what). */
int mt_fs_find_parents(mt_fs_parents *p, mt_fs *fs, const char *rel, const char *what);
void mt_fs_parents_close(mt_fs_parents *p);

/*
 * Make the missing directories p->missing ... (p->count of them) inside
 * p->fd. With `hidden`, they are made under a temporary name standing for
 * the first one, to be renamed into place by the caller: then nothing shows
 * until that rename, and a crash leaves only a temporary that the next
 * recount removes. fds[i] gets the i-th new directory, fds[count-1] the
 * innermost; names[0] the temporary name.
 */
int mt_fs_make_dirs(const mt_fs_parents *p, int hidden, int *fds, char first[64], const char *rel);

/* Sync the new directories bottom up: each one's entry in its parent. */
int mt_fs_sync_dirs(mt_fs *fs, int *fds, unsigned count, const char *rel);
void mt_fs_close_dirs(int *fds, unsigned count);

/* Remove the directories that p->missing named, deepest first, once they
 * are empty again: a failed rename leaves the store as it found it. */
void mt_fs_unmake_dirs(const mt_fs_parents *p, int *fds);

/* Remove the hidden tree `top` in dirfd that a failed change made; what
 * cannot be removed now (out of descriptors, say) is left to the next
 * recount, which removes every temporary. */
void mt_fs_drop_temp(mt_fs_txn *t, int dirfd, const char *top);

/* Remove everything below the directory dirfd, however deep (never
 * following a link, never holding more than a few dozen descriptors). */
int mt_fs_remove_tree(int dirfd);

/* Whether a name is one of memtool's temporary files. */
int mt_fs_is_temp(const char *name);

/* Whether a name is the store's own, left out by every walk (sizes, counts,
 * searches, migrate): anything with the temporaries' prefix, and the
 * reserved directory's name in any letter case, wherever they stand. The
 * path rules refuse both in every component, so no memory is ever there. */
int mt_fs_is_internal(const char *name);

/* The longest store path a request can name: "/memories/" and the path fit
 * MT_PATH_MAX. */
#define MT_FS_REL_MAX (MT_PATH_MAX - (sizeof("/memories/") - 1))

/* What one entry of a store directory is: the rules every walk shares. */
typedef enum {
    MT_FS_SKIP = 0, /* the store's own (mt_fs_is_internal), or gone since it was listed */
    MT_FS_FILE,     /* a regular file */
    MT_FS_DIR,      /* a directory */
    MT_FS_OTHER     /* a link, a FIFO, a socket, a device: never followed, never a memory */
} mt_fs_kind;

/* Look at the entry `name` of dirfd (d_type from readdir, DT_UNKNOWN when
 * not known: only then, and for regular files, does it cost an fstatat,
 * which never follows a link). `parent_len` is the length of the
 * directory's store path. *sb is filled for a file; *named says whether a
 * request path can name the entry (a component the path rules accept, in a
 * path short enough): a named file is a memory, anything else is not.
 * Returns the kind, or a negative errno when it cannot be looked at. */
int mt_fs_entry(struct stat *sb, int *named, int dirfd, const char *name, unsigned char d_type,
                size_t parent_len);

/* Remove a temporary entry of dirfd that no live writer holds (its flock).
 * Without the store's lock (`locked` 0) it must also be MT_TEMP_STALE_SECONDS
 * old: a writer under the lock makes its temporary, then locks it, and must
 * not lose it in between; under the lock only a change prepared outside it
 * can be live, and that one goes again if its temporary is taken. */
#define MT_TEMP_STALE_SECONDS 10
void mt_fs_clean_temp(int dirfd, const char *name, int locked);

/* Count everything beneath the directory dirfd (regular files, their bytes,
 * directories), failing rather than skipping what cannot be read; dead
 * temporaries met on the way are removed (`clean`: the lock is held). */
int mt_fs_count_tree(mt_store_usage *out, int dirfd, int clean);

int mt_fs_create(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len);
/* The create inside a change already begun (mt_fs_begin): its versions are
 * recorded only while the history is active. */
int mt_fs_create_txn(mt_fs *fs, mt_fs_txn *t, mt_store_op *op, const char *rel, const char *data,
                     size_t len);
/* Import (fs_import.c): a memory of another store with its history. */
int mt_fs_import(mt_store *st, mt_store_op *op, mt_store_import *in);
/* The record that the store is encrypted (fs_record.c; store.h, `encryption`). */
/* The head of a memory of the store, bounded work (store.h, first_head). */
int mt_fs_first_head(mt_store *st, char *head, size_t *len, char **path);
/* 1 when the store keeps an encryption record, 0 when not, or why not known. */
int mt_fs_sealed(mt_fs *fs);
int mt_fs_encryption(mt_store *st, char **out, const char *put, int replace,
                     unsigned lock_timeout_ms);
int mt_fs_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload);
int mt_fs_remove(mt_store *st, mt_store_op *op, const char *path);
int mt_fs_rename(mt_store *st, mt_store_op *op, const char *from, const char *to);
int mt_fs_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
               size_t max_entries);
int mt_fs_usage(mt_store *st, mt_store_usage *out);

#endif

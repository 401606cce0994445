/*
 * One walk of the store's directories, shared out to helper threads when
 * there are many: what a count (usage, a listing's sizes) and a search's
 * freshness walk both are, one fstatat per file, work that scales with
 * cores. Each directory is opened beneath the one that holds it, by its
 * descriptor (mt_fs_openat's confinement): a path of any length is reached,
 * a directory renamed meanwhile is walked whole through the descriptor
 * already open, and a link swapped in is never followed. Which entries are
 * memories is mt_fs_entry's rule; what is done with them is the walker's.
 */
#ifndef MT_STORE_FS_POOL_H
#define MT_STORE_FS_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fs/fs.h"

/* What a walk does with what it finds. `dir` is the walker's own record of
 * a directory (a job), `payload` the walk's. Every callback but leave may
 * fail the walk with a negative mt_error_code (its message set). */
typedef struct {
    /* Only what a request path can name (a search), or every file and
     * directory (a count: the disk they take is the store's). */
    int memories_only;
    /* A directory that cannot be opened fails the walk, even one replaced
     * by a link or a file meanwhile: a count must never come out short. */
    int complete;
    /* Temporaries met: -1 left alone, else removed when dead (mt_fs_clean_temp's `locked`). */
    int clean;
    /* How a failure begins: "cannot count", "cannot search". */
    const char *what;
    /* The directory's store path, for messages and the length of paths, or
     * NULL when the walker does not keep paths. */
    const char *(*path)(void *payload, void *dir);
    /* Its descriptor, before its entries are read; NULL: nothing to do. */
    int (*enter)(void *payload, void *dir, int fd);
    int (*file)(void *payload, void *dir, const char *name, size_t len, const struct stat *sb);
    /* A directory found in dir, opened: *child is its record. */
    int (*subdir)(void *payload, void **child, void *dir, const char *name, size_t len);
    /* The last call for every record handed in, walked or not (a walk that
     * failed drops what it had not walked yet); NULL: nothing to do. */
    void (*leave)(void *payload, void *dir);
} mt_fs_walker;

typedef struct mt_fs_job mt_fs_job;

typedef struct {
    const mt_fs_walker *walker;
    void *payload;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    mt_fs_job *jobs; /* waiting, most recent first */
    size_t queued, pushed, busy;
    int closing;    /* the caller has no more jobs to give */
    int rc;         /* the first failure: the walk stops */
    char why[1024]; /* its message, copied on the thread that met it (errors are per thread) */
    pthread_t helpers[7];
    int nhelpers;
} mt_fs_pool;

int mt_fs_pool_init(mt_fs_pool *p, const mt_fs_walker *walker, void *payload);

/* Walk the directory fd (taken over and closed), `depth` directories
 * beneath where the walk began, as the record dir: then or later, on this
 * thread or a helper. */
void mt_fs_pool_dir(mt_fs_pool *p, int fd, unsigned depth, void *dir);

/* Start the helpers now, not once there is much to share: they walk what
 * was handed over while this thread does other work before it finishes. */
void mt_fs_pool_start(mt_fs_pool *p);

/* Fail the walk from outside it (rc and its message set on this thread). */
void mt_fs_pool_fail(mt_fs_pool *p, int rc);

/* Walk whatever is left, with the helpers, and stop them. Returns 0 or the
 * first failure, its message set on this thread: a walk that could not see
 * everything fails, it never comes out short. The pool is gone either way. */
int mt_fs_pool_finish(mt_fs_pool *p);

/* For tests, NULL otherwise: called before each entry of a directory is
 * looked at, with the directory's store path (NULL when the walker keeps
 * none). A test changes the store there, to see what a walk makes of it. */
extern void (*mt_fs_pool_hook)(const char *dir, const char *name);

#endif

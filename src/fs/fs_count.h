/*
 * Adding up the regular files beneath directories, on the store's shared
 * walk (fs_pool.h): the sizes a listing shows are totals of everything
 * beneath each entry, so a listing of a big store is one fstatat per file,
 * and that work scales with cores where nothing else about a listing does.
 */
#ifndef MT_STORE_FS_COUNT_H
#define MT_STORE_FS_COUNT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs_pool.h"

/* Where counted bytes go: a listed directory (or the listing itself), which
 * passes its total on to its parent once everything is counted. */
typedef struct mt_fs_sum {
    struct mt_fs_sum *parent;
    struct mt_fs_sum *older;  /* the sum made before this one */
    size_t entry;             /* the listing entry it sizes, or MT_FS_NO_ENTRY */
    uint64_t local;           /* added by the listing thread */
    _Atomic uint64_t counted; /* added by counting jobs, on any thread */
    uint64_t below;           /* totals passed on by its children */
    /* The same for the number of regular files. */
    uint64_t local_files;
    _Atomic uint64_t counted_files;
    uint64_t below_files;
} mt_fs_sum;

#define MT_FS_NO_ENTRY ((size_t)-1)

typedef struct {
    mt_fs_walker walker;
    mt_fs_pool pool;
    _Atomic uint64_t files; /* regular files counted */
    _Atomic uint64_t dirs;  /* directories counted (those handed in not included) */
} mt_fs_count;

/* `clean`: dead temporaries met are removed (mt_fs_clean_temp's `locked`). */
int mt_fs_count_init(mt_fs_count *c, int clean);

/* Add up everything beneath the directory fd (which this takes over and
 * closes) into sum, then or later, on this thread or a helper. `depth` is
 * how far beneath the directory the count began it is, for the depth bound. */
void mt_fs_count_dir(mt_fs_count *c, int fd, unsigned depth, mt_fs_sum *sum);

/* Count whatever is left, with the helpers, and stop them. Returns 0 or the
 * first error a job met: a count that could not see everything fails, it
 * never comes out short. The pool is gone either way. */
int mt_fs_count_finish(mt_fs_count *c);

#endif

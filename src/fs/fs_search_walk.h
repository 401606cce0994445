/*
 * The files a search of the filesystem store brings its index up to: every
 * regular file beneath a path with its stamp, found by one fstatat each.
 * That walk is most of a search on a big store, and it is work that scales
 * with cores: it is the store's shared walk (fs_pool.c), the one a count
 * makes, so its directories go to helper threads when there are many, each
 * opened beneath the one that holds it. A walk that raced with a rename in
 * the tree (a directory found nowhere, or under a name it no longer has) is
 * made again, a few times at most.
 */
#ifndef MT_STORE_FS_SEARCH_WALK_H
#define MT_STORE_FS_SEARCH_WALK_H

#include <stddef.h>

#include "fs/fs.h"
#include "fs/fs_pool.h"
#include "machinery/search_index.h"

typedef struct mt_fs_dir_files mt_fs_dir_files;

/* The files found: docs sorted by path in byte order, their paths held by
 * the directories' own buffers (dirs: the tree walked), and their digest
 * (MT_SEARCH_SUM_BYTES, search_index.h): the same files with the same
 * stamps, and only they, give the same digest. */
typedef struct {
    mt_search_doc *docs;
    size_t count;
    mt_fs_dir_files *dirs;
    unsigned char sum[MT_SEARCH_SUM_BYTES];
} mt_fs_search_files;

void mt_fs_search_files_dispose(mt_fs_search_files *f);

/*
 * Every memory at or beneath rel (a directory; mt_fs_entry's rule, as
 * mt_fs_walk sees them: links never followed, never a memory), each
 * with its stamp: inode, size, modification and change times, and, for a
 * file bigger than `indexed` bytes, that limit. The walk is in two halves:
 * begun, it goes on on helper threads while this one does something else
 * (a search answers its query from the index), then ended, this thread
 * joining in. The helpers start at once when `helpers` says so (their
 * start costs about as much as walking a few dozen files), else only once
 * the walk, from its end, has many directories to share. Begun, it is
 * ended exactly once, and stays where it is meanwhile (the helpers use
 * it); beginning cannot fail: its failure is what the end returns.
 */
typedef struct {
    const char *rel;
    size_t indexed;
    int fd;
    int rc;
    mt_fs_pool pool;
    mt_fs_dir_files *root;
    char why[1024]; /* a failure to begin, kept for the end (errors are per thread) */
} mt_fs_search_walking;

void mt_fs_search_walk_begin(mt_fs_search_walking *w, mt_fs *fs, const char *rel, size_t indexed,
                             int helpers);
int mt_fs_search_walk_end(mt_fs_search_files *out, mt_fs_search_walking *w);

/* The stamp of a file with this stat (fits an mt_search_doc's). */
void mt_fs_search_stamp(char *out, size_t size, const struct stat *sb, size_t indexed);

#endif

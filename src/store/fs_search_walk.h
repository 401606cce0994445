/*
 * The files a search of the filesystem store brings its index up to: every
 * regular file beneath a path with its stamp, found by one fstatat each.
 * That walk is most of a search on a big store, and it is work that scales
 * with cores, so its directories are shared out to helper threads when
 * there are many (as a listing's counts are, fs_count.c).
 */
#ifndef MT_STORE_FS_SEARCH_WALK_H
#define MT_STORE_FS_SEARCH_WALK_H

#include <stddef.h>

#include "fs.h"
#include "search_index.h"

typedef struct mt_fs_dir_files mt_fs_dir_files;

/* The files found: docs sorted by path in byte order, their paths held by
 * the directories' own buffers. */
typedef struct {
    mt_search_doc *docs;
    size_t count;
    mt_fs_dir_files *dirs;
} mt_fs_search_files;

/*
 * Every regular file at or beneath rel (a directory; hidden names and
 * links as mt_fs_walk sees them: never followed, never a memory), each
 * with its stamp: inode, size, modification and change times, and, for a
 * file bigger than `indexed` bytes, that limit.
 */
int mt_fs_search_walk(mt_fs_search_files *out, mt_fs *fs, const char *rel, size_t indexed);
void mt_fs_search_files_dispose(mt_fs_search_files *f);

/* The stamp of a file with this stat (fits an mt_search_doc's). */
void mt_fs_search_stamp(char *out, size_t size, const struct stat *sb, size_t indexed);

#endif

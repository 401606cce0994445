/*
 * Search in the filesystem store: an index in the store's own database
 * (beside the history), brought up to date by each search. A memory's stamp
 * is its file's inode, size, modification and change times: an edit by
 * memtool (a new file renamed into place), by an editor or by `echo >>`
 * changes one of them, and so does a write that keeps the size and puts the
 * modification time back (the change time cannot be set), so a search never
 * answers from words a file no longer holds. A file bigger than the words
 * indexed of it (the handle's max file size) has that size in its stamp
 * too: a handle with another limit indexes it again, to its own.
 *
 * The walk that stamps every file is a search's biggest cost besides the
 * query, and it is system calls: it runs on the helper threads while this
 * one answers the query from the index, and that answer stands when the
 * index held every file as found (mt_search_index_run). The walk's digest
 * of what it found spares comparing the index's every memory with them
 * when the index still holds what it held at the last search.
 */
#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_search_walk.h"
#include "machinery/history.h"
#include "machinery/search_index.h"

typedef struct {
    mt_buf *out;
    size_t cap;
} read_state;

static int take(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    read_state *r = payload;

    (void)off;
    (void)last;
    if (len > r->cap - r->out->len)
        len = r->cap - r->out->len;
    if (mt_buf_put(r->out, data, len) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory reading a memory to index it");
    return r->out->len >= r->cap ? 1 : 0;
}

static int read_doc(void *payload, mt_buf *out, const char *path, size_t cap)
{
    mt_store *st = payload;
    read_state r = {out, cap};
    uint64_t size;

    return st->read(st, &size, path, MT_STORE_PIECE, take, &r);
}

/* The index's statements go as its connection closes (a parent's too,
 * which this process closes as it opens one of its own). */
static void index_closing(void *ix)
{
    mt_search_index_free(ix);
}

/* How many memories the index must hold beneath a search's path for its
 * walk to start on helper threads before the query: a thread's start and
 * join cost about 60 µs here, the walk of a file 1-2 µs. */
#define WALK_EARLY 256

/* The walk, on the helper threads while the index answers the query. */
typedef struct {
    mt_fs_search_walking walking;
    mt_fs_search_files files;
} walk_job;

/* mt_search_index_run calls this once, on every path: the helpers are
 * joined before the search returns. */
static int walk_end(void *payload, const mt_search_doc **docs, size_t *n, const unsigned char **sum)
{
    walk_job *w = payload;
    int rc = mt_fs_search_walk_end(&w->files, &w->walking);

    *docs = w->files.docs;
    *n = w->files.count;
    *sum = rc == 0 ? w->files.sum : NULL;
    return rc;
}

void mt_fs_search_close(mt_fs *fs)
{
    if (fs->search && fs->search_forks == mt_fs_forks())
        mt_hist_close(fs->search);
    fs->search_index = NULL;
    fs->search = NULL;
}

/* The search's connection, opened (again, in a forked child) when needed;
 * under fs->search_lock. Its own: the history's belongs to the changes,
 * under the store's lock, and a search takes no part in that. */
static int search_conn(mt_fs *fs)
{
    int rc;

    if (fs->search && fs->search_forks == mt_fs_forks())
        return 0;
    mt_fs_search_close(fs);
    if ((rc = mt_fs_hist_open_db(&fs->search, fs)) < 0)
        return rc;
    fs->search_forks = mt_fs_forks();
    if ((rc = mt_search_index_open(&fs->search_index, mt_hist_sqlite(fs->search))) < 0) {
        mt_fs_search_close(fs);
        return rc;
    }
    mt_hist_on_close(fs->search, index_closing, fs->search_index);
    return 0;
}

int mt_fs_search_scrub(mt_fs *fs, const char *rel)
{
    struct mt_hist *h = NULL;
    struct stat sb;
    int rc;

    /* No database, no index: nothing was ever indexed. */
    if (fstatat(fs->root_fd, MT_FS_RESERVED "/" MT_FS_HISTORY_DB, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : mt_fs_error(errno, "cannot look for the search index of", rel);
    /* A connection of its own that makes no index where there is none. */
    if ((rc = mt_fs_hist_open_db(&h, fs)) < 0)
        return rc;
    rc = mt_hist_scrub_words(h, rel);
    mt_hist_close(h);
    return rc;
}

int mt_fs_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                 const char *path, size_t limit)
{
    mt_fs *fs = (mt_fs *)st;
    uint64_t max_size = q->max_size ? q->max_size : MT_SEARCH_INDEX_CAP;
    size_t indexed = max_size < SIZE_MAX ? (size_t)max_size : SIZE_MAX;
    walk_job walk = {.files = {.docs = NULL}};
    size_t held;
    int rc;

    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&fs->search_lock);
    if ((rc = search_conn(fs)) < 0)
        goto done;
    /* Helpers from the start only for a walk long enough to repay them. */
    if ((rc = mt_search_index_held(&held, fs->search_index, path, WALK_EARLY)) < 0)
        goto done;
    mt_fs_search_walk_begin(&walk.walking, fs, path, indexed, held >= WALK_EARLY);
    rc = mt_search_index_run(out, count, fs->search_index, walk_end, &walk, read_doc, st, indexed,
                             q, path, limit);
done:
    pthread_mutex_unlock(&fs->search_lock);
    mt_fs_search_files_dispose(&walk.files);
    return rc;
}

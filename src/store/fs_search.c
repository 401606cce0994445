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
 */
#include "fs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_search_walk.h"
#include "history.h"
#include "search_index.h"

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

void mt_fs_search_close(mt_fs *fs)
{
    if (fs->search && fs->search_forks == mt_fs_forks())
        mt_hist_close(fs->search);
    fs->search_index = NULL;
    fs->search = NULL;
}

int mt_fs_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                 const char *path, size_t limit)
{
    mt_fs *fs = (mt_fs *)st;
    uint64_t max_size = q->max_size ? q->max_size : MT_SEARCH_INDEX_CAP;
    size_t indexed = max_size < SIZE_MAX ? (size_t)max_size : SIZE_MAX;
    mt_fs_search_files files = {NULL, 0, NULL};
    int rc;

    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&fs->search_lock);
    /* Its own connection: the history's belongs to the changes, under the
     * store's lock, and a search takes no part in that. */
    if (!fs->search || fs->search_forks != mt_fs_forks()) {
        mt_fs_search_close(fs);
        if ((rc = mt_fs_hist_open_db(&fs->search, fs)) < 0)
            goto done;
        fs->search_forks = mt_fs_forks();
        if ((rc = mt_search_index_open(&fs->search_index, mt_hist_sqlite(fs->search))) < 0) {
            mt_fs_search_close(fs);
            goto done;
        }
        mt_hist_on_close(fs->search, index_closing, fs->search_index);
    }
    if ((rc = mt_fs_search_walk(&files, fs, path, indexed)) < 0)
        goto done;
    rc = mt_search_index_run(out, count, fs->search_index, files.docs, files.count, read_doc, st,
                             indexed, q, path, limit);
done:
    pthread_mutex_unlock(&fs->search_lock);
    mt_fs_search_files_dispose(&files);
    return rc;
}

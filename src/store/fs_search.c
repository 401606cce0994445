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

#include "history.h"
#include "search_index.h"

typedef struct {
    mt_search_doc *v;
    size_t n, cap;
    size_t indexed; /* the most of each file indexed */
} doc_list;

static int collect(void *payload, const char *path, mt_node_type type, const struct stat *sb)
{
    doc_list *l = payload;
    mt_search_doc *grown;

    if (type != MT_NODE_FILE)
        return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        if (!(grown = realloc(l->v, l->cap * sizeof(*l->v))))
            return mt_error_set(MT_ENOMEM, "out of memory searching the store");
        l->v = grown;
    }
    if (!(l->v[l->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory searching the store");
    snprintf(l->v[l->n].stamp, sizeof(l->v[l->n].stamp), "%llu:%lld:%lld.%09ld:%lld.%09ld",
             (unsigned long long)sb->st_ino, (long long)sb->st_size, (long long)sb->st_mtim.tv_sec,
             (long)sb->st_mtim.tv_nsec, (long long)sb->st_ctim.tv_sec, (long)sb->st_ctim.tv_nsec);
    if ((uint64_t)sb->st_size > l->indexed) {
        size_t len = strlen(l->v[l->n].stamp);

        snprintf(l->v[l->n].stamp + len, sizeof(l->v[l->n].stamp) - len, "<%zu", l->indexed);
    }
    l->n++;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mt_search_doc *)a)->path, ((const mt_search_doc *)b)->path);
}

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
    doc_list l = {NULL, 0, 0, max_size < SIZE_MAX ? (size_t)max_size : SIZE_MAX};
    size_t i;
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
    if ((rc = mt_fs_walk_stat(fs, path, collect, &l)) < 0)
        goto done;
    if (l.n)
        qsort(l.v, l.n, sizeof(*l.v), by_path);
    rc = mt_search_index_run(out, count, fs->search_index, l.v, l.n, read_doc, st, l.indexed, q,
                             path, limit);
done:
    pthread_mutex_unlock(&fs->search_lock);
    for (i = 0; i < l.n; i++)
        free(l.v[i].path);
    free(l.v);
    return rc;
}

/* A memory's exact content, for programs (memtool cat, bindings, migrate). */
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "core/memory.h"

typedef struct {
    char *data;
    size_t len, cap, max;
} read_state;

static int read_piece(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    read_state *s = payload;

    (void)off;
    (void)last;
    /* Written to between the stat and the open: still within the limit. */
    if (len > s->cap - s->len) {
        char *grown;
        if (len > s->max - s->len)
            return mt_error_set(MT_ELIMIT, "the file grew past the file-size limit as it was read");
        if (!(grown = realloc(s->data, s->len + len + 1)))
            return mt_error_set(MT_ENOMEM, "out of memory");
        s->data = grown;
        s->cap = s->len + len;
    }
    memcpy(s->data + s->len, data, len);
    s->len += len;
    return 0;
}

int mt_memory_read(char **out, size_t *len, mt_memory *m, const char *path)
{
    read_state s = {NULL, 0, 0, 0};
    mt_node_type type;
    uint64_t size;
    char *rel = NULL;
    int rc;

    if (!out || !len || !m || !path)
        return mt_error_set(MT_EINVAL, "mt_memory_read needs out pointers, a handle and a path");
    *out = NULL;
    *len = 0;
    if ((rc = mt_memory_rel(&rel, path)) < 0)
        return rc;
    if ((rc = m->store->stat(m->store, &type, &size, rel)) < 0) {
        if (rc == MT_ENOTFOUND)
            mt_error_set(rc, "%.300s does not exist", path);
        goto done;
    }
    if (type == MT_NODE_DIR) {
        rc = mt_error_set(MT_EISDIR, "%.300s is a directory: view it instead", path);
        goto done;
    }
    /* Memory is bounded by the limits, whatever the store holds: a bigger
     * file (put there from outside) is for view with view_range. */
    if (size > m->opts.max_file_size) {
        rc =
            mt_error_set(MT_ELIMIT,
                         "%.300s holds %llu bytes, over the %llu-byte file-size limit: view it "
                         "in ranges, or raise --max-file-size",
                         path, (unsigned long long)size, (unsigned long long)m->opts.max_file_size);
        goto done;
    }
    s.cap = (size_t)size;
    s.max = (size_t)m->opts.max_file_size;
    if (!(s.data = mt_alloc_big(s.cap + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = m->store->read(m->store, &size, rel, MT_STORE_PIECE, read_piece, &s)) < 0) {
        if (rc == MT_ENOTFOUND)
            mt_error_set(rc, "%.300s does not exist", path);
        goto done;
    }
    s.data[s.len] = '\0';
    *out = s.data;
    *len = s.len;
    s.data = NULL;
done:
    free(s.data);
    free(rel);
    return rc;
}

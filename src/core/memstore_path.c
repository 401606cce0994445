/* A create or a rename on a memory store, checked against the API's path rules
 * (util/api_path.c holds the rules themselves). */
#include <string.h>
#include <stdlib.h>

#include <memtool.h>
#include <memtool/store.h>

#include "core/memory.h"
#include "core/memstore_path.h"

/* The API path ("/" + store path) of to + (path past from): a moved file. */
typedef struct {
    const char *from, *to;
    size_t from_len;
    char *bad; /* the first API path refused, malloc'd */
} moved_check;

static int check_one(moved_check *c, const char *rel_tail)
{
    size_t to_len = strlen(c->to), tail = strlen(rel_tail), n = 1 + to_len + tail;
    char *api = malloc(n + 1);

    if (!api)
        return mt_error_set(MT_ENOMEM, "out of memory");
    api[0] = '/';
    memcpy(api + 1, c->to, to_len);
    memcpy(api + 1 + to_len, rel_tail, tail + 1);
    if (mt_memstore_path_check("the path", api, n) == MT_EINVAL) {
        c->bad = api;
        return 1;
    }
    free(api);
    return 0;
}

static int moved_cb(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    moved_check *c = payload;
    int rc;

    (void)size;
    if (type != MT_NODE_FILE || strncmp(path, c->from, c->from_len) != 0)
        return 0;
    if ((rc = check_one(c, path + c->from_len)) != 0)
        return rc < 0 ? rc : MT_ECONFLICT; /* stop the walk: one is enough */
    return 0;
}

int mt_memstore_path_refused(mt_reply *r, mt_memory *m, const char *verb, mt_str path,
                             const char *rel, const char *from)
{
    moved_check c = {0};
    int rc;

    if (!m->opts.memory_store)
        return 0;
    c.to = rel;
    if ((rc = check_one(&c, "")) < 0)
        return rc;
    if (!c.bad && from && m->store->walk) {
        c.from = from;
        c.from_len = strlen(from);
        rc = m->store->walk(m->store, from, moved_cb, &c);
        if (rc < 0 && !c.bad && rc != MT_ENOTFOUND && rc != MT_ENOTDIR)
            return rc;
    }
    if (!c.bad)
        return 0;
    rc = mt_reply_fail(r, verb, path, "") < 0 ||
                 mt_buf_printf(&r->text,
                               ": %s (this is a memory store of memtool server, which keeps the "
                               "memory-store API's path rules)",
                               mt_error_last()->message) < 0
             ? MT_ENOMEM
             : 1;
    free(c.bad);
    return rc;
}

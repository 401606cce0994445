/* The read-modify-write that str_replace and insert share. */
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

int mt_edit_reserve(mt_edit *e, size_t new_len)
{
    int rc = mt_limits_check(e->r, e->m, e->path, new_len);

    if (rc != 0) {
        e->answered = 1;
        return rc < 0 ? rc : MT_ELIMIT;
    }
    return 0;
}

/* A write equal to the current state is answered without a new version
 * (the memory-store API's rule): the store is stopped before it writes, so
 * the file, its times and the history stay as they were. */
static int unchanged_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    mt_edit *e = payload;
    int rc = e->made(out, out_len, data, len, payload);

    if (rc < 0 || *out_len != len || memcmp(*out, data, len) != 0)
        return rc;
    free(*out);
    *out = NULL;
    *out_len = 0;
    e->unchanged = 1;
    return MT_ESTOPPED;
}

int mt_edit_run(mt_edit *e, const char *rel, mt_edit_cb cb, const char *missing)
{
    mt_store_op op;
    int rc;

    if (!*rel)
        return mt_reply_fail(e->r, "Error: The path ", e->path, missing);
    mt_reply_op(&op, e->r, e->m);
    e->made = cb;
    e->unchanged = 0;
    rc = e->m->store->edit(e->m->store, &op, rel, unchanged_cb, e);
    mt_memory_note(e->m, &op);
    if (rc == MT_ESTOPPED && e->unchanged) {
        /* Still a use of the memory, as a view is: expiry sees it so. */
        mt_memory_touch(e->m, rel);
        return 1;
    }
    if (rc == MT_ENOMEM)
        return rc;
    if (rc == MT_ECONFLICT)
        return mt_reply_conflict(e->r, &op, e->path);
    if (rc == 0)
        return 1;
    /* The store refused what the callback made (store size), or the file
     * before reading it (file size): the callback's words give way. */
    if (rc == MT_ELIMIT && op.refused != MT_LIMIT_NONE)
        return mt_reply_limit(e->r, &op, e->path, NULL) < 0 ? MT_ENOMEM : 0;
    if (e->answered)
        return 0;
    if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
        return mt_reply_fail(e->r, "Error: The path ", e->path, missing);
    return mt_reply_store_error(e->r, rc, e->path);
}

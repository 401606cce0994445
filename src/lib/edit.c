/* The read-modify-write that str_replace and insert share. */
#include "memory.h"

int mt_edit_reserve(mt_edit *e, size_t old_len, size_t new_len)
{
    int64_t delta = (int64_t)new_len - (int64_t)old_len;
    int rc = mt_limits_check(e->r, e->m, e->path, new_len, delta, 0);

    if (rc != 0) {
        e->answered = 1;
        return rc < 0 ? rc : MT_ELIMIT;
    }
    e->reserved = delta;
    return 0;
}

int mt_edit_run(mt_edit *e, const char *rel, mt_edit_cb cb, const char *missing)
{
    int rc;

    if (!*rel)
        return mt_reply_fail(e->r, "Error: The path ", e->path, missing);
    rc = e->m->store->edit(e->m->store, rel, cb, e);
    if (rc == MT_ENOMEM)
        return rc;
    if (rc == 0 || rc == MT_ENOTDURABLE) {
        /* The edit is in place: a shrink shows in the usage count now (growth
         * was reserved before writing). */
        if (e->reserved < 0)
            mt_usage_note(e->m, e->reserved, 0);
        if (rc == 0)
            return 1;
        return mt_reply_store_error(e->r, rc, e->path);
    }
    if (e->reserved > 0)
        mt_usage_note(e->m, -e->reserved, 0);
    if (e->answered)
        return 0;
    if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
        return mt_reply_fail(e->r, "Error: The path ", e->path, missing);
    return mt_reply_store_error(e->r, rc, e->path);
}

/* create: a new file, written whole or not at all. */
#include "memory.h"

int mt_op_create(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str text)
{
    int rc;

    if (!*rel)
        return mt_reply_fail(r, "Error: File ", path, " already exists");
    if ((rc = mt_limits_check(r, m, path, text.len, (int64_t)text.len, 1)) != 0)
        return rc < 0 ? rc : 0;
    rc = m->store->create(m->store, rel, text.ptr, text.len);
    if (rc < 0) {
        if (rc != MT_ENOTDURABLE)
            mt_usage_note(m, -(int64_t)text.len, -1);
        if (rc == MT_EEXISTS)
            return mt_reply_fail(r, "Error: File ", path, " already exists");
        return mt_reply_store_error(r, rc, path);
    }
    return mt_reply_ok(r, "File created successfully at: ", path, "");
}

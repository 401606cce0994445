/* create: a new file, written whole or not at all. */
#include "memory.h"

int mt_op_create(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str text)
{
    mt_store_op op;
    int rc;

    if (!*rel)
        return mt_reply_fail(r, "Error: File ", path, " already exists");
    if ((rc = mt_limits_check(r, m, path, text.len)) != 0)
        return rc < 0 ? rc : 0;
    mt_memory_op(&op, m);
    rc = m->store->create(m->store, &op, rel, text.ptr, text.len);
    mt_memory_note(m, &op);
    if (rc == MT_EEXISTS)
        return mt_reply_fail(r, "Error: File ", path, " already exists");
    if (rc == MT_ELIMIT)
        return mt_reply_limit(r, &op, path, NULL);
    if (rc < 0)
        return mt_reply_store_error(r, rc, path);
    return mt_reply_ok(r, "File created successfully at: ", path, "");
}

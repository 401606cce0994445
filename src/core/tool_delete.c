/* delete: a file, a link (not its target), or a whole directory. */
#include "core/memory.h"

int mt_op_delete(mt_reply *r, mt_memory *m, mt_str path, const char *rel)
{
    mt_store_op op;
    int rc;

    if (!*rel)
        return mt_reply_failf(r, "Error: Cannot delete the /memories directory itself");
    mt_reply_op(&op, r, m);
    rc = m->store->remove(m->store, &op, rel);
    mt_memory_note(m, &op);
    if (rc == MT_ECONFLICT)
        return mt_reply_conflict(r, &op, path);
    if (rc == MT_ENOTFOUND)
        return mt_reply_fail(r, "Error: The path ", path, " does not exist");
    if (rc < 0)
        return mt_reply_store_error(r, rc, path);
    return mt_reply_ok(r, "Successfully deleted ", path, "");
}

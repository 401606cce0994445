/* delete: a file, a link (not its target), or a whole directory. */
#include "memory.h"

int mt_op_delete(mt_reply *r, mt_memory *m, mt_str path, const char *rel)
{
    mt_node_type type = MT_NODE_DIR;
    uint64_t size = 0;
    int rc, known;

    if (!*rel)
        return mt_reply_failf(r, "Error: Cannot delete the /memories directory itself");
    /* Knowing a file's size keeps the usage count exact without a recount. */
    known = m->store->stat(m->store, &type, &size, rel) == 0 && type == MT_NODE_FILE;
    rc = m->store->remove(m->store, rel);
    if (rc == MT_ENOTFOUND)
        return mt_reply_fail(r, "Error: The path ", path, " does not exist");
    if (rc < 0) {
        mt_usage_forget(m);
        return mt_reply_store_error(r, rc, path);
    }
    if (known)
        mt_usage_note(m, -(int64_t)size, -1);
    else
        mt_usage_forget(m);
    return mt_reply_ok(r, "Successfully deleted ", path, "");
}

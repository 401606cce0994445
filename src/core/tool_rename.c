/* rename: move a file or directory, never replacing anything. */
#include <string.h>

#include "core/memory.h"
#include "util/api_path.h"

int mt_op_rename(mt_reply *r, mt_memory *m, mt_str old_path, const char *old_rel, mt_str new_path,
                 const char *new_rel)
{
    size_t old_len = strlen(old_rel);
    mt_node_type type;
    mt_store_op op;
    uint64_t size;
    int rc;

    if (!*old_rel)
        return mt_reply_failf(r, "Error: Cannot rename the /memories directory itself");
    /* The source must exist before anything else about the move is judged
     * (a link at the source counts: it is moved itself). The store's rename
     * looks at the source first; only the cases judged here need a look of
     * their own. */
    if (!*new_rel || strcmp(old_rel, new_rel) == 0 ||
        (strncmp(new_rel, old_rel, old_len) == 0 && new_rel[old_len] == '/')) {
        rc = m->store->stat(m->store, &type, &size, old_rel);
        if (rc == MT_ENOTFOUND)
            return mt_reply_fail(r, "Error: The path ", old_path, " does not exist");
        if (!*new_rel || strcmp(old_rel, new_rel) == 0)
            return mt_reply_fail(r, "Error: The destination ", new_path, " already exists");
        if (rc == 0 && type == MT_NODE_DIR)
            return mt_reply_fail(r, "Error: Cannot move ", old_path, " into itself");
    }
    if ((rc = mt_memstore_path_refused(r, m, "Error: Cannot rename to ", new_path, new_rel,
                                       old_rel)) != 0)
        return rc < 0 ? rc : 0;
    mt_reply_op(&op, r, m);
    /* The check above walked the source without the store's lock; the
     * store holds what it moves to the same bounds under it. */
    if (m->opts.memory_store) {
        op.max_depth = MT_MEMSTORE_PATH_MAX_SEGMENTS;
        op.max_path_bytes = MT_MEMSTORE_PATH_MAX_BYTES - 1; /* the API path's "/" */
    }
    rc = m->store->rename(m->store, &op, old_rel, new_rel);
    mt_memory_note(m, &op);
    if (rc == MT_ECONFLICT)
        return mt_reply_conflict(r, &op, old_path);
    if (rc == MT_ENOTFOUND && op.culprit == 0)
        return mt_reply_fail(r, "Error: The path ", old_path, " does not exist");
    if (rc == MT_EEXISTS)
        return mt_reply_fail(r, "Error: The destination ", new_path, " already exists");
    if (rc == MT_ELIMIT)
        return mt_reply_limit(r, &op, new_path, &old_path);
    /* Name the path at fault: a model told the destination is wrong when the
     * source is would try other destinations. */
    if (rc < 0)
        return mt_reply_store_error(r, rc, op.culprit == 0 ? old_path : new_path);
    if (mt_reply_ok(r, "Successfully renamed ", old_path, " to ") < 0 ||
        mt_reply_str(r, new_path) < 0)
        return MT_ENOMEM;
    return 0;
}

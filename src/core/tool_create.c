/* create: a new file, written whole or not at all. */
#include "core/memory.h"

int mt_op_create(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str text)
{
    mt_store_op op;
    mt_guard g;
    int rc;

    if (!*rel)
        return mt_reply_fail(r, "Error: File ", path, " already exists");
    if ((rc = mt_memstore_path_refused(r, m, "Error: Cannot create ", path, rel, NULL)) != 0)
        return rc < 0 ? rc : 0;
    if ((rc = mt_guard_content(&g, m, text.ptr, text.len)) < 0)
        return rc;
    if (g.rejected) {
        rc = mt_guard_reject(r, path, &g.found);
        goto done;
    }
    if (g.found.count)
        text = (mt_str){g.data, g.len};
    if ((rc = mt_limits_check(r, m, path, text.len)) != 0) {
        rc = rc < 0 ? rc : 0;
        goto done;
    }
    mt_memory_op(&op, m);
    rc = m->store->create(m->store, &op, rel, text.ptr, text.len);
    mt_memory_note(m, &op);
    if (rc == MT_EEXISTS)
        rc = mt_reply_fail(r, "Error: File ", path, " already exists");
    else if (rc == MT_ELIMIT)
        rc = mt_reply_limit(r, &op, path, NULL);
    else if (rc < 0)
        rc = mt_reply_store_error(r, rc, path);
    else
        rc = mt_reply_ok(r, "File created successfully at: ", path, "") < 0 ||
                     mt_guard_note(&r->text, &g.found) < 0
                 ? MT_ENOMEM
                 : 0;
done:
    mt_guard_dispose(&g);
    return rc;
}

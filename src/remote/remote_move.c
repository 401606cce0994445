/*
 * A remote store's removes and renames: of one memory, under the SHA-256 it
 * was read with, or of a directory, one request for each memory beneath it,
 * saying what was done when a step fails midway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/store_contract.h"
#include "remote/remote_store.h"
#include "util/sha256.h"

/* DELETE one memory, if it still holds sha: 0 (gone, by us or meanwhile),
 * MT_ECONFLICT (it holds other content now), or an error. */
static int delete_one(mt_remote_store *rs, const char *id, const char *sha, const char *what)
{
    mt_buf target = MT_BUF_INIT;
    mt_remote_resp r;
    int rc;

    if (mt_remote_memory_target(&target, id) < 0 ||
        mt_buf_puts(&target, "?expected_content_sha256=") < 0 ||
        mt_remote_escape(&target, sha) < 0) {
        mt_buf_dispose(&target);
        return MT_ENOMEM;
    }
    rc = mt_remote_send(&rs->http, &r, "DELETE", target.ptr, NULL, MT_REMOTE_SAFE, what);
    mt_buf_dispose(&target);
    if (rc < 0)
        return rc;
    /* A 404 to a delete sent again after a failure: the first went through. */
    if (r.status == 200 || r.status == 204 || (r.status == 404 && r.attempts > 1))
        rc = 0;
    else if (r.status == 404)
        rc = MT_ENOTFOUND;
    else if (r.status == 409 || r.status == 412)
        rc = MT_ECONFLICT;
    else
        rc = mt_remote_fail(&r, MT_EIO, what);
    mt_remote_resp_dispose(&r);
    return rc;
}

/* The server refused a change for content other than the one read: what
 * the memory at path holds now, for op->current_sha256 ("" when it is gone). */
static void current_now(mt_remote_store *rs, mt_store_op *op, const char *path)
{
    mt_rmem m;

    op->current_sha256[0] = '\0';
    if (mt_remote_find(rs, &m, path, 0) == MT_NODE_FILE)
        memcpy(op->current_sha256, m.sha, 65);
    mt_rmem_dispose(&m);
}

/* Say what a directory's change did before it failed. */
static int midway(int rc, const char *verb, size_t done, size_t total, const char *dir,
                  const char *failed)
{
    char why[600];

    if (done == 0)
        return rc;
    snprintf(why, sizeof(why), "%s", mt_error_last()->message);
    return mt_error_set(rc == MT_ENOMEM ? MT_ENOMEM : MT_EIO,
                        "%s %zu of the %zu memories beneath /%s, then failed on /%s: %s; the "
                        "rest are as they were",
                        verb, done, total, dir, failed, why);
}

int mt_remote_remove(mt_store *st, mt_store_op *op, const char *path)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    mt_remote_tree t;
    mt_buf what = MT_BUF_INIT;
    size_t i, total = 0, done = 0;
    unsigned attempt;
    int rc = 0;

    op->version = 0;
    if (op->idle_before_ms)
        return mt_remote_not_here("removing idle memories (expiry)");
    if (!*path)
        return mt_error_set(MT_EINVAL, "the root of a store cannot be removed");
    if (mt_buf_printf(&what, "the delete of /%s", path) < 0)
        return MT_ENOMEM;
    for (attempt = 0; attempt < MT_REMOTE_EDIT_ATTEMPTS; attempt++) {
        mt_rmem m;
        if ((rc = mt_remote_find(rs, &m, path, 0)) == MT_ENOTFOUND && op->expect_sha256) {
            rc = 0; /* a retry of a remove that went through (store.h) */
            goto done;
        }
        if (rc < 0)
            goto done;
        if (rc == MT_NODE_DIR)
            break;
        if (op->empty_dir) {
            mt_rmem_dispose(&m);
            rc = MT_ECONFLICT;
            goto done;
        }
        if (op->expect_sha256 && strcmp(op->expect_sha256, m.sha) != 0) {
            memcpy(op->current_sha256, m.sha, 65);
            mt_rmem_dispose(&m);
            rc = MT_ECONFLICT;
            goto done;
        }
        rc = delete_one(rs, m.id, m.sha, what.ptr);
        mt_rmem_dispose(&m);
        if (rc == MT_ECONFLICT && op->expect_sha256) {
            current_now(rs, op, path);
            goto done;
        }
        if (rc == MT_ECONFLICT && !op->expect_sha256) {
            mt_remote_nap(attempt); /* edited meanwhile: a remove takes what is there now */
            continue;
        }
        if (rc == MT_ENOTFOUND)
            continue; /* gone or moved meanwhile: look again */
        goto done;
    }
    if (attempt == MT_REMOTE_EDIT_ATTEMPTS) {
        rc = mt_error_set(MT_EBUSY, "/%s kept changing while it was deleted", path);
        goto done;
    }
    /* A directory: every memory beneath it. */
    if (op->expect_sha256) {
        rc = mt_remote_not_a_file();
        goto done;
    }
    if ((rc = mt_remote_tree_load(rs, &t, path)) < 0)
        goto done;
    if (op->empty_dir && t.files) {
        mt_remote_tree_dispose(&t);
        rc = MT_ECONFLICT;
        goto done;
    }
    for (i = 0; i < t.count; i++)
        total += t.nodes[i].type == MT_NODE_FILE;
    for (i = 0; i < t.count && rc >= 0; i++) {
        if (t.nodes[i].type != MT_NODE_FILE)
            continue;
        rc = delete_one(rs, t.nodes[i].id, t.nodes[i].sha, what.ptr);
        if (rc == MT_ENOTFOUND)
            rc = 0; /* gone meanwhile */
        if (rc == MT_ECONFLICT)
            rc = mt_error_set(MT_ECONFLICT, "/%s was changed meanwhile", t.nodes[i].path);
        if (rc < 0)
            rc = midway(rc, "deleted", done, total, path, t.nodes[i].path);
        else
            done++;
    }
    mt_remote_tree_dispose(&t);
    if (rc == MT_ECONFLICT && done == 0)
        rc = mt_error_set(MT_EIO,
                          "a memory beneath /%s was changed while it was deleted: nothing "
                          "was deleted; try again",
                          path);
done:
    mt_buf_dispose(&what);
    return rc;
}

/* Move one memory (and, with content, write it too) under its SHA-256. */
static int move_one(mt_remote_store *rs, mt_store_op *op, const char *id, const char *sha,
                    const char *to_api, const char *data, size_t len, int with_content,
                    const char *what)
{
    mt_remote_resp r;
    char *body = mt_remote_memory_body(to_api, data, len, sha, 1, with_content);
    json_t *o;
    int rc;

    if (!body)
        return mt_error_set(MT_EINVAL, "the content is not valid UTF-8");
    rc = mt_remote_update(rs, &r, id, body, what);
    free(body);
    if (rc < 0)
        return rc;
    if (r.status == 200) {
        if ((o = mt_remote_json(&r, what)) != NULL) {
            mt_remote_note_version(rs, op, o);
            json_decref(o);
        }
        rc = 0;
    } else {
        int conflict;
        rc = mt_remote_write_refused(&r, to_api, &conflict, what);
        if (conflict)
            op->culprit = 1;
    }
    mt_remote_resp_dispose(&r);
    return rc;
}

int mt_remote_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    mt_remote_tree t;
    mt_buf what = MT_BUF_INIT, dest = MT_BUF_INIT;
    size_t i, total = 0, done = 0, from_len = strlen(from);
    unsigned attempt;
    mt_rmem m;
    int rc = 0;

    op->version = 0;
    op->culprit = 0;
    if (!*from || !*to)
        return mt_error_set(MT_EINVAL, "the store root cannot be renamed, nor anything onto it");
    if ((rc = mt_remote_rules_check(to)) < 0) {
        op->culprit = 1;
        return rc;
    }
    if (op->rename_content && (rc = mt_remote_content_check(op->rename_len)) < 0)
        return rc;
    if (mt_buf_printf(&what, "the rename of /%s to /%s", from, to) < 0)
        return MT_ENOMEM;
    for (attempt = 0; attempt < MT_REMOTE_EDIT_ATTEMPTS; attempt++) {
        if ((rc = mt_remote_find(rs, &m, from, 0)) == MT_ENOTFOUND && op->expect_sha256) {
            /* A retry of a rename that went through: its content at the
             * destination, nothing at the source (store.h). With new
             * content, that content is the one at the destination. */
            char want[65];
            if (op->rename_content)
                mt_sha256_hex(want, op->rename_data ? op->rename_data : "", op->rename_len);
            else
                memcpy(want, op->expect_sha256, 65);
            rc = mt_remote_find(rs, &m, to, 0);
            if (rc == MT_NODE_FILE && strcmp(m.sha, want) == 0) {
                rc = 0;
            } else if (rc == MT_NODE_FILE && op->rename_content &&
                       strcmp(m.sha, op->expect_sha256) == 0) {
                /* Moved without its new content (a rename sent alone went
                 * first): the content goes in alone, one version more. */
                if (mt_buf_printf(&dest, "/%s", to) < 0)
                    rc = MT_ENOMEM;
                else
                    rc = move_one(rs, op, m.id, m.sha, dest.ptr, op->rename_data, op->rename_len, 1,
                                  what.ptr);
            } else if (rc >= 0 || rc == MT_ENOTFOUND) {
                rc = MT_ENOTFOUND;
            }
            mt_rmem_dispose(&m);
            goto done;
        }
        if (rc < 0)
            goto done;
        if (rc == MT_NODE_DIR)
            break;
        if (op->expect_sha256 && strcmp(op->expect_sha256, m.sha) != 0) {
            memcpy(op->current_sha256, m.sha, 65);
            mt_rmem_dispose(&m);
            rc = MT_ECONFLICT;
            goto done;
        }
        if (op->rename_content && op->max_file_size && op->rename_len > op->max_file_size) {
            op->refused = MT_LIMIT_FILE_SIZE;
            op->limit = op->max_file_size;
            op->held = m.size;
            op->would = op->rename_len;
            mt_rmem_dispose(&m);
            rc = MT_ELIMIT;
            goto done;
        }
        mt_buf_truncate(&dest, 0);
        if (mt_buf_printf(&dest, "/%s", to) < 0) {
            mt_rmem_dispose(&m);
            rc = MT_ENOMEM;
            goto done;
        }
        rc = move_one(rs, op, m.id, m.sha, dest.ptr, op->rename_data, op->rename_len,
                      op->rename_content, what.ptr);
        mt_rmem_dispose(&m);
        if (rc == MT_ECONFLICT && op->expect_sha256) {
            current_now(rs, op, from);
            goto done;
        }
        if ((rc == MT_ECONFLICT || rc == MT_ENOTFOUND) && !op->expect_sha256 && !op->culprit) {
            mt_remote_nap(attempt); /* changed or moved meanwhile: look again */
            continue;
        }
        goto done;
    }
    if (attempt == MT_REMOTE_EDIT_ATTEMPTS) {
        rc = mt_error_set(MT_EBUSY, "/%s kept changing while it was renamed", from);
        goto done;
    }
    /* A directory: every memory beneath it, once the destination is free
     * and every path it would make keeps the API's rules. */
    if (op->rename_content || op->expect_sha256) {
        rc = op->expect_sha256 ? mt_remote_not_a_file()
                               : mt_error_set(MT_EINVAL, "only a memory takes new content");
        goto done;
    }
    rc = mt_remote_find(rs, &m, to, 0);
    mt_rmem_dispose(&m);
    if (rc == MT_NODE_FILE || rc == MT_NODE_DIR) {
        op->culprit = 1;
        rc = MT_EEXISTS;
        goto done;
    }
    if (rc != MT_ENOTFOUND) {
        op->culprit = rc == MT_ENOTDIR; /* a memory where a directory of `to` would be */
        goto done;
    }
    if ((rc = mt_remote_tree_load(rs, &t, from)) < 0)
        goto done;
    for (i = 0; i < t.count && rc == 0; i++) {
        if (t.nodes[i].type != MT_NODE_FILE)
            continue;
        total++;
        mt_buf_truncate(&dest, 0);
        if (mt_buf_printf(&dest, "%s%s", to, t.nodes[i].path + from_len) < 0)
            rc = MT_ENOMEM;
        else if ((rc = mt_remote_rules_check(dest.ptr)) < 0)
            op->culprit = 1;
    }
    for (i = 0; i < t.count && rc >= 0; i++) {
        if (t.nodes[i].type != MT_NODE_FILE)
            continue;
        mt_buf_truncate(&dest, 0);
        if (mt_buf_printf(&dest, "/%s%s", to, t.nodes[i].path + from_len) < 0) {
            rc = MT_ENOMEM;
            break;
        }
        rc = move_one(rs, op, t.nodes[i].id, t.nodes[i].sha, dest.ptr, NULL, 0, 0, what.ptr);
        if (rc == MT_ECONFLICT)
            rc = mt_error_set(MT_ECONFLICT, "/%s was changed meanwhile", t.nodes[i].path);
        if (rc < 0)
            rc = midway(rc, "moved", done, total, from, t.nodes[i].path);
        else
            done++;
    }
    mt_remote_tree_dispose(&t);
    if (rc == 0 && total == 0)
        rc = MT_ENOTFOUND; /* emptied meanwhile */
done:
    mt_buf_dispose(&what);
    mt_buf_dispose(&dest);
    return rc;
}

/*
 * The SQL store's import (memtool/store.h, mt_store_import): a memory's
 * versions and its current file in one transaction of the database, so it
 * arrives whole or not at all. The statements are the ones every change
 * uses; a version is written with the time, actor and paths it was given,
 * and a redacted one is redacted in the same transaction.
 */
#include "db/db_core.h"
#include "machinery/import_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

typedef struct {
    mt_store_import *in;
    int live;
} import_args;

static int found_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    (void)cols;
    (void)ncols;
    *(int *)payload = 1;
    return 1;
}

/* Version i's content kept (one more reference): *sha and *size what it is. */
static int keep_content(mt_db_txn *t, char sha[65], uint64_t *size, const mt_store_import *in,
                        size_t i)
{
    const mt_version *v = &in->versions[i];
    char *data;
    size_t len;
    int64_t n;
    int rc;

    if (v->content_sha256[0]) {
        mt_db_value a[3] = {mt_db_text(t->db->tenant), mt_db_text(v->content_sha256), mt_db_int(1)};
        if ((n = mt_db_exec(t->db, MT_DB_CONTENT_REF, a, 3, NULL, NULL)) < 0)
            return (int)n;
        if (n > 0) {
            /* Kept already: not asked for. */
            memcpy(sha, v->content_sha256, 65);
            *size = v->content_size;
            return 0;
        }
    }
    if ((rc = mt_import_fetch(&data, &len, sha, in, i)) < 0)
        return rc;
    rc = mt_db_content_ref(t, sha, data, len);
    *size = len;
    sodium_memzero(data, len);
    free(data);
    return rc;
}

static int put_version(mt_db_txn *t, const char *memory_id, const mt_version *v, const char *sha,
                       uint64_t size)
{
    mt_db *db = t->db;
    int64_t id = v->id > 0 ? v->id : t->next_version, n;
    int deleted = v->operation == MT_VERSION_DELETED;

    {
        mt_db_value a[10] = {mt_db_text(db->tenant),
                             mt_db_int(id),
                             mt_db_text(memory_id),
                             mt_db_int((int64_t)v->operation),
                             mt_db_text(v->redacted ? NULL : v->path),
                             mt_db_text(v->redacted ? NULL : v->previous_path),
                             mt_db_text(v->actor),
                             mt_db_int(v->created_at),
                             mt_db_text(deleted || v->redacted ? NULL : sha),
                             mt_db_int(deleted ? 0 : (int64_t)size)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_PUT, a, 10, NULL, NULL)) < 0)
            return (int)n;
    }
    if (v->redacted) {
        /* Redacted as mt_db_redact leaves a version: only its size stays. */
        mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_int(id)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_REDACT, a, 2, NULL, NULL)) < 0)
            return (int)n;
    }
    /* An id kept from elsewhere may lie below the next: later ones go on above all. */
    if (id >= t->next_version)
        t->next_version = id + 1;
    t->op->version = id;
    return 0;
}

/* The file's last access and change as they were where it came from (now
 * for what was not given), so expiry sees it as idle as before. */
static int accessed_as(mt_db_txn *t, const char *rel, const mt_store_import *in)
{
    int64_t now = mt_db_now_ms(), n;
    mt_db_value a[4] = {mt_db_text(t->db->tenant), mt_db_text(rel),
                        mt_db_int(in->accessed_ms > 0 ? in->accessed_ms : now),
                        mt_db_int(in->modified_ms > 0 ? in->modified_ms : now)};

    n = mt_db_exec(t->db, MT_DB_NODE_ACCESS_SET, a, 4, NULL, NULL);
    return n < 0 ? (int)n : 0;
}

static int import_in(mt_db_txn *t, void *arg)
{
    import_args *a = arg;
    mt_store_import *in = a->in;
    const char *rel = in->versions[in->count - 1].path;
    char sha[65] = "";
    uint64_t size = 0;
    unsigned missing = 0;
    size_t first = 0, i;
    int found = 0, rc;

    /* Run again after a serialization failure: from the start. */
    in->present = 0;
    in->made = 0;
    {
        mt_db_value q[2] = {mt_db_text(t->db->tenant), mt_db_text(in->memory_id)};
        int64_t n = mt_db_exec(t->db, MT_DB_VERSION_NEWEST, q, 2, found_row, &found);
        if (n < 0)
            return (int)n;
    }
    if (found) {
        in->present = 1;
        return 0;
    }
    if (a->live) {
        mt_db_node node;
        if ((rc = mt_db_parents(t->db, rel, "cannot create", &missing, &first)) < 0)
            return rc;
        if (!missing) {
            if ((rc = mt_db_node_get(t->db, &node, rel)) < 0)
                return rc;
            if (rc)
                return mt_store_path_error(MT_EEXISTS, "cannot create", rel);
        }
    }
    for (i = 0; i < in->count; i++) {
        const mt_version *v = &in->versions[i];
        char got[65] = "";
        uint64_t n = v->content_size;

        if (mt_import_has_content(v) && (rc = keep_content(t, got, &n, in, i)) < 0)
            return rc;
        if ((rc = put_version(t, in->memory_id, v, got, n)) < 0)
            return rc;
        in->made++;
        if (i == in->count - 1) {
            memcpy(sha, got, sizeof(sha));
            size = n;
        }
    }
    if (!a->live)
        return 0;
    /* The current file, as a create makes it: its version is the newest above. */
    if ((rc = mt_db_quota(t, rel, (int64_t)size, 1, missing)) < 0)
        return rc;
    if (missing && (rc = mt_db_make_parents(t, rel, first)) < 0)
        return rc;
    if ((rc = mt_db_content_ref(t, sha, NULL, 0)) < 0 ||
        (rc = mt_db_put_file(t, rel, in->memory_id, sha, size)) < 0 ||
        (rc = accessed_as(t, rel, in)) < 0)
        return rc;
    mt_db_account(t, (int64_t)size, 1, missing);
    return 0;
}

int mt_db_import(mt_store *st, mt_store_op *op, mt_store_import *in)
{
    unsigned keep = op->history_keep, days = op->history_days;
    import_args a = {in, 0};
    int rc;

    if ((rc = mt_import_start(op, in)) < 0)
        return rc;
    a.live = mt_import_live(in);
    /* The versions brought in are kept whole: the caps apply at the next change. */
    op->history_keep = 0;
    op->history_days = 0;
    rc = mt_db_change((mt_db *)st, op, import_in, &a);
    op->history_keep = keep;
    op->history_days = days;
    if (rc < 0) {
        in->present = 0;
        in->made = 0;
    }
    return rc;
}

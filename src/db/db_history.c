/*
 * The SQL store's history: versions recorded in the transaction of the
 * change that makes them (so they follow the changes' serial order), their
 * content shared with the files' (one contents row per SHA-256, counted),
 * pruning to the caps, reading and redacting. The semantics and the words
 * are those of the filesystem store's history (hist_*.c).
 */
#include "db/db_core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prune a memory only when this far over its cap, as the file store does. */
#define PRUNE_SLACK(keep) ((keep) / 10 + 1)
#define MS_PER_DAY        86400000LL

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mt_db_record(mt_db_txn *t, mt_version_op what, const char *path, const char *previous,
                 const char *memory_id, const char *sha, uint64_t size)
{
    mt_db *db = t->db;
    int64_t id = t->next_version, n;
    int rc;

    if (what == MT_VERSION_DELETED) {
        sha = NULL;
        size = 0;
    }
    if (sha && (rc = mt_db_content_ref(t, sha, NULL, 0)) < 0)
        return rc;
    {
        mt_db_value a[10] = {mt_db_text(db->tenant),
                             mt_db_int(id),
                             mt_db_text(memory_id),
                             mt_db_int((int64_t)what),
                             mt_db_text(path),
                             mt_db_text(previous),
                             mt_db_text(t->op->actor ? t->op->actor : "library"),
                             mt_db_int(now_ms()),
                             mt_db_text(sha),
                             mt_db_int((int64_t)size)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_PUT, a, 10, NULL, NULL)) < 0)
            return (int)n;
    }
    t->next_version = id + 1;
    t->op->version = id;
    return 0;
}

typedef struct {
    int64_t id;
    char sha[65];
} gone;

typedef struct {
    gone *v;
    size_t n, cap;
} gone_list;

static int gone_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    gone_list *l = payload;

    if (ncols < 2)
        return mt_error_set(MT_EIO, "a row of the history is damaged");
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        gone *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return mt_error_set(MT_ENOMEM, "out of memory pruning the history");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].id = cols[0].i;
    snprintf(l->v[l->n].sha, sizeof(l->v[l->n].sha), "%s",
             cols[1].type == MT_DB_TEXT ? cols[1].p : "");
    l->n++;
    return 0;
}

/* Delete the versions collected, and the content only they held. */
static int drop_versions(mt_db_txn *t, gone_list *l)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < l->n && rc == 0; i++) {
        mt_db_value a[2] = {mt_db_text(t->db->tenant), mt_db_int(l->v[i].id)};
        int64_t n = mt_db_exec(t->db, MT_DB_VERSION_DELETE, a, 2, NULL, NULL);
        if (n < 0)
            rc = (int)n;
        else
            rc = mt_db_content_unref(t, l->v[i].sha);
    }
    if (l->n)
        t->dropped = 1;
    free(l->v);
    memset(l, 0, sizeof(*l));
    return rc;
}

static int id_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    *(int64_t *)payload = ncols > 0 ? cols[0].i : 0;
    return 0;
}

/* The newest version's operation, content digest and id. */
typedef struct {
    int found;
    int64_t op;
    char sha[65];
    int64_t id;
} newest_version;

static int newest_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    newest_version *nv = payload;

    if (ncols < 2)
        return mt_error_set(MT_EIO, "a version row of the store is damaged");
    nv->found = 1;
    nv->op = cols[0].i;
    snprintf(nv->sha, sizeof(nv->sha), "%s", cols[1].type == MT_DB_TEXT ? cols[1].p : "");
    nv->id = ncols > 2 ? cols[2].i : 0;
    return 0;
}

static int gap_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    (void)cols;
    (void)ncols;
    *(int *)payload = 1;
    return 0;
}

static int gap_any(mt_db *db, void *arg)
{
    mt_db_value a = mt_db_text(db->tenant);
    int64_t n = mt_db_exec(db, MT_DB_GAP_ANY, &a, 1, gap_row, arg);

    return n < 0 ? (int)n : 0;
}

int mt_db_gap_any(mt_db *db)
{
    int found = 0;
    int rc = mt_db_read_one(db, gap_any, &found);

    return rc < 0 ? rc : found;
}

int mt_db_gap(mt_db_txn *t, const char *path, const char *memory_id, const char *sha, uint64_t size)
{
    newest_version nv = {0, 0, "", 0};
    mt_db_value a[2];
    const char *actor;
    int64_t n;
    int rc;

    if (!t->op->history || !memory_id || !*memory_id)
        return 0;
    /* One statement on every change with history: the check is on the hot path. */
    a[0] = mt_db_text(t->db->tenant);
    a[1] = mt_db_text(memory_id);
    if ((n = mt_db_exec(t->db, MT_DB_VERSION_NEWEST, a, 2, newest_row, &nv)) < 0)
        return (int)n;
    if (nv.found && nv.op != MT_VERSION_DELETED && strcmp(nv.sha, sha) == 0)
        return 0;
    /* Made while history was off: no one but memtool changes a database
     * store, yet the chain must hold every content the memory had, as the
     * file store's does for its editors. */
    actor = t->op->actor;
    t->op->actor = "external";
    rc = mt_db_record(
        t, nv.found && nv.op != MT_VERSION_DELETED ? MT_VERSION_MODIFIED : MT_VERSION_CREATED, path,
        NULL, memory_id, sha, size);
    t->op->actor = actor;
    return rc;
}

int mt_db_version_head_get(mt_db_txn *t, mt_db_version_head *out, const char *memory_id)
{
    newest_version nv = {0, 0, "", 0};
    mt_db_value a[2] = {mt_db_text(t->db->tenant), mt_db_text(memory_id)};
    int64_t n;

    memset(out, 0, sizeof(*out));
    /* One statement: the newest version's id, operation and digest. */
    if ((n = mt_db_exec(t->db, MT_DB_VERSION_NEWEST, a, 2, newest_row, &nv)) < 0)
        return (int)n;
    out->id = nv.id;
    out->found = nv.found && out->id > 0;
    out->op = nv.op;
    memcpy(out->sha, nv.sha, sizeof(out->sha));
    return 0;
}

int mt_db_prune_memory(mt_db_txn *t, const char *memory_id)
{
    unsigned keep = t->op->history_keep;
    gone_list l = {NULL, 0, 0};
    int64_t cut = 0, n;

    if (!keep || !t->op->history)
        return 0;
    {
        mt_db_value a[3] = {mt_db_text(t->db->tenant), mt_db_text(memory_id),
                            mt_db_int((int64_t)keep + PRUNE_SLACK(keep) - 1)};
        if ((n = mt_db_exec(t->db, MT_DB_VERSION_NTH, a, 3, id_row, &cut)) <= 0)
            return (int)n;
        /* Over: keep the newest `keep`. */
        a[2] = mt_db_int((int64_t)keep);
        if ((n = mt_db_exec(t->db, MT_DB_VERSION_NTH, a, 3, id_row, &cut)) <= 0)
            return n < 0 ? (int)n : mt_error_set(MT_EIO, "the history changed while pruning");
        a[2] = mt_db_int(cut);
        if ((n = mt_db_exec(t->db, MT_DB_VERSIONS_UPTO, a, 3, gone_row, &l)) < 0) {
            free(l.v);
            return (int)n;
        }
    }
    return drop_versions(t, &l);
}

/* Delete the versions a statement of (tenant, a, b) lists, and their
 * references to contents. */
static int drop_listed(mt_db_txn *t, mt_db_stmt which, int64_t a, int64_t b)
{
    mt_db_value v[3] = {mt_db_text(t->db->tenant), mt_db_int(a), mt_db_int(b)};
    gone_list l = {NULL, 0, 0};
    int64_t n = mt_db_exec(t->db, which, v, 3, gone_row, &l);

    if (n < 0) {
        free(l.v);
        return (int)n;
    }
    return drop_versions(t, &l);
}

/*
 * Versions older than the days limit go, except each memory's newest, in
 * work that grows with what changed since the last prune rather than with
 * the whole history (a scan of every version was 8 ms of each one-shot
 * write in a history of 100,000). The usage row keeps how far the last one
 * got (mt_db_txn); this one takes the versions that crossed the cut since
 * (by the index of versions by time), then those of memories changed since
 * that are no longer their memory's newest (a memory left alone past the
 * cut, then changed). Each list is deleted before the next is read, so no
 * version is counted out twice. Without a record (a new or upgraded store)
 * the first prune looks at every version older than the cut, once.
 */
int mt_db_prune_days(mt_db_txn *t)
{
    unsigned days = t->op->history_days;
    int64_t now = now_ms(), cut, from;
    int known, rc;

    if (!days || !t->op->history || now - t->db->last_days_run < 60000)
        return 0;
    t->db->last_days_run = now;
    cut = now - (int64_t)days * MS_PER_DAY;
    known = t->expiry_seen > 0;
    from = known ? t->expired_before : INT64_MIN;
    if (from < cut && (rc = drop_listed(t, MT_DB_VERSIONS_EXPIRED, from, cut)) < 0)
        return rc;
    if (known && t->expiry_seen < t->next_version &&
        (rc = drop_listed(t, MT_DB_VERSIONS_SUPERSEDED, t->expiry_seen, cut)) < 0)
        return rc;
    /* A cut earlier than the last (more days now) is where the record holds
     * from: the versions between the two stay, and are looked at again. */
    t->expired_before = cut;
    t->expiry_seen = t->next_version;
    return 0;
}

static char *dup_text(const mt_db_value *v, int *oom)
{
    char *d;

    if (v->type != MT_DB_TEXT)
        return NULL;
    if (!(d = strndup(v->p, v->len)))
        *oom = 1;
    return d;
}

static int version_fill(mt_version *v, const mt_db_value *c, size_t ncols)
{
    int oom = 0;

    memset(v, 0, sizeof(*v));
    if (ncols < 10)
        return mt_error_set(MT_EIO, "a row of the history is damaged");
    v->id = c[0].i;
    snprintf(v->memory_id, sizeof(v->memory_id), "%s", c[1].type == MT_DB_TEXT ? c[1].p : "");
    v->operation = (mt_version_op)c[2].i;
    v->path = dup_text(&c[3], &oom);
    v->previous_path = dup_text(&c[4], &oom);
    v->actor = dup_text(&c[5], &oom);
    v->created_at = c[6].i;
    snprintf(v->content_sha256, sizeof(v->content_sha256), "%s",
             c[7].type == MT_DB_TEXT ? c[7].p : "");
    v->content_size = c[8].i > 0 ? (uint64_t)c[8].i : 0;
    v->redacted = (int)c[9].i;
    if (oom || !v->actor) {
        mt_version_dispose(v);
        return mt_error_set(MT_ENOMEM, "out of memory reading the history");
    }
    return 0;
}

typedef struct {
    mt_version *v;
    size_t n, cap;
    const mt_log_query *q;
} version_list;

static int version_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    version_list *l = payload;
    int rc;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        mt_version *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return mt_error_set(MT_ENOMEM, "out of memory reading the history");
        l->v = v;
        l->cap = cap;
    }
    if ((rc = version_fill(&l->v[l->n], cols, ncols)) < 0)
        return rc;
    l->n++;
    return 0;
}

static int versions_in(mt_db *db, void *arg)
{
    version_list *l = arg;
    const mt_log_query *q = l->q;
    const char *path = q->path && *q->path ? q->path : NULL;
    size_t limit = q->limit ? q->limit : 100;
    char *lo = NULL, *hi = NULL;
    int64_t n;
    int rc;

    if (path && (rc = mt_db_beneath(&lo, &hi, path)) < 0)
        return rc;
    {
        mt_db_value a[11] = {mt_db_text(db->tenant),
                             mt_db_text(path),
                             mt_db_text(lo),
                             mt_db_text(hi),
                             mt_db_text(q->memory_id),
                             mt_db_int((int64_t)q->operation),
                             mt_db_text(q->actor),
                             mt_db_int(q->since),
                             mt_db_int(q->until),
                             mt_db_int(q->before_id),
                             mt_db_int(limit > INT64_MAX ? INT64_MAX : (int64_t)limit)};
        n = mt_db_exec(db, q->memory_id ? MT_DB_VERSIONS_OF : MT_DB_VERSIONS_QUERY, a, 11,
                       version_row, l);
    }
    free(lo);
    free(hi);
    return n < 0 ? (int)n : 0;
}

int mt_db_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *q)
{
    version_list l = {NULL, 0, 0, q};
    int rc;

    *out = NULL;
    *count = 0;
    if ((rc = mt_db_read_one((mt_db *)st, versions_in, &l)) < 0) {
        mt_versions_free(l.v, l.n);
        return rc;
    }
    if (!l.v && !(l.v = calloc(1, sizeof(*l.v))))
        return mt_error_set(MT_ENOMEM, "out of memory reading the history");
    *out = l.v;
    *count = l.n;
    return 0;
}

typedef struct {
    mt_version *v;
    int64_t id;
    int found;
} one_version;

static int one_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    one_version *o = payload;
    int rc = version_fill(o->v, cols, ncols);

    if (rc == 0)
        o->found = 1;
    return rc;
}

static int version_lookup(mt_db *db, one_version *o)
{
    mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_int(o->id)};
    int64_t n = mt_db_exec(db, MT_DB_VERSION_GET, a, 2, one_row, o);

    return n < 0 ? (int)n : 0;
}

static int version_in(mt_db *db, void *arg)
{
    one_version *o = arg;
    int rc;

    if ((rc = version_lookup(db, o)) < 0)
        return rc;
    if (!o->found)
        return mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", o->id);
    return 0;
}

int mt_db_version_get(mt_store *st, mt_version *out, int64_t id)
{
    one_version o = {out, id, 0};

    memset(out, 0, sizeof(*out));
    return mt_db_read((mt_db *)st, version_in, &o);
}

typedef struct {
    int64_t id;
    char **out;
    size_t *len;
} content_args;

static int data_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    content_args *c = payload;
    size_t len = ncols > 0 && cols[0].type != MT_DB_NULL ? cols[0].len : 0;

    if (!(*c->out = malloc(len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory reading a version");
    if (len)
        memcpy(*c->out, cols[0].p, len);
    (*c->out)[len] = '\0';
    *c->len = len;
    return 0;
}

static int content_in(mt_db *db, void *arg)
{
    content_args *c = arg;
    mt_version v;
    one_version o = {&v, c->id, 0};
    char sha[65];
    int rc;

    if ((rc = version_lookup(db, &o)) < 0)
        return rc;
    if (!o.found)
        return mt_error_set(
            MT_ENOTFOUND,
            "there is no version %" PRId64 " (see memtool log; old versions are pruned)", c->id);
    if (v.redacted)
        rc = mt_error_set(MT_ENOTFOUND, "version %" PRId64 " was redacted: its content is gone",
                          c->id);
    else if (v.operation == MT_VERSION_DELETED)
        rc = mt_error_set(MT_ENOTFOUND,
                          "version %" PRId64 " records a deletion: it has no content (try the "
                          "version before it)",
                          c->id);
    if (rc == 0) {
        mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_text(v.content_sha256)};
        int64_t n = mt_db_exec(db, MT_DB_CONTENT_GET, a, 2, data_row, c);
        if (n < 0)
            rc = (int)n;
        else if (n == 0 || !*c->out)
            rc = mt_error_set(MT_EIO, "the content of version %" PRId64 " is missing", c->id);
    }
    if (rc == 0) {
        /* What comes back is what was kept: a damaged database says so. */
        mt_hist_sha256(sha, *c->out, *c->len);
        if (strcmp(sha, v.content_sha256) != 0)
            rc = mt_error_set(MT_EIO,
                              "the content of version %" PRId64
                              " is damaged (its SHA-256 does not match)",
                              c->id);
    }
    mt_version_dispose(&v);
    if (rc < 0) {
        free(*c->out);
        *c->out = NULL;
        *c->len = 0;
    }
    return rc;
}

int mt_db_version_content(mt_store *st, char **out, size_t *len, int64_t id)
{
    content_args c = {id, out, len};

    *out = NULL;
    *len = 0;
    return mt_db_read((mt_db *)st, content_in, &c);
}

typedef struct {
    int64_t id;
    int scrub_later;
} redact_args;

static int path_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    (void)cols;
    (void)ncols;
    *(int *)payload = 1;
    return 1;
}

/* The path of the live node holding a memory. */
static int node_path_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    char *path = payload;

    if (ncols > 0 && cols[0].type == MT_DB_TEXT && cols[0].len < 8192)
        memcpy(path, cols[0].p, cols[0].len + 1);
    return 1;
}

int mt_db_search_erase(mt_db *db, const char *path, const char *sha, int merge)
{
    const char *const *sql = db->drv->sql;
    mt_db_value a[3] = {mt_db_text(db->tenant), mt_db_text(path),
                        mt_db_text(sha && sha[0] ? sha : NULL)};
    int64_t n;

    if (!db->drv->search_query)
        return 0; /* a store that cannot search keeps no index */
    if ((n = mt_db_exec(db, MT_DB_SEARCH_ERASE, a, 3, NULL, NULL)) < 0)
        return (int)n;
    if (merge && ((sql && sql[MT_DB_SEARCH_MERGE]) || mt_db_sql[MT_DB_SEARCH_MERGE]))
        n = mt_db_exec(db, MT_DB_SEARCH_MERGE, a, 1, NULL, NULL);
    return n < 0 ? (int)n : 0;
}

static int redact_in(mt_db_txn *t, void *arg)
{
    redact_args *r = arg;
    mt_db *db = t->db;
    mt_version v;
    one_version o = {&v, r->id, 0};
    int64_t newest = 0, n;
    int live = 0, rc;

    t->files_kept = 1; /* a redaction changes no file (a current version is refused) */

    if ((rc = version_lookup(db, &o)) < 0)
        return rc;
    if (!o.found)
        return mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, r->id);
    {
        /* Current content: the newest version of a memory that is live. */
        mt_db_value a[3] = {mt_db_text(db->tenant), mt_db_text(v.memory_id), mt_db_int(0)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_NTH, a, 3, id_row, &newest)) < 0 ||
            (n = mt_db_exec(db, MT_DB_NODE_OF_MEMORY, a, 2, path_row, &live)) < 0) {
            rc = (int)n;
            goto done;
        }
    }
    if (newest == r->id && live) {
        rc = mt_error_set(MT_EINVAL,
                          "version %" PRId64 " is the memory's current content, which cannot be "
                          "redacted: change or delete the memory first, then redact this version",
                          r->id);
        goto done;
    }
    {
        mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_int(r->id)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_REDACT, a, 2, NULL, NULL)) < 0) {
            rc = (int)n;
            goto done;
        }
    }
    if (v.content_sha256[0] && (rc = mt_db_content_unref(t, v.content_sha256)) < 0)
        goto done;
    if ((rc = mt_db_search_erase(db, v.path, v.content_sha256, !r->scrub_later)) < 0)
        goto done;
    /* The path is gone too: its pages are rewritten, so scrub (or let the
     * run's last redaction do it). */
    if (r->scrub_later)
        goto done;
    t->dropped = 1;
    t->scrub_what = "the version was redacted, but another process was reading the store, "
                    "so its write-ahead log still holds the erased pages: run the same redaction "
                    "again once that process is done, which empties the log";
done:
    mt_version_dispose(&v);
    return rc;
}

int mt_db_redact(mt_store *st, mt_store_op *op, int64_t id)
{
    mt_store_op locked = *op;
    redact_args r = {id, op->scrub_later};

    /* A transaction of its own, recording nothing. */
    locked.history = 0;
    return mt_db_change((mt_db *)st, &locked, redact_in, &r);
}

typedef struct {
    int64_t id;
    mt_edit_cb cb;
    void *payload;
} reseal_args;

static int reseal_in(mt_db_txn *t, void *arg)
{
    reseal_args *r = arg;
    mt_db *db = t->db;
    mt_version v;
    one_version o = {&v, r->id, 0};
    char *data = NULL, *out = NULL, sha[65];
    size_t len = 0, out_len = 0;
    content_args c = {r->id, &data, &len};
    int64_t newest = 0, n;
    mt_db_node node;
    int rc, current;

    memset(&node, 0, sizeof(node));
    if ((rc = version_lookup(db, &o)) < 0)
        return rc;
    if (!o.found)
        return mt_error_set(MT_ENOTFOUND, "there is no version %" PRId64, r->id);
    if (v.redacted || v.operation == MT_VERSION_DELETED || !v.content_sha256[0])
        goto done; /* no content: nothing to replace */
    {
        /* Current content: the newest version of a live memory that holds it. */
        char path[8192] = "";
        mt_db_value a[3] = {mt_db_text(db->tenant), mt_db_text(v.memory_id), mt_db_int(0)};
        if ((n = mt_db_exec(db, MT_DB_VERSION_NTH, a, 3, id_row, &newest)) < 0 ||
            (newest == r->id &&
             (n = mt_db_exec(db, MT_DB_NODE_OF_MEMORY, a, 2, node_path_row, path)) < 0)) {
            rc = (int)n;
            goto done;
        }
        if (*path && (rc = mt_db_node_get(db, &node, path)) < 0)
            goto done;
        current = newest == r->id && *path && strcmp(node.sha256, v.content_sha256) == 0;
    }
    {
        mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_text(v.content_sha256)};
        if ((n = mt_db_exec(db, MT_DB_CONTENT_GET, a, 2, data_row, &c)) < 0) {
            rc = (int)n;
            goto done;
        }
        if (n == 0 || !data) {
            rc = mt_error_set(MT_EIO, "the content of version %" PRId64 " is missing", r->id);
            goto done;
        }
    }
    mt_hist_sha256(sha, data, len);
    if (strcmp(sha, v.content_sha256) != 0) {
        rc = mt_error_set(
            MT_EIO, "the content of version %" PRId64 " is damaged (its SHA-256 does not match)",
            r->id);
        goto done;
    }
    if ((rc = r->cb(&out, &out_len, data, len, r->payload)) < 0)
        goto done;
    if (!out && !(out = calloc(1, 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    mt_hist_sha256(sha, out, out_len);
    if (strcmp(sha, v.content_sha256) == 0)
        goto done; /* the same bytes: nothing to change */
    if (current) {
        rc = mt_error_set(MT_EINVAL,
                          "version %" PRId64 " is its memory's current content, which changes "
                          "only with the memory's file",
                          r->id);
        goto done;
    }
    {
        mt_db_value a[4] = {mt_db_text(db->tenant), mt_db_int(r->id), mt_db_text(sha),
                            mt_db_int((int64_t)out_len)};
        if ((rc = mt_db_content_ref(t, sha, out, out_len)) < 0)
            goto done;
        if ((n = mt_db_exec(db, MT_DB_VERSION_RESEAL, a, 4, NULL, NULL)) < 0) {
            rc = (int)n;
            goto done;
        }
    }
    /* The old content goes with its last reference, scrubbed as a redaction's. */
    if ((rc = mt_db_content_unref(t, v.content_sha256)) < 0)
        goto done;
    t->dropped = 1;
    t->scrub_what = MT_DB_RESEAL_BUSY;
done:
    free(data);
    free(out);
    mt_version_dispose(&v);
    return rc;
}

int mt_db_version_reseal(mt_store *st, mt_store_op *op, int64_t id, mt_edit_cb cb, void *payload)
{
    mt_store_op locked = *op;
    reseal_args r = {id, cb, payload};

    /* A transaction of its own, recording nothing. */
    locked.history = 0;
    return mt_db_change((mt_db *)st, &locked, reseal_in, &r);
}

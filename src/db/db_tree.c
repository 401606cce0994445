/*
 * The SQL store's tree: stat, read, create, edit, remove and rename, each
 * change one transaction, with the results and errors of the filesystem
 * store (the same mt_error_code in every situation, the same words).
 */
#include "db/db_core.h"
#include "machinery/usage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Components in path ("a/b/c": 3). */
static unsigned depth_of(const char *path)
{
    unsigned n = 1;

    for (; *path; path++)
        n += *path == '/';
    return n;
}

/*
 * The directories above path's last component. 0 when all are there; with
 * `missing` given, the ones not there yet are counted in it (the first at
 * *first, an offset into path); else a missing one is MT_ENOTFOUND. A file
 * on the way is MT_ENOTDIR, as the kernel says for the filesystem store.
 */
int mt_db_parents(mt_db *db, const char *path, const char *what, unsigned *missing, size_t *first)
{
    const char *slash = strrchr(path, '/');
    char *prefix = NULL;
    mt_db_node n;
    size_t i, len;
    int rc;

    if (missing)
        *missing = 0;
    if (!slash)
        return 0;
    len = (size_t)(slash - path);
    if (!(prefix = malloc(len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    memcpy(prefix, path, len);
    prefix[len] = '\0';
    /* Usually the parent is there, and then so is every directory above it. */
    if ((rc = mt_db_node_get(db, &n, prefix)) < 0)
        goto done;
    if (rc == 1 && n.kind == MT_NODE_DIR) {
        rc = 0;
        goto done;
    }
    for (i = 0; i <= len; i++) {
        if (i < len && path[i] != '/')
            continue;
        prefix[i] = '\0';
        if ((rc = mt_db_node_get(db, &n, prefix)) < 0)
            goto done;
        if (i < len)
            prefix[i] = '/';
        if (rc == 0) {
            if (!missing) {
                rc = mt_store_path_error(MT_ENOTFOUND, what, path);
                goto done;
            }
            {
                /* Components from this one to the parent. */
                size_t k;
                unsigned count = 1;

                for (k = i; k < len; k++)
                    count += path[k] == '/';
                *missing = count;
                *first = 0;
                for (k = i; k > 0 && path[k - 1] != '/'; k--)
                    ;
                *first = k;
            }
            rc = 0;
            goto done;
        }
        if (n.kind != MT_NODE_DIR) {
            rc = mt_store_path_error(MT_ENOTDIR, what, path);
            goto done;
        }
    }
    rc = 0;
done:
    free(prefix);
    return rc;
}

/* The node at path, its parents checked: missing is MT_ENOTFOUND. */
static int lookup(mt_db *db, mt_db_node *n, const char *path, const char *what)
{
    int rc;

    if ((rc = mt_db_parents(db, path, what, NULL, NULL)) < 0 ||
        (rc = mt_db_node_get(db, n, path)) < 0)
        return rc;
    if (rc == 0)
        return mt_store_path_error(MT_ENOTFOUND, what, path);
    return 0;
}

/* Make the missing directories of path, from offset `first` to its parent. */
int mt_db_make_parents(mt_db_txn *t, const char *path, size_t first)
{
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 0, i;
    char *prefix;
    int rc = 0;

    if (!(prefix = strndup(path, len)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    for (i = first; i <= len && rc == 0; i++) {
        if (i < len && path[i] != '/')
            continue;
        prefix[i] = '\0';
        {
            mt_db_value a[6] = {mt_db_text(t->db->tenant),
                                mt_db_text(prefix),
                                mt_db_int(MT_NODE_DIR),
                                mt_db_null(),
                                mt_db_null(),
                                mt_db_int(0)};
            int64_t n = mt_db_exec(t->db, MT_DB_NODE_PUT, a, 6, NULL, NULL);
            if (n < 0)
                rc = (int)n;
        }
        if (i < len)
            prefix[i] = '/';
    }
    free(prefix);
    return rc;
}

typedef struct {
    const char *path;
    mt_db_node n;
    int found;
} node_look;

typedef struct {
    mt_node_type *type;
    uint64_t *size;
    const char *path;
} stat_args;

static int stat_in(mt_db *db, void *arg)
{
    stat_args *a = arg;
    mt_db_node n;
    int rc;

    if ((rc = lookup(db, &n, a->path, "cannot look at")) < 0)
        return rc;
    *a->type = (mt_node_type)n.kind;
    *a->size = n.kind == MT_NODE_FILE ? n.size : 0;
    return 0;
}

/* The node alone, one statement: found, it is the answer; not found, the
 * lookup in a read transaction words the error (a parent that is a file). */
static int node_in(mt_db *db, void *arg)
{
    node_look *l = arg;

    return l->found = mt_db_node_get(db, &l->n, l->path);
}

int mt_db_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *path)
{
    stat_args a = {type, size, path};
    node_look l = {path, {0}, 0};
    int rc;

    if (!*path) {
        *type = MT_NODE_DIR;
        *size = 0;
        return 0;
    }
    if ((rc = mt_db_read_one((mt_db *)st, node_in, &l)) < 0)
        return rc;
    if (rc > 0) {
        *type = (mt_node_type)l.n.kind;
        *size = l.n.kind == MT_NODE_FILE ? l.n.size : 0;
        return 0;
    }
    return mt_db_read((mt_db *)st, stat_in, &a);
}

typedef struct {
    char *out;
    const char *path;
} memory_id_args;

static int memory_id_in(mt_db *db, void *arg)
{
    memory_id_args *a = arg;
    mt_db_node n;
    int rc;

    if ((rc = lookup(db, &n, a->path, "cannot look at")) < 0)
        return rc;
    if (n.kind != MT_NODE_FILE)
        return mt_store_path_error(MT_EISDIR, "cannot look at", a->path);
    if (!n.memory_id[0])
        return 0;
    memcpy(a->out, n.memory_id, sizeof(n.memory_id));
    return 1;
}

int mt_db_memory_id(mt_store *st, char out[24], const char *path)
{
    memory_id_args a = {out, path};
    node_look l = {path, {0}, 0};
    int rc;

    if ((rc = mt_db_read_one((mt_db *)st, node_in, &l)) < 0)
        return rc;
    if (rc > 0 && l.n.kind == MT_NODE_FILE) {
        if (!l.n.memory_id[0])
            return 0;
        memcpy(out, l.n.memory_id, sizeof(l.n.memory_id));
        return 1;
    }
    return mt_db_read((mt_db *)st, memory_id_in, &a);
}

typedef struct {
    uint64_t *size;
    const char *path;
    size_t whole;
    mt_read_cb cb;
    void *payload;
    uint64_t off, total;
    int last;
    int stopped; /* the reader asked for no more */
} read_args;

static int piece_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    read_args *a = payload;
    const char *p = ncols > 0 && cols[0].p ? cols[0].p : "";
    size_t len = ncols > 0 && cols[0].type != MT_DB_NULL ? cols[0].len : 0;

    int rc = a->cb(a->payload, p, len, a->off, a->last || a->off + len >= a->total);

    if (rc == 1)
        a->stopped = 1;
    return rc;
}

static int read_in(mt_db *db, void *arg)
{
    read_args *a = arg;
    mt_db_node n;
    int64_t got;
    int rc;

    if ((rc = lookup(db, &n, a->path, "cannot read")) < 0)
        return rc;
    if (n.kind == MT_NODE_DIR)
        return mt_store_path_error(MT_EISDIR, "cannot read", a->path);
    *a->size = a->total = n.size;
    if (n.size <= a->whole) {
        mt_db_value v[2] = {mt_db_text(db->tenant), mt_db_text(n.sha256)};
        a->last = 1;
        got = mt_db_exec(db, MT_DB_CONTENT_GET, v, 2, piece_row, a);
    } else {
        /* In pieces, each one substr() of the row, in one snapshot. */
        for (got = 1; a->off < n.size && got > 0 && !a->stopped; a->off += MT_STORE_PIECE) {
            mt_db_value v[4] = {mt_db_text(db->tenant), mt_db_text(n.sha256),
                                mt_db_int((int64_t)a->off + 1), mt_db_int(MT_STORE_PIECE)};
            got = mt_db_exec(db, MT_DB_CONTENT_PIECE, v, 4, piece_row, a);
        }
    }
    if (got < 0)
        return (int)got;
    if (got == 0)
        return mt_error_set(MT_EIO, "the content of %s is missing from the store", a->path);
    return 0;
}

typedef struct {
    read_args *a;
    int done; /* the file came whole: nothing left to do */
} single_args;

static int single_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    single_args *s = payload;
    read_args *a = s->a;
    int rc;

    if (ncols < 3 || cols[0].i != MT_NODE_FILE || cols[1].i < 0 ||
        (cols[2].type == MT_DB_NULL && cols[1].i > 0))
        return 0; /* a directory, a big file, a missing content: the transaction's way */
    *a->size = a->total = (uint64_t)cols[1].i;
    a->last = 1;
    s->done = 1;
    rc = a->cb(a->payload, cols[2].p ? cols[2].p : "", cols[2].type == MT_DB_NULL ? 0 : cols[2].len,
               0, 1);
    return rc == 1 ? 0 : rc;
}

/*
 * The common read, a small file, as one statement on its own: a statement
 * is its own snapshot, so the node and its content agree as in a read
 * transaction. Anything else (nothing there, a directory, a file read in
 * pieces, an error to word) goes the transaction's way. Returns 1 when the
 * file was read.
 */
static int read_single(mt_db *db, read_args *a)
{
    single_args s = {a, 0};
    mt_db_value v[3] = {mt_db_text(db->tenant), mt_db_text(a->path),
                        mt_db_int((int64_t)(a->whole > INT64_MAX ? INT64_MAX : a->whole))};
    int64_t got;
    int rc;

    if (!db->drv->ready_single)
        return 0;
    if ((rc = mt_db_acquire(db)) < 0)
        return rc;
    if ((rc = db->drv->ready_single(db->conn)) == 0 &&
        (got = mt_db_exec(db, MT_DB_READ_WHOLE, v, 3, single_row, &s)) < 0)
        rc = s.done ? (int)got : 0; /* a failed reader stands; a failed statement is retried */
    mt_db_release(db);
    return rc < 0 ? rc : s.done;
}

int mt_db_read_file(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                    void *payload)
{
    read_args a = {size, path, whole, cb, payload, 0, 0, 0, 0};
    int rc;

    *size = 0;
    if (!*path)
        return mt_store_path_error(MT_EISDIR, "cannot read", path);
    if ((rc = read_single((mt_db *)st, &a)) != 0)
        return rc < 0 ? rc : 0;
    return mt_db_read((mt_db *)st, read_in, &a);
}

typedef struct {
    const char *path;
    const char *data;
    size_t len;
} create_args;

int mt_db_put_file(mt_db_txn *t, const char *path, const char *memory_id, const char *sha,
                   uint64_t size)
{
    mt_db_value a[6] = {mt_db_text(t->db->tenant), mt_db_text(path), mt_db_int(MT_NODE_FILE),
                        mt_db_text(memory_id),     mt_db_text(sha),  mt_db_int((int64_t)size)};
    int64_t n = mt_db_exec(t->db, MT_DB_NODE_PUT, a, 6, NULL, NULL);

    return n < 0 ? (int)n : 0;
}

/* A version of a new or changed file, and its memory cut back to the cap. */
static int record_content(mt_db_txn *t, mt_version_op what, const char *path, const char *previous,
                          const char *memory_id, const char *sha, uint64_t size)
{
    int rc;

    if (!t->op->history)
        return 0;
    if ((rc = mt_db_record(t, what, path, previous, memory_id, sha, size)) < 0)
        return rc;
    return mt_db_prune_memory(t, memory_id);
}

static int create_in(mt_db_txn *t, void *arg)
{
    create_args *a = arg;
    mt_db_node n;
    char sha[65], id[24];
    unsigned missing = 0;
    size_t first = 0;
    int rc;

    if ((rc = mt_db_parents(t->db, a->path, "cannot create", &missing, &first)) < 0)
        return rc;
    if (!missing) {
        if ((rc = mt_db_node_get(t->db, &n, a->path)) < 0)
            return rc;
        if (rc)
            return mt_store_path_error(MT_EEXISTS, "cannot create", a->path);
    }
    if ((rc = mt_db_quota(t, a->path, (int64_t)a->len, 1, missing)) < 0)
        return rc;
    if (missing && (rc = mt_db_make_parents(t, a->path, first)) < 0)
        return rc;
    mt_hist_sha256(sha, a->data, a->len);
    if (t->op->memory_id)
        snprintf(id, sizeof(id), "%s", t->op->memory_id);
    else
        mt_hist_new_memory_id(id);
    if ((rc = mt_db_content_ref(t, sha, a->data, a->len)) < 0 ||
        (rc = mt_db_put_file(t, a->path, id, sha, a->len)) < 0 ||
        (rc = mt_db_accessed_now(t, a->path, 1)) < 0)
        return rc;
    mt_db_account(t, (int64_t)a->len, 1, missing);
    return record_content(t, MT_VERSION_CREATED, a->path, NULL, id, sha, a->len);
}

int mt_db_create(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len)
{
    create_args a = {path, data ? data : "", len};

    if (!*path)
        return mt_store_path_error(MT_EEXISTS, "cannot create", path);
    return mt_db_change((mt_db *)st, op, create_in, &a);
}

/* The content of a file node, malloc'd and NUL-terminated. */
typedef struct {
    char *data;
    size_t len;
} content_buf;

static int content_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    content_buf *b = payload;
    size_t len = ncols > 0 && cols[0].type != MT_DB_NULL ? cols[0].len : 0;

    if (!(b->data = malloc(len + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory reading the store");
    if (len)
        memcpy(b->data, cols[0].p, len);
    b->data[len] = '\0';
    b->len = len;
    return 0;
}

static int load(mt_db *db, content_buf *b, const char *sha, const char *path)
{
    mt_db_value v[2] = {mt_db_text(db->tenant), mt_db_text(sha)};
    int64_t n = mt_db_exec(db, MT_DB_CONTENT_GET, v, 2, content_row, b);

    if (n < 0)
        return (int)n;
    if (n == 0 || !b->data)
        return mt_error_set(MT_EIO, "the content of %s is missing from the store", path);
    return 0;
}

/* op->expect_sha256 against a node: 0 when it holds that content. */
static int expect(mt_store_op *op, const mt_db_node *n, const char *path)
{
    if (!op->expect_sha256)
        return 0;
    if (n->kind != MT_NODE_FILE)
        return mt_error_set(MT_EINVAL, "an expected SHA-256 applies only to a regular file");
    if (strcmp(n->sha256, op->expect_sha256) == 0)
        return 0;
    memcpy(op->current_sha256, n->sha256, sizeof(op->current_sha256));
    return mt_error_set(MT_ECONFLICT, "%s was changed by someone else", path);
}

typedef struct {
    const char *path;
    mt_edit_cb cb;
    void *payload;
} edit_args;

/* A re-encryption (op->reseal): the memory's newest version, holding the
 * node's old bytes, takes the new ones (sha, size) in the same transaction,
 * recording no version. 0 done, 1 not (the newest holds other bytes, or
 * none: recorded as ever), or why not. */
static int reseal_newest(mt_db_txn *t, const mt_db_node *n, const char *sha, uint64_t size)
{
    mt_db_version_head head;
    int64_t k;
    int rc;

    if (!n->memory_id[0])
        return 1;
    if ((rc = mt_db_version_head_get(t, &head, n->memory_id)) < 0)
        return rc;
    if (!head.found || head.op == MT_VERSION_DELETED || strcmp(head.sha, n->sha256) != 0)
        return 1;
    if (strcmp(sha, n->sha256) == 0)
        return 0; /* the same bytes */
    {
        mt_db_value v[4] = {mt_db_text(t->db->tenant), mt_db_int(head.id), mt_db_text(sha),
                            mt_db_int((int64_t)size)};
        /* The node's reference to the new bytes is taken: this is the version's. */
        if ((rc = mt_db_content_ref(t, sha, NULL, 0)) < 0)
            return rc;
        if ((k = mt_db_exec(t->db, MT_DB_VERSION_RESEAL, v, 4, NULL, NULL)) < 0)
            return (int)k;
    }
    /* The old bytes go with their last reference, erased as a redaction's. */
    if ((rc = mt_db_content_unref(t, n->sha256)) < 0)
        return rc;
    t->dropped = 1;
    t->scrub_what = MT_DB_RESEAL_BUSY;
    return 0;
}

static int edit_in(mt_db_txn *t, void *arg)
{
    edit_args *a = arg;
    mt_store_op *op = t->op;
    content_buf now = {NULL, 0};
    char *out = NULL, sha[65];
    size_t out_len = 0;
    mt_db_node n;
    int rc;

    if ((rc = lookup(t->db, &n, a->path, "cannot edit")) < 0)
        goto done;
    if (n.kind == MT_NODE_DIR) {
        rc = mt_store_path_error(MT_EISDIR, "cannot edit", a->path);
        goto done;
    }
    if (op->max_file_size && mt_store_file_memory(op, n.size) > op->max_file_size) {
        op->refused = MT_LIMIT_FILE_SIZE;
        op->limit = op->max_file_size;
        op->held = op->would = mt_store_file_memory(op, n.size);
        rc = mt_error_set(MT_ELIMIT, "%s is over the max file size", a->path);
        goto done;
    }
    if ((rc = load(t->db, &now, n.sha256, a->path)) < 0 || (rc = expect(op, &n, a->path)) < 0 ||
        (rc = a->cb(&out, &out_len, now.data, now.len, a->payload)) < 0 ||
        (rc = mt_db_gap(t, a->path, n.memory_id, n.sha256, n.size)) < 0)
        goto done;
    if (!out && out_len == 0 && !(out = calloc(1, 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = mt_db_quota(t, a->path, (int64_t)out_len - (int64_t)now.len, 0, 0)) < 0)
        goto done;
    mt_hist_sha256(sha, out, out_len);
    {
        /* An edit that is no use of the memory keeps its times. */
        mt_db_value v[5] = {mt_db_text(t->db->tenant), mt_db_text(a->path), mt_db_text(sha),
                            mt_db_int((int64_t)out_len),
                            op->keep_access ? mt_db_null() : mt_db_int(mt_db_now_ms())};
        int64_t k;
        if ((rc = mt_db_content_ref(t, sha, out, out_len)) < 0 ||
            (rc = mt_db_content_unref(t, n.sha256)) < 0)
            goto done;
        if ((k = mt_db_exec(t->db, MT_DB_NODE_SET, v, 5, NULL, NULL)) < 0) {
            rc = (int)k;
            goto done;
        }
    }
    mt_db_account(t, (int64_t)out_len - (int64_t)now.len, 0, 0);
    /* A redaction of the current content: its words leave the index with
     * it, and the pages that held them are scrubbed at the commit. */
    if (op->scrub) {
        if ((rc = mt_db_search_erase(t->db, a->path, n.sha256, 1)) < 0)
            goto done;
        t->dropped = 1;
        t->scrub_what = "the memory's content was replaced, but another process was reading the "
                        "store, so its write-ahead log still holds the old words: run the same "
                        "command again once that process is done, which empties the log";
    }
    if (op->reseal && op->history && (rc = reseal_newest(t, &n, sha, out_len)) <= 0)
        goto done; /* a re-encryption: the newest version took the new bytes */
    rc = record_content(t, MT_VERSION_MODIFIED, a->path, NULL, n.memory_id, sha, out_len);
done:
    free(now.data);
    free(out);
    return rc;
}

int mt_db_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload)
{
    edit_args a = {path, cb, payload};

    if (!*path)
        return mt_store_path_error(MT_EISDIR, "cannot edit", path);
    return mt_db_change((mt_db *)st, op, edit_in, &a);
}

/* The nodes beneath a directory, in path order. */
typedef struct {
    char *path;
    int kind;
    char memory_id[24];
    char sha256[65];
    uint64_t size;
} tree_node;

typedef struct {
    tree_node *v;
    size_t n, cap;
} tree_list;

static void tree_free(tree_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int tree_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    tree_list *l = payload;
    tree_node *n;

    if (ncols < 5 || cols[0].type != MT_DB_TEXT)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        tree_node *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return mt_error_set(MT_ENOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    n = &l->v[l->n];
    memset(n, 0, sizeof(*n));
    if (!(n->path = strdup(cols[0].p)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    n->kind = cols[1].i == MT_NODE_DIR ? MT_NODE_DIR : MT_NODE_FILE;
    snprintf(n->memory_id, sizeof(n->memory_id), "%s", cols[2].type == MT_DB_TEXT ? cols[2].p : "");
    snprintf(n->sha256, sizeof(n->sha256), "%s", cols[3].type == MT_DB_TEXT ? cols[3].p : "");
    n->size = cols[4].i > 0 ? (uint64_t)cols[4].i : 0;
    l->n++;
    return 0;
}

static int mt_db_tree(mt_db *db, tree_list *l, const char *path)
{
    char *lo = NULL, *hi = NULL;
    int64_t n;
    int rc;

    memset(l, 0, sizeof(*l));
    if (!*path) {
        mt_db_value a[1] = {mt_db_text(db->tenant)};
        n = mt_db_exec(db, MT_DB_NODES_ALL, a, 1, tree_row, l);
    } else {
        if ((rc = mt_db_beneath(&lo, &hi, path)) < 0)
            return rc;
        {
            mt_db_value a[3] = {mt_db_text(db->tenant), mt_db_text(lo), mt_db_text(hi)};
            n = mt_db_exec(db, MT_DB_NODES_BENEATH, a, 3, tree_row, l);
        }
        free(lo);
        free(hi);
    }
    if (n < 0) {
        tree_free(l);
        return (int)n;
    }
    return 0;
}

static int remove_in(mt_db_txn *t, void *arg)
{
    const char *path = arg;
    mt_db *db = t->db;
    tree_list l = {NULL, 0, 0};
    int64_t bytes = 0, files = 0, dirs = 1, k;
    mt_db_node n;
    size_t i;
    int rc;

    if ((rc = lookup(db, &n, path, "cannot delete")) < 0) {
        /* Nothing there: a retried delete whose first try went through. */
        if (rc == MT_ENOTFOUND && t->op->expect_sha256)
            rc = 0;
        return rc;
    }
    if ((rc = expect(t->op, &n, path)) < 0)
        return rc;
    /* Expiry: only a file still idle goes, checked in the transaction that
     * removes it (touches write under the same lock). */
    if (t->op->idle_before_ms) {
        int64_t at = 0;
        if (n.kind != MT_NODE_FILE || (rc = mt_db_accessed(db, &at, path)) < 0 ||
            at >= t->op->idle_before_ms)
            return rc < 0 ? rc
                          : mt_error_set(MT_ECONFLICT, "%s was accessed since it was found idle",
                                         path);
    }
    if (t->op->empty_dir && n.kind != MT_NODE_DIR)
        return mt_error_set(MT_ECONFLICT, "%s is not an empty directory", path);
    {
        mt_db_value a[2] = {mt_db_text(db->tenant), mt_db_text(path)};
        if ((k = mt_db_exec(db, MT_DB_NODE_DELETE, a, 2, NULL, NULL)) < 0)
            return (int)k;
    }
    if (n.kind == MT_NODE_FILE) {
        if ((rc = mt_db_content_unref(t, n.sha256)) < 0)
            return rc;
        mt_db_account(t, -(int64_t)n.size, -1, 0);
        if (t->op->history && (rc = mt_db_gap(t, path, n.memory_id, n.sha256, n.size)) == 0)
            rc = mt_db_record(t, MT_VERSION_DELETED, path, NULL, n.memory_id, NULL, 0);
        return rc;
    }
    if ((rc = mt_db_tree(db, &l, path)) < 0)
        return rc;
    for (i = 0; t->op->empty_dir && i < l.n; i++)
        if (l.v[i].kind != MT_NODE_DIR) {
            tree_free(&l);
            return mt_error_set(MT_ECONFLICT, "%s is not an empty directory", path);
        }
    for (i = 0; i < l.n && rc == 0; i++) {
        if (l.v[i].kind == MT_NODE_DIR) {
            dirs++;
            continue;
        }
        files++;
        bytes += (int64_t)l.v[i].size;
        if ((rc = mt_db_content_unref(t, l.v[i].sha256)) == 0 && t->op->history &&
            (rc = mt_db_gap(t, l.v[i].path, l.v[i].memory_id, l.v[i].sha256, l.v[i].size)) == 0)
            rc = mt_db_record(t, MT_VERSION_DELETED, l.v[i].path, NULL, l.v[i].memory_id, NULL, 0);
    }
    tree_free(&l);
    if (rc < 0)
        return rc;
    {
        char *lo = NULL, *hi = NULL;
        if ((rc = mt_db_beneath(&lo, &hi, path)) < 0)
            return rc;
        {
            mt_db_value a[3] = {mt_db_text(db->tenant), mt_db_text(lo), mt_db_text(hi)};
            k = mt_db_exec(db, MT_DB_NODES_DELETE_BENEATH, a, 3, NULL, NULL);
        }
        free(lo);
        free(hi);
        if (k < 0)
            return (int)k;
    }
    mt_db_account(t, -bytes, -files, -dirs);
    return 0;
}

int mt_db_remove(mt_store *st, mt_store_op *op, const char *path)
{
    if (!*path)
        return mt_error_set(MT_EINVAL, "the store root cannot be deleted");
    return mt_db_change((mt_db *)st, op, remove_in, (void *)path);
}

typedef struct {
    const char *from, *to;
} rename_args;

/* A retried rename whose first try went through: nothing at the source,
 * the expected content at the destination. */
static int rename_done(mt_db_txn *t, const char *to)
{
    mt_store_op probe = *t->op;
    mt_db_node n;

    if (mt_db_parents(t->db, to, "cannot rename to", NULL, NULL) < 0 ||
        mt_db_node_get(t->db, &n, to) != 1 || expect(&probe, &n, to) < 0)
        return 0;
    return 1;
}

/* A rename's new content (op->rename_content, of SHA-256 sha) for the file
 * node n, now at path: the node holds it, the usage counts it. */
static int rename_write(mt_db_txn *t, const mt_db_node *n, const char *path, const char *sha)
{
    mt_store_op *op = t->op;
    const char *data = op->rename_data ? op->rename_data : "";
    mt_db_value v[5] = {mt_db_text(t->db->tenant), mt_db_text(path), mt_db_text(sha),
                        mt_db_int((int64_t)op->rename_len), mt_db_int(mt_db_now_ms())};
    int64_t k;
    int rc;

    if ((rc = mt_db_content_ref(t, sha, data, op->rename_len)) < 0 ||
        (rc = mt_db_content_unref(t, n->sha256)) < 0)
        return rc;
    if ((k = mt_db_exec(t->db, MT_DB_NODE_SET, v, 5, NULL, NULL)) < 0)
        return (int)k;
    mt_db_account(t, (int64_t)op->rename_len - (int64_t)n->size, 0, 0);
    return 0;
}

/*
 * A retried rename with content that finds nothing at the source (rc, its
 * MT_ENOTFOUND): done when the destination holds the new content; when it
 * holds the expected one (a rename without content moved it), the content
 * is written with one version, a change of content alone, as the file
 * store finishes one a crash cut short.
 */
static int rename_finish(mt_db_txn *t, const char *to, int rc)
{
    mt_store_op *op = t->op;
    mt_db_node n;
    char sha[65], said[256];

    snprintf(said, sizeof(said), "%s", mt_error_last()->message);
    mt_hist_sha256(sha, op->rename_data ? op->rename_data : "", op->rename_len);
    if (mt_db_parents(t->db, to, "cannot rename to", NULL, NULL) < 0 ||
        mt_db_node_get(t->db, &n, to) != 1 || n.kind != MT_NODE_FILE)
        return mt_error_set(rc, "%s", said);
    if (strcmp(n.sha256, sha) == 0)
        return 0;
    if (strcmp(n.sha256, op->expect_sha256) != 0)
        return mt_error_set(rc, "%s", said);
    op->culprit = 1;
    if ((rc = mt_store_content_limit(op, to, n.size, op->rename_len)) < 0 ||
        (rc = mt_db_quota(t, to, (int64_t)op->rename_len - (int64_t)n.size, 0, 0)) < 0 ||
        (rc = mt_db_gap(t, to, n.memory_id, n.sha256, n.size)) < 0 ||
        (rc = rename_write(t, &n, to, sha)) < 0)
        return rc;
    return record_content(t, MT_VERSION_MODIFIED, to, NULL, n.memory_id, sha, op->rename_len);
}

static int rename_in(mt_db_txn *t, void *arg)
{
    rename_args *a = arg;
    mt_db *db = t->db;
    mt_store_op *op = t->op;
    tree_list l = {NULL, 0, 0};
    unsigned height = 0, missing = 0;
    size_t first = 0, i, from_len = strlen(a->from), longest = 0;
    mt_db_node n, dst;
    char sha[65];
    int64_t k;
    int rc, with = op->rename_content;

    op->culprit = 0;
    if ((rc = lookup(db, &n, a->from, "cannot rename")) < 0) {
        if (rc == MT_ENOTFOUND && op->expect_sha256 && with)
            rc = rename_finish(t, a->to, rc);
        else if (rc == MT_ENOTFOUND && op->expect_sha256 && rename_done(t, a->to))
            rc = 0;
        return rc;
    }
    if (with && n.kind != MT_NODE_FILE)
        return mt_error_set(MT_EINVAL, "%s is not a regular file: only a file takes new content",
                            a->from);
    if ((rc = expect(op, &n, a->from)) < 0)
        return rc;
    if (n.kind == MT_NODE_DIR) {
        if ((rc = mt_db_tree(db, &l, a->from)) < 0)
            return rc;
        for (i = 0; i < l.n; i++) {
            unsigned d = depth_of(l.v[i].path + from_len + 1);
            size_t len = strlen(l.v[i].path + from_len + 1);
            if (d > height)
                height = d;
            if (l.v[i].kind == MT_NODE_FILE && len > longest)
                longest = len;
        }
    }
    op->culprit = 1;
    if ((rc = mt_db_parents(db, a->to, "cannot rename to", &missing, &first)) < 0)
        goto done;
    if (!missing) {
        if ((rc = mt_db_node_get(db, &dst, a->to)) < 0)
            goto done;
        if (rc) {
            rc = mt_store_path_error(MT_EEXISTS, "cannot rename to", a->to);
            goto done;
        }
    }
    if ((rc = mt_store_move_limit(op, a->from, a->to, n.kind == MT_NODE_FILE, depth_of(a->to),
                                  height, longest)) < 0)
        goto done;
    if (with && (rc = mt_store_content_limit(op, a->to, n.size, op->rename_len)) < 0)
        goto done;
    if ((rc = mt_db_quota(t, a->to, with ? (int64_t)op->rename_len - (int64_t)n.size : 0, 0,
                          missing)) < 0)
        goto done;
    /* Into itself: the kernel's EINVAL, in the filesystem store's words. */
    if (n.kind == MT_NODE_DIR && strncmp(a->to, a->from, from_len) == 0 && a->to[from_len] == '/') {
        rc = mt_store_path_error(MT_EIO, "cannot rename to", a->to);
        goto done;
    }
    if (missing && (rc = mt_db_make_parents(t, a->to, first)) < 0)
        goto done;
    mt_db_account(t, 0, 0, missing);
    {
        mt_db_value v[3] = {mt_db_text(db->tenant), mt_db_text(a->from), mt_db_text(a->to)};
        if ((k = mt_db_exec(db, MT_DB_NODE_MOVE, v, 3, NULL, NULL)) < 0) {
            rc = (int)k;
            goto done;
        }
    }
    if (n.kind == MT_NODE_FILE && with) {
        /* One version holds the new path and the new content together. */
        mt_hist_sha256(sha, op->rename_data ? op->rename_data : "", op->rename_len);
        if ((rc = mt_db_gap(t, a->from, n.memory_id, n.sha256, n.size)) == 0 &&
            (rc = rename_write(t, &n, a->to, sha)) == 0)
            rc = record_content(t, MT_VERSION_MODIFIED, a->to, a->from, n.memory_id, sha,
                                op->rename_len);
        goto done;
    }
    if (n.kind == MT_NODE_FILE) {
        /* A rename writes the memory: an access (a directory's files keep theirs). */
        if ((rc = mt_db_accessed_now(t, a->to, 0)) == 0 &&
            (rc = mt_db_gap(t, a->from, n.memory_id, n.sha256, n.size)) == 0)
            rc = record_content(t, MT_VERSION_MODIFIED, a->to, a->from, n.memory_id, n.sha256,
                                n.size);
        goto done;
    }
    {
        char *lo = NULL, *hi = NULL;
        if ((rc = mt_db_beneath(&lo, &hi, a->from)) < 0)
            goto done;
        {
            mt_db_value v[4] = {mt_db_text(db->tenant), mt_db_text(lo), mt_db_text(hi),
                                mt_db_text(a->to)};
            k = mt_db_exec(db, MT_DB_NODES_MOVE_BENEATH, v, 4, NULL, NULL);
        }
        free(lo);
        free(hi);
        if (k < 0) {
            rc = (int)k;
            goto done;
        }
    }
    /* Every memory beneath is modified: its path changed. */
    for (i = 0; i < l.n && rc == 0 && op->history; i++) {
        char *moved;
        size_t tl = strlen(a->to), rest = strlen(l.v[i].path + from_len);

        if (l.v[i].kind != MT_NODE_FILE)
            continue;
        if (!(moved = malloc(tl + rest + 1))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            break;
        }
        memcpy(moved, a->to, tl);
        memcpy(moved + tl, l.v[i].path + from_len, rest + 1);
        /* Not pruned here, as in the file store: a memory moved with its
         * directory is cut back to its cap at its next change of its own. */
        if ((rc = mt_db_gap(t, l.v[i].path, l.v[i].memory_id, l.v[i].sha256, l.v[i].size)) == 0)
            rc = mt_db_record(t, MT_VERSION_MODIFIED, moved, l.v[i].path, l.v[i].memory_id,
                              l.v[i].sha256, l.v[i].size);
        free(moved);
    }
done:
    tree_free(&l);
    return rc;
}

int mt_db_rename(mt_store *st, mt_store_op *op, const char *from, const char *to)
{
    rename_args a = {from, to};

    if (!*from)
        return mt_error_set(MT_EINVAL, "the store root cannot be renamed");
    if (!*to)
        return mt_store_path_error(MT_EEXISTS, "cannot rename to", to);
    return mt_db_change((mt_db *)st, op, rename_in, &a);
}

static int catch_up_in(mt_db_txn *t, void *arg)
{
    const char *path = arg;
    tree_list l = {NULL, 0, 0};
    mt_db_node n;
    size_t i;
    int rc;

    if (*path) {
        if ((rc = mt_db_node_get(t->db, &n, path)) <= 0)
            return rc; /* nothing there now: nothing to record */
        if (n.kind == MT_NODE_FILE)
            return mt_db_gap(t, path, n.memory_id, n.sha256, n.size);
    }
    if ((rc = mt_db_tree(t->db, &l, path)) < 0)
        return rc;
    for (i = 0; i < l.n && rc == 0; i++)
        if (l.v[i].kind == MT_NODE_FILE)
            rc = mt_db_gap(t, l.v[i].path, l.v[i].memory_id, l.v[i].sha256, l.v[i].size);
    tree_free(&l);
    if (rc == 0 && !*path)
        t->unrecorded = 0; /* every file has its newest version now */
    return rc;
}

/* Nothing but memtool changes a database store; what there is to catch up
 * on are the changes made with history off (see mt_db_gap). Those leave a
 * mark in the tenant's usage row, and a catch-up comes before every listing
 * of memory-store memories: without the mark it is one statement; with it,
 * every file is caught up, whatever path asked, as only that clears it. */
int mt_db_catch_up(mt_store *st, mt_store_op *op, const char *path)
{
    int rc;

    (void)path;
    if (!op->history || ((mt_db *)st)->read_only)
        return 0;
    if ((rc = mt_db_gap_any((mt_db *)st)) <= 0)
        return rc;
    return mt_db_change((mt_db *)st, op, catch_up_in, "");
}

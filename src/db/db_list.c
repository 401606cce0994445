/*
 * The SQL store's listing: one query for everything beneath the directory,
 * then in C what the filesystem store's walk gives: depth first with each
 * directory's names sorted by bytes (not the order of the full paths:
 * "a-c" < "a/b" bytewise), hidden names and node_modules left out with
 * what is beneath them, yet counted in the sizes.
 */
#include "util/path.h"
#include "db/db_core.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

typedef struct {
    char *rel; /* relative to the listed directory */
    int kind;
    uint64_t size;
} row;

typedef struct {
    row *v;
    size_t n, cap;
    size_t cut; /* bytes of the listed path and its '/' to take off */
} rows;

static int list_row(void *payload, const mt_db_value *cols, size_t ncols)
{
    rows *r = payload;

    if (ncols < 5 || cols[0].type != MT_DB_TEXT || cols[0].len <= r->cut)
        return mt_error_set(MT_EIO, "a row of the store is damaged");
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        row *v = realloc(r->v, cap * sizeof(*v));
        if (!v)
            return mt_error_set(MT_ENOMEM, "out of memory listing a directory");
        r->v = v;
        r->cap = cap;
    }
    if (!(r->v[r->n].rel = strdup(cols[0].p + r->cut)))
        return mt_error_set(MT_ENOMEM, "out of memory listing a directory");
    r->v[r->n].kind = cols[1].i == MT_NODE_DIR ? MT_NODE_DIR : MT_NODE_FILE;
    r->v[r->n].size = cols[4].i > 0 ? (uint64_t)cols[4].i : 0;
    r->n++;
    return 0;
}

/* Depth first, names by bytes: compare as if '/' were below every byte. */
static int tree_cmp(const void *pa, const void *pb)
{
    const unsigned char *a = (const unsigned char *)((const row *)pa)->rel;
    const unsigned char *b = (const unsigned char *)((const row *)pb)->rel;

    for (; *a && *a == *b; a++, b++)
        ;
    if (*a == *b)
        return 0;
    if (*a == '/' || !*a)
        return !*a ? -1 : (*b ? -1 : 1);
    if (*b == '/' || !*b)
        return 1;
    return *a < *b ? -1 : 1;
}

typedef struct {
    mt_store_listing *out;
    const char *path;
    unsigned depth;
    size_t max_entries;
} list_args;

static int entry_path(char **out, const char *dir, const char *rel)
{
    size_t d = strlen(dir), r = strlen(rel);

    if (!(*out = malloc(d + 1 + r + 1)))
        return mt_error_set(MT_ENOMEM, "out of memory listing a directory");
    memcpy(*out, dir, d);
    if (d)
        (*out)[d++] = '/';
    memcpy(*out + d, rel, r + 1);
    return 0;
}

static void rows_dispose(rows *r)
{
    size_t i;

    for (i = 0; i < r->n; i++)
        free(r->v[i].rel);
    free(r->v);
    memset(r, 0, sizeof(*r));
}

/* Every node beneath the directory at path, in the order of a walk. */
static int fetch(mt_db *db, rows *r, const char *path, const char *what)
{
    int64_t n;
    int rc;

    if (*path) {
        mt_db_node node;
        char *lo = NULL, *hi = NULL;

        if ((rc = mt_db_parents(db, path, what, NULL, NULL)) < 0 ||
            (rc = mt_db_node_get(db, &node, path)) < 0)
            return rc;
        if (rc == 0)
            return mt_store_path_error(MT_ENOTFOUND, what, path);
        if (node.kind != MT_NODE_DIR)
            return mt_store_path_error(MT_ENOTDIR, what, path);
        if ((rc = mt_db_beneath(&lo, &hi, path)) < 0)
            return rc;
        r->cut = strlen(path) + 1;
        {
            mt_db_value v[3] = {mt_db_text(db->tenant), mt_db_text(lo), mt_db_text(hi)};
            n = mt_db_exec(db, MT_DB_NODES_BENEATH, v, 3, list_row, r);
        }
        free(lo);
        free(hi);
    } else {
        mt_db_value v[1] = {mt_db_text(db->tenant)};
        n = mt_db_exec(db, MT_DB_NODES_ALL, v, 1, list_row, r);
    }
    if (n < 0) {
        rows_dispose(r);
        return (int)n;
    }
    if (r->n > 1)
        qsort(r->v, r->n, sizeof(*r->v), tree_cmp);
    return 0;
}

static int list_in(mt_db *db, void *arg)
{
    list_args *a = arg;
    mt_store_listing *out = a->out;
    rows r = {NULL, 0, 0, 0};
    /* The open directories above the current row: their row and whether shown. */
    size_t entry_of[MT_STORE_MAX_DEPTH + 2], cap = 0;
    int shown[MT_STORE_MAX_DEPTH + 2];
    unsigned top = 0;
    size_t i;
    int rc;

    if ((rc = fetch(db, &r, a->path, "cannot list")) < 0)
        return rc;
    for (i = 0; i < r.n; i++) {
        const char *rel = r.v[i].rel, *name = strrchr(rel, '/');
        unsigned level = 1;
        int show;

        for (name = rel; *name; name++)
            level += *name == '/';
        name = strrchr(rel, '/');
        name = name ? name + 1 : rel;
        /* Close the directories this row is not beneath. */
        while (top > 0 && top >= level)
            top--;
        show = level <= a->depth && !mt_path_is_hidden(name, strlen(name)) &&
               (top == 0 || shown[top - 1]);
        if (show && a->max_entries && out->count == a->max_entries) {
            out->more = 1;
            show = 0;
        }
        if (r.v[i].kind == MT_NODE_FILE) {
            unsigned k;
            out->size += r.v[i].size;
            out->files++;
            for (k = 0; k < top; k++)
                if (shown[k]) {
                    out->entries[entry_of[k]].size += r.v[i].size;
                    out->entries[entry_of[k]].files++;
                }
        }
        if (show) {
            mt_store_entry *e;
            if (out->count == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                mt_store_entry *grown = realloc(out->entries, ncap * sizeof(*grown));
                if (!grown) {
                    rc = mt_error_set(MT_ENOMEM, "out of memory listing a directory");
                    goto done;
                }
                out->entries = grown;
                cap = ncap;
            }
            e = &out->entries[out->count];
            memset(e, 0, sizeof(*e));
            if ((rc = entry_path(&e->path, a->path, rel)) < 0)
                goto done;
            e->type = (mt_node_type)r.v[i].kind;
            e->depth = level;
            e->size = r.v[i].kind == MT_NODE_FILE ? r.v[i].size : 0;
            e->files = r.v[i].kind == MT_NODE_FILE;
            out->count++;
        }
        if (r.v[i].kind == MT_NODE_DIR && top < MT_STORE_MAX_DEPTH + 1) {
            entry_of[top] = show ? out->count - 1 : 0;
            shown[top] = show;
            top++;
        }
    }
done:
    rows_dispose(&r);
    return rc;
}

int mt_db_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
               size_t max_entries)
{
    list_args a = {out, path, depth, max_entries};
    int rc;

    memset(out, 0, sizeof(*out));
    rc = mt_db_read((mt_db *)st, list_in, &a);
    if (rc < 0)
        mt_store_listing_dispose(out);
    return rc;
}

typedef struct {
    const char *path;
    rows r;
} walk_args;

static int walk_in(mt_db *db, void *arg)
{
    walk_args *a = arg;

    return fetch(db, &a->r, a->path, "cannot walk");
}

int mt_db_walk(mt_store *st, const char *path, mt_walk_cb cb, void *payload)
{
    walk_args a = {path, {NULL, 0, 0, 0}};
    mt_buf full = MT_BUF_INIT;
    size_t i;
    int rc;

    /* The rows are read in one snapshot; the callback runs after it, outside
     * the handle's lock, so it may use the store. */
    if ((rc = mt_db_read((mt_db *)st, walk_in, &a)) < 0)
        return rc;
    for (i = 0; i < a.r.n && rc == 0; i++) {
        mt_buf_truncate(&full, 0);
        if ((*path && (mt_buf_puts(&full, path) < 0 || mt_buf_putc(&full, '/') < 0)) ||
            mt_buf_puts(&full, a.r.v[i].rel) < 0) {
            rc = mt_error_set(MT_ENOMEM, "out of memory walking the store");
            break;
        }
        rc = cb(payload, full.ptr, (mt_node_type)a.r.v[i].kind,
                a.r.v[i].kind == MT_NODE_FILE ? a.r.v[i].size : 0);
    }
    mt_buf_dispose(&full);
    rows_dispose(&a.r);
    return rc;
}

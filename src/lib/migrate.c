/*
 * Migration: every memory of one store into another. The source is walked
 * first (so the total is known and shown), then each file is copied with the
 * destination's own create, the one the model's create uses: the same
 * limits, the same refusal words, a version of its own. Nothing at the
 * destination is replaced, which is also what makes a stopped migration safe
 * to run again: what is already there with the same content is done.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "memory.h"

#define ROOT "/memories/"

typedef struct {
    char *path; /* store path */
    mt_node_type type;
    uint64_t size;
} node;

typedef struct {
    node *v;
    size_t n, cap;
} node_list;

static int collect(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    node_list *l = payload;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        node *grown = realloc(l->v, cap * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory walking the source");
        l->v = grown;
        l->cap = cap;
    }
    if (!(l->v[l->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory walking the source");
    l->v[l->n].type = type;
    l->v[l->n].size = size;
    l->n++;
    return 0;
}

static void list_free(node_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
}

/* Directories with no file anywhere beneath them. The walk lists each
 * directory before what it holds, so an open directory stays on the stack
 * until a node that is not beneath it comes. */
static int count_empty_dirs(uint64_t *out, const node_list *l)
{
    size_t *stack = malloc((l->n + 1) * sizeof(*stack)), top = 0, i;
    unsigned char *has_file = calloc(l->n + 1, 1);
    uint64_t empty = 0;

    *out = 0;
    if (!stack || !has_file) {
        free(stack);
        free(has_file);
        return mt_error_set(MT_ENOMEM, "out of memory counting the source's directories");
    }
    for (i = 0; i <= l->n; i++) {
        /* Close the directories this node is not beneath (all, at the end). */
        while (top > 0) {
            const char *d = l->v[stack[top - 1]].path;
            size_t dl = strlen(d);
            if (i < l->n && strncmp(l->v[i].path, d, dl) == 0 && l->v[i].path[dl] == '/')
                break;
            top--;
            if (!has_file[stack[top]])
                empty++;
            else if (top > 0)
                has_file[stack[top - 1]] = 1;
        }
        if (i == l->n)
            break;
        if (l->v[i].type == MT_NODE_DIR)
            stack[top++] = i;
        else if (l->v[i].type == MT_NODE_FILE && top > 0)
            has_file[stack[top - 1]] = 1;
    }
    free(stack);
    free(has_file);
    *out = empty;
    return 0;
}

static void sha256_hex(char out[65], const char *data, size_t len)
{
    unsigned char md[crypto_hash_sha256_BYTES];

    crypto_hash_sha256(md, (const unsigned char *)data, len);
    sodium_bin2hex(out, 65, md, sizeof(md));
}

typedef struct {
    mt_memory *from, *to;
    mt_migrate_cb cb;
    void *payload;
    mt_migrate_stats *stats;
    mt_buf path;    /* the request path of the file at hand */
    mt_buf message; /* why, for conflicts and failures */
} migration;

static int emit(migration *g, mt_migrate_event_kind kind, const node *f, const char *why)
{
    mt_migrate_event e;

    switch (kind) {
    case MT_MIGRATE_COPIED:
        g->stats->copied++;
        break;
    case MT_MIGRATE_SAME:
        g->stats->same++;
        break;
    case MT_MIGRATE_CONFLICT:
        g->stats->conflicts++;
        break;
    case MT_MIGRATE_SKIPPED:
        g->stats->skipped++;
        break;
    case MT_MIGRATE_FAILED:
        g->stats->failed++;
        break;
    case MT_MIGRATE_PLAN:
        break;
    }
    if (f && kind != MT_MIGRATE_SKIPPED) {
        g->stats->done_files++;
        g->stats->done_bytes += f->size;
    }
    memset(&e, 0, sizeof(e));
    e.kind = kind;
    e.path = f ? g->path.ptr : NULL;
    e.size = f ? f->size : 0;
    e.message = why;
    e.stats = g->stats;
    if (g->cb && g->cb(g->payload, &e) != 0)
        return mt_error_set(MT_ESTOPPED, "the migration was stopped; run it again to finish");
    return 0;
}

/* A failure: why is prefix followed by detail. */
static int fail(migration *g, const node *f, const char *prefix, const char *detail)
{
    mt_buf_truncate(&g->message, 0);
    if (mt_buf_puts(&g->message, prefix) < 0 || mt_buf_puts(&g->message, detail) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return emit(g, MT_MIGRATE_FAILED, f, g->message.ptr);
}

/* What the destination holds at the file's path: 0 nothing (go ahead), or
 * the event that settles it (same, conflict), already emitted: 1. */
static int settled(migration *g, const node *f, const char *sha)
{
    char there[65];
    mt_node_type type;
    uint64_t size;
    int rc = g->to->store->stat(g->to->store, &type, &size, f->path);

    if (rc == MT_ENOTFOUND)
        return 0;
    if (rc == MT_ENOTDIR)
        return (rc = emit(g, MT_MIGRATE_CONFLICT, f,
                          "a parent of it is a file at the destination")) < 0
                   ? rc
                   : 1;
    if (rc < 0)
        return (rc = fail(g, f, "", mt_error_last()->message)) < 0 ? rc : 1;
    if (type == MT_NODE_DIR)
        return (rc = emit(g, MT_MIGRATE_CONFLICT, f, "it is a directory at the destination")) < 0
                   ? rc
                   : 1;
    if (type == MT_NODE_FILE && mt_memory_sha256(there, g->to, g->path.ptr) == 0 &&
        strcmp(there, sha) == 0)
        return (rc = emit(g, MT_MIGRATE_SAME, f, NULL)) < 0 ? rc : 1;
    mt_buf_truncate(&g->message, 0);
    if (type == MT_NODE_FILE)
        rc = mt_buf_printf(&g->message,
                           "the destination holds other content there (sha256 %.8s, here %.8s)",
                           there, sha);
    else
        rc = mt_buf_puts(&g->message, "the destination holds something that is not a file there");
    if (rc < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return (rc = emit(g, MT_MIGRATE_CONFLICT, f, g->message.ptr)) < 0 ? rc : 1;
}

static int copy_file(migration *g, const node *f)
{
    char sha[65], there[65];
    char *data = NULL;
    size_t len = 0;
    mt_reply r;
    mt_str path;
    int rc;

    memset(&r, 0, sizeof(r));
    if (mt_memory_read(&data, &len, g->from, g->path.ptr) < 0) {
        if (mt_error_last()->code == MT_ENOTFOUND)
            return 0; /* deleted since the walk: not the source's any more */
        return fail(g, f, "", mt_error_last()->message);
    }
    sha256_hex(sha, data, len);
    if ((rc = settled(g, f, sha)) != 0) {
        rc = rc > 0 ? 0 : rc;
        goto done;
    }
    path.ptr = g->path.ptr;
    path.len = g->path.len;
    r.command = "create";
    /* The model's own create: the destination's limits and words. */
    if ((rc = mt_op_create(&r, g->to, path, f->path, (mt_str){data, len})) < 0)
        goto done;
    if (r.is_error) {
        /* Made by someone else meanwhile: that is what is there now. */
        if ((rc = settled(g, f, sha)) != 0) {
            rc = rc > 0 ? 0 : rc;
            goto done;
        }
        rc = fail(g, f, "", r.text.ptr + (strncmp(r.text.ptr, "Error: ", 7) == 0 ? 7 : 0));
        goto done;
    }
    if (mt_memory_sha256(there, g->to, g->path.ptr) < 0) {
        rc = fail(g, f, "copied, but could not be read back: ", mt_error_last()->message);
        goto done;
    }
    if (strcmp(there, sha) != 0) {
        rc = fail(g, f, "copied, but the destination holds other content: sha256 ", there);
        goto done;
    }
    rc = emit(g, MT_MIGRATE_COPIED, f, NULL);
done:
    mt_buf_dispose(&r.text);
    free(data);
    return rc;
}

int mt_memory_migrate(mt_migrate_stats *out, mt_memory *from, mt_memory *to, mt_migrate_cb cb,
                      void *payload)
{
    node_list l = {NULL, 0, 0};
    migration g;
    mt_migrate_stats stats;
    size_t i;
    int rc;

    if (!out || !from || !to)
        return mt_error_set(MT_EINVAL, "mt_memory_migrate needs stats, a source and a destination");
    memset(out, 0, sizeof(*out));
    memset(&stats, 0, sizeof(stats));
    memset(&g, 0, sizeof(g));
    if (from->store->version < 4 || !from->store->walk)
        return mt_error_set(MT_ENOSYS, "the source store cannot be walked whole (a store of "
                                       "interface version 4 is needed)");
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium failed to start");
    if ((rc = from->store->walk(from->store, "", collect, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        if (l.v[i].type == MT_NODE_FILE) {
            stats.files++;
            stats.bytes += l.v[i].size;
        }
    }
    if ((rc = count_empty_dirs(&stats.empty_dirs, &l)) < 0)
        goto done;
    g.from = from;
    g.to = to;
    g.cb = cb;
    g.payload = payload;
    g.stats = &stats;
    if ((rc = emit(&g, MT_MIGRATE_PLAN, NULL, NULL)) < 0)
        goto done;
    for (i = 0; i < l.n && rc == 0; i++) {
        const node *f = &l.v[i];
        if (f->type == MT_NODE_DIR)
            continue;
        mt_buf_truncate(&g.path, 0);
        if (mt_buf_puts(&g.path, ROOT) < 0 || mt_buf_puts(&g.path, f->path) < 0) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            break;
        }
        if (f->type == MT_NODE_OTHER)
            rc = emit(&g, MT_MIGRATE_SKIPPED, f,
                      "not a file or a directory, or a name no path can be: not copied");
        else
            rc = copy_file(&g, f);
    }
done:
    *out = stats;
    mt_buf_dispose(&g.path);
    mt_buf_dispose(&g.message);
    list_free(&l);
    return rc;
}

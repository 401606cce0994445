/*
 * Migration: every memory of one store into another. The source is walked
 * first (so the total is known and shown), and its history read for the
 * memories in it, the deleted ones too; then each memory is copied: with its
 * history through the destination's import, one transaction a memory
 * (migrate_history.c), or as the model's create would make it, with the
 * same limits and refusal words and a version of its own. Nothing at the
 * destination is replaced, which is also what makes a stopped migration
 * safe to run again: a memory whose id the destination holds, or a path it
 * holds with the same content, is done.
 */
#include "core/migrate.h"
#include "util/sha256.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

typedef struct {
    char *path; /* store path */
    mt_node_type type;
    uint64_t size;
    mt_mig_memory *memory; /* with history: the memory it is, or NULL */
    int skip;              /* handled in an earlier pass */
    int handled;           /* told in this pass */
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
    l->v[l->n].memory = NULL;
    l->v[l->n].skip = l->v[l->n].handled = 0;
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

int mt_mig_emit(mt_migration *g, mt_migrate_event_kind kind, const mt_mig_subject *s,
                const char *why)
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
    if (s && s->deleted) {
        g->stats->done_deleted++;
    } else if (s && kind != MT_MIGRATE_SKIPPED) {
        g->stats->done_files++;
        g->stats->done_bytes += s->size;
    }
    if (s)
        g->stats->done_versions += s->versions;
    memset(&e, 0, sizeof(e));
    e.kind = kind;
    e.path = s ? g->path.ptr : NULL;
    e.size = s ? s->size : 0;
    e.message = why;
    e.stats = g->stats;
    e.deleted = s ? s->deleted : 0;
    e.versions = s ? s->versions : 0;
    if (kind == MT_MIGRATE_COPIED && g->nids) {
        e.ids = g->ids;
        e.nids = g->nids / 2;
    }
    if (g->cb && g->cb(g->payload, &e) != 0)
        return mt_error_set(MT_ESTOPPED, "the migration was stopped; run it again to finish");
    return 0;
}

int mt_mig_fail(mt_migration *g, const mt_mig_subject *s, const char *prefix, const char *detail)
{
    mt_buf_truncate(&g->message, 0);
    if (mt_buf_puts(&g->message, prefix) < 0 || mt_buf_puts(&g->message, detail) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return mt_mig_emit(g, MT_MIGRATE_FAILED, s, g->message.ptr);
}

/* An event emitted: 1, or the error that stops the run. */
static int told(int rc)
{
    return rc < 0 ? rc : 1;
}

int mt_mig_settled(mt_migration *g, const mt_mig_subject *s, const char *rel, const char *sha)
{
    char there[65];
    mt_node_type type;
    uint64_t size;
    int rc = g->to->store->stat(g->to->store, &type, &size, rel);

    if (rc == MT_ENOTFOUND)
        return 0;
    if (rc == MT_ENOTDIR)
        return told(
            mt_mig_emit(g, MT_MIGRATE_CONFLICT, s, "a parent of it is a file at the destination"));
    if (rc < 0)
        return told(mt_mig_fail(g, s, "", mt_error_last()->message));
    if (type == MT_NODE_DIR)
        return told(mt_mig_emit(g, MT_MIGRATE_CONFLICT, s, "it is a directory at the destination"));
    if (type == MT_NODE_FILE && mt_memory_sha256(there, g->to, g->path.ptr) == 0 &&
        strcmp(there, sha) == 0)
        return told(mt_mig_emit(g, MT_MIGRATE_SAME, s, NULL));
    mt_buf_truncate(&g->message, 0);
    if (type == MT_NODE_FILE)
        rc = mt_buf_printf(&g->message,
                           "the destination holds other content there (sha256 %.8s, here %.8s)",
                           there, sha);
    else
        rc = mt_buf_puts(&g->message, "the destination holds something that is not a file there");
    if (rc < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return told(mt_mig_emit(g, MT_MIGRATE_CONFLICT, s, g->message.ptr));
}

int mt_mig_vanished(mt_migration *g, const mt_mig_subject *s)
{
    if (!g->last_pass)
        return MT_MIG_VANISHED;
    return mt_mig_fail(g, s, "",
                       "it was moved or deleted in the source while migrate ran, again each "
                       "time the source was walked for it: run migrate again to copy it");
}

int mt_mig_copy_file(mt_migration *g, const mt_mig_subject *s, const char *rel)
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
            return mt_mig_vanished(g, s); /* moved or deleted since the walk */
        return mt_mig_fail(g, s, "", mt_error_last()->message);
    }
    mt_sha256_hex(sha, data, len);
    if ((rc = mt_mig_settled(g, s, rel, sha)) != 0) {
        rc = rc > 0 ? 0 : rc;
        goto done;
    }
    path.ptr = g->path.ptr;
    path.len = g->path.len;
    r.command = "create";
    /* The model's own create: the destination's limits and words. */
    if ((rc = mt_op_create(&r, g->to, path, rel, (mt_str){data, len})) < 0)
        goto done;
    if (r.is_error) {
        /* Made by someone else meanwhile: that is what is there now. */
        if ((rc = mt_mig_settled(g, s, rel, sha)) != 0) {
            rc = rc > 0 ? 0 : rc;
            goto done;
        }
        rc = mt_mig_fail(g, s, "", r.text.ptr + (strncmp(r.text.ptr, "Error: ", 7) == 0 ? 7 : 0));
        goto done;
    }
    if (mt_memory_sha256(there, g->to, g->path.ptr) < 0) {
        rc = mt_mig_fail(g, s, "copied, but could not be read back: ", mt_error_last()->message);
        goto done;
    }
    if (strcmp(there, sha) != 0) {
        rc = mt_mig_fail(g, s, "copied, but the destination holds other content: sha256 ", there);
        goto done;
    }
    /* As idle as it was in the source, not fresh from the copy. Best effort,
     * as the import's times are: the memory is there either way. */
    if (g->to->store->version >= 7 && g->to->store->times) {
        int64_t accessed, modified;
        mt_mig_times(&accessed, &modified, g->from, rel);
        if (accessed > 0)
            (void)g->to->store->times(g->to->store, rel, accessed, modified);
    }
    rc = mt_mig_emit(g, MT_MIGRATE_COPIED, s, NULL);
done:
    mt_buf_dispose(&r.text);
    free(data);
    return rc;
}

/* Why the history is not copied: NULL when it is, "" when the caller asked. */
static const char *history_off(const mt_memory *from, const mt_memory *to,
                               const mt_migrate_options *opts)
{
    if (opts && opts->no_history)
        return "";
    if (from->store->version < 3 || !from->store->versions || !from->store->version_content)
        return "the source store keeps no history";
    if (!from->op.history)
        return "history is off for the source";
    if (to->store->version < 6 || !to->store->import)
        return "the destination store cannot take a memory's history";
    if (!to->op.history)
        return "history is off for the destination";
    return NULL;
}

static int set_path(mt_migration *g, const char *rel)
{
    mt_buf_truncate(&g->path, 0);
    if (mt_buf_puts(&g->path, MT_MIGRATE_ROOT) < 0 || mt_buf_puts(&g->path, rel) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

/* Walks of the source at most: the first, and again while memories were
 * moved or deleted under it (each walk finds them where they are now). */
#define PASSES 4

/* What earlier passes told, by path (files without history) and by memory
 * id: a later pass leaves it, so nothing is counted or told twice. */
typedef struct {
    char **v;
    size_t n, cap;
} name_set;

static int set_add(name_set *t, const char *name)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **grown = realloc(t->v, cap * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory");
        t->v = grown;
        t->cap = cap;
    }
    if (!(t->v[t->n] = strdup(name)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    t->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int set_has(const name_set *t, const char *name)
{
    return t->n && bsearch(&name, t->v, t->n, sizeof(*t->v), by_name) != NULL;
}

static void set_free(name_set *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
}

typedef struct {
    name_set paths, ids;
} told_before;

/* One walk of the source and the copy of what it found that no earlier
 * pass told; *vanished counts the files gone when they came to be copied
 * (taken off the totals: the next pass counts them where they are). */
static int pass(mt_migration *g, const char *off, int first, told_before *before,
                uint64_t *vanished)
{
    mt_migrate_stats *stats = g->stats;
    mt_memory *from = g->from;
    node_list l = {NULL, 0, 0};
    mt_mig_memories mems;
    size_t i;
    int rc;

    *vanished = 0;
    memset(&mems, 0, sizeof(mems));
    /* The history first: bringing it up to date records what was changed
     * outside memtool, which the walk then sees as it is. */
    if (!off && (rc = mt_mig_scan(&mems, from)) < 0) {
        char why[256];
        snprintf(why, sizeof(why), "%s", mt_error_last()->message);
        rc = mt_error_set(rc,
                          "the source's history could not be read (%s): fix it, or migrate "
                          "without it (--no-history)",
                          why);
        goto done;
    }
    if (!off && (rc = mt_mig_plan_ids(g, &mems)) < 0) {
        char why[256];
        snprintf(why, sizeof(why), "%s", mt_error_last()->message);
        rc = mt_error_set(rc, "the destination's history could not be read (%s)", why);
        goto done;
    }
    if ((rc = from->store->walk(from->store, "", collect, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        node *f = &l.v[i];
        if (f->type == MT_NODE_DIR)
            continue;
        if (f->type == MT_NODE_FILE && !off) {
            /* The memory a file is: by its newest version's path, or by
             * the id the store keeps for it (moved while history was off). */
            if (!(f->memory = mt_mig_by_path(&mems, f->path)) && from->store->memory_id) {
                char id[24];
                if (from->store->memory_id(from->store, id, f->path) == 1)
                    f->memory = mt_mig_by_id(&mems, id);
            }
            if (f->memory && f->memory->matched)
                f->memory = NULL; /* one file a memory */
            if (f->memory)
                f->memory->matched = 1;
        }
        f->skip =
            (f->memory && set_has(&before->ids, f->memory->id)) || set_has(&before->paths, f->path);
        if (f->skip || f->type != MT_NODE_FILE)
            continue;
        stats->files++;
        stats->bytes += f->size;
        if (f->memory)
            stats->versions += f->memory->versions;
    }
    for (i = 0; i < mems.n; i++)
        if (!mems.v[i].matched && mems.v[i].newest_op == MT_VERSION_DELETED &&
            !set_has(&before->ids, mems.v[i].id)) {
            stats->deleted++;
            stats->versions += mems.v[i].versions;
        }
    if (first) {
        if ((rc = count_empty_dirs(&stats->empty_dirs, &l)) < 0)
            goto done;
        if ((rc = mt_mig_emit(g, MT_MIGRATE_PLAN, NULL, off && *off ? off : NULL)) < 0)
            goto done;
    }
    for (i = 0; i < l.n && rc == 0; i++) {
        node *f = &l.v[i];
        mt_mig_subject s = {f->size, 0, f->memory ? f->memory->versions : 0};
        if (f->type == MT_NODE_DIR || f->skip)
            continue;
        if ((rc = set_path(g, f->path)) < 0)
            break;
        if (f->type == MT_NODE_OTHER)
            rc = mt_mig_emit(g, MT_MIGRATE_SKIPPED, &s,
                             "not a file or a directory, or a name no path can be: not copied");
        else if (f->memory)
            rc = mt_mig_copy_memory(g, &s, f->path, f->memory);
        else
            rc = mt_mig_copy_file(g, &s, f->path);
        if (rc == MT_MIG_VANISHED) {
            (*vanished)++;
            stats->files--;
            stats->bytes -= f->size;
            stats->versions -= s.versions;
            rc = 0;
        } else if (rc == 0) {
            f->handled = 1;
            if (f->memory)
                f->memory->handled = 1;
        }
    }
    /* The memories deleted in the source: their versions, so they can be restored. */
    for (i = 0; i < mems.n && rc == 0; i++) {
        mt_mig_memory *m = &mems.v[i];
        mt_mig_subject s = {0, 1, m->versions};
        if (m->matched || m->newest_op != MT_VERSION_DELETED || set_has(&before->ids, m->id))
            continue;
        mt_buf_truncate(&g->path, 0);
        if ((rc = m->newest_path ? set_path(g, m->newest_path)
                  : mt_buf_printf(&g->path, "(memory %s)", m->id) < 0
                      ? mt_error_set(MT_ENOMEM, "out of memory")
                      : 0) < 0)
            break;
        if ((rc = mt_mig_copy_memory(g, &s, NULL, m)) == 0)
            m->handled = 1;
    }
    /* Another pass to come: what this one told is left to it. */
    if (rc == 0 && *vanished) {
        for (i = 0; i < l.n && rc == 0; i++)
            if (l.v[i].handled && !l.v[i].memory)
                rc = set_add(&before->paths, l.v[i].path);
        for (i = 0; i < mems.n && rc == 0; i++)
            if (mems.v[i].handled)
                rc = set_add(&before->ids, mems.v[i].id);
        if (before->paths.n)
            qsort(before->paths.v, before->paths.n, sizeof(char *), by_name);
        if (before->ids.n)
            qsort(before->ids.v, before->ids.n, sizeof(char *), by_name);
    }
done:
    mt_mig_memories_free(&mems);
    list_free(&l);
    return rc;
}

int mt_memory_migrate_with(mt_migrate_stats *out, mt_memory *from, mt_memory *to,
                           const mt_migrate_options *opts, mt_migrate_cb cb, void *payload)
{
    told_before before;
    mt_migration g;
    mt_migrate_stats stats;
    const char *off;
    uint64_t vanished = 0;
    int rc = 0, n;

    if (!out || !from || !to)
        return mt_error_set(MT_EINVAL, "mt_memory_migrate needs stats, a source and a destination");
    memset(out, 0, sizeof(*out));
    memset(&stats, 0, sizeof(stats));
    memset(&g, 0, sizeof(g));
    memset(&before, 0, sizeof(before));
    if (from->store->version < 4 || !from->store->walk)
        return mt_error_set(MT_ENOSYS, "the source store cannot be walked whole (a store of "
                                       "interface version 4 is needed)");
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium failed to start");
    off = history_off(from, to, opts);
    stats.history = !off;
    g.from = from;
    g.to = to;
    g.cb = cb;
    g.payload = payload;
    g.stats = &stats;
    /* A memory moved (or deleted) between the walk and its copy is looked
     * for again: by its id where there is history, else at any path not
     * seen yet. Never silently left behind: gone on the last walk too, it
     * is a failure naming it. */
    for (n = 0; n < PASSES && rc == 0 && (n == 0 || vanished); n++) {
        g.last_pass = n == PASSES - 1;
        rc = pass(&g, off, n == 0, &before, &vanished);
    }
    *out = stats;
    mt_buf_dispose(&g.path);
    mt_buf_dispose(&g.message);
    free(g.ids);
    set_free(&before.paths);
    set_free(&before.ids);
    return rc;
}

int mt_memory_migrate(mt_migrate_stats *out, mt_memory *from, mt_memory *to, mt_migrate_cb cb,
                      void *payload)
{
    return mt_memory_migrate_with(out, from, to, NULL, cb, payload);
}

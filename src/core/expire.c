/*
 * Expiry: the memories nobody has viewed or changed for a while deleted
 * (gc), and the store at a glance (stats). Both start from the store's list
 * of files with their last access (store.h, idle); gc then deletes each
 * idle file with a condition the store checks in the same step as the
 * removal (mt_store_op.idle_before_ms), so a memory viewed after the list
 * was made is kept.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/memory.h"

#define ROOT "/memories/"

int64_t mt_memory_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct {
    char *path; /* store path */
    uint64_t size;
    int64_t at, modified;
} idle_file;

typedef struct {
    idle_file *v;
    size_t n, cap;
    uint64_t files, bytes;
    int64_t cutoff; /* keep only files accessed before this (INT64_MAX: all) */
} idle_list;

static int collect(void *payload, const char *path, uint64_t size, int64_t at, int64_t modified)
{
    idle_list *l = payload;

    l->files++;
    l->bytes += size;
    if (at >= l->cutoff)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        idle_file *grown = realloc(l->v, cap * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory listing the store");
        l->v = grown;
        l->cap = cap;
    }
    if (!(l->v[l->n].path = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory listing the store");
    l->v[l->n].size = size;
    l->v[l->n].at = at;
    l->v[l->n].modified = modified;
    l->n++;
    return 0;
}

static void list_free(idle_list *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Idlest first; paths break ties, so every store gives the same order. */
static int by_access(const void *a, const void *b)
{
    const idle_file *x = a, *y = b;

    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int has_expiry(mt_memory *m, const char *what)
{
    if (m->store->version < 5 || !m->store->idle || !m->store->remove)
        return mt_error_set(MT_ENOSYS,
                            "this store records no last access, so %s cannot tell "
                            "what is idle (it predates store interface version 5)",
                            what);
    return 0;
}

static int list_idle(idle_list *l, mt_memory *m, const char *rel, int64_t cutoff)
{
    memset(l, 0, sizeof(*l));
    l->cutoff = cutoff;
    return m->store->idle(m->store, rel, collect, l);
}

static int gc_emit(mt_gc_cb cb, void *payload, mt_gc_event_kind kind, const char *path,
                   const idle_file *f, int64_t now, const char *message, const mt_gc_stats *st)
{
    mt_gc_event e;

    if (!cb)
        return 0;
    memset(&e, 0, sizeof(e));
    e.kind = kind;
    e.path = path;
    e.message = message;
    e.stats = st;
    if (f) {
        e.size = f->size;
        e.last_access_ms = f->at;
        e.idle_ms = now > f->at ? (uint64_t)(now - f->at) : 0;
    }
    return cb(payload, &e) != 0 ? mt_error_set(MT_ESTOPPED, "gc was stopped") : 0;
}

/* One idle file deleted if it is still idle; the event says what came of it. */
static int gc_one(mt_gc_stats *st, mt_memory *m, const mt_gc_options *o, const idle_file *f,
                  int64_t cutoff, int64_t now, const char *path, mt_gc_cb cb, void *payload)
{
    mt_store_op op;
    int rc;

    if (o->dry_run) {
        st->expired++;
        st->expired_bytes += f->size;
        return gc_emit(cb, payload, MT_GC_EXPIRED, path, f, now, NULL, st);
    }
    mt_memory_op(&op, m);
    op.idle_before_ms = cutoff;
    if (o->actor)
        op.actor = o->actor;
    rc = m->store->remove(m->store, &op, f->path);
    mt_memory_note(m, &op);
    if (rc == 0 || rc == MT_ENOTDURABLE) {
        st->expired++;
        st->expired_bytes += f->size;
        return gc_emit(cb, payload, MT_GC_EXPIRED, path, f, now, NULL, st);
    }
    if (rc == MT_ECONFLICT || rc == MT_ENOTFOUND) {
        /* Viewed or changed since it was listed, or deleted by someone else. */
        st->kept++;
        return gc_emit(cb, payload, MT_GC_KEPT, path, f, now, NULL, st);
    }
    if (rc == MT_ENOMEM)
        return rc;
    st->failed++;
    return gc_emit(cb, payload, MT_GC_FAILED, path, f, now, mt_error_last()->message, st);
}

int mt_memory_gc(mt_gc_stats *out, mt_memory *m, const mt_gc_options *o, mt_gc_cb cb, void *payload)
{
    mt_gc_stats st;
    idle_list l;
    mt_buf path = MT_BUF_INIT;
    char *rel = NULL;
    int64_t now, cutoff;
    size_t i;
    int rc;

    memset(&st, 0, sizeof(st));
    memset(&l, 0, sizeof(l));
    if (out)
        memset(out, 0, sizeof(*out));
    if (!m || !o)
        return mt_error_set(MT_EINVAL, "mt_memory_gc needs a handle and options");
    if (o->idle_ms < MT_GC_MIN_IDLE_MS || o->idle_ms > (uint64_t)INT64_MAX / 2)
        return mt_error_set(MT_EINVAL,
                            "an idle time must be at least a minute (last access is recorded "
                            "to within a minute) and at most a few million years");
    if ((rc = has_expiry(m, "gc")) < 0)
        return rc;
    if (o->path && (rc = mt_memory_rel(&rel, o->path)) < 0)
        return rc;
    now = o->now_ms ? o->now_ms : mt_memory_now_ms();
    cutoff = now - (int64_t)o->idle_ms;
    if ((rc = list_idle(&l, m, rel ? rel : "", cutoff)) < 0)
        goto done;
    if (l.n)
        qsort(l.v, l.n, sizeof(*l.v), by_access);
    st.files = l.files;
    st.bytes = l.bytes;
    st.idle = l.n;
    for (i = 0; i < l.n; i++)
        st.idle_bytes += l.v[i].size;
    if ((rc = gc_emit(cb, payload, MT_GC_PLAN, NULL, NULL, now, NULL, &st)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        mt_buf_truncate(&path, 0);
        if (mt_buf_puts(&path, ROOT) < 0 || mt_buf_puts(&path, l.v[i].path) < 0) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        if ((rc = gc_one(&st, m, o, &l.v[i], cutoff, now, path.ptr, cb, payload)) < 0)
            goto done;
    }
done:
    if (out)
        *out = st;
    mt_buf_dispose(&path);
    list_free(&l);
    free(rel);
    return rc;
}

/* Keep the MT_STATS_TOP best of the files by `before` (a before b: a ranks higher). */
static int top_put(mt_stats_file *top, size_t *n, const idle_file *f,
                   int (*before)(const idle_file *, const mt_stats_file *))
{
    size_t i = *n, k;
    char *p;
    int rc;

    while (i > 0 && before(f, &top[i - 1]))
        i--;
    if (i >= MT_STATS_TOP)
        return 0;
    if ((rc = mt_memory_request_path(&p, f->path)) < 0)
        return rc;
    if (*n == MT_STATS_TOP)
        free(top[--*n].path);
    for (k = *n; k > i; k--)
        top[k] = top[k - 1];
    top[i].path = p;
    top[i].size = f->size;
    top[i].last_access_ms = f->at;
    top[i].modified_ms = f->modified;
    ++*n;
    return 0;
}

static int bigger(const idle_file *f, const mt_stats_file *t)
{
    return f->size > t->size || (f->size == t->size && strcmp(f->path, t->path + 10) < 0);
}

static int older(const idle_file *f, const mt_stats_file *t)
{
    return f->modified < t->modified_ms ||
           (f->modified == t->modified_ms && strcmp(f->path, t->path + 10) < 0);
}

static int idler(const idle_file *f, const mt_stats_file *t)
{
    return f->at < t->last_access_ms ||
           (f->at == t->last_access_ms && strcmp(f->path, t->path + 10) < 0);
}

int mt_memory_stats(mt_stats *out, mt_memory *m)
{
    idle_list l;
    size_t i;
    int rc;

    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_stats needs an out pointer and a handle");
    memset(out, 0, sizeof(*out));
    memset(&l, 0, sizeof(l));
    out->max_file_size = m->opts.max_file_size;
    out->max_store_size = m->opts.max_store_size;
    out->max_files = m->opts.max_files;
    out->max_dirs = m->opts.max_dirs;
    if ((rc = m->store->usage(m->store, &out->usage)) < 0 || (rc = has_expiry(m, "stats")) < 0)
        goto done;
    /* A store that keeps no times (a remote store: the API has none of
     * access) says so with MT_ENOSYS: its stats are its usage alone. */
    if ((rc = list_idle(&l, m, "", INT64_MAX)) == MT_ENOSYS)
        rc = 0;
    else if (rc < 0)
        goto done;
    for (i = 0; i < l.n && rc == 0; i++)
        if ((rc = top_put(out->largest, &out->nlargest, &l.v[i], bigger)) < 0 ||
            (rc = top_put(out->oldest, &out->noldest, &l.v[i], older)) < 0)
            break;
    for (i = 0; i < l.n && rc == 0; i++)
        rc = top_put(out->idlest, &out->nidlest, &l.v[i], idler);
    if (rc < 0)
        goto done;
    if (m->op.history && m->store->version_count &&
        m->store->version_count(m->store, &out->versions) == 0)
        out->has_versions = 1;
done:
    list_free(&l);
    if (rc < 0)
        mt_stats_dispose(out);
    return rc;
}

void mt_stats_dispose(mt_stats *s)
{
    size_t i;

    if (!s)
        return;
    for (i = 0; i < s->nlargest; i++)
        free(s->largest[i].path);
    for (i = 0; i < s->noldest; i++)
        free(s->oldest[i].path);
    for (i = 0; i < s->nidlest; i++)
        free(s->idlest[i].path);
    s->nlargest = s->noldest = s->nidlest = 0;
}

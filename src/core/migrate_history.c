/*
 * Migration with history: the source's memories read from its versions
 * (the deleted ones too), and each memory brought to the destination whole
 * through its store's import: every version, the content of each fetched
 * from the source by version and checked by SHA-256 on its way, and the
 * current file, in one transaction. Afterwards the destination's versions
 * of the memory are read back and must be the source's, all but their ids
 * (each id that changed is told with the copy).
 */
#include "core/migrate.h"
#include "util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "util/api_path.h"
#include "util/path.h"
#include "contract/store_contract.h"

/* Versions read from a store at a time. */
#define PAGE 1000

static size_t id_hash(const char *id)
{
    size_t h = 2166136261u;

    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h;
}

mt_mig_memory *mt_mig_by_id(const mt_mig_memories *t, const char *id)
{
    size_t i;

    if (!t->nslot)
        return NULL;
    for (i = id_hash(id) & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1))
        if (strcmp(t->v[t->slot[i] - 1].id, id) == 0)
            return &t->v[t->slot[i] - 1];
    return NULL;
}

static void slot_put(mt_mig_memories *t, size_t index)
{
    size_t i;

    for (i = id_hash(t->v[index].id) & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1))
        ;
    t->slot[i] = index + 1;
}

/* The memory of v, made when it is the first (the newest) version seen of it. */
static int take(mt_mig_memories *t, const mt_version *v)
{
    mt_mig_memory *m = mt_mig_by_id(t, v->memory_id);
    size_t i;

    if (!t->min_id || v->id < t->min_id)
        t->min_id = v->id;
    if (v->id > t->max_id)
        t->max_id = v->id;

    if (m) {
        m->versions++;
        return 0;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        mt_mig_memory *grown = realloc(t->v, cap * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory reading the source's history");
        t->v = grown;
        t->cap = cap;
    }
    if ((t->n + 1) * 2 > t->nslot) {
        size_t nslot = t->nslot ? t->nslot * 2 : 512;
        size_t *slot = calloc(nslot, sizeof(*slot));
        if (!slot)
            return mt_error_set(MT_ENOMEM, "out of memory reading the source's history");
        free(t->slot);
        t->slot = slot;
        t->nslot = nslot;
        for (i = 0; i < t->n; i++)
            slot_put(t, i);
    }
    m = &t->v[t->n];
    memset(m, 0, sizeof(*m));
    snprintf(m->id, sizeof(m->id), "%s", v->memory_id);
    m->newest_op = v->operation;
    m->versions = 1;
    if (v->path && !(m->newest_path = strdup(v->path)))
        return mt_error_set(MT_ENOMEM, "out of memory reading the source's history");
    slot_put(t, t->n);
    t->n++;
    return 0;
}

static int by_path_order(const void *a, const void *b)
{
    return strcmp((*(mt_mig_memory *const *)a)->newest_path,
                  (*(mt_mig_memory *const *)b)->newest_path);
}

mt_mig_memory *mt_mig_by_path(const mt_mig_memories *t, const char *path)
{
    size_t lo = 0, hi = t->nlive;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->live[mid]->newest_path, path);
        if (c == 0)
            return t->live[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The store to list st's versions from when only their ids, memory ids,
 * operations and paths are wanted (store.h, MT_STORE_LISTING): beneath the
 * encryption layer the store it wraps, which lists them without decrypting
 * each; otherwise st. */
static mt_store *listing_store(mt_store *st)
{
    mt_store *inner = NULL;

    return mt_store_control(st, MT_STORE_LISTING, &inner) == 0 && inner ? inner : st;
}

int mt_mig_scan(mt_mig_memories *t, mt_memory *from)
{
    mt_store *st = from->store;
    mt_log_query q;
    mt_version *page = NULL;
    size_t got = 0, i;
    int rc;

    memset(t, 0, sizeof(*t));
    if (st->catch_up) {
        mt_store_op op;
        mt_memory_op(&op, from);
        if ((rc = st->catch_up(st, &op, "")) < 0)
            return rc;
    }
    memset(&q, 0, sizeof(q));
    q.limit = PAGE;
    /* Only ids, operations and paths are taken: an encrypted store lists
     * them without opening every version, each of which is opened when its
     * memory is copied (and a version that does not open fails that memory). */
    st = listing_store(st);
    /* Newest first: the first version of a memory seen is its newest. */
    for (;;) {
        if ((rc = st->versions(st, &page, &got, &q)) < 0)
            return rc;
        for (i = 0; i < got && rc == 0; i++)
            rc = take(t, &page[i]);
        if (got)
            q.before_id = page[got - 1].id;
        mt_versions_free(page, got);
        if (rc < 0)
            return rc;
        if (got < PAGE)
            break;
    }
    if (t->n && !(t->live = malloc(t->n * sizeof(mt_mig_memory *))))
        return mt_error_set(MT_ENOMEM, "out of memory reading the source's history");
    for (i = 0; i < t->n; i++)
        if (t->v[i].newest_op != MT_VERSION_DELETED && t->v[i].newest_path)
            t->live[t->nlive++] = &t->v[i];
    if (t->nlive)
        qsort(t->live, t->nlive, sizeof(mt_mig_memory *), by_path_order);
    return 0;
}

int mt_mig_plan_ids(mt_migration *g, const mt_mig_memories *mems)
{
    mt_store *st = listing_store(g->to->store);
    mt_version *page = NULL;
    mt_log_query q;
    size_t got = 0, i;
    int64_t newest = 0;
    int rc;

    if (g->ids_planned)
        return 0;
    /* The destination's newest version of a memory the source does not
     * hold: what the source's ids must stay clear of. */
    memset(&q, 0, sizeof(q));
    q.limit = PAGE;
    while (!newest) {
        if ((rc = st->versions(st, &page, &got, &q)) < 0)
            return rc;
        for (i = 0; i < got && !newest; i++)
            if (!mt_mig_by_id(mems, page[i].memory_id))
                newest = page[i].id;
        if (got)
            q.before_id = page[got - 1].id;
        mt_versions_free(page, got);
        if (got < PAGE)
            break;
    }
    g->id_shift = mems->min_id && newest >= mems->min_id ? newest - mems->min_id + 1 : 0;
    g->id_next = mems->max_id + g->id_shift + 1;
    if (newest > g->id_next - 1)
        g->id_next = newest + 1;
    g->ids_planned = 1;
    return 0;
}

void mt_mig_memories_free(mt_mig_memories *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        free(t->v[i].newest_path);
    free(t->v);
    free(t->slot);
    free(t->live);
    memset(t, 0, sizeof(*t));
}

/* Every version of memory id in st, oldest first. */
static int all_versions(mt_version **out, size_t *count, mt_store *st, const char *id)
{
    mt_version *all = NULL, *page = NULL;
    size_t n = 0, got = 0, i;
    mt_log_query q;
    int rc = 0;

    *out = NULL;
    *count = 0;
    memset(&q, 0, sizeof(q));
    q.memory_id = id;
    q.limit = PAGE;
    for (;;) {
        mt_version *grown;
        if ((rc = st->versions(st, &page, &got, &q)) < 0)
            goto fail;
        if (got && !(grown = realloc(all, (n + got) * sizeof(*all)))) {
            mt_versions_free(page, got);
            rc = mt_error_set(MT_ENOMEM, "out of memory reading a memory's history");
            goto fail;
        }
        if (got) {
            all = grown;
            memcpy(all + n, page, got * sizeof(*all));
            n += got;
            q.before_id = all[n - 1].id;
        }
        free(page); /* its strings are all's now */
        if (got < PAGE)
            break;
    }
    for (i = 0; i < n / 2; i++) {
        mt_version tmp = all[i];
        all[i] = all[n - 1 - i];
        all[n - 1 - i] = tmp;
    }
    *out = all;
    *count = n;
    return 0;
fail:
    mt_versions_free(all, n);
    return rc;
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The same version but for its id. */
static int same_version(const mt_version *a, const mt_version *b)
{
    return a->operation == b->operation && same_text(a->path, b->path) &&
           same_text(a->previous_path, b->previous_path) && same_text(a->actor, b->actor) &&
           a->created_at == b->created_at && strcmp(a->content_sha256, b->content_sha256) == 0 &&
           a->content_size == b->content_size && !a->redacted == !b->redacted;
}

/* A store path a request could name (a source is read as it is found). */
static int path_ok(const char *rel)
{
    mt_buf b = {NULL, 0, 0};
    char *parsed = NULL;
    int ok;

    if (!rel)
        return 1;
    ok = mt_buf_puts(&b, MT_MIGRATE_ROOT) == 0 && mt_buf_puts(&b, rel) == 0 &&
         mt_path_parse(&parsed, b.ptr, b.len) == MT_PATH_OK && strcmp(parsed, rel) == 0;
    free(parsed);
    mt_buf_dispose(&b);
    return ok;
}

/* Why the versions are no memory's that memtool would keep, or NULL. */
static const char *bad_versions(const mt_version *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (!path_ok(v[i].path) || !path_ok(v[i].previous_path))
            return "a version of it names a path no request can";
        if (mt_actor_check(v[i].actor) < 0)
            return "a version of it names an actor memtool does not take";
    }
    return NULL;
}

/* On a memory store (--memory-store), whether every path the history names
 * is one the API takes (util/api_path.h): what the store keeps, the API
 * serves. 0, 1 with `why` set (the rule broken), or an error. */
static int memstore_refused(char *why, size_t size, const mt_memory *to, const mt_version *v,
                            size_t n)
{
    mt_buf b = {NULL, 0, 0};
    size_t i, k;
    int rc = 0;

    for (i = 0; i < n && to->opts.memory_store && rc == 0; i++) {
        const char *paths[2] = {v[i].path, v[i].previous_path};
        for (k = 0; k < 2 && rc == 0; k++) {
            if (!paths[k])
                continue;
            mt_buf_truncate(&b, 0);
            if (mt_buf_puts(&b, "/") < 0 || mt_buf_puts(&b, paths[k]) < 0)
                rc = mt_error_set(MT_ENOMEM, "out of memory");
            else if (mt_memstore_path_check("a path of its history", b.ptr, b.len) == MT_EINVAL) {
                snprintf(why, size,
                         "%s (this is a memory store of memtool server, which keeps the "
                         "memory-store API's path rules)",
                         mt_error_last()->message);
                rc = 1;
            }
        }
    }
    mt_buf_dispose(&b);
    return rc;
}

/* Where import gets each version's content: the source's history, and
 * what the file holds now for a version the history had not recorded. */
typedef struct {
    mt_memory *from;
    const mt_version *v;
    size_t recorded; /* v[0 .. recorded) are the source's versions */
    const char *current;
    size_t current_len;
} content_source;

static int content_of(void *payload, char **out, size_t *len, size_t i)
{
    content_source *c = payload;

    if (i >= c->recorded) {
        if (!(*out = malloc(c->current_len + 1)))
            return mt_error_set(MT_ENOMEM, "out of memory copying a memory");
        memcpy(*out, c->current, c->current_len);
        (*out)[c->current_len] = '\0';
        *len = c->current_len;
        return 0;
    }
    return c->from->store->version_content(c->from->store, out, len, c->v[i].id);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An event told: 1, or the error that stops the run. */
static int told(int rc)
{
    return rc < 0 ? rc : 1;
}

/* The memory's id is at the destination already: it arrived before. */
static int arrived(mt_migration *g, const mt_mig_subject *s, const char *rel, const char *sha)
{
    char there[65];

    if (!rel || (mt_memory_sha256(there, g->to, g->path.ptr) == 0 && strcmp(there, sha) == 0))
        return mt_mig_emit(g, MT_MIGRATE_SAME, s, NULL);
    return mt_mig_emit(g, MT_MIGRATE_CONFLICT, s,
                       "the destination holds this memory already (its id), but not with this "
                       "content at this path: it was changed there since it was copied");
}

/* Read back: the destination's versions of the memory must be these. */
static int check_copy(mt_migration *g, const mt_mig_subject *s, const char *id, const mt_version *v,
                      size_t n)
{
    mt_version *there = NULL;
    size_t got = 0, i;
    int rc;

    if ((rc = all_versions(&there, &got, g->to->store, id)) < 0)
        return mt_mig_fail(
            g, s, "copied, but its history could not be read back: ", mt_error_last()->message);
    for (i = 0; i < n && i < got && same_version(&v[i], &there[i]); i++)
        ;
    /* Each id that changed on the way, for the event (v holds the source's). */
    g->nids = 0;
    for (size_t k = 0; i == n && got == n && k < n && rc == 0; k++) {
        if (v[k].id == there[k].id)
            continue;
        if (g->nids + 2 > g->ids_cap) {
            size_t cap = g->ids_cap ? g->ids_cap * 2 : 64;
            int64_t *grown = realloc(g->ids, cap * sizeof(*grown));
            if (!grown)
                rc = mt_error_set(MT_ENOMEM, "out of memory");
            else
                g->ids = grown, g->ids_cap = cap;
        }
        if (rc == 0) {
            g->ids[g->nids++] = v[k].id;
            g->ids[g->nids++] = there[k].id;
        }
    }
    mt_versions_free(there, got);
    if (rc < 0)
        return rc;
    if (i < n || got != n) {
        mt_buf_truncate(&g->message, 0);
        if (mt_buf_printf(&g->message,
                          "copied, but its history at the destination differs from the "
                          "source's at version %zu of %zu",
                          i + 1, n) < 0)
            return mt_error_set(MT_ENOMEM, "out of memory");
        return mt_mig_emit(g, MT_MIGRATE_FAILED, s, g->message.ptr);
    }
    return 1;
}

/* A content the history has not recorded (the memory changed while its
 * history was off, or moved) becomes a version by "external" at the end of
 * the list, as the source itself would record it at its next change. */
static int add_gap(mt_version **v, size_t *n, const char *id, const char *rel, const char *sha,
                   size_t len)
{
    const mt_version *newest = &(*v)[*n - 1];
    mt_version *grown, *gap;

    if (newest->operation != MT_VERSION_DELETED && strcmp(newest->content_sha256, sha) == 0 &&
        same_text(newest->path, rel))
        return 0;
    if (!(grown = realloc(*v, (*n + 1) * sizeof(**v))))
        return mt_error_set(MT_ENOMEM, "out of memory copying a memory");
    *v = grown;
    newest = &grown[*n - 1];
    gap = &grown[(*n)++];
    memset(gap, 0, sizeof(*gap));
    snprintf(gap->memory_id, sizeof(gap->memory_id), "%s", id);
    gap->operation =
        newest->operation == MT_VERSION_DELETED ? MT_VERSION_CREATED : MT_VERSION_MODIFIED;
    gap->path = strdup(rel);
    if (gap->operation == MT_VERSION_MODIFIED && newest->path && strcmp(newest->path, rel) != 0)
        gap->previous_path = strdup(newest->path);
    gap->actor = strdup("external");
    gap->created_at = now_ms();
    memcpy(gap->content_sha256, sha, 65);
    gap->content_size = len;
    if (!gap->path || !gap->actor ||
        (newest->path && gap->operation == MT_VERSION_MODIFIED && strcmp(newest->path, rel) != 0 &&
         !gap->previous_path))
        return mt_error_set(MT_ENOMEM, "out of memory copying a memory");
    return 0;
}

/* The versions as the destination records them: each source id moved by
 * the plan (a version the source had not recorded gets the next free one),
 * or, when any of those ids is taken there, every id left to the store. */
static int plan_versions(mt_version **out, mt_migration *g, const mt_version *v, size_t n,
                         size_t recorded)
{
    mt_store *st = listing_store(g->to->store);
    mt_version *iv, there;
    size_t i;
    int rc = 0;

    if (!(iv = malloc(n * sizeof(*iv))))
        return mt_error_set(MT_ENOMEM, "out of memory copying a memory");
    memcpy(iv, v, n * sizeof(*iv)); /* the strings stay v's */
    for (i = 0; i < n; i++)
        iv[i].id = i < recorded ? v[i].id + g->id_shift : g->id_next++;
    for (i = 0; i < n && rc == 0; i++) {
        memset(&there, 0, sizeof(there));
        rc = st->version_get(st, &there, iv[i].id);
        mt_version_dispose(&there);
        if (rc == 0) {
            for (i = 0; i < n; i++)
                iv[i].id = 0;
        } else if (rc == MT_ENOTFOUND) {
            rc = 0;
        }
    }
    if (rc < 0) {
        free(iv);
        return rc;
    }
    *out = iv;
    return 0;
}

typedef struct {
    const char *path;
    int64_t accessed, modified;
} file_times;

static int times_cb(void *payload, const char *path, uint64_t size, int64_t last_access_ms,
                    int64_t modified_ms)
{
    file_times *t = payload;

    (void)size;
    if (strcmp(path, t->path) == 0) {
        t->accessed = last_access_ms;
        t->modified = modified_ms;
    }
    return 0;
}

void mt_mig_times(int64_t *accessed_ms, int64_t *modified_ms, mt_memory *from, const char *rel)
{
    file_times t = {rel, 0, 0};

    *accessed_ms = *modified_ms = 0;
    if (from->store->version >= 5 && from->store->idle &&
        from->store->idle(from->store, rel, times_cb, &t) == 0) {
        *accessed_ms = t.accessed;
        *modified_ms = t.modified;
    }
}

static void times_of(mt_store_import *in, mt_memory *from, const char *rel)
{
    mt_mig_times(&in->accessed_ms, &in->modified_ms, from, rel);
}

/* Whether the destination keeps any version of memory id. */
static int present_at(int *present, mt_memory *to, const char *id)
{
    mt_version *one = NULL;
    size_t got = 0;
    mt_log_query q;
    int rc;

    memset(&q, 0, sizeof(q));
    q.memory_id = id;
    q.limit = 1;
    if ((rc = to->store->versions(to->store, &one, &got, &q)) < 0)
        return rc;
    mt_versions_free(one, got);
    *present = got > 0;
    return 0;
}

/* The reply's words without their "Error: ". */
static const char *words(const mt_reply *r)
{
    return r->text.ptr + (strncmp(r->text.ptr, "Error: ", 7) == 0 ? 7 : 0);
}

/* The current content is a write at the destination like a create's:
 * checked for secrets and against the file-size limit, in its words.
 * 0 to go on, 1 when settled (a failure told), 2 when only a create can
 * write it (redacted), or an error. */
static int write_checks(mt_migration *g, const mt_mig_subject *s, const char *data, size_t len)
{
    mt_str path = {g->path.ptr, g->path.len};
    mt_guard gd;
    mt_reply r;
    int rc;

    memset(&r, 0, sizeof(r));
    if ((rc = mt_guard_content(&gd, g->to, data, len)) < 0)
        return rc;
    if (gd.rejected) {
        rc = mt_guard_reject(&r, path, &gd.found);
        rc = rc < 0 ? rc : told(mt_mig_fail(g, s, "", words(&r)));
    } else if (gd.found.count) {
        rc = 2;
    } else if ((rc = mt_limits_check(&r, g->to, path, len)) > 0) {
        rc = told(mt_mig_fail(g, s, "", words(&r)));
    }
    mt_guard_dispose(&gd);
    mt_buf_dispose(&r.text);
    return rc;
}

/* The outcome of the store's import: 1 when the memory is in, to be
 * checked; 0 when an event settled it (told), or the error that stops. */
static int imported(mt_migration *g, const mt_mig_subject *s, const char *rel, const char *sha,
                    const mt_store_op *op, const mt_store_import *in, int rc)
{
    mt_str path = {g->path.ptr, g->path.len};
    char why[256];
    mt_reply r;

    if (rc == 0)
        return in->present ? arrived(g, s, rel, sha) : 1;
    snprintf(why, sizeof(why), "%s", mt_error_last()->message);
    if ((rc == MT_EEXISTS || rc == MT_ENOTDIR) && rel) {
        /* Made by someone else meanwhile: that is what is there now. */
        if ((rc = mt_mig_settled(g, s, rel, sha)) != 0)
            return rc < 0 ? rc : 0;
    } else if (rc == MT_ELIMIT) {
        memset(&r, 0, sizeof(r));
        if ((rc = mt_reply_limit(&r, op, path, NULL)) == 0)
            rc = mt_mig_fail(g, s, "", words(&r));
        mt_buf_dispose(&r.text);
        return rc;
    }
    return mt_mig_fail(g, s, "", why);
}

int mt_mig_copy_memory(mt_migration *g, const mt_mig_subject *s, const char *rel,
                       const mt_mig_memory *m)
{
    mt_version *v = NULL, *iv = NULL;
    size_t n = 0, len = 0;
    char *data = NULL, sha[65] = "", there[65], refused[512];
    content_source src;
    mt_store_import in;
    mt_store_op op;
    const char *why;
    int present = 0, rc;

    if ((rc = all_versions(&v, &n, g->from->store, m->id)) < 0) {
        rc = mt_mig_fail(g, s, "its history could not be read: ", mt_error_last()->message);
        goto done;
    }
    if (n == 0) {
        if (rel) /* pruned away meanwhile: the file alone */
            rc = mt_mig_copy_file(g, s, rel);
        goto done;
    }
    if ((why = bad_versions(v, n))) {
        rc = mt_mig_fail(g, s, "", why);
        goto done;
    }
    src.from = g->from;
    src.recorded = n;
    if (rel) {
        if (mt_memory_read(&data, &len, g->from, g->path.ptr) < 0) {
            rc = mt_error_last()->code == MT_ENOTFOUND
                     ? mt_mig_vanished(g, s) /* moved or deleted since the walk */
                     : mt_mig_fail(g, s, "", mt_error_last()->message);
            goto done;
        }
        mt_sha256_hex(sha, data, len);
        if ((rc = add_gap(&v, &n, m->id, rel, sha, len)) < 0)
            goto done;
    }
    if ((rc = memstore_refused(refused, sizeof(refused), g->to, v, n)) != 0) {
        rc = rc < 0 ? rc : mt_mig_fail(g, s, "", refused);
        goto done;
    }
    /* Arrived before (a stopped run's): done. */
    if ((rc = present_at(&present, g->to, m->id)) < 0) {
        rc = mt_mig_fail(g, s, "", mt_error_last()->message);
        goto done;
    }
    if (present) {
        rc = arrived(g, s, rel, sha);
        goto done;
    }
    if (rel &&
        ((rc = mt_mig_settled(g, s, rel, sha)) != 0 || (rc = write_checks(g, s, data, len)) != 0)) {
        /* To be redacted: only a create can, so it comes without its history. */
        rc = rc == 2 ? mt_mig_copy_file(g, s, rel) : rc > 0 ? 0 : rc;
        goto done;
    }
    src.v = v;
    src.current = data;
    src.current_len = len;
    if ((rc = plan_versions(&iv, g, v, n, src.recorded)) < 0) {
        rc = mt_mig_fail(g, s, "", mt_error_last()->message);
        goto done;
    }
    memset(&in, 0, sizeof(in));
    in.memory_id = m->id;
    in.versions = iv;
    in.count = n;
    in.content = content_of;
    in.payload = &src;
    if (rel)
        times_of(&in, g->from, rel);
    mt_memory_op(&op, g->to);
    rc = g->to->store->import(g->to->store, &op, &in);
    mt_memory_note(g->to, &op);
    if ((rc = imported(g, s, rel, sha, &op, &in, rc)) <= 0)
        goto done;
    g->stats->versions_copied += in.made;
    if (rel && mt_memory_sha256(there, g->to, g->path.ptr) < 0) {
        rc = mt_mig_fail(g, s, "copied, but could not be read back: ", mt_error_last()->message);
        goto done;
    }
    if (rel && strcmp(there, sha) != 0) {
        rc = mt_mig_fail(g, s, "copied, but the destination holds other content: sha256 ", there);
        goto done;
    }
    if ((rc = check_copy(g, s, m->id, v, n)) <= 0)
        goto done;
    rc = mt_mig_emit(g, MT_MIGRATE_COPIED, s, NULL);
done:
    g->nids = 0;
    free(iv);
    mt_versions_free(v, n);
    if (data) {
        sodium_memzero(data, len);
        free(data);
    }
    return rc;
}

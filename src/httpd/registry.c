/* memtool server's memory stores: their records and their handles. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <memtool/store.h>

#include "core/memstore.h"
#include "httpd/registry.h"
#include "util/sha256.h"

/* Handles kept open; past this, the least recently used idle one closes. */
#define HANDLES 128
/* A record changed by others between its read and its write is read again. */
#define RETRIES 16

typedef struct {
    char *tenant; /* the memtool tenant: "T~registry" or "T~memstore_..." */
    mt_memory *m;
    unsigned refs;
    uint64_t used;
} slot;

struct mt_registry {
    char *url;
    mt_options base;
    mt_crypt_key *key; /* the caller's, shared by every handle (NULL: a plain store) */
    int64_t expire_after_ms;
    pthread_mutex_t lock;
    slot slots[HANDLES];
    uint64_t tick;
    int plain;
    int64_t started_ms;
};

int mt_registry_open(mt_registry **out, const char *url, const mt_options *base, mt_crypt_key *key,
                     int plain)
{
    mt_registry *r = calloc(1, sizeof(*r));
    struct timespec ts;

    *out = NULL;
    if (!r || !(r->url = strdup(url))) {
        free(r);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    r->base = *base;
    r->plain = plain;
    r->key = key;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->started_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    r->base.history = 1;
    r->base.must_exist = 0;
    pthread_mutex_init(&r->lock, NULL);
    /* A store that cannot be opened (a database in a missing directory, a
     * root that is a file, a server that refuses us) fails the start, not
     * every request after it. The probe makes the store as a first request
     * would, without history. */
    {
        mt_options probe = r->base;
        mt_memory *m = NULL;
        int rc;

        probe.history = 0;
        if ((rc = mt_memory_open_url_encrypted(&m, url, &probe, key)) < 0) {
            mt_registry_free(r);
            return rc;
        }
        mt_memory_free(m);
    }
    *out = r;
    return 0;
}

void mt_registry_free(mt_registry *r)
{
    size_t i;

    if (!r)
        return;
    for (i = 0; i < HANDLES; i++) {
        mt_memory_free(r->slots[i].m);
        free(r->slots[i].tenant);
    }
    pthread_mutex_destroy(&r->lock);
    free(r->url);
    free(r);
}

/* A handle of memtool tenant `name`, opened with the API's limits when `api`. */
static int handle(mt_memory **out, mt_registry *r, const char *name, int api)
{
    size_t i, victim = HANDLES;
    mt_options opts = r->base;
    int rc = 0;

    *out = NULL;
    pthread_mutex_lock(&r->lock);
    for (i = 0; i < HANDLES; i++) {
        if (r->slots[i].tenant && strcmp(r->slots[i].tenant, name) == 0) {
            r->slots[i].refs++;
            r->slots[i].used = ++r->tick;
            *out = r->slots[i].m;
            goto done;
        }
        if (r->slots[i].refs == 0 &&
            (victim == HANDLES || !r->slots[i].tenant ||
             (r->slots[victim].tenant && r->slots[i].used < r->slots[victim].used)))
            victim = i;
    }
    if (victim == HANDLES) {
        rc = mt_error_set(MT_EBUSY, "every handle of the server is in use: try again");
        goto done;
    }
    opts.tenant = name;
    if (api) {
        opts.max_file_size = MT_MEMSTORE_MAX_CONTENT;
        opts.max_files = MT_MEMSTORE_MAX_MEMORIES;
        opts.memory_store = 1;
    }
    mt_memory_free(r->slots[victim].m);
    free(r->slots[victim].tenant);
    memset(&r->slots[victim], 0, sizeof(slot));
    if ((rc = mt_memory_open_url_encrypted(out, r->url, &opts, r->key)) < 0)
        goto done;
    if (!(r->slots[victim].tenant = strdup(name))) {
        mt_memory_free(*out);
        *out = NULL;
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    r->slots[victim].m = *out;
    r->slots[victim].refs = 1;
    r->slots[victim].used = ++r->tick;
done:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void mt_registry_release(mt_registry *r, mt_memory *m)
{
    size_t i;

    if (!m)
        return;
    pthread_mutex_lock(&r->lock);
    for (i = 0; i < HANDLES; i++)
        if (r->slots[i].m == m && r->slots[i].refs) {
            r->slots[i].refs--;
            break;
        }
    pthread_mutex_unlock(&r->lock);
}

/* Forget a tenant's handle (its store was deleted), once nobody holds it. */
static void forget(mt_registry *r, const char *name)
{
    size_t i;

    pthread_mutex_lock(&r->lock);
    for (i = 0; i < HANDLES; i++)
        if (r->slots[i].tenant && strcmp(r->slots[i].tenant, name) == 0 && !r->slots[i].refs) {
            mt_memory_free(r->slots[i].m);
            free(r->slots[i].tenant);
            memset(&r->slots[i], 0, sizeof(slot));
        }
    pthread_mutex_unlock(&r->lock);
}

static int registry_handle(mt_memory **out, mt_registry *r, const char *tenant)
{
    char *name = NULL;
    int rc;

    if ((rc = mt_memstore_tenant(&name, tenant, "registry")) < 0)
        return rc;
    rc = handle(out, r, name, 0);
    free(name);
    return rc;
}

static void record_path(char out[64], const char *store_id)
{
    snprintf(out, 64, "/%s.json", store_id);
}

void mt_registry_entry_dispose(mt_registry_entry *e)
{
    if (!e)
        return;
    json_decref(e->record);
    memset(e, 0, sizeof(*e));
}

static int read_record(mt_registry_entry *out, mt_memory *reg, const char *store_id)
{
    char path[64], full[80], *data = NULL;
    size_t len = 0;
    json_error_t err;
    int rc;

    memset(out, 0, sizeof(*out));
    record_path(path, store_id);
    snprintf(full, sizeof(full), "/memories%s", path);
    rc = mt_memory_read(&data, &len, reg, full);
    if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
        return mt_error_set(MT_ENOTFOUND, "no memory store %s", store_id);
    if (rc < 0)
        return rc;
    mt_sha256_hex(out->sha256, data, len);
    out->record = json_loadb(data, len, 0, &err);
    free(data);
    if (!json_is_object(out->record)) {
        json_decref(out->record);
        out->record = NULL;
        return mt_error_set(MT_EIO, "the record of memory store %s is damaged: %s", store_id,
                            err.text);
    }
    return 0;
}

const char *mt_registry_audit(const mt_registry *r)
{
    return r->base.audit;
}

void mt_registry_set_expiry(mt_registry *r, int64_t idle_ms)
{
    r->expire_after_ms = idle_ms > 0 ? idle_ms : 0;
}

int64_t mt_registry_expiry(const mt_registry *r)
{
    return r->expire_after_ms;
}

int mt_registry_is_plain(const mt_registry *r, const char *store_id)
{
    return r->plain && strcmp(store_id, MT_REGISTRY_PLAIN_ID) == 0;
}

/* The plain store's record, made up: nothing of it is kept. */
static int plain_record(mt_registry_entry *out, mt_registry *r, const char *tenant)
{
    char description[320];

    snprintf(description, sizeof(description),
             "the memories of tenant %.256s, as the memory tool sees them",
             tenant && *tenant ? tenant : "default");
    out->record =
        json_pack("{s:s, s:s, s:s, s:s, s:{}, s:I, s:I, s:n, s:{}}", "id", MT_REGISTRY_PLAIN_ID,
                  "type", "memory_store", "name", "/memories", "description", description,
                  "metadata", "created_at", (json_int_t)r->started_ms, "updated_at",
                  (json_int_t)r->started_ms, "archived_at", "redactions");
    if (!out->record)
        return mt_error_set(MT_ENOMEM, "out of memory");
    mt_sha256_hex(out->sha256, "", 0);
    return 0;
}

int mt_registry_get(mt_registry_entry *out, mt_registry *r, const char *tenant,
                    const char *store_id)
{
    mt_memory *reg = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (mt_registry_is_plain(r, store_id))
        return plain_record(out, r, tenant);
    if ((rc = registry_handle(&reg, r, tenant)) < 0)
        return rc;
    rc = read_record(out, reg, store_id);
    mt_registry_release(r, reg);
    return rc;
}

int mt_registry_handle(mt_memory **out, mt_registry_entry *entry, mt_registry *r,
                       const char *tenant, const char *store_id)
{
    mt_registry_entry e;
    char *name = NULL;
    int rc;

    *out = NULL;
    if (entry)
        memset(entry, 0, sizeof(*entry));
    if ((rc = mt_registry_get(&e, r, tenant, store_id)) < 0)
        return rc;
    if (mt_registry_is_plain(r, store_id))
        rc = handle(out, r, tenant && *tenant ? tenant : "default", 0);
    else if ((rc = mt_memstore_tenant(&name, tenant, store_id)) == 0)
        rc = handle(out, r, name, 1);
    free(name);
    if (rc == 0 && entry)
        *entry = e;
    else
        mt_registry_entry_dispose(&e);
    return rc;
}

static int write_new(mt_memory *reg, const char *store_id, json_t *record)
{
    mt_memstore_memory made;
    mt_memstore_conflict c;
    char path[64], *text = json_dumps(record, JSON_COMPACT | JSON_SORT_KEYS);
    int rc;

    if (!text)
        return mt_error_set(MT_ENOMEM, "out of memory");
    record_path(path, store_id);
    rc = mt_memstore_create(&made, &c, reg, path, text, strlen(text));
    free(text);
    mt_memstore_memory_dispose(&made);
    mt_memstore_conflict_dispose(&c);
    return rc;
}

int mt_registry_create(mt_registry_entry *out, mt_registry *r, const char *tenant, const char *name,
                       const char *description, json_t *metadata, const char *actor)
{
    mt_memory *reg = NULL;
    unsigned char raw[8];
    char id[32];
    int64_t now = 0;
    struct timespec ts;
    json_t *rec;
    int rc, i;

    memset(out, 0, sizeof(*out));
    if ((rc = registry_handle(&reg, r, tenant)) < 0)
        return rc;
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        rc = mt_error_set(MT_EIO, "no random bytes for a store id");
        goto done;
    }
    snprintf(id, sizeof(id), "memstore_");
    for (i = 0; i < 8; i++)
        snprintf(id + 9 + 2 * i, 3, "%02x", raw[i]);
    rec = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:n, s:{}}", "id", id, "type",
                    "memory_store", "name", name, "description", description ? description : "",
                    "metadata", metadata ? json_incref(metadata) : json_object(), "created_at",
                    (json_int_t)now, "updated_at", (json_int_t)now, "archived_at", "redactions");
    if (!rec) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    mt_memstore_actor(actor);
    rc = write_new(reg, id, rec);
    mt_memstore_actor(NULL);
    json_decref(rec);
    if (rc == 0)
        rc = read_record(out, reg, id);
done:
    mt_registry_release(r, reg);
    return rc;
}

int mt_registry_update(mt_registry_entry *out, mt_registry *r, const char *tenant,
                       const char *store_id, mt_registry_fn fn, void *payload, const char *actor)
{
    mt_memory *reg = NULL;
    mt_registry_entry cur = {0};
    char path[64];
    int rc = 0, tries;

    memset(out, 0, sizeof(*out));
    if (mt_registry_is_plain(r, store_id)) {
        /* Nothing of the plain store's record is kept: fn's change (a
         * redaction's note) is answered, then forgotten. */
        if ((rc = plain_record(out, r, tenant)) == 0 && (rc = fn(out->record, payload)) < 0)
            mt_registry_entry_dispose(out);
        return rc;
    }
    if ((rc = registry_handle(&reg, r, tenant)) < 0)
        return rc;
    record_path(path, store_id);
    for (tries = 0; tries < RETRIES; tries++) {
        json_t *copy;
        char *text;

        mt_registry_entry_dispose(&cur);
        if ((rc = read_record(&cur, reg, store_id)) < 0)
            goto done;
        if (!(copy = json_deep_copy(cur.record))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        if ((rc = fn(copy, payload)) < 0) {
            json_decref(copy);
            goto done;
        }
        text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(copy);
        if (!text) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        mt_memstore_actor(actor);
        rc = mt_memstore_replace(reg, path, text, strlen(text), cur.sha256);
        mt_memstore_actor(NULL);
        free(text);
        if (rc == MT_ECONFLICT)
            continue;
        if (rc == MT_ENOTFOUND)
            rc = mt_error_set(MT_ENOTFOUND, "no memory store %s", store_id);
        if (rc == 0)
            rc = read_record(out, reg, store_id);
        goto done;
    }
    rc = mt_error_set(MT_EBUSY, "memory store %s kept changing: try again", store_id);
done:
    mt_registry_entry_dispose(&cur);
    mt_registry_release(r, reg);
    return rc;
}

int mt_registry_list(json_t **out, mt_registry *r, const char *tenant)
{
    mt_memory *reg = NULL;
    mt_memstore_memory *items = NULL;
    size_t n = 0, i;
    int more = 0, rc;

    *out = NULL;
    if ((rc = registry_handle(&reg, r, tenant)) < 0)
        return rc;
    /* Records are small and a tenant has few stores: all at once. */
    rc = mt_memstore_list(&items, &n, &more, reg, "/", 1, NULL, 100000, 1);
    if (rc < 0)
        goto done;
    if (!(*out = json_array())) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if (r->plain) {
        mt_registry_entry plain;
        if ((rc = plain_record(&plain, r, tenant)) < 0)
            goto done;
        json_array_append_new(*out, plain.record);
    }
    for (i = 0; i < n; i++) {
        json_t *rec;
        if (items[i].prefix || !items[i].content)
            continue;
        rec = json_loadb(items[i].content, items[i].content_len, 0, NULL);
        if (json_is_object(rec))
            json_array_append_new(*out, rec);
        else
            json_decref(rec);
    }
done:
    mt_memstore_memories_free(items, n);
    mt_registry_release(r, reg);
    return rc;
}

int mt_registry_delete(mt_registry *r, const char *tenant, const char *store_id, const char *actor)
{
    mt_memory *reg = NULL, *m = NULL;
    mt_registry_entry cur = {0};
    char path[64], *name = NULL;
    int rc, tries;

    if (mt_registry_is_plain(r, store_id))
        return mt_error_set(
            MT_EINVAL, "the plain store (the store this server was given) cannot be deleted here");
    if ((rc = registry_handle(&reg, r, tenant)) < 0)
        return rc;
    record_path(path, store_id);
    for (tries = 0; tries < RETRIES; tries++) {
        mt_registry_entry_dispose(&cur);
        if ((rc = read_record(&cur, reg, store_id)) < 0)
            goto done;
        mt_memstore_actor(actor);
        rc = mt_memstore_remove(reg, path, cur.sha256);
        mt_memstore_actor(NULL);
        if (rc != MT_ECONFLICT)
            break;
    }
    if (rc < 0)
        goto done;
    /* The record's versions name the store and hold its description and
     * metadata: they go too. */
    if ((rc = mt_memstore_redact_all(reg, path)) < 0)
        goto done;
    if ((rc = mt_memstore_tenant(&name, tenant, store_id)) < 0 || (rc = handle(&m, r, name, 1)) < 0)
        goto done;
    rc = mt_memstore_purge(m);
    mt_registry_release(r, m);
    forget(r, name);
done:
    free(name);
    mt_registry_entry_dispose(&cur);
    mt_registry_release(r, reg);
    return rc;
}

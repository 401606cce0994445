/*
 * memtool server's memory stores. Each is a tenant of the server's store
 * ("T~memstore_..." for key tenant T, memstore.h); its record (name,
 * description, metadata, times, redactions) is a memory of the tenant
 * "T~registry", /memories/memstore_....json, changed only under a SHA-256
 * precondition: a record changes atomically on every store, across server
 * processes and hosts, and keeps history like any memory. Handles are opened
 * once per tenant and shared by the server's threads (bounded: the least
 * recently used idle one is closed past the cap).
 */
#ifndef MT_REGISTRY_H
#define MT_REGISTRY_H

#include <jansson.h>
#include <stdint.h>

#include <memtool.h>

typedef struct mt_registry mt_registry;

/* Stores are opened from url with base's options (limits, durability,
 * secrets); memory stores get the API's limits on top. With plain, each
 * tenant's own memories (the store as the memory tool sees it, under
 * /memories) are served too, as the memory store MT_REGISTRY_PLAIN_ID: its
 * record is made up, never stored (its name is "/memories"), its limits are
 * base's, and it cannot be changed, archived or deleted (memtool web). */
int mt_registry_open(mt_registry **out, const char *url, const mt_options *base, mt_crypt_key *key,
                     int plain);

#define MT_REGISTRY_PLAIN_ID "memstore_0000000000000000"

/* The audit log the stores are opened with (--audit), or NULL. */
const char *mt_registry_audit(const mt_registry *r);

/* Whether store_id is the plain store of a registry that serves it. */
int mt_registry_is_plain(const mt_registry *r, const char *store_id);
/* The idle time after which the agents' memtool deletes a memory
 * (--expire-after, as memtool web was told it; 0: unknown): what the
 * stats endpoint counts each memory's expiry from. */
void mt_registry_set_expiry(mt_registry *r, int64_t idle_ms);
int64_t mt_registry_expiry(const mt_registry *r);
void mt_registry_free(mt_registry *r);

/* The handle of memory store store_id of tenant, borrowed until
 * mt_registry_release, and (entry not NULL) the store's record as read to
 * find it; MT_ENOTFOUND when the tenant has no such store. */
typedef struct mt_registry_entry mt_registry_entry;
int mt_registry_handle(mt_memory **out, mt_registry_entry *entry, mt_registry *r,
                       const char *tenant, const char *store_id);
void mt_registry_release(mt_registry *r, mt_memory *m);

/* A store's record: the API's memory_store object, plus what the server
 * keeps beside it ("redactions": version id -> {at, by}); sha256 is the
 * record's, for an update's precondition. */
struct mt_registry_entry {
    json_t *record;
    char sha256[65];
};

void mt_registry_entry_dispose(mt_registry_entry *e);

/* Make a store: *out is its record. */
int mt_registry_create(mt_registry_entry *out, mt_registry *r, const char *tenant, const char *name,
                       const char *description, json_t *metadata, const char *actor);

int mt_registry_get(mt_registry_entry *out, mt_registry *r, const char *tenant,
                    const char *store_id);

/* Change a record: fn edits a copy of it (return 0, or an error that stops
 * the change); written only if nobody changed it meanwhile, else fn runs
 * again on the new record (a bounded number of times). *out is the result. */
typedef int (*mt_registry_fn)(json_t *record, void *payload);
int mt_registry_update(mt_registry_entry *out, mt_registry *r, const char *tenant,
                       const char *store_id, mt_registry_fn fn, void *payload, const char *actor);

/* Every record of tenant's stores (a JSON array, unordered). */
int mt_registry_list(json_t **out, mt_registry *r, const char *tenant);

/* Delete a store: its record first (from then on it is gone for the API),
 * then its memories; its versions are redacted, so that no content stays. */
int mt_registry_delete(mt_registry *r, const char *tenant, const char *store_id, const char *actor);

#endif

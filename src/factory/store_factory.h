/*
 * The factory: the one place that opens a store and wraps it (encryption
 * now, other shims later), so the core is handed a store and never
 * assembles one.
 */
#ifndef MT_STORE_FACTORY_H
#define MT_STORE_FACTORY_H

#include <memtool/store.h>

#include "factory/store_url.h"

/* The file store at root (url NULL) or the store url names, for tenant,
 * opened with flags (MT_STORE_OPEN_EXISTING), wrapped with the encryption
 * layer when key is given; *read_only (may be NULL) set when the store
 * cannot be written. */
int mt_store_assemble(mt_store **out, int *read_only, const char *root, const char *url,
                      const char *tenant, mt_durability durability, unsigned flags,
                      mt_crypt_key *key);

/* Whether st may be used as it is given to a handle: a store beneath no
 * encryption layer that records it is encrypted is refused (MT_ECRYPT,
 * naming its key), and *plain says whether every change must check that
 * the store is still plain (a store opened without a key, unless tests
 * reach beneath the layer on purpose). */
int mt_store_admit(int *plain, mt_store *st);

/* memtool store upgrade: the schema of the store url names brought to this
 * memtool's (a file store keeps none; an SQLite store is made and checked). */
int mt_store_upgrade_url(const char *url);
/* memtool store vacuum: a PostgreSQL store's tables rewritten (*vacuumed
 * 1); other stores erase at once and need none (*vacuumed 0). */
int mt_store_vacuum_url(int *vacuumed, const char *url);

#endif

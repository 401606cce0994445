/*
 * The remote store: a memory store of the memory-store API (Anthropic's
 * hosted stores, or memtool server) used as a memtool store. The memory
 * store is the whole store: store path "x/y.md" is the API's "/x/y.md".
 * docs/remote-store.md says what is and is not as on a local store.
 */
#ifndef MT_REMOTE_H
#define MT_REMOTE_H

#include <memtool/store.h>

/* The API's limits (the SDK's doc comments). */
#define MT_REMOTE_MAX_CONTENT  102400
#define MT_REMOTE_MAX_MEMORIES 2000

/* Open the memory store at url (https://HOST[:PORT]/v1/memory_stores/memstore_ID,
 * or http:// on a loopback host), with the key from MEMTOOL_API_KEY, else
 * ANTHROPIC_API_KEY. No request is made: the first command's says whether
 * the store is there. */
int mt_store_remote_open(mt_store **out, const char *url);

/* Check a remote store's URL without opening it: 0, or MT_EINVAL naming the
 * form that works. */
int mt_remote_url_check(const char *url);

#endif

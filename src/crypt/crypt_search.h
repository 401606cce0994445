/* Search in an encrypted store, without an index (crypt_search.c). */
#ifndef MT_STORE_CRYPT_SEARCH_H
#define MT_STORE_CRYPT_SEARCH_H

#include <stddef.h>

#include <memtool/store.h>

/* The memory at a store path, opened: its plaintext in *plain (malloc'd,
 * *len bytes), which the caller wipes and frees; or the error a view of it
 * would give. */
typedef int (*mt_crypt_open_fn)(void *payload, char **plain, size_t *len, const char *path);

/*
 * The store interface's search over `inner`, an encryption layer's store:
 * one walk of the files beneath path, each opened with `open`, matched and
 * counted in memory and wiped at once (search/scan.h), then ranked by BM25
 * over the files walked. Only the matching files' paths and counts are kept
 * until the walk ends. A file that cannot be opened fails the search with
 * its error; one removed or replaced by a directory meanwhile is left out.
 */
int mt_crypt_search(mt_store_hit **out, size_t *count, mt_store *inner, mt_crypt_open_fn open,
                    void *payload, const mt_search_query *q, const char *path, size_t limit);

#endif

/*
 * A search index in a SQLite database (FTS5 over memtool's own words, see
 * search/words.h), for a store without a search engine of its own: the file
 * store keeps it beside its history.
 *
 * It is brought up to date when searched, not when written: every memory
 * comes with a stamp that changes whenever its content does (the file
 * store's is the file's inode, size and modification time), and a search
 * first indexes again what changed since the last one, by memtool or by
 * anyone else, and forgets what is gone. So writes pay nothing for it, and a
 * search never answers from a stale index.
 */
#ifndef MT_STORE_SEARCH_INDEX_H
#define MT_STORE_SEARCH_INDEX_H

#include <stddef.h>

#include <memtool/store.h>

#include "util/buf.h"

struct sqlite3;

/* A memory as it is now. */
typedef struct {
    char *path;
    char stamp[160];
} mt_search_doc;

/* The most of one memory indexed when the query says nothing (max_size 0). */
#define MT_SEARCH_INDEX_CAP (8 * 1024 * 1024)

/* Append the content of the memory at path to out, at most `cap` bytes of
 * it; MT_ENOTFOUND (or any error about the file itself) when it cannot be
 * read: it is then left out of the index. */
typedef int (*mt_search_read_fn)(void *payload, mt_buf *out, const char *path, size_t cap);

/* The index on a database connection: its tables, made on first use, and
 * its statements, prepared once per connection and kept. */
typedef struct mt_search_index mt_search_index;

/* The index on db, which stays the caller's: free the index before closing
 * db (SQLite closes no database with statements left). */
int mt_search_index_open(mt_search_index **out, struct sqlite3 *db);
void mt_search_index_free(mt_search_index *ix);

/*
 * What a redaction leaves of a version in the index on db (the caller's,
 * in the caller's write transaction), made nothing: the memory indexed at
 * path (NULL: none) is forgotten, to be indexed again from its file by the
 * next search, and the words are merged into one segment. FTS5 keeps the
 * terms of a forgotten or replaced memory in its older segments until they
 * are merged; the merge drops them, and SQLite's secure_delete zeros the
 * pages they were on. Costs a rewrite of the whole index: merge 0 leaves
 * it to a later call (the last of a run of redactions). A database with
 * no index has nothing to do.
 */
int mt_search_index_erase(struct sqlite3 *db, const char *path, int merge);

/* How many memories at or beneath path ("" all) the index holds, counting
 * no further than at_most: what a caller that finds the files meanwhile
 * weighs starting threads for against. */
int mt_search_index_held(size_t *out, mt_search_index *ix, const char *path, size_t at_most);

/* The size of a digest of memories as found (a BLAKE2b's). */
#define MT_SEARCH_SUM_BYTES 32

/* The memories at or beneath path now ("" all), sorted by path in byte
 * order, in *docs (kept by the payload), and in *sum their digest, or NULL
 * when there is none: MT_SEARCH_SUM_BYTES that the same memories with the
 * same stamps, and only they, give. */
typedef int (*mt_search_docs_fn)(void *payload, const mt_search_doc **docs, size_t *n,
                                 const unsigned char **sum);

/*
 * Bring the index up to the memories `docs` gives (the words of each one's
 * first `cap` bytes) and answer the query there. Short write transactions,
 * a batch of memories each, so the database's other users (the history)
 * never wait long. `docs` is called once, after the query was answered
 * from the index as it is: a caller that finds the memories on other
 * threads meanwhile has both at the cost of the longer, and that answer is
 * the one given when the index already held every memory as found. A
 * digest from `docs` spares the comparison with the index's every memory
 * when the index last matched the same digest and has not changed since.
 */
int mt_search_index_run(mt_store_hit **out, size_t *count, mt_search_index *ix,
                        mt_search_docs_fn docs, void *docs_payload, mt_search_read_fn read,
                        void *payload, size_t cap, const mt_search_query *q, const char *path,
                        size_t limit);

/*
 * For tests, NULL otherwise: called by a store's catch-up after each memory
 * it indexed or forgot inside a transaction (committed 0) and after each
 * transaction it committed (committed 1), `written` counting this search's
 * memories so far (never by a search the SQLite store answers from a read
 * snapshot, having nothing to catch up on). A test stops the process there,
 * or changes the store between two transactions, to see what a search makes
 * of it.
 */
extern void (*mt_search_index_hook)(size_t written, int committed);

#endif

/*
 * The memory-store API's model over a handle (memtool server): a memory is
 * a file of the handle's store, named by the id it keeps across renames
 * ("mem_" and 16 hex digits); its versions are the store's. API paths are
 * the memory tool's without "/memories": "/notes/a.md" is the file the tool
 * calls "/memories/notes/a.md". Every change goes through the store with a
 * SHA-256 precondition, so it applies to the memory the caller resolved and
 * to nothing else, whoever changes the store meanwhile (another server
 * process, the memory tool).
 */
#ifndef MT_MEMSTORE_H
#define MT_MEMSTORE_H

#include <stddef.h>
#include <stdint.h>

#include <memtool.h>

/* The API's limits (the SDK's doc comments). */
#define MT_MEMSTORE_MAX_CONTENT  102400
#define MT_MEMSTORE_MAX_MEMORIES 2000

/* The separator of a memory store's tenant name: "T~memstore_...". */
#define MT_MEMSTORE_TENANT_SEP '~'

typedef struct {
    char id[24];        /* "mem_..."; "" for a prefix item */
    char *path;         /* "/notes/a.md", or a prefix item's "/notes/" */
    int prefix;         /* a list's roll-up of deeper memories (depth): only path is set */
    char sha256[65];    /* of the content now */
    uint64_t size;      /* bytes */
    int64_t version;    /* the version that holds the content now */
    int64_t created_at; /* ms: the memory's oldest version kept */
    int64_t updated_at; /* ms: its newest */
    char *content;      /* with content asked for, else NULL */
    size_t content_len;
} mt_memstore_memory;

/* Out, on a path conflict (MT_EEXISTS): the memory in the way. */
typedef struct {
    char memory_id[24]; /* "" when it could not be told */
    char *path;         /* its API path, or NULL */
} mt_memstore_conflict;

void mt_memstore_memory_dispose(mt_memstore_memory *mem);
void mt_memstore_memories_free(mt_memstore_memory *mems, size_t count);
void mt_memstore_conflict_dispose(mt_memstore_conflict *c);

/* Record the calling thread's changes as `actor` from now on (NULL: the
 * handle's own): one handle serves requests of many keys at once. */
void mt_memstore_actor(const char *actor);

/* The tenant that holds memory store `store_id` of `tenant` (NULL or "":
 * "default"), malloc'd: "TENANT~STORE_ID". */
int mt_memstore_tenant(char **out, const char *tenant, const char *store_id);

/* A memory by id: MT_ENOTFOUND when there is none (never was, or deleted). */
int mt_memstore_get(mt_memstore_memory *out, mt_memory *m, const char *id, int content);

/*
 * Memories at or beneath `prefix` ("/" or "/notes/"), in byte order of
 * their paths, after `after` (a path a previous page ended with, or NULL),
 * at most `limit`. depth 0: all of them; depth N: those at most N segments
 * below the prefix, and one prefix item for each directory N segments down
 * that holds deeper ones. *more says whether items follow the page.
 */
int mt_memstore_list(mt_memstore_memory **out, size_t *count, int *more, mt_memory *m,
                     const char *prefix, unsigned depth, const char *after, size_t limit,
                     int content);

/*
 * Create a memory at path. MT_EEXISTS with *conflict filled when a memory
 * holds the path, lies beneath it, or holds a directory of it
 * (`/notes` against `/notes/a.md`); MT_ELIMIT, MT_ESECRET, MT_EINVAL with a
 * message. *out is the memory as made.
 */
int mt_memstore_create(mt_memstore_memory *out, mt_memstore_conflict *conflict, mt_memory *m,
                       const char *path, const char *data, size_t len);

/*
 * Change a memory's content (data, or NULL to keep it) and path (NULL to
 * keep it). With expect_sha256, only if its content now has that SHA-256
 * (MT_ECONFLICT) unless it already has exactly the content and path asked
 * for (a retried request). A change equal to the memory as it is records
 * no version. MT_ENOTFOUND, MT_EEXISTS (*conflict), MT_ELIMIT, MT_ESECRET.
 */
int mt_memstore_update(mt_memstore_memory *out, mt_memstore_conflict *conflict, mt_memory *m,
                       const char *id, const char *path, const char *data, size_t len,
                       const char *expect_sha256);

/* Delete a memory (its versions stay), only if its content has
 * expect_sha256 when given (MT_ECONFLICT). MT_ENOTFOUND. */
int mt_memstore_delete(mt_memory *m, const char *id, const char *expect_sha256);

/* The file at an API path, replaced whole (`mt_memstore_replace`) or
 * removed, only if its content has expect_sha256 (MT_ECONFLICT; NULL: any).
 * For records the server keeps as memories. */
int mt_memstore_replace(mt_memory *m, const char *path, const char *data, size_t len,
                        const char *expect_sha256);
int mt_memstore_remove(mt_memory *m, const char *path, const char *expect_sha256);

/* A memory store deleted: every memory removed (a top-level directory at a
 * time, each memory beneath getting its deleted version) and every version
 * redacted, the deletions' too (a path is all they hold), so that no
 * content or path of it stays in the store's files; one scrub for the
 * run. A memory written meanwhile keeps its current content. */
int mt_memstore_purge(mt_memory *m);

/* Every version of a memory at or beneath API path `path` (NULL: of the
 * whole store) redacted, the deletions' too, with one scrub of the store's
 * log and search index for the run, done even when the run fails midway.
 * A current content is left (a memory written meanwhile). */
int mt_memstore_redact_all(mt_memory *m, const char *path);

#endif

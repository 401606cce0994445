/* The remote store's parts (remote.h has the HTTP and the open). */
#ifndef MT_REMOTE_STORE_H
#define MT_REMOTE_STORE_H

#include "remote/remote_http.h"

/* What searches read, by memory, checked by content_sha256 (remote_cache.c). */
typedef struct mt_remote_cache mt_remote_cache;
typedef struct {
    mt_store base;
    mt_remote_http http;
    mt_remote_cache *cache; /* searches' */
} mt_remote_store;

/* A memory as the API answers it, checked. */
typedef struct {
    char *id;   /* the API's id */
    char *path; /* the API path, "/x/y.md" */
    char sha[65];
    uint64_t size;
    char *version_id; /* memver_... (NULL when the answer had none) */
    char *content;    /* with has_content: size bytes and a NUL */
    int has_content;
} mt_rmem;

void mt_rmem_dispose(mt_rmem *m);
int mt_rmem_parse(mt_rmem *m, const json_t *o, int want_content, const char *what);
int mt_remote_api_path_ok(const char *p, size_t len);

int mt_remote_cache_new(mt_remote_cache **out);
void mt_remote_cache_free(mt_remote_cache *c);
/* 1 with *content (malloc'd, NUL-terminated) when the cache holds memory
 * id's content of SHA-256 sha; 0 when not; or an error. */
int mt_remote_cache_get(mt_remote_cache *c, char **content, size_t *size, const char *id,
                        const char *sha);
/* Whether the cache holds memory id's content of SHA-256 sha. */
int mt_remote_cache_has(mt_remote_cache *c, const char *id, const char *sha);
/* Keep m's content (a memory parsed with its content: mt_rmem_parse checked
 * it against its content_sha256). */
void mt_remote_cache_put(mt_remote_cache *c, const mt_rmem *m);

/* An item of a listing: a memory (m, which the callback may take by
 * zeroing it), or a prefix (m NULL, path "/x/"). Return 0 to go on, 1 to
 * stop, or a negative code. */
typedef int (*mt_remote_item_cb)(void *payload, mt_rmem *m, const char *path);

/* The memories (and, at depth 1, prefixes) beneath prefix ("/" or "/x/"),
 * at most max_pages pages; *more (may be NULL) set when pages were left. */
/* The most items a page may hold: the most a request asks for. */
#define MT_REMOTE_PAGE_ITEMS 100

/* One walk through a list's pages, bounded against a server that would
 * page on without end: every cursor followed is remembered (a cycle A, B, A
 * is refused, not only A, A), and the items of all its pages are counted,
 * prefixes as memories. */
typedef struct {
    mt_buf cursor;             /* the next page's cursor ("": the first page) */
    unsigned char (*seen)[32]; /* the SHA-256 of each cursor followed */
    size_t nseen, cap;
    size_t items, max_items;
} mt_remote_walk;

void mt_remote_walk_init(mt_remote_walk *w, size_t max_items);
void mt_remote_walk_dispose(mt_remote_walk *w);

/* One page of a walk (GET target): *page the answer (json_decref it), *data
 * its array; a status other than 200 is an error in the server's words
 * (not_there, when given, for a 404), as is a page without a data array,
 * with a next_page that is neither a string nor null, with more than
 * MT_REMOTE_PAGE_ITEMS items, or past the walk's max_items. */
int mt_remote_page_get(mt_remote_store *rs, mt_remote_walk *w, json_t **page, json_t **data,
                       const char *target, const char *what, const char *not_there);
/* The page's next_page into w->cursor: 1 (go on), 0 (the last page), or an
 * error for a cursor no client can follow (over 4 KiB, or one this walk
 * followed already). */
int mt_remote_page_next(mt_remote_walk *w, const json_t *page, const char *what);
int mt_remote_scan(mt_remote_store *rs, const char *prefix, int depth, int full, size_t max_pages,
                   mt_remote_item_cb cb, void *payload, int *more);
int mt_remote_scan_all(mt_remote_store *rs, const char *prefix, int depth, int full,
                       mt_remote_item_cb cb, void *payload);

/* The segments of a store path ("" none). */
size_t mt_remote_segments(const char *rel);

/* "/" + rel's parent + "/" ("/" at the top), and "/" + rel; malloc'd. */
int mt_remote_paths(char **parent, char **api, const char *rel);

/* What is at store path rel: MT_NODE_FILE (out filled; with full, its
 * content too), MT_NODE_DIR, or MT_ENOTFOUND. */
int mt_remote_find(mt_remote_store *rs, mt_rmem *out, const char *rel, int full);

/* Append "/memories/" and the id, escaped: a memory's target. */
int mt_remote_memory_target(mt_buf *out, const char *id);

/* One memory by id, with its content: 0, MT_ENOTFOUND, or an error. The
 * answer must be the memory asked for, and at path (the API path) when path
 * is not NULL: a memory moved meanwhile is MT_ENOTFOUND there. */
int mt_remote_get(mt_remote_store *rs, mt_rmem *out, const char *id, const char *path,
                  const char *what);

/* Everything beneath a directory, and the directories the paths imply:
 * sorted as listings are, each directory with the bytes and files beneath. */
typedef struct {
    char *path; /* store path */
    mt_node_type type;
    unsigned depth; /* below the loaded directory: 1 for a child */
    uint64_t size, files;
    char *id; /* a memory's */
    char sha[65];
} mt_remote_node;

typedef struct {
    mt_remote_node *nodes;
    size_t count;
    size_t memories;
    uint64_t bytes, files, dirs;
} mt_remote_tree;

int mt_remote_tree_load(mt_remote_store *rs, mt_remote_tree *t, const char *rel);
void mt_remote_tree_dispose(mt_remote_tree *t);

/* memtool's form of an API id: a memory id "mem_" and 16 hex digits (the
 * API's own when it has that form, as memtool server's do; else the first
 * 16 hex digits of its SHA-256), and a version id (version_id in
 * remote_history.c). */
void mt_remote_memory_id(char out[24], const char *api_id);

/* The API's id of a memory met in this process by its memtool id: 1 with
 * out filled, 0 when not met (a filter by memory then reads every version). */
int mt_remote_memory_api_id(char *out, size_t size, const char *mid);

/* The base URL (scheme, host, port, path up to the store's id) and the
 * store's id of a remote store's URL, malloc'd; MT_EINVAL naming the form. */
int mt_remote_url_parse(char **base, char **id, const char *url);

/* Search by reading every memory beneath path (remote_search.c). */
int mt_remote_search(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                     const char *path, size_t limit);

/* Edits that meet a change made meanwhile try again this many times. */
#define MT_REMOTE_EDIT_ATTEMPTS 8

/* The parts of a change the store's files share (remote_store.c). */
/* A short wait before trying again, longer with each attempt. */
void mt_remote_nap(unsigned attempt);
/* The API's rule for a path (store path rel), in memtool's words. */
int mt_remote_rules_check(const char *rel);
/* The API's limit on a memory's bytes, in memtool's words. */
int mt_remote_content_check(size_t len);
/* The error of a refused write, from one reading of its answer: with api
 * (the path written), a path conflict is MT_EEXISTS (the path taken) or
 * MT_ENOTDIR (a memory where a directory of it would be), without a message,
 * and *path_conflict (may be NULL) says so; a failed precondition is
 * MT_ECONFLICT; the rest in the server's words. */
int mt_remote_write_refused(const mt_remote_resp *r, const char *api, int *path_conflict,
                            const char *what);
/* op->version from a write's answer. */
void mt_remote_note_version(mt_remote_store *rs, mt_store_op *op, const json_t *answer);
int mt_remote_not_a_file(void);
/* What a remote store cannot do, said so (MT_ENOSYS). */
int mt_remote_not_here(const char *what);
/* A memory's JSON body: path (api, with with_path), content (with
 * with_content) and a content_sha256 precondition (sha, when not NULL). */
char *mt_remote_memory_body(const char *api, const char *data, size_t len, const char *sha,
                            int with_path, int with_content);
/* POST /memories/{id} with body: 0 with r filled (any status), or an error. */
int mt_remote_update(mt_remote_store *rs, mt_remote_resp *r, const char *id, const char *body,
                     const char *what);

/* The API ids met in this process by memtool's 64-bit form (remote_ids.c):
 * at most MT_REMOTE_IDS_SLOTS, each found among MT_REMOTE_IDS_PROBE slots. */
#define MT_REMOTE_IDS_SLOTS 4096
#define MT_REMOTE_IDS_PROBE 4
typedef struct {
    pthread_mutex_t lock;
    struct {
        uint64_t key;
        char *api; /* NULL: a free slot */
    } slot[MT_REMOTE_IDS_SLOTS];
} mt_remote_ids;

#define MT_REMOTE_IDS_INIT                                                                         \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER                                                          \
    }

/* Remember api under key (an id already there is replaced; with every
 * slot of its place taken, one goes). */
void mt_remote_ids_put(mt_remote_ids *t, uint64_t key, const char *api);
/* The API form of key: 1 with out filled, 0 when not known. */
int mt_remote_ids_get(mt_remote_ids *t, uint64_t key, char *out, size_t size);

/* Removes and renames (remote_move.c). */
int mt_remote_remove(mt_store *st, mt_store_op *op, const char *path);
int mt_remote_rename(mt_store *st, mt_store_op *op, const char *from, const char *to);

/* History over memory_versions (remote_history.c). */
int64_t mt_remote_version_id(mt_remote_store *rs, const char *api_id);
int mt_remote_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *query);
int mt_remote_version_get(mt_store *st, mt_version *out, int64_t id);
int mt_remote_version_content(mt_store *st, char **out, size_t *len, int64_t id);
int mt_remote_redact(mt_store *st, mt_store_op *op, int64_t id);

#endif

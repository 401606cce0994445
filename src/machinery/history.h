/*
 * History in a SQLite database: the versions of every memory, their
 * content (kept once per SHA-256), and each live memory's id and how its
 * file looked when last recorded. Store-neutral: it sees store paths and
 * content, never files; the filesystem store keeps one in its reserved
 * directory and calls it under its lock, so versions follow the serial order
 * of the changes.
 */
#ifndef MT_STORE_HISTORY_H
#define MT_STORE_HISTORY_H

#include <stdint.h>

#include <memtool/store.h>

typedef struct mt_hist mt_hist;

/* How a memory's file looked when its newest version was recorded: a file
 * that no longer looks so was changed outside memtool. */
typedef struct {
    uint64_t ino;
    uint64_t size;
    int64_t mtime_ns;
    int64_t ctime_ns;
} mt_hist_fp;

/* A live memory. */
typedef struct {
    char id[24];
    char sha256[65];
    uint64_t size;
    mt_hist_fp fp;
} mt_hist_mem;

typedef struct {
    mt_version_op op;
    const char *path;      /* where it is (deleted: where it was) */
    const char *previous;  /* a rename's source, else NULL */
    const char *memory_id; /* NULL: a new memory (created) or the one at path */
    const char *actor;
    const char *data; /* the new content (created, modified; NULL keeps the current) */
    size_t len;
    const mt_hist_fp *fp; /* how the file looks now (not for deleted) */
    const char *sha256;   /* data's SHA-256 when the caller hashed it, else NULL */
} mt_hist_event;

/* Open (creating) the database `name` in the directory dirfd. */
int mt_hist_open(mt_hist **out, int dirfd, const char *name, mt_durability durability);
/* The same; read_only: the store cannot be written, and the database (if
 * any) is read into a copy in memory that takes the changes a read makes
 * (its log loaded, its search index updated) and is dropped at close. */
int mt_hist_open_with(mt_hist **out, int dirfd, const char *name, mt_durability durability,
                      int read_only);
void mt_hist_close(mt_hist *h);

/* One write transaction around the versions of one change. */
int mt_hist_begin(mt_hist *h);
int mt_hist_commit(mt_hist *h, const mt_store_op *op);
void mt_hist_rollback(mt_hist *h);

/*
 * The log of versions (hist_log.h), in the database's directory: a change
 * begun with mt_hist_begin_logged records its versions there, appended at
 * its commit in one write, and no SQLite transaction; the log is loaded
 * into the database at the first logged change that finds it holds another
 * handle's appends (the slot says so) or LOG_BATCH records, by
 * mt_hist_begin (so every transaction sees every version, in order), and by
 * mt_hist_load. All of it under the store's lock, which the slot and the
 * log are only ever touched under. A change that needs the database itself
 * (mt_hist_each, the record of ids, mt_hist_solid) loads the log and goes
 * on in a transaction. Without a slot attached, the log is not used.
 */
#define MT_HIST_LOG "history.log"
/* The store's shared slot (8 bytes every process that uses the store maps):
 * which handle last appended to the log or loaded it. */
void mt_hist_log_attach(mt_hist *h, volatile uint64_t *owner);
/* Begin a change whose versions go to the log; days its cap on their age
 * (its cap on versions per memory is mt_hist_prune's, after its version). */
int mt_hist_begin_logged(mt_hist *h, unsigned days);
/* Load the log into the database and empty it (nothing to do: 0). */
int mt_hist_load(mt_hist *h);
/* The change in progress goes on in a transaction (for what reads or
 * writes the database itself: the import's). */
int mt_hist_solid(mt_hist *h);

/* The live memory at path: 1 found, 0 none, or an error. */
int mt_hist_find(mt_hist *h, mt_hist_mem *out, const char *path);

/* Append a version (and keep the content, the memory's row); *out_id its id. */
int mt_hist_record(mt_hist *h, int64_t *out_id, const mt_hist_event *e);

/*
 * Content kept once per SHA-256 and counted: each version that holds it is
 * one reference, and the content goes with its last. Within a transaction
 * (mt_hist_begin, or a logged change made solid).
 */
/* One more reference to the content of sha: 1 when it is kept, 0 when it
 * is not (nothing changes then). */
int mt_hist_content_ref(mt_hist *h, const char *sha);
/* Keep data as the content of sha: one reference more (the data is written
 * only when it is not kept already). */
int mt_hist_content_keep(mt_hist *h, const char *sha, const char *data, size_t len);
/* The live memory at path is m (its id, content and how its file looks,
 * m->fp), replacing what was recorded there. */
int mt_hist_memory_set(mt_hist *h, const char *path, const mt_hist_mem *m);

/*
 * The record of which memory is at which path alone, without versions: kept
 * by an encrypted store's changes with history off (the encryption layer
 * checks each file against it). A memory recorded so has no content in the
 * history (its sha256 is ""), so the first change that records versions
 * there reads its file.
 */
/* The memory `id` is at path now (replacing what was recorded there). */
int mt_hist_track_put(mt_hist *h, const char *path, const char *id);
/* What is recorded at or beneath `from` is at `to` now (and nothing else there). */
int mt_hist_track_move(mt_hist *h, const char *from, const char *to);
/* Nothing is at or beneath path any more. */
int mt_hist_track_drop(mt_hist *h, const char *path);
/* Whether the memory `id` is recorded at a path other than path: 1 yes, 0 no. */
int mt_hist_id_elsewhere(mt_hist *h, const char *id, const char *path);
/* Whether the record is known exact (1), 0 when it may be stale: kept by a
 * memtool that did not keep it with history off (see mt_fs_hist_begin). */
int mt_hist_ids_exact(mt_hist *h);
int mt_hist_ids_mark_exact(mt_hist *h);
/* The id recorded at path where the record is known exact, outside any
 * transaction and without the cache mt_hist_find keeps within one: 1
 * found, 0 none (or not known exact), or an error. */
int mt_hist_lookup_id(mt_hist *h, char out[24], const char *path);

/* The memory's file looks like fp now, its content unchanged (in a logged
 * change: for this handle until the log is next loaded; see hist_commit.c). */
int mt_hist_refresh(mt_hist *h, const char *path, const mt_hist_fp *fp);

/* A memory over its cap of `keep` versions (by a slack) loses its oldest. */
int mt_hist_prune(mt_hist *h, const char *memory_id, unsigned keep);

/* Live memories at path or beneath it ("" all), in path order; cb returns
 * 0 to go on or a negative code to stop with it. */
typedef int (*mt_hist_each_cb)(void *payload, const char *path, const mt_hist_mem *m);
int mt_hist_each(mt_hist *h, const char *path, mt_hist_each_cb cb, void *payload);

int mt_hist_versions(mt_hist *h, mt_version **out, size_t *count, const mt_log_query *q);
int mt_hist_version(mt_hist *h, mt_version *out, int64_t id);
int mt_hist_content(mt_hist *h, char **out, size_t *len, int64_t id);
/* Erase a version's content and path (within a transaction of its own). */
int mt_hist_redact(mt_hist *h, int64_t id, int scrub_later);
/* Replace a version's content with what cb makes of it (store.h,
 * version_reseal), within a transaction of its own. */
int mt_hist_reseal(mt_hist *h, int64_t id, mt_edit_cb cb, void *payload);
/* Within a change's transaction: the memory at path now holds data (its
 * content re-encrypted, store.h's mt_store_op.reseal), which replaces its
 * newest version's content, recording no version, and fp is how its file
 * looks. 0 done, 1 not done (no memory there, or its newest version is not
 * the content the memory was recorded with: the caller records as ever). */
int mt_hist_reseal_current(mt_hist *h, const char *path, const char *data, size_t len,
                           const char *sha, const mt_hist_fp *fp);

/* The search index's words of the memory at path erased, in a transaction
 * of its own, and the write-ahead log emptied (store.h, mt_store_op.scrub):
 * the next search indexes what the memory holds now. MT_EBUSY when a reader
 * kept the log from being emptied. */
int mt_hist_scrub_words(mt_hist *h, const char *path);

/* The database itself, for what keeps its own tables beside the history
 * (the search index); used under the same rules as the handle. */
struct sqlite3 *mt_hist_sqlite(mt_hist *h);
/* Call fn(payload) as the database closes, just before (a later call
 * replaces it): what keeps statements prepared on it (the search index)
 * finalizes them then, since SQLite closes no database with statements
 * left, and a process closes what its parent left it when it opens one. */
void mt_hist_on_close(mt_hist *h, void (*fn)(void *payload), void *payload);

/* How many versions are kept. */
int mt_hist_count(mt_hist *h, uint64_t *out);

/* A new memory id: "mem_" and 16 random hex digits. */
void mt_hist_new_memory_id(char id[24]);

/* SHA-256 of data as lowercase hex. */
void mt_hist_sha256(char out[65], const char *data, size_t len);

#endif

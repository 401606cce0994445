/*
 * The store interface: what the memory commands need from storage.
 *
 * A store sees only normalised, already validated relative paths: "" is the
 * root, "notes/a.md" a file below it; no component is empty, ".", ".." or
 * longer than 255 bytes. It knows nothing of JSON or of result texts; it
 * reports what happened as an mt_error_code (and, for a refused limit, the
 * numbers in mt_store_op) and leaves the words to the commands.
 *
 * Every function may be called from many threads and processes at once, and
 * a store makes the changes linearizable: each create, edit, remove and
 * rename takes effect at one instant between its call and its return, so
 * every outcome of concurrent calls is that of some serial order of the
 * successful ones. The usage limits are checked and the usage updated in the
 * same step as the change, so they hold exactly across processes.
 */
#ifndef MEMTOOL_STORE_H
#define MEMTOOL_STORE_H

#include "../memtool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MT_NODE_FILE = 1,
    MT_NODE_DIR = 2,
    MT_NODE_OTHER = 3 /* from walk only: neither (a link, a FIFO, a name no path can be) */
} mt_node_type;

/* One line of a listing. */
typedef struct {
    char *path; /* relative to the store root, normalised */
    mt_node_type type;
    unsigned depth; /* 1 for a child of the listed directory, 2 below */
    uint64_t size;  /* bytes of regular files at or beneath it */
    uint64_t files; /* regular files at or beneath it (1 for a file), counted like size */
} mt_store_entry;

typedef struct {
    mt_store_entry *entries; /* depth first, names sorted by bytes */
    size_t count;
    uint64_t size;  /* bytes of regular files beneath the listed dir */
    int more;       /* entries were left out at max_entries (sizes still count them) */
    uint64_t files; /* regular files beneath the listed dir, counted like size */
} mt_store_listing;

/* What a store holds (mt_usage in memtool.h). */
typedef mt_usage mt_store_usage;

/* Which limit refused a change. */
typedef enum {
    MT_LIMIT_NONE = 0,
    MT_LIMIT_FILE_SIZE,  /* an edit of a file already over max_file_size */
    MT_LIMIT_STORE_SIZE, /* the store would hold more than max_store_size bytes */
    MT_LIMIT_FILES,      /* more than max_files regular files */
    MT_LIMIT_DIRS,       /* more than max_dirs directories */
    MT_LIMIT_DEPTH,      /* a rename would nest the tree deeper than MT_STORE_MAX_DEPTH
                            (or op->max_depth) */
    MT_LIMIT_PATH_BYTES  /* a rename would give a file a path longer than op->max_path_bytes */
} mt_limit_kind;

/* How deep a store's tree may be, in components below the root: what a
 * request path may name (SPEC section 1). A rename that would nest a subtree
 * deeper is refused, so every walk of the store sees all of it. */
#define MT_STORE_MAX_DEPTH 32

/*
 * Given to every change: the limits to hold and how long to wait for a lock
 * held by someone else; on MT_ELIMIT the store fills in what was refused, on
 * MT_EBUSY the wait ran out. Set the inputs with mt_store_op_init (0 for a
 * limit means none) and leave the rest to the store.
 */
typedef struct {
    /* in */
    uint64_t max_file_size;   /* an edit refuses a file bigger than this before reading it */
    uint64_t max_store_size;  /* bytes in all regular files */
    uint64_t max_files;       /* regular files */
    uint64_t max_dirs;        /* directories */
    unsigned lock_timeout_ms; /* the longest wait for a lock (0: do not wait) */
    /* out, on MT_ELIMIT */
    mt_limit_kind refused;
    uint64_t limit; /* the limit that refused it */
    uint64_t held;  /* what the store (or the file) holds now */
    uint64_t would; /* what it would hold after the change */
    /* out, on any failure of a rename: 0 when it is about the source, 1 the destination */
    int culprit;
    /* Since version 3: history, for a store that keeps it. */
    const char *actor;         /* in: recorded on the versions the change makes */
    int history;               /* in: 0 records no version */
    unsigned history_keep;     /* in: versions kept per memory (0: no cap) */
    unsigned history_days;     /* in: days a version is kept (0: no limit) */
    const char *expect_sha256; /* in: change only a file whose content has this SHA-256 */
    const char *memory_id;     /* in: a create that brings back this (deleted) memory */
    char current_sha256[65];   /* out, on MT_ECONFLICT: the content's now ("" none) */
    int64_t version;           /* out: the newest version the change recorded (0 none) */
    const char *history_error; /* out: why no version could be recorded (NULL: none failed) */
    /* Since version 5: expiry. */
    int64_t idle_before_ms; /* in: a remove takes only a file last accessed before this
                               (ms since the epoch); a file accessed at or after it, or a
                               directory, changes nothing: MT_ECONFLICT. 0: no condition */
    /* Encryption at rest (mt_store_crypt_wrap): each regular file holds this
     * many bytes more than its memory. The limits and the numbers a refusal
     * reports count memories: a store checks bytes - files * file_overhead
     * against max_store_size, and a file's size - file_overhead against
     * max_file_size, in the same step as ever. 0 for a plain store. */
    uint64_t file_overhead; /* in */
    /* An edit that is no use of the memory (a re-encryption, content the
     * same): the file's last access and last change stay as they were
     * (touch, idle), so expiry sees it as idle as before. 0: an edit is an
     * access, as ever. A store that predates it ignores it. */
    int keep_access; /* in */
    /* Encryption at rest, too: set by the encryption layer on every change it
     * passes down (a store that always keeps memory ids, as the SQL stores
     * do, may ignore both). With track_ids, a store whose record of which
     * memory is at each path (see `memory_id`) is kept only with its history,
     * as the file store's is, keeps that record exact with history off too,
     * in the same step as the change and without recording versions: a
     * create records op->memory_id at its path, a rename moves the record, a
     * remove drops it. memory_id_of reads the memory id that a file's
     * content names (1 with out filled, 0 when it names none), unverified: a
     * store records a file it meets without a record of it (written before
     * ids were kept, or put there outside memtool) as that memory, unless its
     * record has that memory at another path (a copy: then a new memory,
     * which fails the layer's check). */
    int track_ids;                                                   /* in */
    int (*memory_id_of)(char out[24], const char *data, size_t len); /* in */
    /* Re-encryption (mt_store_crypt_wrap's rekey), optional: an edit with
     * reseal set whose new bytes hold the same memory content as the old
     * (its ciphertext under another key) records NO version. With history
     * on, in the same step under the store's write lock, the new bytes
     * replace the content of the memory's newest version too, when that
     * version holds the file's old bytes (as version_reseal replaces an
     * older one's: the old content goes with its last reference, erased as
     * a redaction's); when it does not (the file was changed with history
     * off or outside memtool), the edit records versions as any edit does.
     * A store that predates it ignores it: its edit records a version. */
    int reseal; /* in */
    /* Redaction of the current content (`memtool secrets scan --redact`),
     * optional: after an edit with scrub set succeeds, the memory's words
     * are erased from any search index the store keeps (the index is
     * brought up to date from what the memory holds now by the next
     * search), and the pages that held them leave the store's files (FTS5
     * segments merged, a write-ahead log emptied), as a redaction's do. A
     * store that keeps no index ignores it. */
    int scrub; /* in */
    /* Set by a handle opened without encryption on a store that keeps a
     * record of it (`encryption`): each change checks under the store's
     * lock that no record has appeared since the open, and is refused
     * (MT_ECRYPT, nothing written) when one has, so plaintext never lands
     * in a store another process made encrypted meanwhile. */
    int plain; /* in */
    /* Since version 7: a remove that takes only a directory holding no
     * regular file (empty, or empty directories only), checked under the
     * store's lock in the step that removes it; anything else there (a
     * file, a directory with a file beneath) changes nothing: MT_ECONFLICT.
     * What the memory-store API needs: a directory exists there only while
     * a memory lies beneath it, and a file a writer puts in meanwhile is
     * never lost. */
    int empty_dir; /* in */
    /* Since version 7, optional: a redaction with scrub_later set erases
     * the version as ever (its row, content and words) but leaves the pages
     * that held them in the store's write-ahead log, and its search index's
     * segments unmerged, for the next redaction without it to empty: a run
     * of redactions (a memory store's deletion) pays for one scrub, not
     * one each. The caller ends the run with a redaction without it. A
     * store that predates it scrubs every time. */
    int scrub_later; /* in */
    /* Since version 7: a rename with rename_content set writes rename_data
     * (rename_len bytes) as the file's content at the destination, in the
     * same step under the store's lock, and records ONE version (operation
     * modified, previous_path the source, the new content): what the
     * memory-store API needs, where every change is one version, a change
     * of path and content together too. op->expect_sha256 is checked
     * against the SOURCE's content. The limits are checked on the new
     * content as an edit's result is (max_store_size on the difference in
     * bytes, and max_file_size on the new content itself: MT_ELIMIT, nothing
     * changed). Only a regular file takes content: a directory (or anything
     * else) at the source is MT_EINVAL. A retry finds the rename done when
     * nothing is at the source and the destination holds the new content
     * (0, no version), and finishes it when the destination holds the
     * expected content (the move went through, the write did not: the new
     * content is written and its one version recorded). The file store
     * moves the file, then renames the new content (written beforehand) over
     * it: a crash between the two leaves the old content at the
     * destination, never a lost file, and a retry finishes it. The
     * encryption layer seals the content before passing it on. A store of
     * an older version has no such field: a caller gives content only to a
     * store of version 7 or newer, and to an older one renames, then edits
     * (two versions). */
    const char *rename_data; /* in */
    size_t rename_len;       /* in */
    int rename_content;      /* in */
    /* Since version 7: what a rename moves stays within these, checked in
     * the same step under the store's lock (so a file created beneath the
     * source meanwhile is counted): at most max_depth components below the
     * root (0, or more than MT_STORE_MAX_DEPTH: MT_STORE_MAX_DEPTH), and a
     * regular file's store path at most max_path_bytes bytes (0: no bound).
     * MT_ELIMIT with MT_LIMIT_DEPTH or MT_LIMIT_PATH_BYTES, nothing moved:
     * a memory store's path rules, which its caller also checks first to
     * word the refusal. */
    unsigned max_depth;    /* in */
    size_t max_path_bytes; /* in */
} mt_store_op;

MT_EXTERN(void) mt_store_op_init(mt_store_op *op);

/*
 * The edit callback of a read-modify-write: given the current content, set
 * *out and *out_len to the new content (malloc'd; the store frees it) and return
 * 0, or return a negative code to leave the file untouched. The store holds
 * the file against every other change across the callback and the
 * replacement, and checks the store-size limit on the result.
 */
typedef int (*mt_edit_cb)(char **out, size_t *out_len, const char *data, size_t len, void *payload);

/*
 * A reader of a file's content: called in order with consecutive pieces
 * (`off` is where the piece starts, `last` is set on the final one; an empty
 * file is one empty last piece). Return 0 to go on, 1 to stop reading, or a
 * negative code to fail the read with it.
 */
typedef int (*mt_read_cb)(void *payload, const char *data, size_t len, uint64_t off, int last);

/* The largest piece a store hands to an mt_read_cb when the file is bigger
 * than the caller's `whole`. */
#define MT_STORE_PIECE (1024 * 1024)

/*
 * A node of a whole-store walk: its path (a store path), what it is, and a
 * file's size. Return 0 to go on, or a negative code to stop the walk with it.
 */
typedef int (*mt_walk_cb)(void *payload, const char *path, mt_node_type type, uint64_t size);

/*
 * A search, parsed (see mt_memory_search): terms, each some words in a row,
 * the last a prefix when `prefix` is set; all must occur in a memory, except
 * as the query's flags say (excluded terms, OR between terms).
 * Words are folded as memtool folds a memory's text (lowercase, accents off,
 * CJK in pairs), so a store that indexes those words finds the same memories
 * as any other.
 */
typedef struct {
    char **words;
    size_t count;
    int prefix;
} mt_search_term;

typedef struct {
    mt_search_term *terms;
    size_t count;
    /* The words of each memory's first max_size bytes count: the handle's
     * max file size (mt_memory_search sets it), so a legal memory is
     * searched whole, and a bigger one put there from outside costs no more
     * than that to index. 0: the store's own default. */
    uint64_t max_size;
    /* How the terms combine: per term, MT_SEARCH_NOT (it must not occur) or
     * MT_SEARCH_OR (it or the next term must occur: a run of them is one
     * clause); 0 (and NULL for all): it must occur. At least one term is
     * not excluded, and an excluded term is in no OR clause. */
    unsigned char *flags;
} mt_search_query;

#define MT_SEARCH_NOT 1u
#define MT_SEARCH_OR  2u

/* A memory a search found: its store path and rank (higher ranks first). */
typedef struct {
    char *path;
    double score;
} mt_store_hit;

MT_EXTERN(void) mt_store_hits_free(mt_store_hit *hits, size_t count);

/*
 * Since version 5: a file's last access, in milliseconds since the epoch:
 * the newest of its last change (a create, an edit, a rename of the file
 * itself) and its last view. A view records it coarsely: a store writes the
 * time only when the one it holds is more than MT_ACCESS_GRAIN_MS older, so
 * viewing a memory costs at most one small, unsynced write per grain, and
 * a recorded last access is exact to within a grain. Moving a directory is
 * no access of the files in it (their times move with them).
 */
#define MT_ACCESS_GRAIN_MS 60000

/* A file of a listing of last accesses: its store path, size, last access
 * and last change of content (a create or an edit; ms since the epoch).
 * Return 0 to go on, or a negative code to stop with it; it must not call
 * the store. */
typedef int (*mt_idle_cb)(void *payload, const char *path, uint64_t size, int64_t last_access_ms,
                          int64_t modified_ms);

/*
 * Since version 6: one memory brought in from another store with its whole
 * history (see `import`). content gives version `index`'s content: set *out
 * (malloc'd; the store frees it) and *len and return 0, or a negative code
 * to fail the import with it (nothing is changed).
 */
typedef int (*mt_import_content_cb)(void *payload, char **out, size_t *len, size_t index);

typedef struct {
    /* in */
    const char *memory_id; /* the memory's id ("mem_" and 16 hex digits): kept */
    /* Its versions, oldest first: operation, path (a store path; NULL only when
     * redacted), previous_path, actor, created_at, content_sha256 ("" for a
     * deletion, a redacted version, or content whose SHA-256 the caller leaves
     * to the store), content_size and redacted. id: kept as the version's id
     * when > 0 (the caller sees that the store holds no version of that id;
     * a later change gets an id above every one kept), else the store's next;
     * memory_id is ignored. */
    const mt_version *versions;
    size_t count;
    mt_import_content_cb content;
    void *payload;
    /* out */
    int present;   /* the store already held a memory of this id: nothing was changed */
    uint64_t made; /* versions recorded */
    /* in, too: the current file's last access and last change of content
     * (ms since the epoch, as `idle` reports them; 0: now), so that expiry
     * sees the memory as idle as it was where it came from. */
    int64_t accessed_ms, modified_ms;
} mt_store_import;

/* Version 2 made the store responsible for the limits and for the locking
 * that keeps changes linearizable; a version 1 store could do neither across
 * processes, so mt_memory_new refuses it (MT_EINVAL) rather than run unsafe.
 * Version 3 added history (the functions after `usage`, and the history
 * fields of mt_store_op); a version 2 store still works, without history:
 * the history calls fail with MT_ENOSYS and preconditions with MT_EINVAL.
 * Version 4 added `walk` (a version 3 store works without it: what needs a
 * whole-store walk, such as migrating it, fails with MT_ENOSYS).
 * Version 5 added expiry: `touch`, `idle`, `version_count` and
 * mt_store_op.idle_before_ms (a version 4 store works without it: expiry
 * and the touch of a view fail with MT_ENOSYS, which a view ignores),
 * and `search` (NULL in a store without it: a search fails with MT_ENOSYS).
 * Version 6 added `import` (a version 5 store, or one whose import is NULL,
 * is migrated into without history: each memory arrives as one new version).
 * Version 7 added `encryption` (a version 6 store, or one whose encryption is
 * NULL, keeps no record that it is encrypted: see mt_store_crypt_wrap), and,
 * optional too, `first_head`, `times` and `control`. */
#define MT_STORE_VERSION 7
/* `encryption`'s replace: claim a new store, only while it holds no file. */
#define MT_STORE_RECORD_IF_EMPTY 2

/* Version 5 also added what the encryption layer needs: `memory_id`,
 * mt_store_op's file_overhead and the `files` counts of listings; an older
 * store works as ever, but cannot be wrapped by mt_store_crypt_wrap
 * (MT_EINVAL), since its limits would count the encryption's overhead.
 * Last, for re-encrypting the history (mt_memory_rekey): `version_reseal`
 * and mt_store_op's keep_access, both optional: a store whose
 * version_reseal is NULL is still wrapped, and a rekey names each of its
 * versions as left under the old key. */
#define MT_STORE_CRYPT_VERSION 5

/*
 * The requests of a store's `control` (since version 7), each with the
 * type its arg points to. Paths in what they give are store paths.
 */
typedef enum {
    /* mt_crypt_status: which key each file and version is sealed with
     * (mt_memory_crypt_status); answered by the encryption layer. */
    MT_STORE_CRYPT_STATUS = 1,
    /* mt_store_crypt_each: each file with its key (mt_memory_crypt_each). */
    MT_STORE_CRYPT_EACH = 2,
    /* mt_store_rekey: re-encrypt everything under new_key (mt_memory_rekey). */
    MT_STORE_CRYPT_REKEY = 3,
    /* mt_store *: set to the store to list versions from when only their
     * ids, memory ids, operations and paths are wanted; beneath the
     * encryption layer, the store it wraps, which lists them without
     * decrypting each (its sizes and SHA-256s are the sealed files'). */
    MT_STORE_LISTING = 4
} mt_store_request;

typedef struct {
    mt_crypt_file_cb cb;
    void *payload;
} mt_store_crypt_each;

typedef struct {
    mt_rekey_result *out;
    mt_crypt_key *new_key;
    mt_store_op *op;
    mt_rekey_cb cb; /* may be NULL */
    void *payload;
} mt_store_rekey;

struct mt_store {
    unsigned int version; /* MT_STORE_VERSION */

    /* What is at path: a file (with its size) or a directory. Nothing is
     * opened for reading: a FIFO or a device is reported MT_EUNSUPPORTED. */
    int (*stat)(mt_store *st, mt_node_type *type, uint64_t *size, const char *path);

    /*
     * A regular file's content as it was when opened: its size at that
     * moment (*size), never what is appended later. A file of at most
     * `whole` bytes comes in one piece; a bigger one in pieces of at most
     * MT_STORE_PIECE bytes, so memory stays bounded whatever the file's size.
     */
    int (*read)(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                void *payload);

    /* Make a new file, and its missing parent directories; never replaces.
     * Atomic: on failure or a crash, neither the file nor new parents show. */
    int (*create)(mt_store *st, mt_store_op *op, const char *path, const char *data, size_t len);

    /* Replace a file's content with what cb makes of it. */
    int (*edit)(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb, void *payload);

    /* Remove a file, a symlink (never its target) or a directory tree. */
    int (*remove)(mt_store *st, mt_store_op *op, const char *path);

    /* Move without ever replacing; makes missing parents of `to`. The
     * directories it leaves empty stay (a model that moved the last file out
     * of one often deletes it next); they count against max_dirs. Since
     * version 7 it may write new content too (mt_store_op.rename_content). */
    int (*rename)(mt_store *st, mt_store_op *op, const char *from, const char *to);

    /* List a directory `depth` levels deep, hidden names and node_modules left
     * out (but counted in sizes), recording at most max_entries entries (0: all;
     * a view shows only what fits its limit, but its sizes are totals of
     * everything). Free with mt_store_listing_dispose. */
    int (*list)(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
                size_t max_entries);

    /* What the whole store holds, as the limits see it. */
    int (*usage)(mt_store *st, mt_store_usage *out);

    void (*free)(mt_store *st);

    /*
     * Since version 3: history (any may be NULL in a store without it).
     *
     * A change records its versions in the same step as the change itself,
     * so versions follow the serial order of the changes. With
     * op->expect_sha256 set, edit, remove and rename change nothing and
     * return MT_ECONFLICT (op->current_sha256 filled) unless the file holds
     * content of that SHA-256; a remove or rename already done (nothing at
     * the source, and for a rename that content at the destination) succeeds
     * without a new version, so a retried request is harmless. Paths in the
     * mt_version results are store paths ("notes/a.md"); the versions list
     * takes query->path as a store path too ("" for all).
     */
    int (*versions)(mt_store *st, mt_version **out, size_t *count, const mt_log_query *query);
    int (*version_get)(mt_store *st, mt_version *out, int64_t id);
    int (*version_content)(mt_store *st, char **out, size_t *len, int64_t id);
    int (*redact)(mt_store *st, mt_store_op *op, int64_t id);
    /* Record what was changed beneath path outside memtool, as actor "external". */
    int (*catch_up)(mt_store *st, mt_store_op *op, const char *path);

    /*
     * Since version 4: every node beneath path ("" the whole store), hidden
     * names included and the store's own reserved names left out, each
     * directory before what it holds and siblings in byte order of their
     * names. Not a snapshot: a walk sees changes made while it runs.
     */
    int (*walk)(mt_store *st, const char *path, mt_walk_cb cb, void *payload);

    /*
     * Since version 5: expiry (see MT_ACCESS_GRAIN_MS).
     *
     * touch: the file at path was viewed at now_ms. Written only when the
     * recorded last access is older than now_ms - MT_ACCESS_GRAIN_MS, never
     * synced; the write is ordered with changes (it may wait for one), never
     * with other views. *recorded (when not NULL) is the last access the
     * store holds afterwards. A directory is MT_EISDIR, nothing there
     * MT_ENOTFOUND. A view touches before it reads, so that a remove with
     * idle_before_ms ordered after the view sees it.
     */
    int (*touch)(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms);
    /* Every regular file at or beneath path ("" all), with its last access,
     * in byte order of paths; like walk, not a snapshot. */
    int (*idle)(mt_store *st, const char *path, mt_idle_cb cb, void *payload);
    /* How many versions the history keeps (MT_ENOSYS without history). */
    int (*version_count)(mt_store *st, uint64_t *out);

    /*
     * Since version 5: the memories at or beneath path ("" all) in which
     * every term of q occurs, best first, at most `limit` (> 0). What was
     * changed outside memtool is found as it is now, never as it was: a
     * store brings its index up to date before it answers (one that orders
     * the changes, as the SQL stores do, answers as the memories were at one
     * instant of the call, changes made meanwhile or not), from the words of
     * each memory's first q->max_size bytes.
     */
    int (*search)(mt_store *st, mt_store_hit **out, size_t *count, const mt_search_query *q,
                  const char *path, size_t limit);

    /*
     * Since version 5: the id of the memory at path, as the store records it
     * ("mem_" and 16 hex digits): 1 with out filled, 0 when the store has no
     * record of the memory there, or an error (MT_ENOTFOUND: nothing there).
     * A read: it changes nothing (it never catches up outside changes). May
     * be NULL. The encryption layer checks a file's header against it, so
     * that a memory's ciphertext put at another memory's path is detected.
     * The SQL stores record every memory. The file store records them in its
     * history database, kept by every change with history on and, for an
     * encrypted store (mt_store_op.track_ids), off. It answers 0 for a file
     * put at a path outside memtool until a change or a catch-up there
     * records it; for one written with history off by a memtool that did not
     * keep the record then, until memtool creates, edits or rekeys it or a
     * change with history on records it; and everywhere until the first
     * change an id-keeping memtool makes to the store, which checks the
     * record an older one left (see SECURITY.md, "Swapped files").
     */
    int (*memory_id)(mt_store *st, char out[24], const char *path);

    /*
     * Since version 5 (may be NULL): replace version id's stored content
     * with what cb makes of it (mt_edit_cb: given the content kept, the new
     * bytes), in one transaction under the store's write lock (waiting at
     * most op->lock_timeout_ms), recording no version. The version keeps
     * its id, memory, operation, path, actor and time; its content is the
     * new bytes, kept once per SHA-256 like any content, and the old
     * content goes with its last reference, as a redaction's does (erased
     * from the disk, not left in free pages or a log). New bytes equal to
     * the old change nothing. A version that is redacted or records a
     * deletion has no content: cb is not called and nothing changes (0).
     * A memory's current content (its newest version while the memory is
     * live and holds it) is the file's and changes only with the file: new
     * bytes for it are refused with MT_EINVAL, as a redaction is. Nothing
     * there: MT_ENOTFOUND. The encryption layer uses it to re-encrypt the history
     * (mt_store_crypt_wrap's stores have it NULL: above the layer a
     * version's content is never replaced).
     */
    int (*version_reseal)(mt_store *st, mt_store_op *op, int64_t id, mt_edit_cb cb, void *payload);

    /*
     * Since version 6, optional (NULL: a migration into this store copies
     * each memory's current content only, as a new version; so does one
     * from or into a handle with history off): bring in one memory of
     * another store with its whole history (mt_store_import), in ONE
     * transaction. Every version is recorded with the store's own version
     * ids and everything else as given (times, actors, paths, sizes; a
     * redacted version stays redacted, without content); when the newest is
     * no deletion, the memory's current file is made at its path with its
     * content, under op's limits as a create is. A deleted memory (newest a
     * deletion) brings its versions only, so a restore works here.
     *
     * Content comes from in->content for each version that has any (not a
     * deletion, not redacted); the store may skip asking for a
     * content_sha256 it keeps already (contents are kept once per SHA-256),
     * and fails with MT_EIO when what it is given has not the SHA-256 and
     * size the version names. A memory arrives whole or not at all: one
     * whose id the store holds already changes nothing and sets in->present,
     * which is how a stopped migration, run again, skips what arrived. The
     * caps of op (history_keep, history_days) do not apply to the versions
     * brought in; the store's later changes apply them as to any version.
     * The encryption layer seals each content on its way in, the memory's
     * id in its header.
     *
     * MT_EEXISTS (or MT_ENOTDIR, a file on the way): the current file's path
     * is taken; MT_ELIMIT with op's refusal filled; MT_EINVAL: op->history is
     * off, or in is no memory (no versions, a live memory's newest redacted,
     * a path missing, a bad id). Nothing is changed on any failure. The file
     * store makes the file and commits its history under its lock, one after
     * the other: a crash between them leaves a file its history has not
     * recorded, which the next import of that memory takes as its own when
     * it holds the newest version's content.
     */
    int (*import)(mt_store *st, mt_store_op *op, mt_store_import *in);

    /*
     * Since version 7, optional: the store's record that it is encrypted,
     * one line of text (at most MT_STORE_RECORD_MAX bytes) that only the
     * encryption layer writes and reads (mt_store_crypt_wrap), kept in the
     * store's reserved place (the file store: its reserved directory; the
     * SQL stores: the tenant's usage row), apart for each tenant. With put
     * NULL, a read: 1 with *out the record (malloc'd), 0 when there is
     * none. With put: under the store's write lock (waiting at most
     * lock_timeout_ms), atomically and durably, put becomes the record
     * when there is none, or also replaces one there when `replace` is
     * set; *out is then the record the store holds afterwards (so of two
     * processes recording at once, the first wins and the second reads its
     * record). Nothing else of the store changes and no version is made.
     * `replace` MT_STORE_RECORD_IF_EMPTY (2): put becomes the record only
     * while there is none and the store holds no file, both seen under
     * the lock; MT_ECONFLICT when a file is there (a new store that a
     * writer without the key wrote to meanwhile).
     */
    int (*encryption)(mt_store *st, char **out, const char *put, int replace,
                      unsigned lock_timeout_ms);

    /*
     * Since version 7, optional (NULL: the layer walks the store instead):
     * the first at most MT_STORE_HEAD_MAX bytes (*len of them) of the
     * content of one memory of the store, and its path (*path, malloc'd):
     * 1, or 0 when the store holds no memory (or none in what it looked
     * at: the work is to be bounded, as every open of a plain store asks;
     * the SQL stores give the first in path order, the file store the first
     * file its directories give, breadth first). A store may answer as it
     * was when opened (an open asks it once). The encryption layer tells by
     * it a store sealed before records were kept.
     */
    int (*first_head)(mt_store *st, char *head, size_t *len, char **path);

    /*
     * Since version 7, optional (NULL: a migration without history leaves
     * each memory with the times its copy gave it, the migration's): set the
     * file at path's last access and last change of content, as `idle`
     * reports them (ms since the epoch; modified_ms 0 keeps the last change
     * the store holds), so that a memory copied without its history (the
     * model's create) is as idle as it was where it came from. Under the
     * store's write lock, like a touch; records no version and changes no
     * content. A directory is MT_EISDIR, nothing there MT_ENOTFOUND. The
     * encryption layer forwards it.
     */
    int (*times)(mt_store *st, const char *path, int64_t accessed_ms, int64_t modified_ms);

    /*
     * Since version 7, optional (NULL: it answers no request): what is
     * asked of a store beyond the functions above, by the layers over it,
     * as SQLite's xFileControl (mt_store_request lists the requests and
     * their args). A store answers the requests it knows and returns
     * MT_ENOSYS for the others; a shim handles its own and forwards the
     * rest to the store it wraps.
     */
    int (*control)(mt_store *st, int request, void *arg);
};

/* The most first_head gives: an encryption header and its tag. */
#define MT_STORE_HEAD_MAX 100

/* The longest record `encryption` keeps. */
#define MT_STORE_RECORD_MAX 256

MT_EXTERN(void) mt_store_listing_dispose(mt_store_listing *listing);

/*
 * Encryption at rest over any store (a store of MT_STORE_CRYPT_VERSION or
 * newer). Each file holds a header (magic, format version, key id, salt,
 * memory id, generation, nonce), then the content encrypted with
 * XChaCha20-Poly1305 with the whole header as associated data: exactly
 * MT_CRYPT_OVERHEAD bytes more than the memory. Sizes, listings, usage and
 * limits are reported and checked as the memories', byte for byte as
 * without encryption. It searches without the inner store's index (which
 * would hold sealed bytes): a walk that opens every file beneath the path.
 * Takes ownership of inner, even on failure; keeps a reference to key.
 */
#define MT_CRYPT_OVERHEAD 100
MT_EXTERN(int) mt_store_crypt_wrap(mt_store **out, mt_store *inner, mt_crypt_key *key);

/* The filesystem store: openat2(2)-confined below `root`. */
MT_EXTERN(int) mt_store_fs_open(mt_store **out, const char *root, mt_durability durability);

/*
 * The store a URL names, for a tenant (NULL, "" or "default": the default
 * tenant): file:DIR, sqlite:PATH (file:///abs and sqlite:///abs too), or
 * PostgreSQL as libpq takes it, postgresql://USER@HOST/DATABASE (or
 * postgres://) or postgresql:KEYWORDS ("postgresql:host=/run/pg dbname=m").
 * A tenant sees only its own memories, history and usage; it is named like
 * a path component. The file store keeps a tenant in a store of its own
 * beneath DIR's reserved directory.
 */
MT_EXTERN(int)
mt_store_open_url(mt_store **out, const char *url, const char *tenant, mt_durability durability);

/* Whether a tenant name is usable (NULL and "" are the default tenant). */
MT_EXTERN(int) mt_store_tenant_check(const char *tenant);

/* The SQLite store: every tenant's memories and history in one database file
 * at `path` (created, mode 0600, when missing). tenant: NULL or "" is the
 * default tenant "default"; else a name like a path component. Durability:
 * full syncs every commit, file syncs at checkpoints, none leaves it to the
 * kernel. */
MT_EXTERN(int)
mt_store_sqlite_open(mt_store **out, const char *path, const char *tenant,
                     mt_durability durability);

/*
 * The PostgreSQL store: every tenant's memories and history in one database,
 * shared by any number of hosts. conninfo: a libpq URL (postgresql://user@host:
 * port/database, postgres://...) or "key=value" string; the password comes
 * from it, PGPASSWORD or ~/.pgpass, as libpq finds it, and is never shown in
 * a message. tenant: NULL or "" is the default tenant "default"; else a name
 * like a path component. The server keeps tenants apart (row security on the
 * session's tenant). The schema (in the schema `memtool`) is created on first
 * use when the role may; a newer one is refused, an older one until upgraded.
 */
MT_EXTERN(int) mt_store_pg_open(mt_store **out, const char *conninfo, const char *tenant);

/* Bring a PostgreSQL store's schema to this memtool's version, creating it in
 * a database without one (memtool store upgrade URL); run it as a role that
 * may create in the database, e.g. its owner. */
MT_EXTERN(int) mt_store_pg_upgrade(const char *conninfo);

/* Rewrite a PostgreSQL store's tables that hold content, paths and words
 * (VACUUM FULL of memtool.versions, .contents, .content_refs, .nodes and
 * .search_docs), so that the rows a redaction deleted or changed are gone
 * from their files: until a vacuum the server keeps them as dead tuples (and
 * nodes' the paths a memory had before a rename or delete).
 * Run it as the tables' owner (memtool store vacuum URL). The server's WAL,
 * its archives, replicas and backups are not touched. */
MT_EXTERN(int) mt_store_pg_vacuum(const char *conninfo);

/* Record an error for mt_error_last(); returns code, for `return mt_error_set(...)`. */
MT_EXTERN(int)
mt_error_set(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif

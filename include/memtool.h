/*
 * memtool: the client side of the memory tool (memory_20250818).
 *
 * An agent sends `view`, `create`, `str_replace`, `insert`, `delete` and
 * `rename` commands on paths under a virtual `/memories` directory; memtool
 * carries them out on a store and returns the tool result text.
 *
 *     mt_memory *mem;
 *     mt_result res;
 *     if (mt_memory_open(&mem, "/var/lib/agent/memories", NULL) < 0)
 *         fprintf(stderr, "%s\n", mt_error_last()->message);
 *     mt_memory_call(&res, mem, json, strlen(json));
 *     ... res.text, res.len, res.is_error ...
 *     mt_result_dispose(&res);
 *     mt_memory_free(mem);
 *
 * Functions return 0 (MT_OK) or a negative mt_error_code; mt_error_last()
 * gives the details for the calling thread. One mt_memory may be used from
 * any number of threads at once.
 */
#ifndef MEMTOOL_H
#define MEMTOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_VERSION_MAJOR 0
#define MT_VERSION_MINOR 1
#define MT_VERSION_PATCH 0
#define MT_VERSION       "0.1.0"

#if defined(__GNUC__)
#define MT_EXTERN(type) __attribute__((visibility("default"))) type
#else
#define MT_EXTERN(type) type
#endif

/* jansson's object type; the header does not need jansson.h. */
struct json_t;

typedef enum {
    MT_OK = 0,
    MT_ERROR = -1,        /* anything not listed below */
    MT_ENOMEM = -2,       /* out of memory */
    MT_EINVAL = -3,       /* a bad argument or option from the caller */
    MT_ENOTFOUND = -4,    /* nothing at that path */
    MT_EEXISTS = -5,      /* something already at that path */
    MT_ENOTDIR = -6,      /* a file where a directory is needed */
    MT_EISDIR = -7,       /* a directory where a file is needed */
    MT_ESYMLINK = -8,     /* the path goes through or names a symbolic link */
    MT_EUNSUPPORTED = -9, /* not a regular file or directory, or hard-linked */
    MT_ELIMIT = -10,      /* a configured limit would be exceeded */
    MT_EIO = -11,         /* the storage failed */
    MT_ENOSYS = -12,      /* the kernel lacks something memtool requires */
    MT_EBUSY = -13,       /* the storage is in use and could not be locked */
    MT_EMULTILINK = -14,  /* a file with more than one hard link */
    MT_ENOTDURABLE = -15, /* the change was made, but syncing it to disk failed */
    MT_ECONFLICT = -16,   /* the content is not the one expected (changed meanwhile) */
    MT_ESTOPPED = -17,    /* the caller's callback asked to stop */
    MT_ECRYPT = -18,      /* encrypted content: another key, no key, or tampered with */
    MT_ESECRET = -19      /* the content would hold a secret (a credential, a card number) */
} mt_error_code;

typedef struct {
    int code;            /* an mt_error_code */
    const char *message; /* never NULL; valid until the thread's next call */
} mt_error;

/* The last error raised on the calling thread. */
MT_EXTERN(const mt_error *) mt_error_last(void);

/* How hard a write works to survive a power cut. */
typedef enum {
    MT_DURABILITY_FULL = 0, /* fsync the file and its directory (default) */
    MT_DURABILITY_FILE = 1, /* fsync the file only */
    MT_DURABILITY_NONE = 2  /* leave it to the kernel; still atomic */
} mt_durability;

/* What a write does with content holding a secret (an API key, a token, a
 * private key, a password, a card number; SECURITY.md lists the detectors). */
typedef enum {
    MT_SECRETS_REJECT = 0, /* refuse the write (default): nothing changes */
    MT_SECRETS_REDACT = 1, /* write "[REDACTED:kind]" in the secret's place */
    MT_SECRETS_OFF = 2     /* do not look */
} mt_secrets_policy;

#define MT_OPTIONS_VERSION 7

typedef struct {
    unsigned int version;     /* MT_OPTIONS_VERSION */
    uint64_t max_file_size;   /* bytes one file may hold; default 1 MiB */
    uint64_t max_store_size;  /* bytes all files may hold; default 100 MiB */
    uint64_t max_files;       /* files the store may hold; default 10,000 */
    uint64_t view_limit;      /* characters in a view result; default 16,000 */
    mt_durability durability; /* default MT_DURABILITY_FULL */
    /* Since version 2 (a version 1 struct gets their defaults): */
    uint64_t max_dirs;        /* directories the store may hold; default 1,000 */
    unsigned lock_timeout_ms; /* longest wait for the store's lock; default 5,000 */
    /* Since version 3 (an older struct gets their defaults): */
    const char *actor;     /* who makes the changes, recorded on each version; default "library" */
    int history;           /* 1: every change is a version (default); 0: none recorded */
    unsigned history_keep; /* versions kept per memory; default 100 (0: no cap) */
    unsigned history_days; /* days a version is kept; default 90 (0: no limit) */
    const char *audit;     /* a file to append one JSON line per call to; NULL: none */
    /* Since version 4: */
    const char *tenant; /* whose memories, in a store shared by many; NULL: "default" */
    /* Since version 5 (an older struct gets MT_SECRETS_REJECT and no allow-list): */
    mt_secrets_policy secrets;
    /* PCRE2 regexes; a secret one of them matches (anywhere in the secret's
     * own text) is allowed. Compiled by mt_memory_new: a bad one fails it
     * with MT_EINVAL naming it. The strings may be freed after the call. */
    const char *const *secrets_allow;
    size_t secrets_allow_count;
    /* Since version 6 (an older struct gets 0): */
    /* 1: open only a store that exists, and a tenant it has: MT_ENOTFOUND
     * naming what is missing ("no store at PATH", "no tenant 'x'"), and
     * nothing is made. For reading: a mistyped root or tenant is an error,
     * not a new empty store. 0 (default): made as needed. */
    int must_exist;
    /* Since version 7 (an older struct gets 0): */
    /* 1: the tenant is a memory store of memtool server (memtool
     * --memory-store): a create or rename is refused, as the memory-store
     * API refuses it, where the memory's path would not be one the API takes
     * (more than 20 segments or 1,024 bytes, not NFC, a control or format
     * character), so that what the tool writes the API can serve. */
    int memory_store;
} mt_options;

/* Fill opts with the defaults. */
MT_EXTERN(void) mt_options_init(mt_options *opts);

/* Parse a durability name ("full", "file", "none"). */
MT_EXTERN(int) mt_durability_parse(mt_durability *out, const char *name);

/* Parse a secrets policy name ("reject", "redact", "off"). */
MT_EXTERN(int) mt_secrets_policy_parse(mt_secrets_policy *out, const char *name);

typedef struct mt_memory mt_memory;
typedef struct mt_store mt_store; /* see memtool/store.h */

/*
 * Open the filesystem store rooted at `root` (created if missing, mode
 * 0700, unless opts->must_exist), for opts->tenant. opts may be NULL for the defaults. Fails with
 * MT_ENOSYS on a kernel without openat2(2): memtool never falls back to checking paths as strings.
 */
MT_EXTERN(int) mt_memory_open(mt_memory **out, const char *root, const mt_options *opts);

/*
 * Open the store a URL names (see mt_store_open_url in memtool/store.h):
 * file:DIR, sqlite:PATH, or a PostgreSQL connection string as libpq takes
 * it (postgresql://USER@HOST/DATABASE, postgres://..., or
 * postgresql:KEYWORDS), for opts->tenant.
 */
MT_EXTERN(int) mt_memory_open_url(mt_memory **out, const char *url, const mt_options *opts);

/*
 * Whether two URLs (as mt_memory_open_url takes them) and tenants (NULL or
 * "": "default") name one store's memories: a file or SQLite store by the
 * device and inode of its directory or database file, so that symlinks and
 * other spellings of a path count as the same; PostgreSQL by its connection
 * string. A path that does not exist is a store of its own. *same is 1 or 0;
 * a URL that does not parse is MT_EINVAL.
 */
MT_EXTERN(int)
mt_store_same(int *same, const char *url_a, const char *tenant_a, const char *url_b,
              const char *tenant_b);

/*
 * Encryption at rest: every memory's content and every version of it
 * encrypted (XChaCha20-Poly1305) with a key from a file or a passphrase.
 * Names and sizes stay visible (SECURITY.md). A key is shared by reference:
 * the handles opened with it keep it; free yours when done with it.
 */
typedef struct mt_crypt_key mt_crypt_key;

/* A key file: 32 random bytes, raw or as 64 hex digits and a newline, in a
 * regular file that neither group nor others may read (like ssh, a key file
 * readable by others is refused). */
MT_EXTERN(int) mt_crypt_key_load_file(mt_crypt_key **out, const char *path);

/* A key from a passphrase, through Argon2id with each file's salt. */
MT_EXTERN(int) mt_crypt_key_from_passphrase(mt_crypt_key **out, const char *pass, size_t len);

/* Make a new key file at path (mode 0600, never replacing a file). */
MT_EXTERN(int) mt_crypt_key_generate_file(const char *path);

/* Accept `old` too, for reading only: content and versions still encrypted
 * with it are read, everything written is encrypted with key. */
MT_EXTERN(int) mt_crypt_key_accept(mt_crypt_key *key, mt_crypt_key *old);

/* The key's id as 16 hex digits ("" for a passphrase: its id depends on
 * each file's salt). */
MT_EXTERN(void) mt_crypt_key_id(char out[17], const mt_crypt_key *key);

MT_EXTERN(void) mt_crypt_key_free(mt_crypt_key *key);

/* mt_memory_open and mt_memory_open_url on an encrypted store (key NULL: as
 * without encryption). */
MT_EXTERN(int)
mt_memory_open_encrypted(mt_memory **out, const char *root, const mt_options *opts,
                         mt_crypt_key *key);
MT_EXTERN(int)
mt_memory_open_url_encrypted(mt_memory **out, const char *url, const mt_options *opts,
                             mt_crypt_key *key);

/* Which key each memory of an encrypted store, and each version its
 * history keeps, is encrypted with. */
typedef struct {
    char key_id[17];   /* 16 hex digits */
    int passphrase;    /* the key came from a passphrase */
    uint64_t files;    /* memories encrypted with it */
    uint64_t bytes;    /* their content's bytes */
    uint64_t versions; /* versions encrypted with it */
} mt_crypt_key_count;

typedef struct {
    mt_crypt_key_count *keys; /* most files first, then most versions */
    size_t count;
    uint64_t plain;          /* files with no encryption header (written outside memtool) */
    uint64_t files;          /* files in all */
    uint64_t versions;       /* versions with content in all (redacted ones and deletions
                                have none) */
    uint64_t versions_plain; /* versions with no encryption header */
} mt_crypt_status;

MT_EXTERN(int) mt_memory_crypt_status(mt_crypt_status *out, mt_memory *mem);
MT_EXTERN(void) mt_crypt_status_dispose(mt_crypt_status *status);

/* Each memory of an encrypted store with the key its file is encrypted with,
 * in byte order of paths: path is a request path ("/memories/a.md"), key_id
 * 16 hex digits, or "" for a file with no encryption header (written outside
 * memtool). A non-zero return from cb stops the walk: a negative one is
 * returned as it is, a positive one as MT_ESTOPPED. */
typedef int (*mt_crypt_file_cb)(void *payload, const char *path, const char *key_id,
                                int passphrase);
MT_EXTERN(int) mt_memory_crypt_each(mt_memory *mem, mt_crypt_file_cb cb, void *payload);

/*
 * Re-encrypt everything not yet encrypted with new_key: every memory's
 * file, then every version the history keeps (of deleted memories too).
 * The handle's key must read them (mt_crypt_key_accept lets it read
 * several). Each file is one atomic edit (with history on, a version),
 * each version one atomic replacement of its content; what is already
 * under new_key is left as it is, so an interrupted run is finished by
 * running it again. Neither is an access of the memory: last access and
 * last change times stay as they were (expiry, stats).
 *
 * What cannot be re-encrypted (under a key the handle lacks, damaged,
 * written without encryption) is skipped, counted and named (cb's event
 * and out->failures), and the rest goes on. Then the first failure's code
 * is returned (its message says how many were left), and the handle keeps
 * writing with its key. With none, 0: from then on the handle writes with
 * new_key, and the old key is needed for nothing that was in the store.
 * cb (may be NULL) is called after each file and version; return nonzero
 * to stop (MT_ESTOPPED). Free out with mt_rekey_result_dispose.
 */
typedef enum {
    MT_REKEY_FILE = 1,   /* a memory's file */
    MT_REKEY_VERSION = 2 /* a version in the history */
} mt_rekey_kind;

typedef struct {
    mt_rekey_kind kind;
    const char *path;    /* FILE: its request path; VERSION: the version's path (NULL when
                            redacted) */
    int64_t version;     /* VERSION: its id */
    uint64_t done;       /* files (or versions) looked at so far, this one included */
    uint64_t total;      /* files (or versions, as counted at the start) to look at */
    int outcome;         /* 1 re-encrypted; 0 left as it was (under new_key already, gone,
                            no content); < 0 could not be: an mt_error_code */
    const char *message; /* outcome < 0: why; else NULL */
} mt_rekey_event;

typedef int (*mt_rekey_cb)(void *payload, const mt_rekey_event *e);

/* One thing left under another key; the first MT_REKEY_NAMED are kept. */
typedef struct {
    mt_rekey_kind kind;
    char *path;      /* a request path (NULL: a redacted version's) */
    int64_t version; /* VERSION: its id */
    int code;        /* an mt_error_code */
    char *message;
} mt_rekey_failure;

#define MT_REKEY_NAMED 100

typedef struct {
    uint64_t files, files_kept;       /* files re-encrypted; left (new key already, gone) */
    uint64_t versions, versions_kept; /* versions re-encrypted; left (new key already, none) */
    uint64_t files_failed;            /* files that could not be re-encrypted */
    uint64_t versions_failed;         /* versions that could not be */
    mt_rekey_failure *failures;       /* the first MT_REKEY_NAMED of them */
    size_t nfailures;
} mt_rekey_result;

MT_EXTERN(int)
mt_memory_rekey(mt_rekey_result *out, mt_memory *mem, mt_crypt_key *new_key, mt_rekey_cb cb,
                void *payload);
MT_EXTERN(void) mt_rekey_result_dispose(mt_rekey_result *result);

/* 1 when the store cannot be written (a read-only mount, or no permission
 * to write it), else 0. Such a store is still read: view, cat, history,
 * stats and search work (a search's index is brought up to date in memory
 * only); a change fails with MT_EIO, "the store is read-only (...)". */
MT_EXTERN(int) mt_memory_read_only(mt_memory *mem);

/* Wrap any store; the handle takes ownership of it, even on failure. */
MT_EXTERN(int) mt_memory_new(mt_memory **out, mt_store *store, const mt_options *opts);

MT_EXTERN(void) mt_memory_free(mt_memory *mem);

/* What a store holds, as its limits count it. */
typedef struct {
    uint64_t bytes; /* bytes in regular files */
    uint64_t files; /* regular files */
    uint64_t dirs;  /* directories, the root not counted */
} mt_usage;

/* The store's usage now: from its counter, which every change keeps up to
 * date under the store's lock (no walk of the store, unless the counter was
 * left stale by a crash and must be counted again). */
MT_EXTERN(int) mt_memory_usage(mt_usage *out, mt_memory *mem);

/*
 * History. Every change that the six commands (or a restore) make to a
 * memory file is a version: created, modified (a rename is a modification
 * whose path changed) or deleted, with who made it, when, and the content's
 * SHA-256 and size. A memory keeps its id across renames; its versions
 * outlive it. A change made outside memtool (an editor) is recorded, as
 * actor "external", when memtool next changes that file or reads history.
 * Paths here are request paths ("/memories/notes.md").
 */
typedef enum {
    MT_VERSION_CREATED = 1,
    MT_VERSION_MODIFIED = 2,
    MT_VERSION_DELETED = 3
} mt_version_op;

typedef struct {
    int64_t id;         /* > 0, increasing in the order the changes took effect */
    char memory_id[24]; /* "mem_" and 16 hex digits */
    mt_version_op operation;
    char *path;              /* NULL when redacted */
    char *previous_path;     /* a rename's former path, else NULL */
    char *actor;             /* never NULL */
    int64_t created_at;      /* milliseconds since the epoch (UTC) */
    char content_sha256[65]; /* lowercase hex; "" for a deletion or when redacted */
    uint64_t content_size;   /* bytes; 0 for a deletion */
    int redacted;
} mt_version;

typedef struct {
    const char *path;        /* a memory or a directory (everything beneath); NULL: all */
    const char *memory_id;   /* NULL: any */
    mt_version_op operation; /* 0: any */
    const char *actor;       /* NULL: any */
    int64_t since, until;    /* created_at bounds in ms, inclusive; 0: open */
    int64_t before_id;       /* the cursor: only versions older than this; 0: from the newest */
    size_t limit;            /* at most this many; 0: 100 */
} mt_log_query;

/* Versions, newest first. Free with mt_versions_free. MT_ENOSYS when the
 * store keeps no history. */
MT_EXTERN(int)
mt_memory_log(mt_version **out, size_t *count, mt_memory *mem, const mt_log_query *query);
MT_EXTERN(void) mt_versions_free(mt_version *versions, size_t count);

/* One version (dispose with mt_version_dispose), and its exact content. */
MT_EXTERN(int) mt_memory_version(mt_version *out, mt_memory *mem, int64_t id);
MT_EXTERN(void) mt_version_dispose(mt_version *version);
MT_EXTERN(int) mt_memory_version_content(char **out, size_t *len, mt_memory *mem, int64_t id);

/* Make version id's content the memory's current content, as a new version
 * (*out_id): at the memory's path, or, for a deleted memory, at the version's
 * path (MT_EEXISTS when another memory holds it now). A memory that holds
 * that content already is left as it is: 0 with *out_id 0, no new version
 * (a write equal to the current state records none). The content is checked
 * for secrets like any write: MT_ESECRET under MT_SECRETS_REJECT (nothing
 * changes), redacted under MT_SECRETS_REDACT (mt_memory_secrets_note says). */
MT_EXTERN(int) mt_memory_restore(int64_t *out_id, mt_memory *mem, int64_t id);

/* Restore the memory at (or last at) path to its latest earlier version
 * whose content differs from its current content (a rename, or a restore
 * of the same bytes, is passed over); *restored is the version restored.
 * MT_ENOTFOUND when there is none: nothing to undo. */
MT_EXTERN(int)
mt_memory_undo(int64_t *out_id, int64_t *restored, mt_memory *mem, const char *path);

/* Erase a version's content and path (the row stays, marked redacted), and
 * its words from the search index: gone from the files of a file or SQLite
 * store when it returns; a PostgreSQL server keeps the old rows until
 * mt_store_pg_vacuum. Content another version or memory also holds stays,
 * as theirs. A memory's current content cannot be redacted (MT_EINVAL). */
MT_EXTERN(int) mt_memory_redact(mt_memory *mem, int64_t id);

/* The exact content of the file at path now (a request path,
 * "/memories/notes.md"), malloc'd and NUL-terminated (*len excludes the NUL;
 * the content may hold NUL bytes). A file over max_file_size is refused
 * (MT_ELIMIT): memory stays bounded by the limits. */
MT_EXTERN(int) mt_memory_read(char **out, size_t *len, mt_memory *mem, const char *path);

/* The SHA-256 (lowercase hex) of the file at path now. */
MT_EXTERN(int) mt_memory_sha256(char out[65], mt_memory *mem, const char *path);

/* Why the handle's last change recorded no version (the history database
 * is damaged or cannot be written: the change itself was made), or NULL
 * when it did. A front end shows it as a warning. */
MT_EXTERN(const char *) mt_memory_history_warning(mt_memory *mem);

/* What the calling thread's last restore or undo on this handle redacted
 * under MT_SECRETS_REDACT ("1 secret redacted: aws-access-key-id on line 3"),
 * or NULL when nothing; another thread's restore on the handle never shows. */
MT_EXTERN(const char *) mt_memory_secrets_note(mt_memory *mem);

/* Who the handle's changes are recorded as from now on (a front end learns
 * it late: an MCP client's name comes with its initialize). */
MT_EXTERN(int) mt_memory_set_actor(mt_memory *mem, const char *actor);

/*
 * Migration: every memory of one store copied into another (any stores:
 * file, SQLite, PostgreSQL, each encrypted or not), each checked by SHA-256
 * at the destination. Nothing at the destination is ever replaced: a path it
 * already holds with the same content counts as done, with other content as
 * a conflict, left as it is.
 *
 * Where both stores keep history (the destination's store has `import`,
 * memtool/store.h, and neither handle has history off), each memory comes
 * with its whole history: every version with its operation, paths, actor,
 * time, SHA-256, size and redaction, under its own memory id, in one
 * transaction with its current file, whose last access and last change
 * come too (expiry sees it as idle as in the source). Version ids are kept
 * where the destination holds none of the source's ids (a new store); when
 * it holds versions already, every source id is moved up by one amount, past
 * the destination's newest, so the versions keep their order; a memory one
 * of whose ids is taken all the same (changed at the destination since a
 * stopped run) gets the destination's next ids. COPIED tells each id that
 * changed (mt_migrate_event.ids); a
 * memory deleted in the source comes too (its versions only), so it can be
 * restored at the destination. A memory whose id the destination holds
 * already arrived before: that is how a migration that was stopped finishes
 * when run again. Each version's content is checked by SHA-256 on its way
 * and sealed for the destination when it is encrypted. Otherwise (or with
 * no_history) each memory's current content is copied as a create: a new
 * version by the destination's actor, with the source's last access and last
 * change kept where the destination store can set them (its `times`).
 * Directories come with the files in them; an empty one is counted, not made.
 */
typedef enum {
    MT_MIGRATE_PLAN = 1, /* the source was walked: files, bytes (and versions) are known */
    MT_MIGRATE_COPIED,   /* copied, and checked by SHA-256 at the destination */
    MT_MIGRATE_SAME,     /* already at the destination (the same content, or the memory's id) */
    MT_MIGRATE_CONFLICT, /* the destination holds something else there: left as it is */
    MT_MIGRATE_SKIPPED,  /* not a memory (a link, a FIFO, a name no path can be) */
    MT_MIGRATE_FAILED    /* could not be copied (a limit, a read error): message says why */
} mt_migrate_event_kind;

typedef struct {
    uint64_t files, bytes;                             /* in the source, from the walk */
    uint64_t done_files, done_bytes;                   /* handled so far, whatever the outcome */
    uint64_t copied, same, conflicts, skipped, failed; /* memories (deleted ones too) */
    uint64_t empty_dirs; /* directories with no file beneath: not made */
    /* The history (all 0 when it is not copied): */
    int history;              /* each memory comes with its versions */
    uint64_t deleted;         /* memories deleted in the source, copied for their versions */
    uint64_t versions;        /* versions of the memories to copy */
    uint64_t done_deleted;    /* deleted memories handled so far */
    uint64_t done_versions;   /* versions handled so far, whatever the outcome */
    uint64_t versions_copied; /* versions this run recorded at the destination */
} mt_migrate_stats;

typedef struct {
    mt_migrate_event_kind kind;
    const char *path;    /* a request path ("/memories/a.md"; a deleted memory's last); NULL
                            for PLAN */
    uint64_t size;       /* the file's bytes */
    const char *message; /* CONFLICT, SKIPPED, FAILED: why; PLAN: why the history is not
                            copied (NULL: it is, or no_history asked so) */
    const mt_migrate_stats *stats;
    int deleted;       /* a memory deleted in the source: its versions only */
    uint64_t versions; /* the memory's versions (0 without history) */
    /* COPIED with history: the versions whose id at the destination is not
     * their id in the source, as nids pairs (source id, destination id) in
     * ids[2 * i], ids[2 * i + 1]; a version the source had not recorded yet
     * (a change made with history off) has source id 0. None (NULL, 0) when
     * every id was kept. */
    const int64_t *ids;
    size_t nids;
} mt_migrate_event;

/* Called for every event; return 0 to go on, anything else to stop between
 * two memories (mt_memory_migrate then returns MT_ESTOPPED). */
typedef int (*mt_migrate_cb)(void *payload, const mt_migrate_event *e);

typedef struct {
    int no_history; /* copy only each memory's current content, as a create */
} mt_migrate_options;

/* Copy every memory of `from` into `to` (opts may be NULL: with history).
 * Returns 0 when every memory was handled (conflicts and failures are in
 * *out and were each reported to cb), or an error that stopped it (the
 * source could not be walked, or its history read). A memory moved or
 * deleted in the source between the walk and its copy is looked for again
 * (by its id with history, else by walking the source again for paths not
 * yet seen; a few walks at most): each memory is told once, where it is
 * now, and one gone at every walk is FAILED, never left out in silence. */
MT_EXTERN(int)
mt_memory_migrate_with(mt_migrate_stats *out, mt_memory *from, mt_memory *to,
                       const mt_migrate_options *opts, mt_migrate_cb cb, void *payload);

/* mt_memory_migrate_with with no options. */
MT_EXTERN(int)
mt_memory_migrate(mt_migrate_stats *out, mt_memory *from, mt_memory *to, mt_migrate_cb cb,
                  void *payload);

/*
 * Search: memories ranked by how well they match a query of words, "phrases
 * in quotes" and prefixes (deploy*), all of which must occur. Case, Latin
 * accents and ё/е do not matter; Chinese, Japanese and Korean are matched
 * by pairs of characters. The store's index is brought up to date first, so
 * an edit made outside memtool is found as the file is now. An encrypted
 * store keeps no index: it reads and decrypts every memory beneath the path
 * at each search, and a memory it cannot open fails the search (MT_ECRYPT).
 */
typedef struct {
    char *path;      /* a request path ("/memories/notes.md") */
    double score;    /* higher ranks first; comparable within one search */
    uint32_t *lines; /* lines (1-based, ascending) where a term occurs, at most 20 */
    size_t line_count;
    int more_lines;   /* terms occur on more lines than those */
    uint64_t matches; /* occurrences of the terms in the memory */
    uint32_t line;    /* the snippet's line: the first match's */
    char *before;     /* the snippet: text before the first match on its line, */
    char *match;      /* the match, */
    char *after;      /* and text after it (each valid UTF-8, cut short with "...") */
} mt_search_hit;

typedef struct {
    const char *path; /* search at or beneath this directory (a request path); NULL: /memories */
    size_t limit;     /* at most this many hits (1 to 100); 0: 10 */
} mt_search_options;

/* Hits, best first; none is not an error. MT_EINVAL names what is wrong with
 * the query (empty, a quote left open, a misplaced *) or the path; MT_ENOSYS
 * when the store cannot search. Free with mt_search_hits_free. */
MT_EXTERN(int)
mt_memory_search(mt_search_hit **out, size_t *count, mt_memory *mem, const char *query,
                 const mt_search_options *opts);
MT_EXTERN(void) mt_search_hits_free(mt_search_hit *hits, size_t count);

/*
 * Expiry. The store records each memory's last access: a view of the file
 * or a change of it (a directory listing is none), coarsely (to within
 * MT_ACCESS_GRAIN_MS, a minute, of memtool/store.h). mt_memory_gc deletes
 * the memories idle at least idle_ms; each deletion is a change like any
 * other (with history on, a version: the memory can be restored), and is
 * made only if the memory is still idle at that instant, so a memory viewed
 * after gc found it is kept. Paths here are request paths.
 */
typedef struct {
    uint64_t idle_ms;  /* at least MT_GC_MIN_IDLE_MS */
    const char *path;  /* only at or beneath this ("/memories/old"); NULL: all */
    int dry_run;       /* report what would go, delete nothing */
    int64_t now_ms;    /* "now" for idle times (reproducible runs); 0: the clock */
    const char *actor; /* who the deletions are recorded as; NULL: the handle's */
} mt_gc_options;

/* The shortest idle time gc takes: a recorded access may be a grain old. */
#define MT_GC_MIN_IDLE_MS 60000

typedef enum {
    MT_GC_PLAN = 1, /* the store was listed: files and bytes idle are known */
    MT_GC_EXPIRED,  /* path deleted (dry run: would be) */
    MT_GC_KEPT,     /* path was accessed (or changed) after it was found idle: kept */
    MT_GC_FAILED    /* path could not be deleted: message says why */
} mt_gc_event_kind;

typedef struct {
    uint64_t files, bytes;     /* in the store (at or beneath the path), from the listing */
    uint64_t idle, idle_bytes; /* of those, idle at least idle_ms */
    uint64_t expired, expired_bytes, kept, failed;
} mt_gc_stats;

typedef struct {
    mt_gc_event_kind kind;
    const char *path;       /* a request path; NULL for PLAN */
    uint64_t size;          /* the file's bytes */
    int64_t last_access_ms; /* ms since the epoch */
    uint64_t idle_ms;       /* how long it had been idle, at now_ms */
    const char *message;    /* FAILED: why; else NULL */
    const mt_gc_stats *stats;
} mt_gc_event;

/* Return 0 to go on, anything else to stop between two files (MT_ESTOPPED). */
typedef int (*mt_gc_cb)(void *payload, const mt_gc_event *e);

/* Delete (or, dry run, list) the memories idle at least opts->idle_ms,
 * oldest access first. cb may be NULL. MT_ENOSYS for a store without
 * expiry (store interface before version 5). */
MT_EXTERN(int)
mt_memory_gc(mt_gc_stats *out, mt_memory *mem, const mt_gc_options *opts, mt_gc_cb cb,
             void *payload);

/* One memory in mt_stats' lists. */
typedef struct {
    char *path; /* a request path */
    uint64_t size;
    int64_t last_access_ms, modified_ms;
} mt_stats_file;

#define MT_STATS_TOP 5

typedef struct {
    mt_usage usage; /* what the store holds (its counter) */
    uint64_t max_file_size, max_store_size, max_files, max_dirs; /* the handle's limits */
    mt_stats_file largest[MT_STATS_TOP];                         /* biggest first */
    mt_stats_file oldest[MT_STATS_TOP]; /* least recently created or edited first */
    mt_stats_file idlest[MT_STATS_TOP]; /* least recently accessed first */
    size_t nlargest, noldest, nidlest;
    int has_versions;  /* the store keeps history */
    uint64_t versions; /* versions kept */
} mt_stats;

/* The store at a glance; free with mt_stats_dispose. */
MT_EXTERN(int) mt_memory_stats(mt_stats *out, mt_memory *mem);
MT_EXTERN(void) mt_stats_dispose(mt_stats *stats);

/* The text of one tool result; text is NUL-terminated and valid UTF-8. */
typedef struct {
    char *text;
    size_t len;
    int is_error;
} mt_result;

/*
 * Run one tool input, given as JSON text (`{"command": "view", ...}`).
 * Returns 0 whenever a result was produced, tool errors included (bad JSON,
 * a refused path, a missing file...: res->is_error is set and res->text says
 * why). Returns < 0 only when no result could be made (MT_ENOMEM, MT_EINVAL
 * for NULL arguments); then res is zeroed.
 */
MT_EXTERN(int) mt_memory_call(mt_result *res, mt_memory *mem, const char *json, size_t len);

/* The same for an already parsed jansson object. */
MT_EXTERN(int) mt_memory_call_object(mt_result *res, mt_memory *mem, const struct json_t *input);

/*
 * Answer a Messages API `tool_use` block (`{"type":"tool_use","id":...,
 * "name":"memory","input":{...}}`) or a bare tool input with a new
 * `tool_result` block: {"type":"tool_result","tool_use_id":...,"content":...,
 * "is_error":...}; tool_use_id is present when the block had an id.
 */
MT_EXTERN(int)
mt_memory_tool_result(struct json_t **out, mt_memory *mem, const struct json_t *block);

MT_EXTERN(void) mt_result_dispose(mt_result *res);

/*
 * The search as a tool a model calls (memory_search in the MCP server, serve
 * and the agent): input {"query": "...", "path": "/memories/dir", "limit": N}
 * (path and limit optional); the result is the hits as text, best first, or
 * an error ("Error: ..."). Returns 0 whenever a result was made.
 */
MT_EXTERN(int) mt_memory_search_tool(mt_result *res, mt_memory *mem, const struct json_t *input);

#ifdef __cplusplus
}
#endif

#endif

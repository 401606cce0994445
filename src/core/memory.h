/* The handle, and the six commands that dispatch hands checked arguments to. */
#ifndef MT_MEMORY_H
#define MT_MEMORY_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <memtool.h>
#include <memtool/store.h>

#include "util/buf.h"
#include "guard/secrets.h"

#define MT_ACTOR_MAX 128

/* What a store last said of a file's last access, for a handle's views:
 * sets of a few slots each, chosen by a hash of the path, so that paths whose
 * hashes meet share a set instead of pushing each other out on every view. */
#define MT_TOUCH_WAYS  4
#define MT_TOUCH_SETS  256
#define MT_TOUCH_SLOTS (MT_TOUCH_WAYS * MT_TOUCH_SETS)
typedef struct {
    char *path; /* a store path, or NULL */
    size_t len; /* its length */
    uint64_t hash;
    int64_t recorded; /* ms since the epoch */
} mt_touch_slot;

struct mt_memory {
    /* This handle's number, never another's in the process: what a thread's
     * note is kept under, since an address is handed out again once freed. */
    uint64_t serial;
    mt_store *store;
    mt_options opts;
    mt_store_op op; /* the limits, lock wait and history settings every change is given */
    char actor[MT_ACTOR_MAX];
    int audit_fd;  /* the audit log, or -1 */
    int read_only; /* the store cannot be written (mt_memory_read_only) */
    /* Why the last change that should have made a version did not (a
     * damaged or unwritable history); "" when it did. */
    char history_warning[256];
    pthread_mutex_t warning_lock;          /* threads share the handle, the warning and the note */
    mt_secrets_allow *secrets_allow;       /* the compiled allow-list, or NULL */
    pthread_mutex_t touch_lock;            /* the views' record of last accesses (access.c) */
    mt_touch_slot touched[MT_TOUCH_SLOTS]; /* MT_TOUCH_WAYS a set, one path a slot */
};

/* Record a view's access of the file at rel (access.c); never fails the view. */
void mt_memory_touch(mt_memory *m, const char *rel);
void mt_memory_touch_forget(mt_memory *m);

/* After a change: keep (or clear) the store's word on its history. */
void mt_memory_note(mt_memory *m, const mt_store_op *op);

/* Whether a name may be an actor: 1..127 bytes of UTF-8, no control characters. */
int mt_actor_check(const char *actor);

/* A request path ("/memories/a.md") as a store path (malloc'd), for the
 * library's own entry points; MT_EINVAL names a path not under /memories. */
int mt_memory_rel(char **rel, const char *path);
/* And back: a store path as a request path (malloc'd), "" as /memories. */
int mt_memory_request_path(char **out, const char *rel);

/* A string from the tool input, which may hold NUL bytes. */
typedef struct {
    const char *ptr;
    size_t len;
} mt_str;

/* The result being built, and what the call asked beyond its command. */
typedef struct {
    mt_buf text;
    int is_error;
    const char *expect_sha256; /* the input's expected_sha256 (64 lowercase hex), or NULL */
    int scrub;                 /* a redaction of the content: store.h, mt_store_op.scrub */
    /* For the audit log: what the call was. */
    const char *command;
    mt_str path, new_path;
    uint64_t bytes_written;
    /* Set by a caller that sends the answer on as a JSON string (serve):
     * a command that can write its answer escaped as it makes it appends
     * that string to *json, quotes and all, sets in_json, and sets plain_len
     * to how long the answer is unescaped (text is then not the answer).
     * Any other answer the caller escapes from text. This saves a pass over
     * a view's answer, which is most of what a server sends. */
    mt_buf *json;
    int in_json;
    size_t plain_len;
    /* What the secrets guard refused, by kind and line, never the secret
     * ("a secret (aws-access-key-id, line 3)"), for the audit log; "" when
     * it refused nothing. */
    char guard[200];
} mt_reply;

#define MT_REPLY_INIT                                                                              \
    {                                                                                              \
        MT_BUF_INIT, 0, NULL, 0, NULL, {NULL, 0}, {NULL, 0}, 0, NULL, 0, 0, ""                     \
    }

/* Append literal text or a string from the input (shown as valid UTF-8). */
int mt_reply_put(mt_reply *r, const char *s);
int mt_reply_str(mt_reply *r, mt_str s);
/* Replace the reply with prefix + s + suffix, as an error or a success. */
int mt_reply_ok(mt_reply *r, const char *prefix, mt_str s, const char *suffix);
int mt_reply_fail(mt_reply *r, const char *prefix, mt_str s, const char *suffix);
/* Replace the reply with an error made by printf. */
int mt_reply_failf(mt_reply *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Say what a store failure means for `path`; codes without a better word
 * (I/O, locking) take the store's message from mt_error_last(). */
int mt_reply_store_error(mt_reply *r, int code, mt_str path);

/* The file-size limit, checked before anything is written (the store checks
 * the others, in the same step as the write). Returns 0, or fills r with the
 * error and returns 1, or MT_ENOMEM. */
int mt_limits_check(mt_reply *r, mt_memory *m, mt_str path, uint64_t file_size);

/* On a handle of a memory store (opts.memory_store), the memory-store API's
 * path rules (core/memstore_path.h) for the memory a create or rename puts
 * at store path rel, and, for a directory moved from `from` (NULL: none),
 * for every file it holds at its new place: what the tool lets through,
 * the API serves. 0, or r filled with the error and 1, or MT_ENOMEM. */
int mt_memstore_path_refused(mt_reply *r, mt_memory *m, const char *verb, mt_str path,
                             const char *rel, const char *from);

/* The clock of access times: ms since the epoch. */
int64_t mt_memory_now_ms(void);

/* A fresh copy of the handle's limits for one change. */
void mt_memory_op(mt_store_op *op, const mt_memory *m);
/* The calling thread's changes on any handle are recorded as actor from now
 * on (NULL: each handle's own). mt_memstore_actor sets it. */
void mt_memory_thread_actor(const char *actor);

/* The same, with the call's precondition. */
void mt_reply_op(mt_store_op *op, const mt_reply *r, const mt_memory *m);

/* What this thread's restore on m redacted (mt_memory_secrets_note); len 0: nothing. */
void mt_memory_secrets_note_set(const mt_memory *m, const char *text, size_t len);

/* "Error: {path} was changed by someone else ..." for MT_ECONFLICT. */
int mt_reply_conflict(mt_reply *r, const mt_store_op *op, mt_str path);

/* The words for a limit the store refused (op->refused): "Error: Cannot ...
 * {path}: ..." or, given `from`, "Error: Cannot rename {from} to {path}: ...". */
int mt_reply_limit(mt_reply *r, const mt_store_op *op, mt_str path, const mt_str *from);

/*
 * What str_replace and insert share around the store's read-modify-write:
 * the reply, and whether
 * the callback has already answered (no match, a bad line, a limit). It is
 * the first member of each callback's payload.
 */
/* What the secrets check found in content about to be written (secrets_check.c). */
/* Findings a message lists by kind and line; past these, "and K more". */
#define MT_GUARD_SHOWN 8
typedef struct {
    size_t count;                        /* secrets found (redacted, or the first rejected) */
    mt_secret_hit shown[MT_GUARD_SHOWN]; /* the first few, for the messages */
} mt_guard_found;

typedef struct {
    mt_guard_found found;
    int rejected; /* the policy refuses the write: found.shown[0] says why */
    char *data;   /* the redacted content (malloc'd), or NULL: write what was given */
    size_t len;   /* its length, also when it is too big to be made (data NULL) */
} mt_guard;

/* Check content about to be written against the handle's policy. Returns 0
 * with g filled: nothing found, g->rejected, or (redact) g->data and g->len
 * the content to write instead; g->len over the max file size is not made
 * (data NULL), so the caller's limit check refuses it. Or MT_ENOMEM. */
int mt_guard_content(mt_guard *g, mt_memory *m, const char *data, size_t len);
void mt_guard_dispose(mt_guard *g);

/* The same under the redact policy, whatever the handle's (with its
 * allow-list): what memtool secrets scan --redact writes. */
int mt_guard_redact(mt_guard *g, mt_memory *m, const char *data, size_t len);

/* Fill r with the refusal: "Error: {path} would contain a secret ({kind},
 * line {n}); ..." or "... would contain {N} secrets ({kind}, line {n}; ...;
 * and {K} more); ...", then the ways out (the secret itself is never shown). */
int mt_guard_reject(mt_reply *r, mt_str path, const mt_guard_found *f);

/* " (1 secret redacted: {kind} on line {n})", or nothing when none was. */
int mt_guard_note(mt_buf *b, const mt_guard_found *f);

/* The refusal of a restore of version id, as an mt_error (MT_ESECRET): its
 * ways out are --secrets redact and memtool redact of that version. */
int mt_guard_restore_error(const char *path, int64_t id, const mt_guard_found *f);

typedef struct {
    mt_reply *r;
    mt_memory *m;
    mt_str path;
    int answered;
    mt_guard_found redacted; /* what the edit's new content had redacted */
    mt_edit_cb made;         /* mt_edit_run's: the command's own callback */
    int unchanged;           /* the edit left the content as it was: no write, no version */
} mt_edit;

/* From the callback: check the file-size limit for the new content. Returns
 * 0, or the code for the callback to return (the reply then holds the error). */
int mt_edit_reserve(mt_edit *e, size_t new_len);

/* From the callback, on the new content it made (*buf, malloc'd): the
 * secrets check. Returns 0 with *buf and *len the content to write (redacted
 * under that policy; e->redacted says what went), or the code for the
 * callback to return (the reply then holds the refusal, *buf is freed). */
int mt_edit_guard(mt_edit *e, char **buf, size_t *len);

/* Run cb on rel's content under the file's lock. Returns 1 when the file
 * was edited (or cb's result was the content as it was: then nothing is
 * written and no version recorded, e->unchanged says so), 0 when r holds
 * the error (`missing` ends the message for a missing file), or MT_ENOMEM. */
int mt_edit_run(mt_edit *e, const char *rel, mt_edit_cb cb, const char *missing);

/* Each returns 0 with the result in r, or MT_ENOMEM. `path` is the path as
 * given (echoed in messages), `rel` its normalised form. */
/* What mt_memory_tool_result computes, without building its json_t: the
 * result, and the block's id (borrowed from block) or NULL. For servers that
 * write the tool_result line themselves. */
/* Run a tool input whose parameters are already read (core/tool_input.h). */
struct mt_input;
int mt_memory_run_input(mt_result *res, mt_memory *m, const struct mt_input *in);
/* The same, the result's text appended to json as a JSON string (quotes
 * and all), with text as the scratch buffer the caller keeps, so a server
 * reuses one buffer for every input. Returns 0 with *is_error set, or
 * MT_ENOMEM (json is then as it was). */
int mt_memory_run_input_json(mt_buf *json, mt_buf *text, int *is_error, mt_memory *m,
                             const struct mt_input *in);

int mt_memory_tool_call(mt_result *res, const struct json_t **id, mt_memory *m,
                        const struct json_t *block);

/* Files up to this many bytes are viewed from one buffer, bigger ones in
 * pieces (cmd_view.c; a variable for the tests). */
extern size_t mt_view_whole;

int mt_op_view(mt_reply *r, mt_memory *m, mt_str path, const char *rel, const int64_t *range);
int mt_op_create(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str text);
int mt_op_str_replace(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str old_str,
                      mt_str new_str);
int mt_op_insert(mt_reply *r, mt_memory *m, mt_str path, const char *rel, int64_t line,
                 mt_str text);
int mt_op_delete(mt_reply *r, mt_memory *m, mt_str path, const char *rel);
int mt_op_rename(mt_reply *r, mt_memory *m, mt_str old_path, const char *old_rel, mt_str new_path,
                 const char *new_rel);

#endif

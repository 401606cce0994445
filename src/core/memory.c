/* The memory handle: a store, the options, and the limits. */
#include "core/memory.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/audit.h"
#include "contract/store_contract.h"
#include "factory/store_factory.h"
#include "util/lines.h"
#include "util/utf8.h"

void mt_options_init(mt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->version = MT_OPTIONS_VERSION;
    opts->max_file_size = 1024 * 1024;
    opts->max_store_size = 100 * 1024 * 1024;
    opts->max_files = 10000;
    opts->view_limit = 16000;
    opts->durability = MT_DURABILITY_FULL;
    opts->max_dirs = 1000;
    opts->lock_timeout_ms = 5000;
    opts->actor = "library";
    opts->history = 1;
    /* A memory rewritten all day keeps its last hundred versions; one left
     * alone keeps its history three months: enough to find and undo what an
     * agent overwrote, bounded so a busy store does not grow without end. */
    opts->history_keep = 100;
    opts->history_days = 90;
}

int mt_durability_parse(mt_durability *out, const char *name)
{
    if (name && strcmp(name, "full") == 0)
        *out = MT_DURABILITY_FULL;
    else if (name && strcmp(name, "file") == 0)
        *out = MT_DURABILITY_FILE;
    else if (name && strcmp(name, "none") == 0)
        *out = MT_DURABILITY_NONE;
    else
        return mt_error_set(MT_EINVAL, "unknown durability '%s': use full, file or none",
                            name ? name : "");
    return 0;
}

int mt_secrets_policy_parse(mt_secrets_policy *out, const char *name)
{
    if (name && strcmp(name, "reject") == 0)
        *out = MT_SECRETS_REJECT;
    else if (name && strcmp(name, "redact") == 0)
        *out = MT_SECRETS_REDACT;
    else if (name && strcmp(name, "off") == 0)
        *out = MT_SECRETS_OFF;
    else
        return mt_error_set(MT_EINVAL, "unknown secrets policy '%s': use reject, redact or off",
                            name ? name : "");
    return 0;
}

/* Older options end early (version 1 before max_dirs, 2 before actor, 3
 * before tenant, 4 before secrets, 5 before must_exist, 6 before
 * memory_store): take what they have, default the rest. */
static int options_take(mt_options *out, const mt_options *o)
{
    static const size_t ends[] = {
        offsetof(mt_options, max_dirs),   offsetof(mt_options, actor),
        offsetof(mt_options, tenant),     offsetof(mt_options, secrets),
        offsetof(mt_options, must_exist), offsetof(mt_options, memory_store)};

    if (o->version >= 1 && o->version < MT_OPTIONS_VERSION) {
        mt_options_init(out);
        memcpy(out, o, ends[o->version - 1]);
        out->version = MT_OPTIONS_VERSION;
        return 0;
    }
    if (o->version != MT_OPTIONS_VERSION)
        return mt_error_set(MT_EINVAL, "mt_options version %u is not %d: call mt_options_init",
                            o->version, MT_OPTIONS_VERSION);
    *out = *o;
    return 0;
}

static int options_check(const mt_options *o)
{
    if (o->durability != MT_DURABILITY_FULL && o->durability != MT_DURABILITY_FILE &&
        o->durability != MT_DURABILITY_NONE)
        return mt_error_set(MT_EINVAL, "unknown durability %d", (int)o->durability);
    if (o->secrets != MT_SECRETS_REJECT && o->secrets != MT_SECRETS_REDACT &&
        o->secrets != MT_SECRETS_OFF)
        return mt_error_set(MT_EINVAL, "unknown secrets policy %d", (int)o->secrets);
    /* Below this a view could not show its own header and one line. */
    if (o->view_limit < 200)
        return mt_error_set(MT_EINVAL, "the view limit must be at least 200 characters, not %llu",
                            (unsigned long long)o->view_limit);
    return mt_actor_check(o->actor);
}

int mt_actor_check(const char *actor)
{
    size_t i, step, n = actor ? strlen(actor) : 0;
    uint32_t cp;

    if (n == 0 || n >= MT_ACTOR_MAX)
        return mt_error_set(MT_EINVAL, "an actor name is 1 to %d bytes", MT_ACTOR_MAX - 1);
    for (i = 0; i < n; i += step) {
        if (!(step = mt_utf8_decode(&cp, (const unsigned char *)actor + i, n - i)))
            return mt_error_set(MT_EINVAL, "an actor name is UTF-8 text");
        if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
            return mt_error_set(MT_EINVAL, "an actor name has no control characters");
    }
    return 0;
}

int mt_memory_set_actor(mt_memory *m, const char *actor)
{
    int rc;

    if (!m)
        return mt_error_set(MT_EINVAL, "mt_memory_set_actor needs a handle");
    if ((rc = mt_actor_check(actor)) < 0)
        return rc;
    memcpy(m->actor, actor, strlen(actor) + 1);
    m->op.actor = m->actor;
    return 0;
}

/* The last handle's serial; the first is 1, so 0 is none. */
static atomic_uint_least64_t serials;

int mt_memory_new(mt_memory **out, mt_store *store, const mt_options *opts)
{
    mt_memory *m;
    mt_options o;
    int rc, plain = 0;

    if (out)
        *out = NULL;
    if (!out || !store) {
        rc = mt_error_set(MT_EINVAL, "mt_memory_new needs an out pointer and a store");
        goto fail;
    }
    if (store->version < 2 || store->version > MT_STORE_VERSION) {
        rc = mt_error_set(MT_EINVAL,
                          "the store has interface version %u; this memtool takes versions 2 to %d "
                          "(see memtool/store.h)",
                          store->version, MT_STORE_VERSION);
        goto fail;
    }
    if ((rc = mt_store_admit(&plain, store)) < 0)
        goto fail;
    if (!opts)
        mt_options_init(&o);
    else if ((rc = options_take(&o, opts)) < 0)
        goto fail;
    if ((rc = options_check(&o)) < 0)
        goto fail;
    if (!(m = calloc(1, sizeof(*m)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto fail;
    }
    m->serial = (uint64_t)atomic_fetch_add(&serials, 1) + 1;
    m->store = store;
    m->opts = o;
    m->audit_fd = -1;
    pthread_mutex_init(&m->warning_lock, NULL);
    pthread_mutex_init(&m->touch_lock, NULL);
    if ((rc = mt_secrets_allow_compile(&m->secrets_allow, o.secrets_allow, o.secrets_allow_count)) <
            0 ||
        (o.audit && (rc = mt_audit_open(&m->audit_fd, o.audit)) < 0)) {
        mt_secrets_allow_free(m->secrets_allow);
        pthread_mutex_destroy(&m->warning_lock);
        pthread_mutex_destroy(&m->touch_lock);
        free(m);
        goto fail;
    }
    /* The names may not outlive the call: the descriptor is kept, the
     * store was opened for the tenant, the allow-list is compiled. */
    m->opts.audit = NULL;
    m->opts.tenant = NULL;
    m->opts.secrets_allow = NULL;
    m->opts.secrets_allow_count = 0;
    mt_store_op_init(&m->op);
    m->op.max_file_size = o.max_file_size;
    m->op.max_store_size = o.max_store_size;
    m->op.max_files = o.max_files;
    m->op.max_dirs = o.max_dirs;
    m->op.lock_timeout_ms = o.lock_timeout_ms;
    memcpy(m->actor, o.actor, strlen(o.actor) + 1);
    m->opts.actor = m->op.actor = m->actor;
    /* A version 2 store knows nothing of history. */
    m->op.history = store->version >= 3 && o.history;
    m->op.history_keep = o.history_keep;
    m->op.history_days = o.history_days;
    m->op.plain = plain;
    *out = m;
    return 0;
fail:
    if (store && store->free)
        store->free(store);
    return rc;
}

/* The file store at root (url NULL), or the store url names; encrypted with key. */
static int open_store(mt_memory **out, const char *root, const char *url, const mt_options *opts,
                      mt_crypt_key *key)
{
    mt_options o;
    mt_store *store;
    unsigned flags;
    int rc, read_only = 0;

    if (out)
        *out = NULL;
    if (!out)
        return mt_error_set(MT_EINVAL, "opening a store needs an out pointer");
    if (!opts)
        mt_options_init(&o);
    else if ((rc = options_take(&o, opts)) < 0)
        return rc;
    if ((rc = options_check(&o)) < 0)
        return rc;
    if (!root && !url)
        return mt_error_set(MT_EINVAL, "no store root given");
    flags = o.must_exist ? MT_STORE_OPEN_EXISTING : 0;
    if ((rc = mt_store_assemble(&store, &read_only, root, url, o.tenant, o.durability, flags,
                                key)) < 0)
        return rc;
    if ((rc = mt_memory_new(out, store, opts)) == 0)
        (*out)->read_only = read_only;
    return rc;
}

int mt_memory_read_only(mt_memory *m)
{
    return m ? m->read_only : 0;
}

int mt_memory_open(mt_memory **out, const char *root, const mt_options *opts)
{
    return open_store(out, root, NULL, opts, NULL);
}

int mt_memory_open_encrypted(mt_memory **out, const char *root, const mt_options *opts,
                             mt_crypt_key *key)
{
    return open_store(out, root, NULL, opts, key);
}

int mt_memory_open_url_encrypted(mt_memory **out, const char *url, const mt_options *opts,
                                 mt_crypt_key *key)
{
    if (out)
        *out = NULL;
    if (!url)
        return mt_error_set(MT_EINVAL, "no store URL given: use file:DIR, sqlite:PATH, "
                                       "postgresql://USER@HOST/DATABASE or a memory store's "
                                       "https://HOST/v1/memory_stores/memstore_ID");
    return open_store(out, NULL, url, opts, key);
}

/* The requests of the encryption layer go through the store's control
 * (store.h), whose paths are store paths: named here as requests name them. */
typedef struct {
    mt_crypt_file_cb cb;
    void *payload;
} crypt_each;

static int crypt_each_file(void *payload, const char *path, const char *key_id, int passphrase)
{
    crypt_each *e = payload;
    char *request = NULL;
    int rc;

    if ((rc = mt_memory_request_path(&request, path)) < 0)
        return rc;
    rc = e->cb(e->payload, request, key_id, passphrase);
    free(request);
    return rc;
}

/* The control's answer, or what a store without the encryption layer says. */
static int crypt_control(mt_memory *m, int request, void *arg)
{
    int rc = mt_store_control(m->store, request, arg);

    if (rc == MT_ENOSYS)
        return mt_error_set(MT_EINVAL, "the store is not opened with encryption (--encrypt)");
    return rc;
}

int mt_memory_crypt_each(mt_memory *m, mt_crypt_file_cb cb, void *payload)
{
    crypt_each e = {cb, payload};
    mt_store_crypt_each arg = {crypt_each_file, &e};

    if (!m || !cb)
        return mt_error_set(MT_EINVAL, "mt_memory_crypt_each needs a handle and a callback");
    return crypt_control(m, MT_STORE_CRYPT_EACH, &arg);
}

int mt_memory_crypt_status(mt_crypt_status *out, mt_memory *m)
{
    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_crypt_status needs an out pointer and a handle");
    memset(out, 0, sizeof(*out));
    return crypt_control(m, MT_STORE_CRYPT_STATUS, out);
}

typedef struct {
    mt_rekey_cb cb;
    void *payload;
} rekey_relay;

/* A rekey's event, its store path named as a request names it. */
static int rekey_event(void *payload, const mt_rekey_event *e)
{
    rekey_relay *r = payload;
    mt_rekey_event shown = *e;
    char *request = NULL;
    int rc;

    if (e->path && (rc = mt_memory_request_path(&request, e->path)) < 0)
        return rc;
    shown.path = request;
    rc = r->cb(r->payload, &shown);
    free(request);
    return rc;
}

int mt_memory_rekey(mt_rekey_result *out, mt_memory *m, mt_crypt_key *new_key, mt_rekey_cb cb,
                    void *payload)
{
    rekey_relay relay = {cb, payload};
    mt_store_rekey arg = {out, new_key, NULL, cb ? rekey_event : NULL, &relay};
    mt_store_op op;
    size_t i;
    int rc;

    if (!out || !m || !new_key)
        return mt_error_set(MT_EINVAL, "mt_memory_rekey needs a result, a handle and a new key");
    memset(out, 0, sizeof(*out));
    mt_memory_op(&op, m);
    arg.op = &op;
    rc = crypt_control(m, MT_STORE_CRYPT_REKEY, &arg);
    for (i = 0; i < out->nfailures; i++) {
        char *request = NULL;

        if (!out->failures[i].path)
            continue;
        if (mt_memory_request_path(&request, out->failures[i].path) < 0) {
            mt_rekey_result_dispose(out);
            return MT_ENOMEM;
        }
        free(out->failures[i].path);
        out->failures[i].path = request;
    }
    return rc;
}

int mt_memory_open_url(mt_memory **out, const char *url, const mt_options *opts)
{
    if (out)
        *out = NULL;
    if (!url)
        return mt_error_set(MT_EINVAL, "no store URL given: use file:DIR, sqlite:PATH, "
                                       "postgresql://USER@HOST/DATABASE or a memory store's "
                                       "https://HOST/v1/memory_stores/memstore_ID");
    return open_store(out, NULL, url, opts, NULL);
}

/* The calling thread's last restore: threads sharing a handle each learn
 * what their own restore redacted, never another's. Kept under the handle's
 * serial, not its address: a handle freed (by any thread) and another made
 * at the same address must not show the first one's note. */
static _Thread_local struct {
    uint64_t serial; /* 0: none */
    char text[256];
} secrets_note;

void mt_memory_free(mt_memory *m)
{
    if (!m)
        return;
    m->store->free(m->store);
    if (m->audit_fd >= 0)
        close(m->audit_fd);
    mt_secrets_allow_free(m->secrets_allow);
    pthread_mutex_destroy(&m->warning_lock);
    mt_memory_touch_forget(m);
    pthread_mutex_destroy(&m->touch_lock);
    free(m);
}

int mt_memory_usage(mt_usage *out, mt_memory *m)
{
    if (!out || !m)
        return mt_error_set(MT_EINVAL, "mt_memory_usage needs an out pointer and a handle");
    return m->store->usage(m->store, out);
}

/* Who the calling thread's changes are recorded as, over the handle's own
 * actor: a server shares one handle between requests of many callers, and
 * every change a request makes (a restore, an undo, a redaction's record)
 * must carry the caller's name, not the handle's. */
static _Thread_local const char *thread_actor;

void mt_memory_thread_actor(const char *actor)
{
    thread_actor = actor;
}

void mt_memory_op(mt_store_op *op, const mt_memory *m)
{
    *op = m->op;
    if (thread_actor)
        op->actor = thread_actor;
}

void mt_memory_note(mt_memory *m, const mt_store_op *op)
{
    if (m->store->version < 3 || !op->history)
        return;
    pthread_mutex_lock(&m->warning_lock);
    snprintf(m->history_warning, sizeof(m->history_warning), "%s",
             op->history_error ? op->history_error : "");
    pthread_mutex_unlock(&m->warning_lock);
}

void mt_memory_secrets_note_set(const mt_memory *m, const char *text, size_t len)
{
    secrets_note.serial = m->serial;
    snprintf(secrets_note.text, sizeof(secrets_note.text), "%.*s", (int)len, text);
}

const char *mt_memory_secrets_note(mt_memory *m)
{
    return m && secrets_note.serial == m->serial && secrets_note.text[0] ? secrets_note.text : NULL;
}

const char *mt_memory_history_warning(mt_memory *m)
{
    /* A copy per thread: another thread's change may write the handle's. */
    static _Thread_local char copy[256];

    if (!m)
        return NULL;
    pthread_mutex_lock(&m->warning_lock);
    memcpy(copy, m->history_warning, sizeof(copy));
    pthread_mutex_unlock(&m->warning_lock);
    return copy[0] ? copy : NULL;
}

void mt_reply_op(mt_store_op *op, const mt_reply *r, const mt_memory *m)
{
    mt_memory_op(op, m);
    op->expect_sha256 = r->expect_sha256;
    op->scrub = r->scrub;
}

int mt_reply_conflict(mt_reply *r, const mt_store_op *op, mt_str path)
{
    if (mt_reply_fail(r, "Error: ", path, " was changed by someone else (sha256 now ") < 0 ||
        mt_reply_put(r, *op->current_sha256 ? op->current_sha256 : "none: it is gone") < 0 ||
        mt_reply_put(r, "); view it again and retry") < 0)
        return MT_ENOMEM;
    return 0;
}

int mt_limits_check(mt_reply *r, mt_memory *m, mt_str path, uint64_t file_size)
{
    char a[32], b[32];

    if (file_size <= m->opts.max_file_size)
        return 0;
    mt_text_format_count(a, file_size);
    mt_text_format_count(b, m->opts.max_file_size);
    if (mt_reply_fail(r, "Error: Cannot write ", path, "") < 0 ||
        mt_buf_printf(&r->text,
                      ": the file would hold %s bytes, over the max file size limit of %s bytes; "
                      "keep memory files small and split large content",
                      a, b) < 0)
        return MT_ENOMEM;
    return 1;
}

int mt_reply_limit(mt_reply *r, const mt_store_op *op, mt_str path, const mt_str *from)
{
    char held[32], would[32], limit[32];
    const char *lead = "Error: Cannot write ";
    int rc;

    mt_text_format_count(held, op->held);
    mt_text_format_count(would, op->would);
    mt_text_format_count(limit, op->limit);
    if (op->refused == MT_LIMIT_FILES || op->refused == MT_LIMIT_DIRS)
        lead = "Error: Cannot create ";
    else if (op->refused == MT_LIMIT_FILE_SIZE)
        lead = "Error: Cannot edit ";
    if (from)
        rc = mt_reply_fail(r, "Error: Cannot rename ", *from, " to ") < 0 ||
                     mt_reply_str(r, path) < 0
                 ? MT_ENOMEM
                 : 0;
    else
        rc = mt_reply_fail(r, lead, path, "");
    if (rc < 0)
        return MT_ENOMEM;
    switch (op->refused) {
    case MT_LIMIT_STORE_SIZE:
        rc = mt_buf_printf(&r->text,
                           ": the store would hold %s bytes, over the max store size limit of %s "
                           "bytes; delete memory files that are no longer needed",
                           would, limit);
        break;
    case MT_LIMIT_FILES:
        rc = mt_buf_printf(&r->text,
                           ": the store holds %s files, the max files limit is %s; delete or "
                           "merge memory files that are no longer needed",
                           held, limit);
        break;
    case MT_LIMIT_DIRS:
        rc = mt_buf_printf(&r->text,
                           ": the store would hold %s directories, over the max directories limit "
                           "of %s; use existing directories, or delete or merge ones that are no "
                           "longer needed",
                           would, limit);
        break;
    case MT_LIMIT_FILE_SIZE:
        rc = mt_buf_printf(&r->text,
                           ": the file holds %s bytes, over the max file size limit of %s bytes; "
                           "it can be viewed or deleted, not edited",
                           held, limit);
        break;
    case MT_LIMIT_DEPTH:
        rc = mt_buf_printf(&r->text,
                           ": its contents would lie %s levels below /memories, over the limit of "
                           "%s; choose a destination nearer /memories",
                           would, limit);
        break;
    case MT_LIMIT_PATH_BYTES:
        rc = mt_buf_printf(&r->text,
                           ": a file moved would have a path of %s bytes below /memories, over "
                           "the limit of %s; choose a shorter destination",
                           would, limit);
        break;
    default:
        rc = mt_buf_printf(&r->text, ": %s", mt_error_last()->message);
        break;
    }
    return rc < 0 ? MT_ENOMEM : 0;
}

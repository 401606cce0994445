/*
 * memtool for Node.js: libmemtool in process, through Node-API.
 *
 * Every call that may touch the storage (open, the tool call, history, close)
 * runs on libuv's thread pool (napi_create_async_work) and settles a promise:
 * the event loop never waits for an fsync, a lock or a database server. The
 * JavaScript side (lib/) checks arguments and shapes results; this file checks
 * them again, because a wrong type must be an exception, never a crash.
 *
 * State is per environment (napi_set_instance_data): each worker thread that
 * loads the addon gets its own Handle class, and a handle's mt_memory, which
 * may be used from any number of threads, is only reached through its own
 * JavaScript object. Nothing here is global but constants.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#define NAPI_VERSION    8
#include <node_api.h>

#include <jansson.h>
#include <memtool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest tool input, as `memtool call` and `serve` take it. */
#define ADDON_MAX_INPUT (64u * 1024 * 1024)

/* Whether a JavaScript value is one of our handles (and not another addon's
 * wrapped object). */
static const napi_type_tag handle_tag = {0x6d656d746f6f6c21ULL, 0x4e6f64652d415049ULL};

typedef struct {
    napi_ref handle_class;
} addon_env;

typedef struct {
    mt_memory *mem;
    unsigned refs;    /* the JavaScript object until finalized, and each job */
    unsigned pending; /* calls not yet settled */
    int closing;      /* close() was called: no new calls */
    int free_queued;
    napi_deferred close_deferred;
    napi_ref close_promise;
} store;

typedef enum {
    OP_OPEN,
    OP_CALL,
    OP_TOOL_RESULT,
    OP_LOG,
    OP_CONTENT,
    OP_RESTORE,
    OP_UNDO,
    OP_REDACT,
    OP_USAGE,
    OP_READ,
    OP_SEARCH,
    OP_CLOSE
} op_kind;

typedef struct {
    op_kind kind;
    napi_async_work work;
    napi_deferred deferred;
    store *st;
    /* in */
    char *text; /* a URL, a JSON input or a path */
    size_t text_len;
    mt_options opts;
    char *actor, *tenant, *audit;
    char **allow; /* secretsAllow */
    size_t allow_count;
    mt_log_query query;
    char *q_path, *q_memory_id, *q_actor;
    int64_t id;
    /* out */
    int rc, err_code;
    char *err_message;
    mt_result res;
    char *out;
    size_t out_len;
    mt_version *versions;
    size_t count;
    int64_t out_id, restored;
    mt_usage usage;
    mt_memory *mem;
} job;

static const char *code_name(int code)
{
    switch (code) {
    case MT_ENOMEM:
        return "MT_ENOMEM";
    case MT_EINVAL:
        return "MT_EINVAL";
    case MT_ENOTFOUND:
        return "MT_ENOTFOUND";
    case MT_EEXISTS:
        return "MT_EEXISTS";
    case MT_ENOTDIR:
        return "MT_ENOTDIR";
    case MT_EISDIR:
        return "MT_EISDIR";
    case MT_ESYMLINK:
        return "MT_ESYMLINK";
    case MT_EUNSUPPORTED:
        return "MT_EUNSUPPORTED";
    case MT_ELIMIT:
        return "MT_ELIMIT";
    case MT_EIO:
        return "MT_EIO";
    case MT_ENOSYS:
        return "MT_ENOSYS";
    case MT_EBUSY:
        return "MT_EBUSY";
    case MT_EMULTILINK:
        return "MT_EMULTILINK";
    case MT_ENOTDURABLE:
        return "MT_ENOTDURABLE";
    case MT_ECONFLICT:
        return "MT_ECONFLICT";
    case MT_ESTOPPED:
        return "MT_ESTOPPED";
    default:
        return "MT_ERROR";
    }
}

/* ---- argument helpers: each throws and returns -1 on a bad value ---- */

static int throw_type(napi_env env, const char *fmt, const char *name)
{
    char msg[256];

    snprintf(msg, sizeof(msg), fmt, name);
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return -1;
}

static int value_type(napi_env env, napi_value v, napi_valuetype *t)
{
    if (napi_typeof(env, v, t) != napi_ok) {
        napi_throw_error(env, NULL, "memtool: cannot read an argument");
        return -1;
    }
    return 0;
}

/* A string argument as a malloc'd NUL-terminated copy; a C string cannot hold
 * NUL, so one with a NUL is refused (allow_nul for a length-counted JSON text). */
static int get_string(char **out, size_t *len, napi_env env, napi_value v, const char *name,
                      int allow_nul)
{
    napi_valuetype t;
    size_t n = 0;
    char *s;

    *out = NULL;
    if (value_type(env, v, &t) < 0)
        return -1;
    if (t != napi_string)
        return throw_type(env, "memtool: %s must be a string", name);
    if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok)
        return throw_type(env, "memtool: %s must be a string", name);
    if (allow_nul && n > ADDON_MAX_INPUT) {
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE",
                               "memtool: the tool input is longer than the 64 MiB limit of one "
                               "tool input; put large content in several smaller files");
        return -1;
    }
    if (!(s = malloc(n + 1))) {
        napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
        return -1;
    }
    if (napi_get_value_string_utf8(env, v, s, n + 1, &n) != napi_ok) {
        free(s);
        return throw_type(env, "memtool: %s must be a string", name);
    }
    if (!allow_nul && memchr(s, '\0', n)) {
        free(s);
        napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE", "memtool: a string option holds NUL");
        return -1;
    }
    *out = s;
    if (len)
        *len = n;
    return 0;
}

/* A property of an options object; *present is 0 when absent or undefined. */
static int get_prop(napi_value *out, int *present, napi_env env, napi_value obj, const char *key)
{
    napi_valuetype t;

    *present = 0;
    if (napi_get_named_property(env, obj, key, out) != napi_ok) {
        napi_throw_error(env, NULL, "memtool: cannot read an option");
        return -1;
    }
    if (value_type(env, *out, &t) < 0)
        return -1;
    *present = t != napi_undefined;
    return 0;
}

/* A whole number from 0 to 2^53 - 1 (what a double holds exactly). */
static int get_whole(uint64_t *out, napi_env env, napi_value v, const char *name)
{
    napi_valuetype t;
    double d;

    if (value_type(env, v, &t) < 0)
        return -1;
    if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok)
        return throw_type(env, "memtool: %s must be a number", name);
    if (!(d >= 0 && d <= 9007199254740991.0) || d != (double)(uint64_t)d) {
        char msg[160];
        snprintf(msg, sizeof(msg), "memtool: %s must be a whole number from 0 to 2^53 - 1", name);
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
        return -1;
    }
    *out = (uint64_t)d;
    return 0;
}

static int opt_whole(uint64_t *out, napi_env env, napi_value obj, const char *key, uint64_t max)
{
    napi_value v;
    uint64_t n;
    int present;

    if (get_prop(&v, &present, env, obj, key) < 0)
        return -1;
    if (!present)
        return 0;
    if (get_whole(&n, env, v, key) < 0)
        return -1;
    if (n > max) {
        char msg[160];
        snprintf(msg, sizeof(msg), "memtool: %s must be at most %llu", key,
                 (unsigned long long)max);
        napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
        return -1;
    }
    *out = n;
    return 0;
}

static int opt_string(char **out, napi_env env, napi_value obj, const char *key)
{
    napi_value v;
    int present;

    if (get_prop(&v, &present, env, obj, key) < 0)
        return -1;
    if (!present)
        return 0;
    return get_string(out, NULL, env, v, key, 0);
}

static int is_object(napi_env env, napi_value v)
{
    napi_valuetype t;

    return napi_typeof(env, v, &t) == napi_ok && t == napi_object;
}

static int is_nullish(napi_env env, napi_value v)
{
    napi_valuetype t;

    return napi_typeof(env, v, &t) == napi_ok && (t == napi_undefined || t == napi_null);
}

/* ---- jobs ---- */

static void job_free(job *j)
{
    if (!j)
        return;
    free(j->text);
    free(j->actor);
    free(j->tenant);
    free(j->audit);
    for (size_t k = 0; k < j->allow_count; k++)
        free(j->allow[k]);
    free(j->allow);
    free(j->q_path);
    free(j->q_memory_id);
    free(j->q_actor);
    free(j->err_message);
    free(j->out);
    mt_result_dispose(&j->res);
    if (j->versions)
        mt_versions_free(j->versions, j->count);
    if (j->mem)
        mt_memory_free(j->mem);
    free(j);
}

static void store_release(napi_env env, store *st)
{
    if (--st->refs > 0)
        return;
    /* Only at garbage collection, or when the environment goes away: the
     * handle was never closed, so it is freed here. */
    if (st->mem)
        mt_memory_free(st->mem);
    if (st->close_promise)
        napi_delete_reference(env, st->close_promise);
    free(st);
}

/* Runs on a thread of the pool: no Node-API calls here. */
/* A search: {"query", "path", "limit"} in, the hits as JSON out (the shape
 * of `memtool search --json`), made on the worker thread. */
/* A failure the addon itself finds (the library's own come with mt_error_last). */
static int job_fail(job *j, int code, const char *message)
{
    j->err_code = code;
    j->err_message = strdup(message);
    return code;
}

static int run_search(job *j, mt_memory *mem)
{
    json_error_t jerr;
    json_t *in = json_loadb(j->text, j->text_len, 0, &jerr), *hits = NULL, *q, *v;
    mt_search_options so = {NULL, 0};
    mt_search_hit *h = NULL;
    size_t n = 0, i, k;
    int rc;

    if (!in || !(q = json_object_get(in, "query")) || !json_is_string(q)) {
        json_decref(in);
        return job_fail(j, MT_EINVAL, "a search needs a query string");
    }
    if ((v = json_object_get(in, "path")) && json_is_string(v))
        so.path = json_string_value(v);
    if ((v = json_object_get(in, "limit")) && json_is_integer(v))
        so.limit = (size_t)json_integer_value(v);
    if ((rc = mt_memory_search(&h, &n, mem, json_string_value(q), &so)) < 0)
        goto done;
    if (!(hits = json_array())) {
        rc = job_fail(j, MT_ENOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < n; i++) {
        json_t *lines = json_array(), *o;

        for (k = 0; lines && k < h[i].line_count; k++)
            json_array_append_new(lines, json_integer(h[i].lines[k]));
        o = json_pack("{s:s, s:f, s:o*, s:b, s:I}", "path", h[i].path, "score", h[i].score, "lines",
                      lines, "moreLines", h[i].more_lines, "matches", (json_int_t)h[i].matches);
        if (o && h[i].match)
            json_object_set_new(o, "snippet",
                                json_pack("{s:I, s:s, s:s, s:s}", "line", (json_int_t)h[i].line,
                                          "before", h[i].before, "match", h[i].match, "after",
                                          h[i].after));
        if (!o || json_array_append_new(hits, o) < 0) {
            rc = job_fail(j, MT_ENOMEM, "out of memory");
            goto done;
        }
    }
    if (!(j->out = json_dumps(hits, JSON_COMPACT))) {
        rc = job_fail(j, MT_ENOMEM, "out of memory");
        goto done;
    }
    j->out_len = strlen(j->out);
    rc = 0;
done:
    mt_search_hits_free(h, n);
    json_decref(hits);
    json_decref(in);
    return rc;
}

static void job_execute(napi_env env, void *data)
{
    job *j = data;
    mt_memory *mem = j->st ? j->st->mem : NULL;
    json_t *block = NULL, *result = NULL;
    json_error_t jerr;

    (void)env;
    switch (j->kind) {
    case OP_OPEN:
        j->rc = mt_memory_open_url(&j->mem, j->text, &j->opts);
        break;
    case OP_CALL:
        j->rc = mt_memory_call(&j->res, mem, j->text, j->text_len);
        break;
    case OP_TOOL_RESULT:
        block = json_loadb(j->text, j->text_len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
        if (!block || !json_is_object(block)) {
            j->rc = MT_EINVAL;
            j->err_code = MT_EINVAL;
            j->err_message = strdup("the block is not one JSON object");
            json_decref(block);
            return;
        }
        j->rc = mt_memory_tool_result(&result, mem, block);
        if (j->rc == 0 && !(j->out = json_dumps(result, JSON_COMPACT)))
            j->rc = MT_ENOMEM;
        if (j->out)
            j->out_len = strlen(j->out);
        json_decref(result);
        json_decref(block);
        break;
    case OP_LOG:
        j->rc = mt_memory_log(&j->versions, &j->count, mem, &j->query);
        break;
    case OP_CONTENT:
        j->rc = mt_memory_version_content(&j->out, &j->out_len, mem, j->id);
        break;
    case OP_RESTORE:
        j->rc = mt_memory_restore(&j->out_id, mem, j->id);
        break;
    case OP_UNDO:
        j->rc = mt_memory_undo(&j->out_id, &j->restored, mem, j->text);
        break;
    case OP_REDACT:
        j->rc = mt_memory_redact(mem, j->id);
        break;
    case OP_USAGE:
        j->rc = mt_memory_usage(&j->usage, mem);
        break;
    case OP_READ:
        j->rc = mt_memory_read(&j->out, &j->out_len, mem, j->text);
        break;
    case OP_SEARCH:
        j->rc = run_search(j, mem);
        break;
    case OP_CLOSE:
        /* Every call has settled and no new one can start: nothing else
         * touches the handle now. */
        mt_memory_free(j->st->mem);
        j->st->mem = NULL;
        j->rc = 0;
        break;
    }
    if (j->rc < 0 && !j->err_message) {
        const mt_error *e = mt_error_last();
        j->err_code = j->rc;
        j->err_message = strdup(e && e->code == j->rc ? e->message : "out of memory");
    }
}

static napi_value make_error(napi_env env, int code, const char *message)
{
    napi_value msg, codev, err;
    char text[1024];

    snprintf(text, sizeof(text), "memtool: %s", message ? message : "out of memory");
    if (napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
        napi_create_string_utf8(env, code_name(code), NAPI_AUTO_LENGTH, &codev) != napi_ok ||
        napi_create_error(env, codev, msg, &err) != napi_ok)
        return NULL;
    return err;
}

static int set_named(napi_env env, napi_value obj, const char *key, napi_value v)
{
    return napi_set_named_property(env, obj, key, v) == napi_ok ? 0 : -1;
}

static napi_value string_or_null(napi_env env, const char *s)
{
    napi_value v;

    if (!s || !*s)
        napi_get_null(env, &v);
    else
        napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
    return v;
}

static napi_value version_value(napi_env env, const mt_version *ver)
{
    static const char *ops[] = {"", "created", "modified", "deleted"};
    napi_value o, v;
    int op = ver->operation >= 1 && ver->operation <= 3 ? ver->operation : 0;

    if (napi_create_object(env, &o) != napi_ok)
        return NULL;
    napi_create_int64(env, ver->id, &v);
    set_named(env, o, "id", v);
    napi_create_string_utf8(env, ver->memory_id, NAPI_AUTO_LENGTH, &v);
    set_named(env, o, "memoryId", v);
    napi_create_string_utf8(env, ops[op], NAPI_AUTO_LENGTH, &v);
    set_named(env, o, "operation", v);
    set_named(env, o, "path", string_or_null(env, ver->path));
    set_named(env, o, "previousPath", string_or_null(env, ver->previous_path));
    set_named(env, o, "actor", string_or_null(env, ver->actor));
    napi_create_int64(env, ver->created_at, &v);
    set_named(env, o, "createdAt", v);
    set_named(env, o, "contentSha256", string_or_null(env, ver->content_sha256));
    napi_create_double(env, (double)ver->content_size, &v);
    set_named(env, o, "contentSize", v);
    napi_get_boolean(env, ver->redacted != 0, &v);
    set_named(env, o, "redacted", v);
    return o;
}

static napi_value buffer_of(napi_env env, const char *data, size_t len)
{
    napi_value v;
    void *copy;

    if (napi_create_buffer_copy(env, len, data, &copy, &v) != napi_ok)
        return NULL;
    return v;
}

static void queue_close(napi_env env, store *st);

static napi_value handle_new(napi_env env, store *st);

/* Runs on the event loop's thread. */
static void job_complete(napi_env env, napi_status status, void *data)
{
    job *j = data;
    store *st = j->st;
    napi_value v = NULL, item;
    size_t i;

    if (status != napi_ok) {
        v = make_error(env, MT_ERROR, "the call was cancelled");
        napi_reject_deferred(env, j->deferred, v);
    } else if (j->rc < 0) {
        v = make_error(env, j->err_code, j->err_message);
        napi_reject_deferred(env, j->deferred, v);
    } else {
        switch (j->kind) {
        case OP_OPEN:
            if (!(st = calloc(1, sizeof(*st)))) {
                napi_reject_deferred(env, j->deferred, make_error(env, MT_ENOMEM, NULL));
                break;
            }
            st->mem = j->mem;
            j->mem = NULL;
            st->refs = 1;
            v = handle_new(env, st);
            if (!v) {
                mt_memory_free(st->mem);
                free(st);
                napi_reject_deferred(env, j->deferred,
                                     make_error(env, MT_ERROR, "cannot make the handle"));
                break;
            }
            napi_resolve_deferred(env, j->deferred, v);
            st = NULL; /* the job held no reference on it */
            break;
        case OP_CALL:
            napi_create_array_with_length(env, 2, &v);
            napi_create_string_utf8(env, j->res.text, j->res.len, &item);
            napi_set_element(env, v, 0, item);
            napi_get_boolean(env, j->res.is_error != 0, &item);
            napi_set_element(env, v, 1, item);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_TOOL_RESULT:
        case OP_SEARCH:
            napi_create_string_utf8(env, j->out, j->out_len, &v);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_LOG:
            napi_create_array_with_length(env, j->count, &v);
            for (i = 0; i < j->count; i++)
                if ((item = version_value(env, &j->versions[i])))
                    napi_set_element(env, v, (uint32_t)i, item);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_CONTENT:
        case OP_READ:
            v = buffer_of(env, j->out, j->out_len);
            if (v)
                napi_resolve_deferred(env, j->deferred, v);
            else
                napi_reject_deferred(env, j->deferred, make_error(env, MT_ENOMEM, NULL));
            break;
        case OP_RESTORE:
            napi_create_int64(env, j->out_id, &v);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_UNDO:
            napi_create_object(env, &v);
            napi_create_int64(env, j->out_id, &item);
            set_named(env, v, "versionId", item);
            napi_create_int64(env, j->restored, &item);
            set_named(env, v, "restored", item);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_USAGE:
            napi_create_object(env, &v);
            napi_create_double(env, (double)j->usage.bytes, &item);
            set_named(env, v, "bytes", item);
            napi_create_double(env, (double)j->usage.files, &item);
            set_named(env, v, "files", item);
            napi_create_double(env, (double)j->usage.dirs, &item);
            set_named(env, v, "dirs", item);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        case OP_REDACT:
        case OP_CLOSE:
            napi_get_undefined(env, &v);
            napi_resolve_deferred(env, j->deferred, v);
            break;
        }
    }
    napi_delete_async_work(env, j->work);
    if (st && j->kind != OP_OPEN) {
        if (j->kind != OP_CLOSE && --st->pending == 0 && st->closing)
            queue_close(env, st);
        store_release(env, st);
    }
    job_free(j);
}

/* Queue j (its deferred already made); on failure, reject and free it. */
static void job_queue(napi_env env, job *j)
{
    napi_value name;

    if (napi_create_string_utf8(env, "memtool", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_async_work(env, NULL, name, job_execute, job_complete, j, &j->work) !=
            napi_ok ||
        napi_queue_async_work(env, j->work) != napi_ok) {
        napi_reject_deferred(env, j->deferred, make_error(env, MT_ERROR, "cannot queue the call"));
        if (j->st && j->kind != OP_OPEN) {
            if (j->kind != OP_CLOSE)
                j->st->pending--;
            store_release(env, j->st);
        }
        job_free(j);
        return;
    }
}

static void queue_close(napi_env env, store *st)
{
    job *j;

    if (st->free_queued)
        return;
    st->free_queued = 1;
    if (!(j = calloc(1, sizeof(*j)))) {
        /* The handle stays open until it is collected. */
        napi_reject_deferred(env, st->close_deferred, make_error(env, MT_ENOMEM, NULL));
        return;
    }
    j->kind = OP_CLOSE;
    j->st = st;
    j->deferred = st->close_deferred;
    st->refs++;
    job_queue(env, j);
}

/* ---- the Handle class ---- */

static void handle_finalize(napi_env env, void *data, void *hint)
{
    (void)hint;
    store_release(env, data);
}

static napi_value handle_construct(napi_env env, napi_callback_info info)
{
    napi_value argv[1], self;
    size_t argc = 1;
    napi_valuetype t = napi_undefined;
    store *st = NULL;

    if (napi_get_cb_info(env, info, &argc, argv, &self, NULL) != napi_ok)
        return NULL;
    /* Only handle_new passes an external: JavaScript cannot make one. */
    if (argc != 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, argv[0], (void **)&st) != napi_ok || !st) {
        napi_throw_type_error(env, "ERR_ILLEGAL_CONSTRUCTOR",
                              "memtool: handles come from open(), not from new");
        return NULL;
    }
    if (napi_wrap(env, self, st, handle_finalize, NULL, NULL) != napi_ok ||
        napi_type_tag_object(env, self, &handle_tag) != napi_ok) {
        napi_throw_error(env, NULL, "memtool: cannot make the handle");
        return NULL;
    }
    return self;
}

static napi_value handle_new(napi_env env, store *st)
{
    addon_env *ae = NULL;
    napi_value ctor, ext, obj;

    if (napi_get_instance_data(env, (void **)&ae) != napi_ok || !ae ||
        napi_get_reference_value(env, ae->handle_class, &ctor) != napi_ok ||
        napi_create_external(env, st, NULL, NULL, &ext) != napi_ok ||
        napi_new_instance(env, ctor, 1, &ext, &obj) != napi_ok)
        return NULL;
    return obj;
}

/* `this` as an open handle, with up to *argc arguments; NULL (and thrown)
 * when it is not one of ours or it was closed. */
static store *this_store(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv)
{
    napi_value self;
    bool ours = false;
    store *st = NULL;

    if (napi_get_cb_info(env, info, argc, argv, &self, NULL) != napi_ok)
        return NULL;
    if (napi_check_object_type_tag(env, self, &handle_tag, &ours) != napi_ok || !ours ||
        napi_unwrap(env, self, (void **)&st) != napi_ok || !st) {
        napi_throw_type_error(env, "ERR_INVALID_THIS", "memtool: not a memtool handle");
        return NULL;
    }
    if (st->closing) {
        napi_throw_error(env, "ERR_MEMTOOL_CLOSED",
                         "memtool: the store is closed; open it again to use it");
        return NULL;
    }
    return st;
}

/* A job for a call on st; NULL when out of memory (thrown). */
static job *job_new(napi_env env, op_kind kind, store *st)
{
    job *j = calloc(1, sizeof(*j));

    if (!j) {
        napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
        return NULL;
    }
    j->kind = kind;
    j->st = st;
    return j;
}

/* Its promise made, queue the job (whose arguments were all taken). */
static napi_value start(napi_env env, job *j)
{
    napi_value promise;

    if (napi_create_promise(env, &j->deferred, &promise) != napi_ok) {
        job_free(j);
        napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
        return NULL;
    }
    if (j->st && j->kind != OP_OPEN) {
        j->st->refs++;
        j->st->pending++;
    }
    job_queue(env, j);
    return promise;
}

/* A call whose one argument is a string (JSON text or a path). */
static napi_value string_call(napi_env env, napi_callback_info info, op_kind kind, const char *name)
{
    napi_value argv[1];
    size_t argc = 1;
    store *st;
    char *text = NULL;
    size_t len = 0;
    job *j;
    int json = kind == OP_CALL || kind == OP_TOOL_RESULT;

    if (!(st = this_store(env, info, &argc, argv)))
        return NULL;
    if (argc < 1) {
        throw_type(env, "memtool: %s is missing", name);
        return NULL;
    }
    if (get_string(&text, &len, env, argv[0], name, json) < 0)
        return NULL;
    if (!(j = job_new(env, kind, st))) {
        free(text);
        return NULL;
    }
    j->text = text;
    j->text_len = len;
    return start(env, j);
}

/* A view on the calling thread: a view never syncs, so on a local store it
 * costs what its reads cost (but for the store's lock, waited for at most a
 * second or five once a minute per memory, when its access is recorded), and
 * saves the thread pool's two hand-overs. Only views: a change would block
 * the event loop on its fsync. */
static napi_value m_view_sync(napi_env env, napi_callback_info info)
{
    napi_value argv[1], out = NULL, item;
    size_t argc = 1, len = 0;
    store *st;
    char *text = NULL;
    json_t *input = NULL;
    json_error_t jerr;
    mt_result res = {NULL, 0, 0};

    if (!(st = this_store(env, info, &argc, argv)))
        return NULL;
    if (argc < 1) {
        throw_type(env, "memtool: %s is missing", "the tool input");
        return NULL;
    }
    if (get_string(&text, &len, env, argv[0], "the tool input", 1) < 0)
        return NULL;
    input = json_loadb(text, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(input) || !json_is_string(json_object_get(input, "command")) ||
        strcmp(json_string_value(json_object_get(input, "command")), "view") != 0) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE",
                              "memtool: viewSync takes a view command only");
        goto done;
    }
    if (mt_memory_call_object(&res, st->mem, input) < 0) {
        napi_throw(env, make_error(env, mt_error_last()->code, mt_error_last()->message));
        goto done;
    }
    if (napi_create_array_with_length(env, 2, &out) != napi_ok ||
        napi_create_string_utf8(env, res.text, res.len, &item) != napi_ok ||
        napi_set_element(env, out, 0, item) != napi_ok ||
        napi_get_boolean(env, res.is_error != 0, &item) != napi_ok ||
        napi_set_element(env, out, 1, item) != napi_ok)
        out = NULL;
done:
    mt_result_dispose(&res);
    json_decref(input);
    free(text);
    return out;
}

static napi_value m_call(napi_env env, napi_callback_info info)
{
    return string_call(env, info, OP_CALL, "the tool input");
}

static napi_value m_tool_result(napi_env env, napi_callback_info info)
{
    return string_call(env, info, OP_TOOL_RESULT, "the tool_use block");
}

static napi_value m_undo(napi_env env, napi_callback_info info)
{
    return string_call(env, info, OP_UNDO, "path");
}

static napi_value m_read(napi_env env, napi_callback_info info)
{
    return string_call(env, info, OP_READ, "path");
}

static napi_value m_search(napi_env env, napi_callback_info info)
{
    return string_call(env, info, OP_SEARCH, "the search as JSON");
}

/* A call whose one argument is a version id. */
static napi_value id_call(napi_env env, napi_callback_info info, op_kind kind)
{
    napi_value argv[1];
    size_t argc = 1;
    store *st;
    uint64_t id;
    job *j;

    if (!(st = this_store(env, info, &argc, argv)))
        return NULL;
    if (argc < 1) {
        throw_type(env, "memtool: %s is missing", "the version id");
        return NULL;
    }
    if (get_whole(&id, env, argv[0], "the version id") < 0)
        return NULL;
    if (!(j = job_new(env, kind, st)))
        return NULL;
    j->id = (int64_t)id;
    return start(env, j);
}

static napi_value m_version_content(napi_env env, napi_callback_info info)
{
    return id_call(env, info, OP_CONTENT);
}

static napi_value m_restore(napi_env env, napi_callback_info info)
{
    return id_call(env, info, OP_RESTORE);
}

static napi_value m_redact(napi_env env, napi_callback_info info)
{
    return id_call(env, info, OP_REDACT);
}

static napi_value m_usage(napi_env env, napi_callback_info info)
{
    size_t argc = 0;
    store *st;
    job *j;

    if (!(st = this_store(env, info, &argc, NULL)))
        return NULL;
    if (!(j = job_new(env, OP_USAGE, st)))
        return NULL;
    return start(env, j);
}

static int parse_operation(mt_version_op *out, napi_env env, napi_value q)
{
    napi_value v;
    char *s = NULL;
    int present, rc = 0;

    if (get_prop(&v, &present, env, q, "operation") < 0)
        return -1;
    if (!present)
        return 0;
    if (get_string(&s, NULL, env, v, "operation", 0) < 0)
        return -1;
    if (strcmp(s, "created") == 0)
        *out = MT_VERSION_CREATED;
    else if (strcmp(s, "modified") == 0)
        *out = MT_VERSION_MODIFIED;
    else if (strcmp(s, "deleted") == 0)
        *out = MT_VERSION_DELETED;
    else {
        napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE",
                               "memtool: operation must be 'created', 'modified' or 'deleted'");
        rc = -1;
    }
    free(s);
    return rc;
}

static napi_value m_log(napi_env env, napi_callback_info info)
{
    napi_value argv[1];
    size_t argc = 1;
    store *st;
    job *j;
    uint64_t since = 0, until = 0, before = 0, limit = 0;
    napi_valuetype t = napi_undefined;

    if (!(st = this_store(env, info, &argc, argv)))
        return NULL;
    if (argc >= 1 && value_type(env, argv[0], &t) < 0)
        return NULL;
    if (argc >= 1 && t != napi_undefined && t != napi_object) {
        throw_type(env, "memtool: %s must be an object", "the log query");
        return NULL;
    }
    if (!(j = job_new(env, OP_LOG, st)))
        return NULL;
    if (t == napi_object && (opt_string(&j->q_path, env, argv[0], "path") < 0 ||
                             opt_string(&j->q_memory_id, env, argv[0], "memoryId") < 0 ||
                             opt_string(&j->q_actor, env, argv[0], "actor") < 0 ||
                             parse_operation(&j->query.operation, env, argv[0]) < 0 ||
                             opt_whole(&since, env, argv[0], "since", INT64_MAX) < 0 ||
                             opt_whole(&until, env, argv[0], "until", INT64_MAX) < 0 ||
                             opt_whole(&before, env, argv[0], "beforeId", INT64_MAX) < 0 ||
                             opt_whole(&limit, env, argv[0], "limit", SIZE_MAX) < 0)) {
        job_free(j);
        return NULL;
    }
    j->query.path = j->q_path;
    j->query.memory_id = j->q_memory_id;
    j->query.actor = j->q_actor;
    j->query.since = (int64_t)since;
    j->query.until = (int64_t)until;
    j->query.before_id = (int64_t)before;
    j->query.limit = (size_t)limit;
    return start(env, j);
}

static napi_value m_close(napi_env env, napi_callback_info info)
{
    napi_value self, promise;
    size_t argc = 0;
    bool ours = false;
    store *st = NULL;

    if (napi_get_cb_info(env, info, &argc, NULL, &self, NULL) != napi_ok)
        return NULL;
    if (napi_check_object_type_tag(env, self, &handle_tag, &ours) != napi_ok || !ours ||
        napi_unwrap(env, self, (void **)&st) != napi_ok || !st) {
        napi_throw_type_error(env, "ERR_INVALID_THIS", "memtool: not a memtool handle");
        return NULL;
    }
    /* A second close() gets the first one's promise. */
    if (st->closing) {
        if (napi_get_reference_value(env, st->close_promise, &promise) != napi_ok)
            return NULL;
        return promise;
    }
    if (napi_create_promise(env, &st->close_deferred, &promise) != napi_ok ||
        napi_create_reference(env, promise, 1, &st->close_promise) != napi_ok) {
        napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
        return NULL;
    }
    st->closing = 1;
    if (st->pending == 0)
        queue_close(env, st);
    return promise;
}

/* ---- open ---- */

static int parse_options(job *j, napi_env env, napi_value o)
{
    napi_value v;
    uint64_t n;
    char *s = NULL;
    int present, rc;

    if (opt_whole(&j->opts.max_file_size, env, o, "maxFileSize", UINT64_MAX) < 0 ||
        opt_whole(&j->opts.max_store_size, env, o, "maxStoreSize", UINT64_MAX) < 0 ||
        opt_whole(&j->opts.max_files, env, o, "maxFiles", UINT64_MAX) < 0 ||
        opt_whole(&j->opts.max_dirs, env, o, "maxDirs", UINT64_MAX) < 0 ||
        opt_whole(&j->opts.view_limit, env, o, "viewLimit", UINT64_MAX) < 0)
        return -1;
    n = j->opts.lock_timeout_ms;
    if (opt_whole(&n, env, o, "lockTimeoutMs", 3600u * 1000) < 0)
        return -1;
    j->opts.lock_timeout_ms = (unsigned)n;
    n = j->opts.history_keep;
    if (opt_whole(&n, env, o, "historyKeep", 1000000000) < 0)
        return -1;
    j->opts.history_keep = (unsigned)n;
    n = j->opts.history_days;
    if (opt_whole(&n, env, o, "historyDays", 1000000000) < 0)
        return -1;
    j->opts.history_days = (unsigned)n;
    if (opt_string(&j->actor, env, o, "actor") < 0 ||
        opt_string(&j->tenant, env, o, "tenant") < 0 || opt_string(&j->audit, env, o, "audit") < 0)
        return -1;
    if (j->actor)
        j->opts.actor = j->actor;
    if (j->tenant)
        j->opts.tenant = j->tenant;
    if (j->audit)
        j->opts.audit = j->audit;
    if (get_prop(&v, &present, env, o, "history") < 0)
        return -1;
    if (present) {
        bool b;
        if (napi_get_value_bool(env, v, &b) != napi_ok)
            return throw_type(env, "memtool: %s must be a boolean", "history");
        j->opts.history = b;
    }
    if (opt_string(&s, env, o, "secrets") < 0)
        return -1;
    rc = s ? mt_secrets_policy_parse(&j->opts.secrets, s) : 0;
    free(s);
    s = NULL;
    if (rc < 0) {
        napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE",
                               "memtool: secrets must be 'reject', 'redact' or 'off'");
        return -1;
    }
    if (get_prop(&v, &present, env, o, "secretsAllow") < 0)
        return -1;
    if (present) {
        bool array = false;
        uint32_t len = 0, k;

        if (napi_is_array(env, v, &array) != napi_ok || !array ||
            napi_get_array_length(env, v, &len) != napi_ok)
            return throw_type(env, "memtool: %s must be an array of strings", "secretsAllow");
        if (len && !(j->allow = calloc(len, sizeof(*j->allow)))) {
            napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
            return -1;
        }
        for (k = 0; k < len; k++) {
            napi_value e;

            if (napi_get_element(env, v, k, &e) != napi_ok ||
                get_string(&j->allow[k], NULL, env, e, "secretsAllow[]", 0) < 0)
                return -1;
            j->allow_count = k + 1;
        }
        j->opts.secrets_allow = (const char *const *)j->allow;
        j->opts.secrets_allow_count = j->allow_count;
    }
    if (opt_string(&s, env, o, "durability") < 0)
        return -1;
    rc = s ? mt_durability_parse(&j->opts.durability, s) : 0;
    free(s);
    if (rc < 0) {
        napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE",
                               "memtool: durability must be 'full', 'file' or 'none'");
        return -1;
    }
    return 0;
}

static napi_value m_open(napi_env env, napi_callback_info info)
{
    napi_value argv[2];
    size_t argc = 2;
    char *url = NULL;
    job *j;

    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
        return NULL;
    if (argc < 1) {
        throw_type(env, "memtool: %s is missing", "the store URL");
        return NULL;
    }
    if (get_string(&url, NULL, env, argv[0], "the store URL", 0) < 0)
        return NULL;
    if (!(j = job_new(env, OP_OPEN, NULL))) {
        free(url);
        return NULL;
    }
    j->text = url;
    mt_options_init(&j->opts);
    j->opts.actor = "node";
    if (argc >= 2 && !is_object(env, argv[1]) && !is_nullish(env, argv[1])) {
        job_free(j);
        throw_type(env, "memtool: %s must be an object", "the options");
        return NULL;
    }
    if (argc >= 2 && is_object(env, argv[1]) && parse_options(j, env, argv[1]) < 0) {
        job_free(j);
        return NULL;
    }
    return start(env, j);
}

/* ---- the module ---- */

static void env_finalize(napi_env env, void *data, void *hint)
{
    addon_env *ae = data;

    (void)hint;
    napi_delete_reference(env, ae->handle_class);
    free(ae);
}

static napi_value init(napi_env env, napi_value exports)
{
    static const napi_property_descriptor methods[] = {
        {"call", NULL, m_call, NULL, NULL, NULL, napi_default_method, NULL},
        {"viewSync", NULL, m_view_sync, NULL, NULL, NULL, napi_default_method, NULL},
        {"toolResult", NULL, m_tool_result, NULL, NULL, NULL, napi_default_method, NULL},
        {"log", NULL, m_log, NULL, NULL, NULL, napi_default_method, NULL},
        {"search", NULL, m_search, NULL, NULL, NULL, napi_default_method, NULL},
        {"versionContent", NULL, m_version_content, NULL, NULL, NULL, napi_default_method, NULL},
        {"restore", NULL, m_restore, NULL, NULL, NULL, napi_default_method, NULL},
        {"undo", NULL, m_undo, NULL, NULL, NULL, napi_default_method, NULL},
        {"redact", NULL, m_redact, NULL, NULL, NULL, napi_default_method, NULL},
        {"usage", NULL, m_usage, NULL, NULL, NULL, napi_default_method, NULL},
        {"read", NULL, m_read, NULL, NULL, NULL, napi_default_method, NULL},
        {"close", NULL, m_close, NULL, NULL, NULL, napi_default_method, NULL},
    };
    napi_value cls, fn, version;
    addon_env *ae;

    if (!(ae = calloc(1, sizeof(*ae)))) {
        napi_throw_error(env, "MT_ENOMEM", "memtool: out of memory");
        return NULL;
    }
    if (napi_define_class(env, "Handle", NAPI_AUTO_LENGTH, handle_construct, NULL,
                          sizeof(methods) / sizeof(methods[0]), methods, &cls) != napi_ok ||
        napi_create_reference(env, cls, 1, &ae->handle_class) != napi_ok) {
        free(ae);
        return NULL;
    }
    if (napi_set_instance_data(env, ae, env_finalize, NULL) != napi_ok) {
        napi_delete_reference(env, ae->handle_class);
        free(ae);
        return NULL;
    }
    if (napi_create_function(env, "open", NAPI_AUTO_LENGTH, m_open, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, "open", fn) != napi_ok ||
        napi_set_named_property(env, exports, "Handle", cls) != napi_ok ||
        napi_create_string_utf8(env, MT_VERSION, NAPI_AUTO_LENGTH, &version) != napi_ok ||
        napi_set_named_property(env, exports, "version", version) != napi_ok)
        return NULL;
    return exports;
}

NAPI_MODULE_INIT()
{
    return init(env, exports);
}

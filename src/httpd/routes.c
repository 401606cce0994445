/* The memory-store API's endpoints (the SDK's src/resources/beta/memory-stores). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "core/memstore.h"
#include "httpd/api_json.h"
#include "httpd/api_path.h"
#include "httpd/routes.h"
#include "util/sha256.h"
#include "util/utf8.h"

/* Page sizes: the SDK's (basic up to 100, full up to 20). */
#define PAGE_BASIC 100
#define PAGE_FULL  20
#define MAX_SEGMENTS 6

void mt_routes_error(mt_http_reply *out, int status, const char *type, const char *request_id,
                     const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_decref(out->body);
    out->status = status;
    out->no_retry = status == 409;
    out->body = json_pack("{s:s, s:{s:s, s:o}, s:s}", "type", "error", "error", "type", type,
                          "message", mt_api_string(msg, strlen(msg)), "request_id", request_id);
}

/* A library error as the API's. */
static void fail(mt_http_reply *out, const mt_http_request *req, int rc)
{
    const char *msg = mt_error_last()->message;

    switch (rc) {
    case MT_ENOTFOUND:
        mt_routes_error(out, 404, "not_found_error", req->request_id, "%s", msg);
        break;
    case MT_EINVAL:
    case MT_ELIMIT:
    case MT_ESECRET:
    case MT_EISDIR:
    case MT_ENOTDIR:
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s", msg);
        break;
    case MT_ECONFLICT:
        mt_routes_error(out, 409, "memory_precondition_failed_error", req->request_id, "%s", msg);
        break;
    case MT_EEXISTS:
        mt_routes_error(out, 409, "memory_path_conflict_error", req->request_id, "%s", msg);
        break;
    case MT_EBUSY:
        mt_routes_error(out, 503, "overloaded_error", req->request_id, "%s", msg);
        break;
    case MT_ENOMEM:
        mt_routes_error(out, 503, "overloaded_error", req->request_id, "out of memory");
        break;
    default:
        mt_routes_error(out, 500, "api_error", req->request_id, "%s", msg);
        break;
    }
}

static void ok(mt_http_reply *out, json_t *body)
{
    out->status = body ? 200 : 503;
    out->body = body ? body : json_pack("{s:s}", "type", "error");
}

/* --- parameters ------------------------------------------------------- */

static int is_hex(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

static int store_id_ok(const char *s)
{
    return strncmp(s, "memstore_", 9) == 0 && strlen(s) == 25 && is_hex(s + 9, 16);
}

static int memory_id_ok(const char *s)
{
    return strncmp(s, "mem_", 4) == 0 && strlen(s) == 20 && is_hex(s + 4, 16);
}

static int version_id(int64_t *out, const char *s)
{
    char *end;
    long long v;

    if (strncmp(s, "memver_", 7) != 0 || s[7] < '1' || s[7] > '9' || strlen(s) > 26)
        return 0;
    v = strtoll(s + 7, &end, 10);
    if (*end || v <= 0)
        return 0;
    *out = v;
    return 1;
}

static const char *query(const mt_http_request *req, const char *name)
{
    return req->query(req->query_ctx, name);
}

/* view: basic or full (dflt when absent). -1 after answering a bad one. */
static int view_param(mt_http_reply *out, const mt_http_request *req, int dflt)
{
    const char *v = query(req, "view");

    if (!v)
        return dflt;
    if (strcmp(v, "full") == 0)
        return 1;
    if (strcmp(v, "basic") == 0)
        return 0;
    mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                    "view must be basic or full, not '%.64s'", v);
    return -1;
}

/* limit: 1 to max (a larger one is clamped: view=full caps pages at 20). */
static int limit_param(size_t *limit, mt_http_reply *out, const mt_http_request *req, size_t max,
                       size_t dflt)
{
    const char *v = query(req, "limit");
    char *end;
    long long n;

    *limit = dflt;
    if (!v)
        return 0;
    n = strtoll(v, &end, 10);
    if (!*v || *end || n < 1) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "limit must be a whole number from 1, not '%.64s'", v);
        return -1;
    }
    *limit = (size_t)n > max ? max : (size_t)n;
    return 0;
}

static int time_param(int64_t *out, mt_http_reply *reply, const mt_http_request *req,
                      const char *name)
{
    const char *v = query(req, name);

    *out = 0;
    if (!v)
        return 0;
    if (mt_api_time_parse(out, v) < 0) {
        mt_routes_error(reply, 400, "invalid_request_error", req->request_id, "%s: %s", name,
                        mt_error_last()->message);
        return -1;
    }
    return 0;
}

/* Cursors are opaque to clients: the hex of where the page ended. */
static json_t *cursor(const char *key)
{
    size_t n = strlen(key), i;
    char *hex = malloc(2 * n + 1);
    json_t *j;

    if (!hex)
        return NULL;
    for (i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)key[i]);
    hex[2 * n] = '\0';
    j = json_string(hex);
    free(hex);
    return j;
}

/* The page parameter decoded (malloc'd), NULL when absent; -1 when bad. */
static int page_param(char **out, mt_http_reply *reply, const mt_http_request *req)
{
    const char *v = query(req, "page");
    size_t n, i;

    *out = NULL;
    if (!v || !*v)
        return 0;
    n = strlen(v);
    if (n % 2 || n > 4096 || !is_hex(v, n))
        goto bad;
    if (!(*out = malloc(n / 2 + 1)))
        goto bad;
    for (i = 0; i < n / 2; i++)
        (*out)[i] = (char)(mt_hex_value((unsigned char)v[2 * i]) * 16 +
                           mt_hex_value((unsigned char)v[2 * i + 1]));
    (*out)[n / 2] = '\0';
    if (strlen(*out) != n / 2)
        goto bad;
    return 0;
bad:
    free(*out);
    *out = NULL;
    mt_routes_error(reply, 400, "invalid_request_error", req->request_id,
                    "page is not a cursor this server gave: pass next_page as it came");
    return -1;
}

static json_t *body_object(mt_http_reply *out, const mt_http_request *req, int required)
{
    json_error_t err;
    json_t *j;

    if (!req->body_len) {
        if (!required)
            return json_object();
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "the request needs a JSON body");
        return NULL;
    }
    j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &err);
    if (!j) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "the body is not valid JSON: %s (line %d, column %d)", err.text, err.line,
                        err.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "the body must be a JSON object");
        return NULL;
    }
    return j;
}

/* A string member: 1 present, 0 absent (or null when nullable), -1 answered. */
static int member_string(const char **s, size_t *len, mt_http_reply *out,
                         const mt_http_request *req, json_t *obj, const char *name, int nullable)
{
    json_t *v = json_object_get(obj, name);

    *s = NULL;
    if (len)
        *len = 0;
    if (!v || (nullable && json_is_null(v)))
        return 0;
    if (!json_is_string(v)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "%s must be a string, not %s", name,
                        json_is_null(v) ? "null" : "another kind of value");
        return -1;
    }
    *s = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return 1;
}

static size_t chars(const char *s, size_t len)
{
    size_t n = 0, i;

    for (i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

static int has_control(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 1;
    return 0;
}

/* --- memory stores ---------------------------------------------------- */

static json_t *store_json(json_t *record)
{
    json_t *o = json_object(), *v;
    const char *k;
    char t[32];

    if (!o)
        return NULL;
    json_object_set(o, "id", json_object_get(record, "id"));
    json_object_set_new(o, "type", json_string("memory_store"));
    json_object_set(o, "name", json_object_get(record, "name"));
    json_object_set(o, "description", json_object_get(record, "description"));
    json_object_set(o, "metadata", json_object_get(record, "metadata"));
    json_object_foreach(record, k, v)
    {
        if (strcmp(k, "created_at") && strcmp(k, "updated_at") && strcmp(k, "archived_at"))
            continue;
        if (json_is_integer(v)) {
            mt_api_time(t, json_integer_value(v));
            json_object_set_new(o, k, json_string(t));
        } else {
            json_object_set_new(o, k, json_null());
        }
    }
    return o;
}

static int metadata_check(mt_http_reply *out, const mt_http_request *req, json_t *md, int patch)
{
    const char *k;
    json_t *v;

    if (!json_is_object(md)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "metadata must be an object of strings");
        return -1;
    }
    json_object_foreach(md, k, v)
    {
        size_t kl = strlen(k);
        if (kl == 0 || chars(k, kl) > 64 || has_control(k, kl)) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "a metadata key is 1 to 64 characters, no control characters");
            return -1;
        }
        if (patch && json_is_null(v))
            continue;
        if (!json_is_string(v) || chars(json_string_value(v), json_string_length(v)) > 512) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "metadata value of '%.64s' must be a string of at most 512 "
                            "characters%s",
                            k, patch ? " (or null to remove the key)" : "");
            return -1;
        }
    }
    return 0;
}

static int name_check(mt_http_reply *out, const mt_http_request *req, const char *s, size_t len)
{
    if (len == 0 || chars(s, len) > 255 || has_control(s, len)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "name must be 1 to 255 characters with no control characters");
        return -1;
    }
    return 0;
}

static int description_check(mt_http_reply *out, const mt_http_request *req, const char *s,
                             size_t len)
{
    if (chars(s, len) > 1024) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "description must be at most 1,024 characters");
        return -1;
    }
    return 0;
}

static const char *actor_of(const mt_http_request *req, char buf[48])
{
    snprintf(buf, 48, "api:%s", req->key->id);
    return buf;
}

static void store_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    json_t *body = body_object(out, req, 1), *md;
    const char *name, *desc;
    size_t nlen, dlen;
    mt_registry_entry e;
    char actor[48];
    int rc;

    if (!body)
        return;
    if ((rc = member_string(&name, &nlen, out, req, body, "name", 0)) < 0 ||
        member_string(&desc, &dlen, out, req, body, "description", 1) < 0)
        goto done;
    if (rc == 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "name is required");
        goto done;
    }
    if (name_check(out, req, name, nlen) < 0 || (desc && description_check(out, req, desc, dlen) < 0))
        goto done;
    md = json_object_get(body, "metadata");
    if (md && json_is_null(md))
        md = NULL;
    if (md && (metadata_check(out, req, md, 0) < 0))
        goto done;
    if (md && json_object_size(md) > 16) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "metadata holds at most 16 pairs");
        goto done;
    }
    if ((rc = mt_registry_create(&e, reg, req->key->tenant, name, desc, md,
                                 actor_of(req, actor))) < 0) {
        fail(out, req, rc);
        goto done;
    }
    ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
done:
    json_decref(body);
}

static int64_t record_ms(json_t *record, const char *name)
{
    json_t *v = json_object_get(record, name);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* Newest first; ties by id. */
static int store_order(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int64_t tx = record_ms(x, "created_at"), ty = record_ms(y, "created_at");

    if (tx != ty)
        return tx > ty ? -1 : 1;
    return -strcmp(json_string_value(json_object_get(x, "id")),
                   json_string_value(json_object_get(y, "id")));
}

static void store_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    json_t *all = NULL, **sorted = NULL, *data = NULL, *res;
    const char *arch = query(req, "include_archived");
    int include_archived = arch && (strcmp(arch, "true") == 0 || strcmp(arch, "1") == 0);
    int64_t gte, lte;
    size_t limit, n, i, taken = 0;
    char *after = NULL, key[64], last[64] = "";
    int rc, more = 0;

    if (limit_param(&limit, out, req, 100, 20) < 0 || page_param(&after, out, req) < 0 ||
        time_param(&gte, out, req, "created_at[gte]") < 0 ||
        time_param(&lte, out, req, "created_at[lte]") < 0)
        goto done;
    if ((rc = mt_registry_list(&all, reg, req->key->tenant)) < 0) {
        fail(out, req, rc);
        goto done;
    }
    n = json_array_size(all);
    if (!(sorted = calloc(n + 1, sizeof(*sorted))) || !(data = json_array()))
        goto nomem;
    for (i = 0; i < n; i++)
        sorted[i] = json_array_get(all, i);
    qsort(sorted, n, sizeof(*sorted), store_order);
    for (i = 0; i < n; i++) {
        json_t *r = sorted[i];
        int64_t at = record_ms(r, "created_at");
        snprintf(key, sizeof(key), "%020lld:%s", (long long)at,
                 json_string_value(json_object_get(r, "id")));
        if (after && strcmp(key, after) >= 0)
            continue; /* the newest-first order runs keys downwards */
        if (!include_archived && record_ms(r, "archived_at"))
            continue;
        if ((gte && at < gte) || (lte && at > lte))
            continue;
        if (taken == limit) {
            more = 1;
            break;
        }
        json_array_append_new(data, store_json(r));
        snprintf(last, sizeof(last), "%s", key);
        taken++;
    }
    res = json_pack("{s:O, s:o}", "data", data, "next_page", more ? cursor(last) : json_null());
    ok(out, res);
    goto done;
nomem:
    fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
done:
    json_decref(data);
    json_decref(all);
    free(sorted);
    free(after);
}

static void store_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                      const char *id)
{
    mt_registry_entry e;
    int rc = mt_registry_get(&e, reg, req->key->tenant, id);

    if (rc < 0)
        return fail(out, req, rc);
    ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
}

typedef struct {
    json_t *body;
    int archive;
    int64_t now;
} store_change;

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int apply_store_change(json_t *rec, void *payload)
{
    store_change *c = payload;
    json_t *v, *md;
    const char *k;
    int changed = 0;

    if (c->archive) {
        if (!record_ms(rec, "archived_at")) {
            json_object_set_new(rec, "archived_at", json_integer(c->now));
            json_object_set_new(rec, "updated_at", json_integer(c->now));
        }
        return 0;
    }
    if (record_ms(rec, "archived_at"))
        return mt_error_set(MT_ECONFLICT, "the memory store is archived: it can no longer be "
                                          "updated");
    if ((v = json_object_get(c->body, "name")) && json_is_string(v)) {
        changed |= !json_equal(v, json_object_get(rec, "name"));
        json_object_set(rec, "name", v);
    }
    if ((v = json_object_get(c->body, "description"))) {
        json_t *d = json_is_string(v) ? v : json_string("");
        changed |= !json_equal(d, json_object_get(rec, "description"));
        json_object_set(rec, "description", d);
        if (d != v)
            json_decref(d);
    }
    if ((v = json_object_get(c->body, "metadata")) && json_is_object(v)) {
        md = json_object_get(rec, "metadata");
        if (!json_is_object(md)) {
            md = json_object();
            json_object_set_new(rec, "metadata", md);
        }
        json_object_foreach(v, k, v)
        {
            json_t *old = json_object_get(md, k);
            if (json_is_null(v)) {
                changed |= old != NULL;
                json_object_del(md, k);
            } else {
                changed |= !old || !json_equal(old, v);
                json_object_set(md, k, v);
            }
        }
        if (json_object_size(md) > 16)
            return mt_error_set(MT_EINVAL, "metadata would hold %zu pairs, over 16",
                                json_object_size(md));
    }
    if (changed)
        json_object_set_new(rec, "updated_at", json_integer(c->now));
    return 0;
}

static void store_change_run(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *id, json_t *body, int archive)
{
    store_change c = {body, archive, now_ms()};
    mt_registry_entry e;
    char actor[48];
    int rc = mt_registry_update(&e, reg, req->key->tenant, id, apply_store_change, &c,
                                actor_of(req, actor));

    if (rc == MT_ECONFLICT)
        return mt_routes_error(out, 409, "conflict_error", req->request_id, "%s",
                               mt_error_last()->message);
    if (rc < 0)
        return fail(out, req, rc);
    ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
}

static void store_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                         const char *id)
{
    json_t *body = body_object(out, req, 0), *md;
    const char *s;
    size_t len;
    int rc;

    if (!body)
        return;
    if ((rc = member_string(&s, &len, out, req, body, "name", 1)) < 0)
        goto done;
    if (rc && name_check(out, req, s, len) < 0)
        goto done;
    if ((rc = member_string(&s, &len, out, req, body, "description", 1)) < 0)
        goto done;
    if (rc && description_check(out, req, s, len) < 0)
        goto done;
    md = json_object_get(body, "metadata");
    if (md && !json_is_null(md) && metadata_check(out, req, md, 1) < 0)
        goto done;
    store_change_run(out, reg, req, id, body, 0);
done:
    json_decref(body);
}

static void store_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                         const char *id)
{
    char actor[48];
    int rc = mt_registry_delete(reg, req->key->tenant, id, actor_of(req, actor));

    if (rc < 0 && rc != MT_ENOTFOUND && mt_error_last()->code != MT_ENOTFOUND) {
        /* The record is gone (the store is deleted); what was left to erase
         * is said, not hidden. */
    }
    if (rc == MT_ENOTFOUND)
        return fail(out, req, rc);
    if (rc < 0)
        return fail(out, req, rc);
    ok(out, json_pack("{s:s, s:s}", "id", id, "type", "memory_store_deleted"));
}

/* --- memories --------------------------------------------------------- */

/* The store's handle, for a change when `write` (an archived store takes
 * none: 409 conflict_error). Answers and returns NULL when it cannot. */
static mt_memory *store_handle(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                               const char *store_id, int write)
{
    mt_memory *m = NULL;
    int rc;

    if (write) {
        mt_registry_entry e;
        if ((rc = mt_registry_get(&e, reg, req->key->tenant, store_id)) < 0) {
            fail(out, req, rc);
            return NULL;
        }
        rc = record_ms(e.record, "archived_at") != 0;
        mt_registry_entry_dispose(&e);
        if (rc) {
            mt_routes_error(out, 409, "conflict_error", req->request_id,
                            "memory store %s is archived: its memories can be read and deleted, "
                            "not created or changed",
                            store_id);
            return NULL;
        }
    }
    if ((rc = mt_registry_handle(&m, reg, req->key->tenant, store_id)) < 0) {
        fail(out, req, rc);
        return NULL;
    }
    return m;
}

static void conflict_reply(mt_http_reply *out, const mt_http_request *req,
                           const mt_memstore_conflict *c)
{
    json_t *err;

    mt_routes_error(out, 409, "memory_path_conflict_error", req->request_id, "%s",
                    mt_error_last()->message);
    err = json_object_get(out->body, "error");
    json_object_set_new(err, "conflicting_memory_id", json_string(c->memory_id));
    json_object_set_new(err, "conflicting_path",
                        c->path ? mt_api_string(c->path, strlen(c->path)) : json_null());
}

static int content_check(mt_http_reply *out, const mt_http_request *req, size_t len)
{
    if (len > MT_MEMSTORE_MAX_CONTENT) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "content is %zu bytes, over the limit of %d bytes (100 kB)", len,
                        MT_MEMSTORE_MAX_CONTENT);
        return -1;
    }
    return 0;
}

static int path_ok(mt_http_reply *out, const mt_http_request *req, const char *path, size_t len)
{
    if (mt_api_path_check("path", path, len) < 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s",
                        mt_error_last()->message);
        return 0;
    }
    return 1;
}

static void memory_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                          const char *store_id)
{
    json_t *body;
    const char *path, *content;
    size_t plen, clen;
    mt_memstore_memory mem;
    mt_memstore_conflict c;
    mt_memory *m = NULL;
    char actor[48];
    int view = view_param(out, req, 0), rc;

    if (view < 0 || !(body = body_object(out, req, 1)))
        return;
    if ((rc = member_string(&path, &plen, out, req, body, "path", 0)) < 0 ||
        member_string(&content, &clen, out, req, body, "content", 1) < 0)
        goto done;
    if (rc == 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "path is required");
        goto done;
    }
    if (!path_ok(out, req, path, plen) || content_check(out, req, clen) < 0)
        goto done;
    if (!(m = store_handle(out, reg, req, store_id, 1)))
        goto done;
    mt_memstore_actor(actor_of(req, actor));
    rc = mt_memstore_create(&mem, &c, m, path, content ? content : "", clen);
    mt_memstore_actor(NULL);
    if (rc == MT_EEXISTS)
        conflict_reply(out, req, &c);
    else if (rc < 0)
        fail(out, req, rc);
    else {
        if (view == 1) {
            free(mem.content);
            mem.content = content ? strndup(content, clen) : strdup("");
            mem.content_len = clen;
        }
        ok(out, mt_api_memory(&mem, store_id, view));
    }
    mt_memstore_memory_dispose(&mem);
    mt_memstore_conflict_dispose(&c);
done:
    mt_registry_release(reg, m);
    json_decref(body);
}

static void memory_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                        const char *store_id)
{
    const char *prefix = query(req, "path_prefix"), *d = query(req, "depth");
    mt_memstore_memory *items = NULL;
    mt_memory *m = NULL;
    size_t limit, n = 0, i;
    char *after = NULL, *end;
    long depth = 0;
    int view = view_param(out, req, 0), more = 0, rc;
    json_t *data;

    if (view < 0 || limit_param(&limit, out, req, view ? PAGE_FULL : PAGE_BASIC,
                                view ? PAGE_FULL : PAGE_BASIC) < 0 ||
        page_param(&after, out, req) < 0)
        goto done;
    if (prefix && mt_api_prefix_check("path_prefix", prefix, strlen(prefix)) < 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s",
                        mt_error_last()->message);
        goto done;
    }
    if (d) {
        depth = strtol(d, &end, 10);
        if (!*d || *end || depth < 0 || depth > 20) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "depth must be a whole number from 0 to 20, not '%.32s'", d);
            goto done;
        }
    }
    if (!(m = store_handle(out, reg, req, store_id, 0)))
        goto done;
    if ((rc = mt_memstore_list(&items, &n, &more, m, prefix ? prefix : "/", (unsigned)depth,
                               after, limit, view)) < 0) {
        fail(out, req, rc);
        goto done;
    }
    if (!(data = json_array())) {
        fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
        goto done;
    }
    for (i = 0; i < n; i++)
        json_array_append_new(data, mt_api_memory(&items[i], store_id, view));
    ok(out, json_pack("{s:o, s:o}", "data", data, "next_page",
                      more && n ? cursor(items[n - 1].path) : json_null()));
done:
    mt_memstore_memories_free(items, n);
    mt_registry_release(reg, m);
    free(after);
}

static void memory_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                       const char *store_id, const char *id)
{
    mt_memstore_memory mem;
    mt_memory *m;
    int view = view_param(out, req, 1), rc;

    if (view < 0 || !(m = store_handle(out, reg, req, store_id, 0)))
        return;
    if ((rc = mt_memstore_get(&mem, m, id, view)) < 0)
        fail(out, req, rc);
    else
        ok(out, mt_api_memory(&mem, store_id, view));
    mt_memstore_memory_dispose(&mem);
    mt_registry_release(reg, m);
}

static void memory_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                          const char *store_id, const char *id)
{
    json_t *body, *pre;
    const char *path, *content, *expect = NULL;
    size_t plen, clen;
    mt_memstore_memory mem = {0};
    mt_memstore_conflict c = {0};
    mt_memory *m = NULL;
    char actor[48];
    int view = view_param(out, req, 0), rc;

    if (view < 0 || !(body = body_object(out, req, 0)))
        return;
    if (member_string(&path, &plen, out, req, body, "path", 1) < 0 ||
        member_string(&content, &clen, out, req, body, "content", 1) < 0)
        goto done;
    if ((path && !path_ok(out, req, path, plen)) || content_check(out, req, clen) < 0)
        goto done;
    if ((pre = json_object_get(body, "precondition")) && !json_is_null(pre)) {
        json_t *t = json_object_get(pre, "type"), *h = json_object_get(pre, "content_sha256");
        if (!json_is_object(pre) || !json_is_string(t) ||
            strcmp(json_string_value(t), "content_sha256") != 0 || !json_is_string(h) ||
            json_string_length(h) != 64 || !is_hex(json_string_value(h), 64)) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "precondition must be {\"type\": \"content_sha256\", "
                            "\"content_sha256\": 64 lowercase hex digits}");
            goto done;
        }
        expect = json_string_value(h);
    }
    if (!(m = store_handle(out, reg, req, store_id, 1)))
        goto done;
    mt_memstore_actor(actor_of(req, actor));
    rc = mt_memstore_update(&mem, &c, m, id, path, content, clen, expect);
    mt_memstore_actor(NULL);
    if (rc == MT_EEXISTS)
        conflict_reply(out, req, &c);
    else if (rc < 0)
        fail(out, req, rc);
    else {
        if (view == 1) {
            mt_memstore_memory_dispose(&mem);
            if ((rc = mt_memstore_get(&mem, m, id, 1)) < 0) {
                fail(out, req, rc);
                goto done;
            }
        }
        ok(out, mt_api_memory(&mem, store_id, view));
    }
done:
    mt_memstore_memory_dispose(&mem);
    mt_memstore_conflict_dispose(&c);
    mt_registry_release(reg, m);
    json_decref(body);
}

static void memory_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                          const char *store_id, const char *id)
{
    const char *expect = query(req, "expected_content_sha256");
    mt_memory *m;
    char actor[48];
    int rc;

    if (expect && (strlen(expect) != 64 || !is_hex(expect, 64)))
        return mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                               "expected_content_sha256 must be 64 lowercase hex digits");
    if (!(m = store_handle(out, reg, req, store_id, 0)))
        return;
    mt_memstore_actor(actor_of(req, actor));
    rc = mt_memstore_delete(m, id, expect);
    mt_memstore_actor(NULL);
    mt_registry_release(reg, m);
    if (rc < 0)
        return fail(out, req, rc);
    ok(out, json_pack("{s:s, s:s}", "id", id, "type", "memory_deleted"));
}

/* --- versions --------------------------------------------------------- */

/* When and by whom a version was redacted, from the store's record. */
static void redaction_of(int64_t *at, const char **by, json_t *record, int64_t vid)
{
    char key[32];
    json_t *r;

    snprintf(key, sizeof(key), "memver_%lld", (long long)vid);
    r = json_object_get(json_object_get(record, "redactions"), key);
    *at = record_ms(r, "at");
    *by = json_string_value(json_object_get(r, "by"));
}

static json_t *version_json(mt_memory *m, const mt_version *v, json_t *record,
                            const char *store_id, int full)
{
    char *content = NULL;
    size_t len = 0;
    int64_t at = 0;
    const char *by = NULL;
    json_t *j;

    if (full && !v->redacted && v->operation != MT_VERSION_DELETED)
        mt_memory_version_content(&content, &len, m, v->id);
    if (v->redacted)
        redaction_of(&at, &by, record, v->id);
    j = mt_api_version(v, store_id, content, len, full, at, by);
    free(content);
    return j;
}

static void version_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                         const char *store_id)
{
    const char *mid = query(req, "memory_id"), *op = query(req, "operation");
    const char *key = query(req, "api_key_id"), *sess = query(req, "session_id");
    const char *svc = query(req, "service_account_id");
    mt_log_query q = {0};
    mt_registry_entry e = {0};
    mt_version *v = NULL;
    mt_memory *m = NULL;
    size_t limit, n = 0, i;
    char actor[300], *page = NULL;
    int view = view_param(out, req, 0), rc;
    json_t *data;

    if (view < 0 || limit_param(&limit, out, req, view ? PAGE_FULL : PAGE_BASIC, 20) < 0 ||
        page_param(&page, out, req) < 0 || time_param(&q.since, out, req, "created_at[gte]") < 0 ||
        time_param(&q.until, out, req, "created_at[lte]") < 0)
        goto done;
    if (page && !version_id(&q.before_id, page)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "page is not a cursor this server gave: pass next_page as it came");
        goto done;
    }
    if (mid && !memory_id_ok(mid)) {
        /* No memory has such an id: an empty page, as for any unknown id. */
        ok(out, json_pack("{s:[], s:n}", "data", "next_page"));
        goto done;
    }
    q.memory_id = mid;
    if (op) {
        if (strcmp(op, "created") == 0)
            q.operation = MT_VERSION_CREATED;
        else if (strcmp(op, "modified") == 0)
            q.operation = MT_VERSION_MODIFIED;
        else if (strcmp(op, "deleted") == 0)
            q.operation = MT_VERSION_DELETED;
        else {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "operation must be created, modified or deleted");
            goto done;
        }
    }
    if ((key && sess) || svc) {
        /* memtool records no service accounts, and a version has one actor. */
        ok(out, json_pack("{s:[], s:n}", "data", "next_page"));
        goto done;
    }
    if (key || sess) {
        snprintf(actor, sizeof(actor), "%s%.250s", key ? "api:" : "session:", key ? key : sess);
        q.actor = actor;
    }
    q.limit = limit + 1;
    if (!(m = store_handle(out, reg, req, store_id, 0)))
        goto done;
    if ((rc = mt_registry_get(&e, reg, req->key->tenant, store_id)) < 0 ||
        (rc = mt_memory_log(&v, &n, m, &q)) < 0) {
        fail(out, req, rc == MT_ENOSYS ? MT_ERROR : rc);
        goto done;
    }
    if (!(data = json_array())) {
        fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
        goto done;
    }
    for (i = 0; i < n && i < limit; i++)
        json_array_append_new(data, version_json(m, &v[i], e.record, store_id, view));
    if (n > limit) {
        char c[32];
        snprintf(c, sizeof(c), "memver_%lld", (long long)v[limit - 1].id);
        ok(out, json_pack("{s:o, s:o}", "data", data, "next_page", cursor(c)));
    } else {
        ok(out, json_pack("{s:o, s:n}", "data", data, "next_page"));
    }
done:
    mt_versions_free(v, n);
    mt_registry_entry_dispose(&e);
    mt_registry_release(reg, m);
    free(page);
}

typedef struct {
    int64_t id;
    const char *by;
    int64_t at;
} redaction;

static int note_redaction(json_t *rec, void *payload)
{
    redaction *r = payload;
    json_t *all = json_object_get(rec, "redactions");
    char key[32];

    if (!json_is_object(all)) {
        all = json_object();
        json_object_set_new(rec, "redactions", all);
    }
    snprintf(key, sizeof(key), "memver_%lld", (long long)r->id);
    if (!json_object_get(all, key))
        json_object_set_new(all, key, json_pack("{s:I, s:s}", "at", (json_int_t)r->at, "by", r->by));
    return 0;
}

static void version_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                        const char *store_id, int64_t vid, int redact)
{
    mt_registry_entry e = {0};
    mt_version v = {0};
    mt_memory *m;
    char actor[48];
    int view = redact ? 0 : view_param(out, req, 1), rc;

    if (view < 0 || !(m = store_handle(out, reg, req, store_id, 0)))
        return;
    if ((rc = mt_memory_version(&v, m, vid)) < 0) {
        if (rc == MT_ENOTFOUND || rc == MT_EINVAL)
            mt_routes_error(out, 404, "not_found_error", req->request_id, "no memory version %s%lld",
                            "memver_", (long long)vid);
        else
            fail(out, req, rc);
        goto done;
    }
    if (redact && !v.redacted) {
        redaction r = {vid, actor_of(req, actor), now_ms()};
        if ((rc = mt_memory_redact(m, vid)) < 0) {
            if (rc == MT_EINVAL)
                mt_routes_error(out, 409, "conflict_error", req->request_id,
                                "version memver_%lld holds its memory's current content: change "
                                "or delete the memory first, then redact it",
                                (long long)vid);
            else
                fail(out, req, rc);
            goto done;
        }
        mt_version_dispose(&v);
        if ((rc = mt_registry_update(&e, reg, req->key->tenant, store_id, note_redaction, &r,
                                     actor)) < 0 ||
            (rc = mt_memory_version(&v, m, vid)) < 0) {
            fail(out, req, rc);
            goto done;
        }
    } else if ((rc = mt_registry_get(&e, reg, req->key->tenant, store_id)) < 0) {
        fail(out, req, rc);
        goto done;
    }
    ok(out, version_json(m, &v, e.record, store_id, view));
done:
    mt_version_dispose(&v);
    mt_registry_entry_dispose(&e);
    mt_registry_release(reg, m);
}

/* --- routing ---------------------------------------------------------- */

static int split(char *segs[MAX_SEGMENTS], char *path)
{
    int n = 0;
    char *s, *save = NULL;

    for (s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == MAX_SEGMENTS)
            return -1;
        segs[n++] = s;
    }
    return n;
}

static void not_found(mt_http_reply *out, const mt_http_request *req)
{
    out->name = "not_found";
    mt_routes_error(out, 404, "not_found_error", req->request_id, "no such endpoint or object");
}

static void bad_method(mt_http_reply *out, const mt_http_request *req, const char *allowed)
{
    mt_routes_error(out, 405, "invalid_request_error", req->request_id,
                    "method %s is not allowed here (allowed: %s)", req->method, allowed);
}

static int is(const mt_http_request *req, const char *method)
{
    return strcmp(req->method, method) == 0;
}

void mt_routes_dispatch(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    char *path = strdup(req->path), *s[MAX_SEGMENTS];
    int n, write = !is(req, "GET") && !is(req, "HEAD");
    int64_t vid;

    memset(out, 0, sizeof(*out));
    out->name = "memory_stores";
    if (!path)
        return fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
    n = split(s, path);
    if (n < 2 || strcmp(s[0], "v1") != 0 || strcmp(s[1], "memory_stores") != 0) {
        not_found(out, req);
        goto done;
    }
    if (n >= 3 && !store_id_ok(s[2])) {
        not_found(out, req);
        goto done;
    }
    if (write && req->key->read_only) {
        out->name = "forbidden";
        mt_routes_error(out, 403, "permission_error", req->request_id,
                        "this key is read-only: it cannot change memory stores");
        goto done;
    }
    if (n == 2) {
        out->name = "stores";
        if (is(req, "POST"))
            store_create(out, reg, req);
        else if (is(req, "GET"))
            store_list(out, reg, req);
        else
            bad_method(out, req, "GET, POST");
    } else if (n == 3) {
        out->name = "store";
        if (is(req, "GET"))
            store_get(out, reg, req, s[2]);
        else if (is(req, "POST"))
            store_update(out, reg, req, s[2]);
        else if (is(req, "DELETE"))
            store_delete(out, reg, req, s[2]);
        else
            bad_method(out, req, "GET, POST, DELETE");
    } else if (n == 4 && strcmp(s[3], "archive") == 0) {
        out->name = "store_archive";
        if (is(req, "POST"))
            store_change_run(out, reg, req, s[2], NULL, 1);
        else
            bad_method(out, req, "POST");
    } else if (n == 4 && strcmp(s[3], "memories") == 0) {
        out->name = "memories";
        if (is(req, "POST"))
            memory_create(out, reg, req, s[2]);
        else if (is(req, "GET"))
            memory_list(out, reg, req, s[2]);
        else
            bad_method(out, req, "GET, POST");
    } else if (n == 5 && strcmp(s[3], "memories") == 0) {
        out->name = "memory";
        if (!memory_id_ok(s[4]))
            not_found(out, req);
        else if (is(req, "GET"))
            memory_get(out, reg, req, s[2], s[4]);
        else if (is(req, "POST"))
            memory_update(out, reg, req, s[2], s[4]);
        else if (is(req, "DELETE"))
            memory_delete(out, reg, req, s[2], s[4]);
        else
            bad_method(out, req, "GET, POST, DELETE");
    } else if (n == 4 && strcmp(s[3], "memory_versions") == 0) {
        out->name = "versions";
        if (is(req, "GET"))
            version_list(out, reg, req, s[2]);
        else
            bad_method(out, req, "GET");
    } else if (n == 5 && strcmp(s[3], "memory_versions") == 0) {
        out->name = "version";
        if (!version_id(&vid, s[4]))
            not_found(out, req);
        else if (is(req, "GET"))
            version_get(out, reg, req, s[2], vid, 0);
        else
            bad_method(out, req, "GET");
    } else if (n == 6 && strcmp(s[3], "memory_versions") == 0 && strcmp(s[5], "redact") == 0) {
        out->name = "version_redact";
        if (!version_id(&vid, s[4]))
            not_found(out, req);
        else if (is(req, "POST"))
            version_get(out, reg, req, s[2], vid, 1);
        else
            bad_method(out, req, "POST");
    } else {
        not_found(out, req);
    }
done:
    free(path);
}

/* What the endpoints share: errors, parameters, bodies. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "core/memstore.h"
#include "httpd/api_json.h"
#include "core/memstore_path.h"
#include "httpd/routes_internal.h"
#include "util/sha256.h"
#include "util/utf8.h"

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
void mt_routes_fail(mt_http_reply *out, const mt_http_request *req, int rc)
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

void mt_routes_ok(mt_http_reply *out, json_t *body)
{
    out->status = body ? 200 : 503;
    out->body = body ? body : json_pack("{s:s}", "type", "error");
}

/* --- parameters ------------------------------------------------------- */

int mt_routes_is_hex(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

int mt_routes_store_id_ok(const char *s)
{
    return strncmp(s, "memstore_", 9) == 0 && strlen(s) == 25 && mt_routes_is_hex(s + 9, 16);
}

int mt_routes_memory_id_ok(const char *s)
{
    return strncmp(s, "mem_", 4) == 0 && strlen(s) == 20 && mt_routes_is_hex(s + 4, 16);
}

int mt_routes_version_id(int64_t *out, const char *s)
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

const char *mt_routes_query(const mt_http_request *req, const char *name)
{
    return req->query(req->query_ctx, name);
}

/* view: basic or full (dflt when absent). -1 after answering a bad one. */
int mt_routes_view_param(mt_http_reply *out, const mt_http_request *req, int dflt)
{
    const char *v = mt_routes_query(req, "view");

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
int mt_routes_limit_param(size_t *limit, mt_http_reply *out, const mt_http_request *req, size_t max,
                          size_t dflt)
{
    const char *v = mt_routes_query(req, "limit");
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

int mt_routes_time_param(int64_t *out, mt_http_reply *reply, const mt_http_request *req,
                         const char *name)
{
    const char *v = mt_routes_query(req, name);

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
json_t *mt_routes_cursor(const char *key)
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
int mt_routes_page_param(char **out, mt_http_reply *reply, const mt_http_request *req)
{
    const char *v = mt_routes_query(req, "page");
    size_t n, i;

    *out = NULL;
    if (!v || !*v)
        return 0;
    n = strlen(v);
    if (n % 2 || n > 4096 || !mt_routes_is_hex(v, n))
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

/* Whether a value is or holds a string with a NUL byte: the rest of the
 * server (names, paths, metadata, the registry's records) reads strings up to
 * their first NUL. */
static int holds_nul(json_t *v)
{
    const char *key;
    json_t *m;
    size_t i;

    if (json_is_string(v))
        return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
    json_object_foreach(v, key, m)
    {
        if (holds_nul(m))
            return 1;
    }
    json_array_foreach(v, i, m)
    {
        if (holds_nul(m))
            return 1;
    }
    return 0;
}

json_t *mt_routes_body_object(mt_http_reply *out, const mt_http_request *req, int required)
{
    json_error_t err;
    json_t *j, *v;
    const char *key;

    if (!req->body_len) {
        if (!required)
            return json_object();
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "the request needs a JSON body");
        return NULL;
    }
    /* A memory's content is any text, NUL included (the API takes it, and so
     * does every memtool store); every other string is refused one. */
    j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
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
    json_object_foreach(j, key, v)
    {
        if (strcmp(key, "content") != 0 && holds_nul(v)) {
            /* key is the body's: worded before the body is freed */
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "%.64s must not hold a NUL character (\\u0000)", key);
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

/* A string member: 1 present, 0 absent (or null when nullable), -1 answered. */
int mt_routes_member_string(const char **s, size_t *len, mt_http_reply *out,
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

size_t mt_routes_chars(const char *s, size_t len)
{
    size_t n = 0, i;

    for (i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

int mt_routes_has_control(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 1;
    return 0;
}

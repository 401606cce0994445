/* The memory-store API's objects as JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "httpd/api_json.h"
#include "util/buf.h"
#include "util/utf8.h"

void mt_api_time(char out[32], int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);

    snprintf(out + n, 32 - n, ".%03dZ", (int)((ms % 1000 + 1000) % 1000));
}

int mt_api_time_parse(int64_t *out, const char *s)
{
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    int64_t frac = 0, scale = 100, offset = 0;

    if (!p)
        return mt_error_set(MT_EINVAL, "'%.64s' is not an RFC 3339 time (2026-01-31T12:00:00Z)", s);
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += scale > 0 ? (*p - '0') * scale : 0;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int h = (int)strtol(p + 1, NULL, 10), m = (int)strtol(p + 4, NULL, 10);
        offset = (int64_t)(h * 60 + m) * 60000 * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return mt_error_set(MT_EINVAL, "'%.64s' has no time zone (end it with Z or +HH:MM)", s);
    }
    if (*p)
        return mt_error_set(MT_EINVAL, "'%.64s' is not an RFC 3339 time", s);
    *out = (int64_t)timegm(&tm) * 1000 + frac - offset;
    return 0;
}

json_t *mt_api_string(const char *s, size_t len)
{
    mt_buf b = {0};
    json_t *j = json_stringn(s, len);

    if (j || !s)
        return j;
    if (mt_utf8_sanitize(&b, s, len) < 0)
        return NULL;
    j = json_stringn(b.ptr ? b.ptr : "", b.len);
    mt_buf_dispose(&b);
    return j;
}

json_t *mt_api_actor(const char *actor)
{
    if (!actor || !*actor || strcmp(actor, "external") == 0)
        return json_null();
    if (strncmp(actor, "api:apikey_", 11) == 0)
        return json_pack("{s:s, s:s}", "type", "api_actor", "api_key_id", actor + 4);
    if (strncmp(actor, "session:", 8) == 0)
        return json_pack("{s:s, s:s}", "type", "session_actor", "session_id", actor + 8);
    /* memtool's own front ends (cli, serve, mcp:NAME, agent, library, web:...). */
    return json_pack("{s:s, s:s}", "type", "user_actor", "user_id", actor);
}

json_t *mt_api_memory(const mt_memstore_memory *mem, const char *store_id, int full)
{
    char created[32], updated[32];

    if (mem->prefix)
        return json_pack("{s:s, s:s}", "type", "memory_prefix", "path", mem->path);
    mt_api_time(created, mem->created_at);
    mt_api_time(updated, mem->updated_at);
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:I, s:o, s:s, s:s}", "id", mem->id, "type",
                     "memory", "memory_store_id", store_id, "path",
                     mt_api_string(mem->path, strlen(mem->path)), "content",
                     full && mem->content ? mt_api_string(mem->content, mem->content_len)
                                          : (full ? json_string("") : json_null()),
                     "content_sha256", mem->sha256, "content_size_bytes", (json_int_t)mem->size,
                     "memory_version_id", json_sprintf("memver_%lld", (long long)mem->version),
                     "created_at", created, "updated_at", updated);
}

static const char *operation_name(mt_version_op op)
{
    return op == MT_VERSION_CREATED ? "created" : op == MT_VERSION_DELETED ? "deleted" : "modified";
}

const char *mt_api_path_name(const char *request_path)
{
    const char *p = request_path;

    if (strncmp(p, "/memories", 9) == 0 && (p[9] == '/' || p[9] == '\0'))
        p += 9;
    return *p ? p : "/";
}

json_t *mt_api_path(const char *request_path)
{
    const char *p;

    if (!request_path)
        return json_null();
    p = mt_api_path_name(request_path);
    return mt_api_string(p, strlen(p));
}

json_t *mt_api_version(const mt_version *v, const char *store_id, const char *content,
                       size_t content_len, int full, int64_t redacted_at, const char *redacted_by)
{
    char created[32], redacted[32];
    int has_content = !v->redacted && v->operation != MT_VERSION_DELETED;

    mt_api_time(created, v->created_at);
    if (v->redacted)
        mt_api_time(redacted, redacted_at ? redacted_at : v->created_at);
    return json_pack(
        "{s:o, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
        json_sprintf("memver_%lld", (long long)v->id), "type", "memory_version", "memory_id",
        v->memory_id, "memory_store_id", store_id, "operation", operation_name(v->operation),
        "created_at", created, "created_by", mt_api_actor(v->actor), "path",
        v->redacted ? json_null() : mt_api_path(v->path), "content",
        full && has_content && content ? mt_api_string(content, content_len) : json_null(),
        "content_sha256", has_content ? json_string(v->content_sha256) : json_null(),
        "content_size_bytes", has_content ? json_integer((json_int_t)v->content_size) : json_null(),
        "redacted_at", v->redacted ? json_string(redacted) : json_null(), "redacted_by",
        v->redacted && redacted_by ? mt_api_actor(redacted_by) : json_null());
}

/* The memory-store API's objects as JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "httpd/api_json.h"
#include "util/buf.h"
#include "util/api_actor.h"
#include "util/rfc3339.h"
#include "util/utf8.h"

void mt_api_time(char out[32], int64_t ms)
{
    mt_rfc3339_format(out, ms);
}

int mt_api_time_parse(int64_t *out, const char *s)
{
    return mt_rfc3339_parse(out, s);
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
        "created_at", created, "created_by", mt_api_actor_json(v->actor), "path",
        v->redacted ? json_null() : mt_api_path(v->path), "content",
        full && has_content && content ? mt_api_string(content, content_len) : json_null(),
        "content_sha256", has_content ? json_string(v->content_sha256) : json_null(),
        "content_size_bytes", has_content ? json_integer((json_int_t)v->content_size) : json_null(),
        "redacted_at", v->redacted ? json_string(redacted) : json_null(), "redacted_by",
        v->redacted && redacted_by ? mt_api_actor_json(redacted_by) : json_null());
}

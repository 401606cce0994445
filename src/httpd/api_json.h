/* The memory-store API's objects as JSON (the SDK's types, field for field). */
#ifndef MT_API_JSON_H
#define MT_API_JSON_H

#include <jansson.h>
#include <stdint.h>

#include <memtool.h>

#include "core/memstore.h"

/* RFC 3339 in UTC with milliseconds: "2026-11-28T21:00:00.123Z". */
void mt_api_time(char out[32], int64_t ms);

/* An RFC 3339 time as ms since the epoch: 0, or MT_EINVAL. */
int mt_api_time_parse(int64_t *out, const char *s);

/* created_by / redacted_by: util/api_actor.h. */

/* A memory (or a memory_prefix item); content only with full. */
json_t *mt_api_memory(const mt_memstore_memory *mem, const char *store_id, int full);

/* A memory version; content (may be NULL) only with full. */
json_t *mt_api_version(const mt_version *v, const char *store_id, const char *content,
                       size_t content_len, int full, int64_t redacted_at, const char *redacted_by);

/* A JSON string of bytes that should be UTF-8: invalid bytes become U+FFFD. */
json_t *mt_api_string(const char *s, size_t len);

/* A request path as the API names it: "/memories/notes/a.md" is
 * "/notes/a.md", "/memories" is "/"; other paths are left as they are. */
const char *mt_api_path_name(const char *request_path);

/* mt_api_path_name as a JSON string (null for NULL). */
json_t *mt_api_path(const char *request_path);

#endif

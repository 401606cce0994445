/* The memory-store API's rules for paths (util: pure checks, no store). */
#ifndef MT_UTIL_API_PATH_H
#define MT_UTIL_API_PATH_H

#include <stddef.h>

/* The most segments and bytes an API path may have. */
#define MT_MEMSTORE_PATH_MAX_SEGMENTS 20
#define MT_MEMSTORE_PATH_MAX_BYTES    1024

/*
 * A memory's path as the API takes it: "/" then 1 to 20 segments joined by
 * "/", none empty, "." or ".."; valid UTF-8 in NFC (never normalised here:
 * a path in another form is refused, so that one memory has one name); no
 * control or format characters, U+2028 or U+2029; at most 1,024 bytes; no
 * trailing "/". 0, or MT_EINVAL with the error naming the rule broken
 * (`what` names the parameter in the message).
 */
int mt_memstore_path_check(const char *what, const char *path, size_t len);

/* A list's path_prefix: "/" alone, or a path as above followed by "/". */
int mt_memstore_prefix_check(const char *what, const char *prefix, size_t len);

#endif

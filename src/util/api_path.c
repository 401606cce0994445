/* The memory-store API's path rules (the SDK's MemoryCreateParams.path):
 * pure checks, beneath every layer that needs them (the core's memory-store
 * semantics, memtool server, the remote store). */
#include "util/api_path.h"

#include <stdlib.h>
#include <string.h>
#include <uninorm.h>
#include <unictype.h>

#include <memtool.h>
#include <memtool/store.h>

#include "util/utf8.h"

/* Characters a path may not hold: controls (C0, DEL, C1), format characters
 * (zero-width joiners, bidirectional marks: names that look alike but are
 * not), and the line and paragraph separators. */
static int char_refused(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
        return 1;
    return uc_is_general_category(cp, UC_CATEGORY_Cf);
}

static int segments_check(const char *what, const char *path, size_t len)
{
    size_t i = 1, start = 1, count = 0;

    for (; i <= len; i++) {
        if (i < len && path[i] != '/')
            continue;
        if (i == start)
            return mt_error_set(MT_EINVAL,
                                "%s has an empty segment ('//' or a '/' at the end): "
                                "name each segment",
                                what);
        if ((i - start == 1 && path[start] == '.') ||
            (i - start == 2 && path[start] == '.' && path[start + 1] == '.'))
            return mt_error_set(MT_EINVAL,
                                "%s has a '.' or '..' segment: paths are absolute and plain", what);
        if (++count > MT_MEMSTORE_PATH_MAX_SEGMENTS)
            return mt_error_set(MT_EINVAL, "%s has more than %d segments", what,
                                MT_MEMSTORE_PATH_MAX_SEGMENTS);
        start = i + 1;
    }
    return 0;
}

static int text_check(const char *what, const char *path, size_t len)
{
    size_t i = 0, n, normal_len = 0;
    uint8_t *normal;
    uint32_t cp;
    int same;

    while (i < len) {
        n = mt_utf8_decode(&cp, (const unsigned char *)path + i, len - i);
        if (n == 0)
            return mt_error_set(MT_EINVAL, "%s is not valid UTF-8 (byte %zu)", what, i + 1);
        if (char_refused(cp))
            return mt_error_set(MT_EINVAL,
                                "%s holds a control or format character (U+%04X): paths hold "
                                "printable text only",
                                what, (unsigned)cp);
        i += n;
    }
    normal = u8_normalize(UNINORM_NFC, (const uint8_t *)path, len, NULL, &normal_len);
    if (!normal)
        return mt_error_set(MT_ENOMEM, "out of memory");
    same = normal_len == len && memcmp(normal, path, len) == 0;
    free(normal);
    if (!same)
        return mt_error_set(MT_EINVAL,
                            "%s is not in Unicode NFC: send the composed form (memtool does not "
                            "normalise names, so that one memory has one name)",
                            what);
    return 0;
}

static int path_check(const char *what, const char *path, size_t len, int prefix)
{
    int rc;

    if (len == 0 || path[0] != '/')
        return mt_error_set(MT_EINVAL, "%s must start with '/'", what);
    if (len > MT_MEMSTORE_PATH_MAX_BYTES)
        return mt_error_set(MT_EINVAL, "%s is %zu bytes, over the limit of %d", what, len,
                            MT_MEMSTORE_PATH_MAX_BYTES);
    if (memchr(path, '\0', len))
        return mt_error_set(MT_EINVAL, "%s holds a NUL byte", what);
    if ((rc = text_check(what, path, len)) < 0)
        return rc;
    if (prefix) {
        if (path[len - 1] != '/')
            return mt_error_set(MT_EINVAL, "%s must end with '/' (it names a directory)", what);
        return len == 1 ? 0 : segments_check(what, path, len - 1);
    }
    if (len == 1 || path[len - 1] == '/')
        return mt_error_set(MT_EINVAL, "%s must not end with '/': a memory's path names a file",
                            what);
    return segments_check(what, path, len);
}

int mt_memstore_path_check(const char *what, const char *path, size_t len)
{
    return path_check(what, path, len, 0);
}

int mt_memstore_prefix_check(const char *what, const char *prefix, size_t len)
{
    return path_check(what, prefix, len, 1);
}

/* Building result texts, and the words for what a store reports. */
#include <stdarg.h>
#include <stdlib.h>

#include "core/memory.h"
#include "util/utf8.h"

int mt_reply_put(mt_reply *r, const char *s)
{
    return mt_buf_puts(&r->text, s);
}

int mt_reply_str(mt_reply *r, mt_str s)
{
    return mt_utf8_sanitize(&r->text, s.ptr, s.len);
}

static int reply_set(mt_reply *r, int is_error, const char *prefix, mt_str s, const char *suffix)
{
    mt_buf_truncate(&r->text, 0);
    r->is_error = is_error;
    if (mt_reply_put(r, prefix) < 0 || mt_reply_str(r, s) < 0 || mt_reply_put(r, suffix) < 0)
        return MT_ENOMEM;
    return 0;
}

int mt_reply_fail(mt_reply *r, const char *prefix, mt_str s, const char *suffix)
{
    return reply_set(r, 1, prefix, s, suffix);
}

int mt_reply_ok(mt_reply *r, const char *prefix, mt_str s, const char *suffix)
{
    return reply_set(r, 0, prefix, s, suffix);
}

int mt_reply_failf(mt_reply *r, const char *fmt, ...)
{
    va_list ap;
    int rc;

    mt_buf_truncate(&r->text, 0);
    r->is_error = 1;
    va_start(ap, fmt);
    rc = mt_buf_vprintf(&r->text, fmt, ap);
    va_end(ap);
    return rc;
}

int mt_reply_store_error(mt_reply *r, int code, mt_str path)
{
    switch (code) {
    case MT_ENOMEM:
        return MT_ENOMEM;
    case MT_ENOTFOUND:
        return mt_reply_fail(r, "Error: The path ", path, " does not exist");
    case MT_EEXISTS:
        return mt_reply_fail(r, "Error: The path ", path, " already exists");
    case MT_ENOTDIR:
        return mt_reply_fail(r, "Error: A parent of ", path, " is a file, not a directory");
    case MT_EISDIR:
        return mt_reply_fail(r, "Error: The path ", path, " is a directory, not a file");
    case MT_ESYMLINK:
        return mt_reply_fail(r, "Error: The path ", path,
                             " goes through a symbolic link; memtool never follows links");
    case MT_EUNSUPPORTED:
        return mt_reply_fail(r, "Error: Unsupported file type for ", path, "");
    case MT_EMULTILINK:
        return mt_reply_fail(r, "Error: The file ", path,
                             " has more than one hard link; memtool never reads or writes "
                             "through hard links");
    case MT_ECRYPT:
        /* The layer's words name the path, the key and what to do. */
        if (mt_reply_fail(r, "Error: ", (mt_str){"", 0}, "") < 0 ||
            mt_reply_put(r, mt_error_last()->message) < 0)
            return MT_ENOMEM;
        return 0;
    case MT_ENOTDURABLE:
        if (mt_reply_fail(r, "Error: The change to ", path,
                          " was made, but it may not survive a crash: ") < 0 ||
            mt_reply_put(r, mt_error_last()->message) < 0)
            return MT_ENOMEM;
        return 0;
    default:
        /* I/O, locking, space: the store's own words, which name the cause. */
        if (mt_reply_fail(r, "Error: Cannot complete the operation on ", path, ": ") < 0 ||
            mt_reply_put(r, mt_error_last()->message) < 0)
            return MT_ENOMEM;
        return 0;
    }
}

#include "json.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

static _Thread_local int alloc_failed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static json_malloc_t next_malloc;

static void *tracking_malloc(size_t size)
{
    void *p = next_malloc(size);
    if (!p)
        alloc_failed = 1;
    return p;
}

/* In front of whatever allocator jansson has (its default, or the program's
 * own), which still does the work. A program that sets jansson's allocator
 * after this replaces the tracking; then errno is the only sign left. */
static void install_tracking(void)
{
    json_free_t f;

    json_get_alloc_funcs(&next_malloc, &f);
    json_set_alloc_funcs(tracking_malloc, f);
}

int mt_json_loadb(json_t **out, const char *buf, size_t len, size_t flags, json_error_t *err)
{
    json_t *v;

    pthread_once(&install_once, install_tracking);
    alloc_failed = 0;
    errno = 0;
    v = json_loadb(buf, len, flags, err);
    if (alloc_failed || (!v && errno == ENOMEM)) {
        json_decref(v);
        *out = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory reading JSON");
    }
    *out = v;
    return v ? 0 : MT_EINVAL;
}

const char *mt_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

int mt_json_put_string(mt_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0, run;

    if (mt_buf_putc(out, '"') < 0)
        return MT_ENOMEM;
    while (i < len) {
        char esc[8];
        size_t n = 2;
        unsigned char c;

        /* Copy what needs no escape in one go: most of a result text. */
        for (run = i; i < len; i++) {
            c = (unsigned char)s[i];
            if (c < 0x20 || c == '"' || c == '\\')
                break;
        }
        if (i > run && mt_buf_put(out, s + run, i - run) < 0)
            return MT_ENOMEM;
        if (i == len)
            break;
        c = (unsigned char)s[i++];
        esc[0] = '\\';
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        if (mt_buf_put(out, esc, n) < 0)
            return MT_ENOMEM;
    }
    return mt_buf_putc(out, '"');
}

int mt_json_put_compact(mt_buf *out, const json_t *v)
{
    const char *key;
    json_t *item;
    char *text;
    int first = 1, rc;

    if (json_is_string(v))
        return mt_json_put_string(out, json_string_value(v), json_string_length(v));
    if (json_is_true(v))
        return mt_buf_puts(out, "true");
    if (json_is_false(v))
        return mt_buf_puts(out, "false");
    if (json_is_object(v)) {
        if (mt_buf_putc(out, '{') < 0)
            return MT_ENOMEM;
        json_object_foreach((json_t *)v, key, item)
        {
            if ((!first && mt_buf_putc(out, ',') < 0) ||
                mt_json_put_string(out, key, strlen(key)) < 0 || mt_buf_putc(out, ':') < 0 ||
                mt_json_put_compact(out, item) < 0)
                return MT_ENOMEM;
            first = 0;
        }
        return mt_buf_putc(out, '}');
    }
    /* Numbers, null, arrays: rare here, and jansson's own form is the reference. */
    if (!(text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
        return MT_ENOMEM;
    rc = mt_buf_puts(out, text);
    free(text);
    return rc;
}

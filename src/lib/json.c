#include "json.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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
    size_t i = 0;
    char *d, *end;

    /* Room for the text unescaped and both quotes; escapes grow it as met.
     * Writing straight into the buffer keeps a result of thousands of bytes
     * from becoming dozens of mt_buf_put calls. */
    if (mt_buf_grow(out, len + 2) < 0)
        return MT_ENOMEM;
    d = out->ptr + out->len;
    end = out->ptr + out->cap - 1;
    *d++ = '"';
    while (i < len) {
        unsigned char c;

        while (i + 8 <= len) {
            uint64_t w, mask;
            size_t k;

            memcpy(&w, s + i, 8);
            mask = mt_json_word_escapes(w);
            /* The bytes before the first one to escape go out as they are. */
            if (!mask) {
                k = 8;
            } else {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* Marks spill only towards later bytes, so the lowest is exact. */
                k = (size_t)__builtin_ctzll(mask) / 8;
#else
                for (k = 0; k < 8; k++) {
                    unsigned char b = (unsigned char)s[i + k];
                    if (b < 0x20 || b == '"' || b == '\\')
                        break;
                }
#endif
            }
            memcpy(d, &w, 8);
            d += k;
            i += k;
            if (k < 8)
                break;
        }
        if (i == len)
            break;
        c = (unsigned char)s[i++];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *d++ = (char)c;
            continue;
        }
        /* An escape takes at most 6 bytes; keep room for the rest and the quote. */
        if ((size_t)(end - d) < 6 + (len - i) + 1) {
            out->len = (size_t)(d - out->ptr);
            if (mt_buf_grow(out, 6 + (len - i) + (len - i) / 4 + 1) < 0)
                return MT_ENOMEM;
            d = out->ptr + out->len;
            end = out->ptr + out->cap - 1;
        }
        *d++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *d++ = (char)c;
            break;
        case '\b':
            *d++ = 'b';
            break;
        case '\f':
            *d++ = 'f';
            break;
        case '\n':
            *d++ = 'n';
            break;
        case '\r':
            *d++ = 'r';
            break;
        case '\t':
            *d++ = 't';
            break;
        default:
            memcpy(d, "u00", 3);
            d[3] = hex[c >> 4];
            d[4] = hex[c & 15];
            d += 5;
        }
    }
    *d++ = '"';
    out->len = (size_t)(d - out->ptr);
    *d = '\0';
    return MT_OK;
}

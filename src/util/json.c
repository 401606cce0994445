#include "util/json.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

#include "util/bytes.h"
#include "util/utf8.h"

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

/* The code unit of a \uXXXX escape at p (6 bytes available), or -1. */
static long escape_unit(const char *p)
{
    long v = 0;

    if (p[0] != '\\' || p[1] != 'u')
        return -1;
    for (int i = 2; i < 6; i++) {
        int d = mt_hex_value((unsigned char)p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

int mt_json_fix_surrogates(char **fixed, const char *text, size_t len)
{
    static const char fffd[6] = {'\\', 'u', 'f', 'f', 'f', 'd'};
    char *copy = NULL;
    size_t i = 0;
    int in_string = 0;

    *fixed = NULL;
    /* Most texts have no \ud escape at all: one search, no copy. */
    if (!memmem(text, len, "\\ud", 3) && !memmem(text, len, "\\uD", 3))
        return MT_OK;
    while (i < len) {
        char c = text[i];
        long unit, next;

        if (!in_string) {
            in_string = c == '"';
            i++;
            continue;
        }
        if (c == '"') {
            in_string = 0;
            i++;
            continue;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 < len && text[i + 1] != 'u') {
            i += 2; /* \" \\ \n ...: the next byte is taken */
            continue;
        }
        unit = len - i >= 6 ? escape_unit(text + i) : -1;
        if (unit < 0xD800 || unit > 0xDFFF) {
            i += unit < 0 ? 1 : 6;
            continue;
        }
        next = len - i >= 12 ? escape_unit(text + i + 6) : -1;
        if (unit <= 0xDBFF && next >= 0xDC00 && next <= 0xDFFF) {
            i += 12; /* a pair */
            continue;
        }
        if (!copy) {
            /* Parsing the text as it is would call the escape bad JSON: an
             * allocation that failed must not turn into that verdict. */
            if (!(copy = malloc(len)))
                return MT_ENOMEM;
            memcpy(copy, text, len);
        }
        memcpy(copy + i, fffd, sizeof(fffd));
        i += 6;
    }
    *fixed = copy;
    return MT_OK;
}

int mt_json_loadb(json_t **out, const char *buf, size_t len, size_t flags, json_error_t *err)
{
    json_t *v;
    char *fixed;

    if (mt_json_fix_surrogates(&fixed, buf, len) < 0) {
        *out = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory reading JSON");
    }
    pthread_once(&install_once, install_tracking);
    alloc_failed = 0;
    errno = 0;
    v = json_loadb(fixed ? fixed : buf, len, flags, err);
    free(fixed);
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

static inline int must_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

/*
 * Copy the bytes of s (n of them) up to the first that must be escaped to
 * d, and return how many. Whole blocks are stored before the escape is
 * found, so d must have room for n bytes even when fewer are kept.
 */
static inline size_t copy_safe(char *d, const char *s, size_t n)
{
    size_t i = 0, k;

#if defined(__SSE2__)
    while (i + 16 <= n) {
        unsigned mask = mt_bytes_json16(s + i);

        mt_bytes_copy16(d + i, s + i);
        if (mask)
            return i + mt_bytes_first(mask);
        i += 16;
    }
#endif
    while (i + 8 <= n) {
        uint64_t w, mask;

        memcpy(&w, s + i, 8);
        mask = mt_json_word_escapes(w);
        if (!mask) {
            k = 8;
        } else {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* Marks spill only towards later bytes, so the lowest is exact. */
            k = (size_t)__builtin_ctzll(mask) / 8;
#else
            for (k = 0; k < 8 && !must_escape((unsigned char)s[i + k]); k++)
                ;
#endif
        }
        memcpy(d + i, &w, 8);
        i += k;
        if (k < 8)
            return i;
    }
    while (i < n && !must_escape((unsigned char)s[i])) {
        d[i] = s[i];
        i++;
    }
    return i;
}

int mt_json_put_string(mt_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    /* The two-character escapes of control bytes; the rest are \u00XX. */
    static const char short_escape[0x20] = {
        ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r',
    };
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
        size_t k = copy_safe(d, s + i, len - i);
        unsigned char c;

        d += k;
        i += k;
        if (i == len)
            break;
        c = (unsigned char)s[i++];
        /* An escape takes at most 6 bytes; keep room for the rest and the quote. */
        if ((size_t)(end - d) < 6 + (len - i) + 1) {
            out->len = (size_t)(d - out->ptr);
            if (mt_buf_grow(out, 6 + (len - i) + (len - i) / 4 + 1) < 0)
                return MT_ENOMEM;
            d = out->ptr + out->len;
            end = out->ptr + out->cap - 1;
        }
        d[0] = '\\';
        if (c >= 0x20) { /* '"' or '\\' */
            d[1] = (char)c;
            d += 2;
        } else if (short_escape[c]) {
            d[1] = short_escape[c];
            d += 2;
        } else {
            memcpy(d + 1, "u00", 3);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 15];
            d += 6;
        }
    }
    *d++ = '"';
    out->len = (size_t)(d - out->ptr);
    *d = '\0';
    return MT_OK;
}

int mt_json_plain_lines(const char *s, size_t len)
{
    size_t i = 0;

#if defined(__SSE2__)
    /* No early exit: text a view numbers is almost always plain, and a
     * branch per block would cost more than the blocks after a find. */
    unsigned other = 0;
    for (; i + 16 <= len; i += 16)
        other |= mt_bytes_json16(s + i) & ~mt_bytes_eq16(s + i, '\n');
    if (other)
        return 0;
#endif
    for (; i < len; i++)
        if (s[i] != '\n' && must_escape((unsigned char)s[i]))
            return 0;
    return 1;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Whether c may follow a member's value: space, or what ends the member. */
static int ends_member(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '}';
}

/* Past the string that starts at p (its quote), or NULL if the text ends first. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* Past one value of an object's member: to the ',' or '}' that ends it at
 * this level (strings and nested brackets skipped whole), or NULL. */
static const char *skip_value(const char *p, const char *end)
{
    size_t depth = 0;

    while (p < end) {
        char c = *p;
        if (c == '"') {
            if (!(p = skip_string(p, end)))
                return NULL;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return p;
            depth--;
        } else if (c == ',' && depth == 0) {
            return p;
        }
        p++;
    }
    return NULL;
}

json_t *mt_json_find_id(const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    json_t *found = NULL;

    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return NULL;
    p++;
    /* Every member as far as the text goes: a second "id" makes it no one's. */
    for (;;) {
        const char *key, *q;
        json_error_t err;

        p = skip_ws(p, end);
        if (p >= end || *p != '"' || !(q = skip_string(p, end)))
            break;
        key = p;
        p = skip_ws(q, end);
        if (p >= end || *p != ':')
            break;
        p = skip_ws(p + 1, end);
        if (q - key == 4 && memcmp(key, "\"id\"", 4) == 0) {
            json_t *v = NULL;
            if (found) {
                json_decref(found);
                return NULL;
            }
            /* A string or an integer, read by the parser itself. */
            if (p < end && *p == '"')
                q = skip_string(p, end);
            else
                for (q = p; q < end && ((*q >= '0' && *q <= '9') || *q == '-'); q++)
                    ;
            /* A number the text ends on may have been cut short, and one
             * that goes on (4.5, 4e2) is not the integer its digits begin. */
            if (!q || q == p || (q == end && *p != '"') || (*p != '"' && !ends_member(*q)) ||
                mt_json_loadb(&v, p, (size_t)(q - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, &err) < 0)
                break;
            if (!json_is_string(v) && !json_is_integer(v)) {
                json_decref(v);
                break;
            }
            found = v;
            p = q;
        } else if (!(p = skip_value(p, end))) {
            break;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ',')
            break; /* the object ends, or the text does */
        p++;
    }
    return found;
}

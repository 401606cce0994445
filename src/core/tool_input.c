/*
 * The parameters of a tool input. Most inputs are one flat object of a few
 * strings, and building a jansson tree for them (a hash table, an object per
 * value) cost a quarter of a small view. The flat reader here takes exactly
 * that shape and nothing else: whatever it does not accept goes to jansson,
 * so every error message, and every decision about what is valid JSON, stays
 * jansson's (as mt_json_loadb runs it: a lone surrogate escape is U+FFFD in
 * both). tests/fuzz/fuzz_input.c holds the two to the same answers.
 */
#include "core/tool_input.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/utf8.h"

#define MAX_KEYS 32 /* more keys than that: leave it to jansson */

static const char *const names[MT_IN_COUNT] = {
    "command", "path",        "old_path",    "new_path",   "file_text",       "old_str",
    "new_str", "insert_line", "insert_text", "view_range", "expected_sha256",
};

const char *mt_input_name(mt_input_key key)
{
    return names[key];
}

void mt_input_from_json(mt_input *in, const json_t *obj)
{
    int k;

    memset(in, 0, sizeof(*in));
    in->has_type = json_object_get(obj, "type") != NULL;
    for (k = 0; k < MT_IN_COUNT; k++) {
        const json_t *v = json_object_get(obj, names[k]);
        mt_arg *a = &in->arg[k];

        if (!v)
            continue;
        a->kind = mt_json_kind(v);
        switch (json_typeof(v)) {
        case JSON_NULL:
            a->type = MT_ARG_NULL;
            break;
        case JSON_STRING:
            a->type = MT_ARG_STRING;
            a->str.ptr = json_string_value(v);
            a->str.len = json_string_length(v);
            break;
        case JSON_INTEGER:
            a->type = MT_ARG_INTEGER;
            a->num = json_integer_value(v);
            break;
        case JSON_ARRAY:
            a->type = MT_ARG_ARRAY;
            if (json_array_size(v) == 2 && json_is_integer(json_array_get(v, 0)) &&
                json_is_integer(json_array_get(v, 1))) {
                a->is_pair = 1;
                a->pair[0] = json_integer_value(json_array_get(v, 0));
                a->pair[1] = json_integer_value(json_array_get(v, 1));
            }
            break;
        default:
            a->type = MT_ARG_OTHER;
        }
    }
}

void mt_input_dispose(mt_input *in)
{
    free(in->scratch);
    in->scratch = NULL;
}

/* ---- the flat reader ---------------------------------------------------- */

typedef struct {
    const char *p, *end;
    mt_input *in;
    size_t text_len; /* the scratch buffer holds this much: no string unescapes longer */
    size_t used;     /* bytes of scratch in use */
} reader;

enum { BAIL = 0, OK = 1 };

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int hex4(uint32_t *out, const char *p)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return BAIL;
    }
    *out = v;
    return OK;
}

static size_t put_utf8(char *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Unescape raw[0, len) (already checked to be a well-formed string body but
 * for its \u escapes) into scratch. */
static int unescape(reader *r, mt_str *out, const char *raw, size_t len)
{
    const char *p = raw, *end = raw + len;
    char *d;

    if (!r->in->scratch) {
        /* No string unescapes longer than it is written, and all of them
         * together are shorter than the text. */
        r->in->scratch = malloc(r->text_len + 1);
        if (!r->in->scratch)
            return MT_ENOMEM;
    }
    d = r->in->scratch + r->used;
    out->ptr = d;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = bs ? (size_t)(bs - p) : (size_t)(end - p);
        uint32_t cp, lo;

        memcpy(d, p, run);
        d += run;
        p += run;
        if (!bs)
            break;
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
            *d++ = p[1];
            break;
        case 'b':
            *d++ = '\b';
            break;
        case 'f':
            *d++ = '\f';
            break;
        case 'n':
            *d++ = '\n';
            break;
        case 'r':
            *d++ = '\r';
            break;
        case 't':
            *d++ = '\t';
            break;
        default: /* 'u', checked by the scan */
            if (hex4(&cp, p + 2) != OK)
                return BAIL;
            if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 12 && p[6] == '\\' && p[7] == 'u' &&
                hex4(&lo, p + 8) == OK && lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                /* Half of a pair, as JavaScript and Python write text cut
                 * inside an emoji: U+FFFD, as mt_json_loadb reads it. */
                cp = 0xFFFD;
            }
            d += put_utf8(d, cp);
            p += 4;
        }
        p += 2;
    }
    out->len = (size_t)(d - out->ptr);
    r->used += out->len;
    return OK;
}

/* A string at r->p (its opening quote). With `key`, escapes are refused
 * (such keys are rare, and duplicates are then compared byte for byte). */
static int read_string(reader *r, mt_str *out, int key)
{
    const uint64_t high = 0x8080808080808080ULL;
    const char *start = ++r->p;
    int escaped = 0;

    for (;;) {
        unsigned char c;

        while (r->end - r->p >= 8) {
            uint64_t w;
            memcpy(&w, r->p, 8);
            if (mt_json_word_escapes(w) | (w & high))
                break;
            r->p += 8;
        }
        if (r->p >= r->end)
            return BAIL;
        c = (unsigned char)*r->p;
        if (c == '"')
            break;
        if (c < 0x20)
            return BAIL;
        if (c == '\\') {
            if (key || r->end - r->p < 2)
                return BAIL;
            c = (unsigned char)r->p[1];
            if (c == 'u') {
                uint32_t cp;
                if (r->end - r->p < 6 || hex4(&cp, r->p + 2) != OK)
                    return BAIL;
                r->p += 6;
            } else if (strchr("\"\\/bfnrt", c) && c) {
                r->p += 2;
            } else {
                return BAIL;
            }
            escaped = 1;
        } else if (c >= 0x80) {
            uint32_t cp;
            size_t n = mt_utf8_decode(&cp, (const unsigned char *)r->p, (size_t)(r->end - r->p));
            if (n == 0)
                return BAIL; /* jansson refuses text that is not UTF-8 */
            r->p += n;
        } else {
            r->p++;
        }
    }
    r->p++; /* the closing quote */
    if (!escaped) {
        out->ptr = start;
        out->len = (size_t)(r->p - 1 - start);
        return OK;
    }
    return unescape(r, out, start, (size_t)(r->p - 1 - start));
}

/* An integer of at most 18 digits (so it fits), as JSON writes it. Anything
 * with a fraction or an exponent is a real: jansson's business. */
static int read_integer(reader *r, int64_t *out)
{
    const char *p = r->p;
    int neg = 0, digits = 0;
    int64_t v = 0;

    if (p < r->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= r->end || *p < '0' || *p > '9')
        return BAIL;
    if (*p == '0' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9')
        return BAIL; /* a leading zero is not JSON */
    while (p < r->end && *p >= '0' && *p <= '9') {
        if (++digits > 18)
            return BAIL;
        v = v * 10 + (*p++ - '0');
    }
    if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return BAIL;
    *out = neg ? -v : v;
    r->p = p;
    return OK;
}

static int literal(reader *r, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return BAIL;
    r->p += n;
    return OK;
}

/* One value into a (NULL: a key the commands do not read). */
static int read_value(reader *r, mt_arg *a)
{
    mt_arg v;
    int rc;

    memset(&v, 0, sizeof(v));
    if (r->p >= r->end)
        return BAIL;
    switch (*r->p) {
    case '"':
        v.type = MT_ARG_STRING;
        v.kind = "a string";
        if ((rc = read_string(r, &v.str, 0)) != OK)
            return rc;
        break;
    case 'n':
        v.type = MT_ARG_NULL;
        v.kind = "null";
        if (literal(r, "null") != OK)
            return BAIL;
        break;
    case 't':
    case 'f':
        v.type = MT_ARG_OTHER;
        v.kind = "a boolean";
        if (literal(r, *r->p == 't' ? "true" : "false") != OK)
            return BAIL;
        break;
    case '[':
        /* Only [integer, integer]: what view_range is. */
        v.type = MT_ARG_ARRAY;
        v.kind = "an array";
        v.is_pair = 1;
        r->p++;
        skip_ws(r);
        if (read_integer(r, &v.pair[0]) != OK)
            return BAIL;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ',')
            return BAIL;
        r->p++;
        skip_ws(r);
        if (read_integer(r, &v.pair[1]) != OK)
            return BAIL;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ']')
            return BAIL;
        r->p++;
        break;
    default:
        v.type = MT_ARG_INTEGER;
        v.kind = "an integer";
        if (read_integer(r, &v.num) != OK)
            return BAIL;
    }
    if (a)
        *a = v;
    return OK;
}

static int parse_object(reader *r)
{
    mt_str keys[MAX_KEYS];
    size_t nkeys = 0, i;
    int rc;

    skip_ws(r);
    if (r->p >= r->end || *r->p != '{')
        return BAIL;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
    } else {
        for (;;) {
            mt_str key;
            mt_arg *slot = NULL;
            int k;

            if (r->p >= r->end || *r->p != '"' || nkeys == MAX_KEYS)
                return BAIL;
            if ((rc = read_string(r, &key, 1)) != OK)
                return rc;
            /* jansson is told to refuse duplicates: let it say so. */
            for (i = 0; i < nkeys; i++) {
                if (keys[i].len == key.len && memcmp(keys[i].ptr, key.ptr, key.len) == 0)
                    return BAIL;
            }
            keys[nkeys++] = key;
            for (k = 0; k < MT_IN_COUNT && !slot; k++) {
                if (strlen(names[k]) == key.len && memcmp(names[k], key.ptr, key.len) == 0)
                    slot = &r->in->arg[k];
            }
            if (key.len == 4 && memcmp(key.ptr, "type", 4) == 0)
                r->in->has_type = 1;
            skip_ws(r);
            if (r->p >= r->end || *r->p != ':')
                return BAIL;
            r->p++;
            skip_ws(r);
            if ((rc = read_value(r, slot)) != OK)
                return rc;
            skip_ws(r);
            if (r->p < r->end && *r->p == ',') {
                r->p++;
                skip_ws(r);
                continue;
            }
            if (r->p < r->end && *r->p == '}') {
                r->p++;
                break;
            }
            return BAIL;
        }
    }
    skip_ws(r);
    return r->p == r->end ? OK : BAIL;
}

int mt_input_parse_flat(mt_input *in, const char *text, size_t len)
{
    reader r;
    int rc;

    memset(in, 0, sizeof(*in));
    if (!text)
        return BAIL; /* no text at all: jansson says what is wrong with that */
    r.p = text;
    r.end = text + len;
    r.in = in;
    r.text_len = len;
    r.used = 0;
    rc = parse_object(&r);
    if (rc != OK) {
        mt_input_dispose(in);
        memset(in, 0, sizeof(*in));
    }
    return rc;
}

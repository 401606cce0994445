/*
 * The path rules of SPEC section 1. These string checks are the first line
 * of defence only: the store resolves every path beneath its root with
 * openat2(RESOLVE_BENEATH ...), so a rule here can be strict without being
 * the only thing standing between the model and the rest of the disk.
 */
#include "util/path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#define ROOT     "/memories"
#define ROOT_LEN (sizeof(ROOT) - 1)

/* Controls and line separators could forge a line of a listing or a result,
 * bidi controls could make a name read as another, and a backslash is a
 * separator to any tool that treats the name as a Windows path. */
static int code_point_ok(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7F)
        return 0;
    if (cp >= 0x80 && cp <= 0x9F)
        return 0;
    if (cp == '\\')
        return 0;
    if (cp == 0x2028 || cp == 0x2029)
        return 0;
    if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
        return 0;
    return 1;
}

static int text_ok(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t n;

        /* ASCII, nearly every path, is its own code point: no decoding. */
        if (c < 0x80) {
            if (!code_point_ok(c))
                return 0;
            i++;
            continue;
        }
        n = mt_utf8_decode(&cp, (const unsigned char *)s + i, len - i);
        if (n == 0 || !code_point_ok(cp))
            return 0;
        i += n;
    }
    return 1;
}

/* The value of n hex digits at s, or -1. */
static long hex_number(const unsigned char *s, size_t n)
{
    long v = 0;

    for (size_t i = 0; i < n; i++) {
        int d = mt_hex_value(s[i]);

        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/*
 * One round of percent-decoding: %XX and the IIS-style %uXXXX (either case).
 * Every byte an escape produced is flagged in oesc, and bytes keep the flag
 * they came in with, so a later round still knows a '.' was never typed as
 * a '.'. Returns the new length, never more than len (an escape always
 * shrinks), so the caller's fixed buffers suffice.
 */
static size_t decode_round(unsigned char *out, unsigned char *oesc, const unsigned char *in,
                           const unsigned char *iesc, size_t len, int *changed)
{
    size_t i = 0;
    size_t o = 0;
    long v;

    *changed = 0;
    while (i < len) {
        if (in[i] == '%' && len - i >= 3 && (v = hex_number(in + i + 1, 2)) >= 0) {
            out[o] = (unsigned char)v;
            oesc[o++] = 1;
            i += 3;
            *changed = 1;
        } else if (in[i] == '%' && len - i >= 6 && (in[i + 1] == 'u' || in[i + 1] == 'U') &&
                   (v = hex_number(in + i + 2, 4)) >= 0) {
            /* Encoded leniently (surrogates too): only the bytes matter here. */
            if (v < 0x80) {
                out[o] = (unsigned char)v;
                oesc[o++] = 1;
            } else if (v < 0x800) {
                out[o] = (unsigned char)(0xC0 | (v >> 6));
                oesc[o++] = 1;
                out[o] = (unsigned char)(0x80 | (v & 0x3F));
                oesc[o++] = 1;
            } else {
                out[o] = (unsigned char)(0xE0 | (v >> 12));
                oesc[o++] = 1;
                out[o] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
                oesc[o++] = 1;
                out[o] = (unsigned char)(0x80 | (v & 0x3F));
                oesc[o++] = 1;
            }
            i += 6;
            *changed = 1;
        } else {
            out[o] = in[i];
            oesc[o++] = iesc[i];
            i++;
        }
    }
    return o;
}

/*
 * Whether the bytes, read as UTF-8 the way a careless decoder would (overlong
 * forms and the old five- and six-byte forms included), hold '.', '/', '\'
 * or NUL built at least partly from an escape.
 */
static int has_escaped_special(const unsigned char *s, const unsigned char *esc, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned char c = s[i];
        size_t n = 1;
        uint32_t v = c;
        int escaped = esc[i];

        if (c >= 0xC0 && c <= 0xFD) {
            n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : c < 0xFC ? 5 : 6;
            v = c & (0x7F >> n);
            if (n > len - i) {
                n = 1;
            } else {
                for (size_t k = 1; k < n; k++) {
                    if ((s[i + k] & 0xC0) != 0x80) {
                        n = 1;
                        break;
                    }
                    v = (v << 6) | (s[i + k] & 0x3F);
                    escaped |= esc[i + k];
                }
            }
            if (n == 1) {
                /* A broken sequence: the lead byte alone, which is no special. */
                v = c;
                escaped = esc[i];
            }
        }
        if (escaped && (v == '.' || v == '/' || v == '\\' || v == 0))
            return 1;
        i += n;
    }
    return 0;
}

/*
 * Whether a component (at most MT_NAME_MAX bytes) hides '.', '/', '\' or NUL
 * behind percent-escapes, however deeply nested through %25. Decoding runs
 * until nothing changes; every changing round shrinks the text, so that is at
 * most MT_NAME_MAX / 2 rounds and no cap is needed that a deeper nesting
 * could slip past.
 */
static int has_encoded_special(const char *s, size_t len)
{
    unsigned char buf[2][MT_NAME_MAX];
    unsigned char esc[2][MT_NAME_MAX];
    int cur = 0;
    int changed;

    if (!memchr(s, '%', len))
        return 0;
    memcpy(buf[0], s, len);
    memset(esc[0], 0, len);
    for (;;) {
        len = decode_round(buf[!cur], esc[!cur], buf[cur], esc[cur], len, &changed);
        cur = !cur;
        if (!changed)
            return 0;
        if (has_escaped_special(buf[cur], esc[cur], len))
            return 1;
    }
}

static int is_dot(const char *s, size_t len)
{
    return len == 1 && s[0] == '.';
}

static int is_dotdot(const char *s, size_t len)
{
    return len == 2 && s[0] == '.' && s[1] == '.';
}

static int is_tmp_name(const char *s, size_t len)
{
    size_t plen = sizeof(MT_TMP_PREFIX) - 1;

    return len >= plen && memcmp(s, MT_TMP_PREFIX, plen) == 0;
}

/* The store's own directory, in any letter case: a store on a filesystem
 * that folds case must not let ".MEMTOOL" reach it either. */
static int is_reserved_name(const char *s, size_t len)
{
    static const char reserved[] = MT_RESERVED_NAME;
    size_t i;

    if (len != sizeof(reserved) - 1)
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
        if (c != reserved[i])
            return 0;
    }
    return 1;
}

/* The rules for one non-empty component other than "."; the characters were
 * checked already. The reserved names are refused wherever they stand: a
 * temporary or the store's own directory is never named by a request, nor is
 * a directory that a walk would take for one. */
static int component_ok(const char *s, size_t len)
{
    if (len > MT_NAME_MAX)
        return 0;
    if (is_dotdot(s, len) || is_tmp_name(s, len) || is_reserved_name(s, len))
        return 0;
    return !has_encoded_special(s, len);
}

/* The next component that counts (not empty, not "."), from *pos on; 0 at the end. */
static int next_component(const char *path, size_t len, size_t *pos, const char **c, size_t *clen)
{
    while (*pos < len) {
        const char *start = path + *pos;
        const char *slash = memchr(start, '/', len - *pos);
        size_t n = slash ? (size_t)(slash - start) : len - *pos;

        *pos += n + (slash != NULL);
        if (n == 0 || is_dot(start, n))
            continue;
        *c = start;
        *clen = n;
        return 1;
    }
    return 0;
}

mt_path_status mt_path_parse(char **rel, const char *path, size_t len)
{
    const char *c = NULL;
    size_t clen = 0;
    size_t depth = 0;
    size_t out_len = 0;
    size_t pos;
    char *out;

    *rel = NULL;
    /* The root check comes first: "must start with /memories" is the message
     * that helps a model that wrote "memories/a" or "~/x", whatever else is wrong. */
    if (path == NULL || len < ROOT_LEN || memcmp(path, ROOT, ROOT_LEN) != 0)
        return MT_PATH_NOT_UNDER_ROOT;
    if (len > ROOT_LEN && path[ROOT_LEN] != '/')
        return MT_PATH_NOT_UNDER_ROOT;
    if (len > MT_PATH_MAX || !text_ok(path, len))
        return MT_PATH_ESCAPE;

    pos = ROOT_LEN;
    while (next_component(path, len, &pos, &c, &clen)) {
        if (!component_ok(c, clen))
            return MT_PATH_ESCAPE;
        if (++depth > MT_PATH_MAX_DEPTH)
            return MT_PATH_ESCAPE;
        out_len += clen + (depth > 1);
    }

    out = malloc(out_len + 1);
    if (out == NULL)
        return MT_PATH_NOMEM;
    out_len = 0;
    pos = ROOT_LEN;
    while (next_component(path, len, &pos, &c, &clen)) {
        if (out_len > 0)
            out[out_len++] = '/';
        memcpy(out + out_len, c, clen);
        out_len += clen;
    }
    out[out_len] = '\0';
    *rel = out;
    return MT_PATH_OK;
}

int mt_path_is_hidden(const char *name, size_t len)
{
    return (len && name[0] == '.') || (len == 12 && memcmp(name, "node_modules", 12) == 0);
}

int mt_path_name_ok(const char *name, size_t len)
{
    if (name == NULL || len == 0 || is_dot(name, len))
        return 0;
    if (memchr(name, '/', len) != NULL)
        return 0;
    if (!text_ok(name, len))
        return 0;
    return component_ok(name, len);
}

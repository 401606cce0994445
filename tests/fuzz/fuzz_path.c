/*
 * The path validator against a second, independent reading of SPEC section 1.
 *
 * The reference below is written from the SPEC's words, not from path.c: where
 * path.c tracks which bytes came from an escape, the reference decodes a
 * component until nothing changes and asks whether that made more '.', '/',
 * '\' or NUL (overlong forms read leniently). Literal specials never take part
 * in an escape, so "more" means exactly "one was hidden behind an escape".
 * Any disagreement in status or in the normalised path is a finding.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "util/path.h"

#define ROOT     "/memories"
#define ROOT_LEN 9

static int ref_char_ok(uint32_t cp)
{
    return !(cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == '\\' || cp == 0x2028 ||
             cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069));
}

/* Strict UTF-8 and the character rules, over the whole path. */
static int ref_text_ok(const unsigned char *p, size_t len)
{
    size_t i = 0;

    if (!fuzz_utf8_valid((const char *)p, len))
        return 0;
    while (i < len) {
        uint32_t cp = p[i];
        size_t n = cp < 0x80 ? 1 : cp < 0xE0 ? 2 : cp < 0xF0 ? 3 : 4;
        if (n > 1) {
            cp &= 0x7Fu >> n;
            for (size_t k = 1; k < n; k++)
                cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (!ref_char_ok(cp))
            return 0;
        i += n;
    }
    return 1;
}

static int hexd(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* One round of %XX / %uXXXX decoding, in place; returns the new length. */
static size_t ref_decode(unsigned char *s, size_t len, int *changed)
{
    size_t i = 0, o = 0;

    *changed = 0;
    while (i < len) {
        if (s[i] == '%' && i + 2 < len && hexd(s[i + 1]) >= 0 && hexd(s[i + 2]) >= 0) {
            s[o++] = (unsigned char)(hexd(s[i + 1]) * 16 + hexd(s[i + 2]));
            i += 3;
            *changed = 1;
        } else if (s[i] == '%' && i + 5 < len && (s[i + 1] == 'u' || s[i + 1] == 'U') &&
                   hexd(s[i + 2]) >= 0 && hexd(s[i + 3]) >= 0 && hexd(s[i + 4]) >= 0 &&
                   hexd(s[i + 5]) >= 0) {
            unsigned v = (unsigned)(hexd(s[i + 2]) << 12 | hexd(s[i + 3]) << 8 |
                                    hexd(s[i + 4]) << 4 | hexd(s[i + 5]));
            /* Whatever a lenient decoder would make of it: its UTF-8 bytes. */
            if (v < 0x80) {
                s[o++] = (unsigned char)v;
            } else if (v < 0x800) {
                s[o++] = (unsigned char)(0xC0 | (v >> 6));
                s[o++] = (unsigned char)(0x80 | (v & 0x3F));
            } else {
                s[o++] = (unsigned char)(0xE0 | (v >> 12));
                s[o++] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
                s[o++] = (unsigned char)(0x80 | (v & 0x3F));
            }
            i += 6;
            *changed = 1;
        } else {
            s[o++] = s[i++];
        }
    }
    return o;
}

/* '.', '/', '\' and NUL, as a careless decoder reads bytes (overlong and
 * five- or six-byte forms too). */
static size_t ref_specials(const unsigned char *s, size_t len)
{
    size_t i = 0, count = 0;

    while (i < len) {
        unsigned c = s[i];
        size_t n = 1;
        uint32_t v = c;

        if (c >= 0xC0 && c <= 0xFD) {
            size_t want = c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : c < 0xFC ? 5 : 6;
            int ok = want <= len - i;
            uint32_t acc = c & (0x7Fu >> want);
            for (size_t k = 1; ok && k < want; k++) {
                if ((s[i + k] & 0xC0) != 0x80)
                    ok = 0;
                else
                    acc = (acc << 6) | (s[i + k] & 0x3F);
            }
            if (ok) {
                n = want;
                v = acc;
            }
        }
        count += v == '.' || v == '/' || v == '\\' || v == 0;
        i += n;
    }
    return count;
}

static int ref_component_ok(const unsigned char *c, size_t len)
{
    unsigned char buf[MT_NAME_MAX];
    size_t before, n = len;
    int changed = 1;

    if (len > MT_NAME_MAX || (len == 2 && c[0] == '.' && c[1] == '.'))
        return 0;
    memcpy(buf, c, len);
    before = ref_specials(buf, n);
    while (changed)
        n = ref_decode(buf, n, &changed);
    return ref_specials(buf, n) == before;
}

/* SPEC section 1: no component starts with ".mt-tmp." or is ".memtool" in
 * any letter case. */
static int ref_reserved(const unsigned char *c, size_t n)
{
    static const char name[] = ".memtool";
    size_t i;

    if (n >= 8 && memcmp(c, ".mt-tmp.", 8) == 0)
        return 1;
    if (n != 8)
        return 0;
    for (i = 0; i < n; i++)
        if (tolower(c[i]) != name[i])
            return 0;
    return 1;
}

/* The reference: a status and, when accepted, the normalised path. */
static int reference(char *out, const unsigned char *p, size_t len)
{
    size_t pos = ROOT_LEN, depth = 0, o = 0;

    if (len < ROOT_LEN || memcmp(p, ROOT, ROOT_LEN) != 0 || (len > ROOT_LEN && p[ROOT_LEN] != '/'))
        return MT_PATH_NOT_UNDER_ROOT;
    if (len > MT_PATH_MAX || !ref_text_ok(p, len))
        return MT_PATH_ESCAPE;
    while (pos < len) {
        size_t start = pos, n;
        while (pos < len && p[pos] != '/')
            pos++;
        n = pos - start;
        pos++;
        if (n == 0 || (n == 1 && p[start] == '.'))
            continue;
        if (!ref_component_ok(p + start, n) || ref_reserved(p + start, n) ||
            ++depth > MT_PATH_MAX_DEPTH)
            return MT_PATH_ESCAPE;
        if (o)
            out[o++] = '/';
        memcpy(out + o, p + start, n);
        o += n;
    }
    out[o] = '\0';
    return MT_PATH_OK;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char want[MT_PATH_MAX + 8];
    char *rel = NULL, *again = NULL;
    int status, expected;

    if (size > MT_PATH_MAX + 64)
        return 0;
    status = mt_path_parse(&rel, (const char *)data, size);
    if (status == MT_PATH_NOMEM)
        return 0;
    expected = reference(want, data, size);
    FUZZ_CHECK(status == expected, "path.c says %d, the SPEC reference %d, for %zu bytes '%.*s'",
               status, expected, size, (int)size, (const char *)data);
    if (status != MT_PATH_OK) {
        FUZZ_CHECK(rel == NULL, "a refused path came back normalised");
        return 0;
    }
    FUZZ_CHECK(rel != NULL && strcmp(rel, want) == 0, "normalised '%s', the reference '%s'",
               rel ? rel : "(null)", want);
    /* Normalising is idempotent: /memories/ + rel reads back as rel. */
    {
        size_t n = strlen(rel);
        char *full = malloc(n + ROOT_LEN + 2);
        FUZZ_CHECK(full != NULL, "out of memory");
        memcpy(full, ROOT "/", ROOT_LEN + 1);
        memcpy(full + ROOT_LEN + 1, rel, n + 1);
        status = mt_path_parse(&again, full, n ? n + ROOT_LEN + 1 : ROOT_LEN);
        FUZZ_CHECK(status == MT_PATH_OK && strcmp(again, rel) == 0,
                   "'%s' normalised to '%s', which does not read back", full, rel);
        free(full);
        free(again);
    }
    /* Every component of an accepted path is one a listing may show. */
    {
        const char *c = rel;
        while (*c) {
            const char *slash = strchr(c, '/');
            size_t n = slash ? (size_t)(slash - c) : strlen(c);
            FUZZ_CHECK(mt_path_name_ok(c, n),
                       "component '%.*s' of an accepted path is not "
                       "a listable name",
                       (int)n, c);
            c += n + (slash != NULL);
        }
    }
    free(rel);
    return 0;
}

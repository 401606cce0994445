/*
 * Strict UTF-8 (RFC 3629): the shortest form only, no surrogates, nothing
 * above U+10FFFF. Text that is not valid is shown with one U+FFFD per bad
 * byte. That rule is simpler than the "maximal subpart" rule of Unicode
 * chapter 3 and gives the same count whether a reader goes byte by byte or
 * sequence by sequence, so mt_utf8_width and mt_utf8_prefix agree with
 * mt_utf8_sanitize on every input.
 */
#include "util/utf8.h"

#include "util/bytes.h"

#include <string.h>

#define MT_REPLACEMENT     "\xEF\xBF\xBD"
#define MT_REPLACEMENT_LEN 3

static int is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t mt_utf8_decode(uint32_t *cp, const unsigned char *s, size_t len)
{
    unsigned char c;
    uint32_t v;
    size_t n;
    uint32_t min;

    if (len == 0)
        return 0;
    c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    /* C0 and C1 could only start overlong two-byte forms; F5..FF go past U+10FFFF. */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        v = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        v = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (!is_cont(s[i]))
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* Eight bytes at a time: most text is ASCII. */
size_t mt_utf8_ascii_run(const char *s, size_t len)
{
    size_t i = 0;

#if defined(__SSE2__)
    for (; i + 16 <= len; i += 16) {
        unsigned high = mt_bytes_high16(s + i);
        if (high)
            return i + mt_bytes_first(high);
    }
#endif
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL)
            break;
    }
    while (i < len && (unsigned char)s[i] < 0x80)
        i++;
    return i;
}

/* Length of the unit at s once sanitised: a whole valid sequence, or one bad byte. */
static size_t unit_len(const char *s, size_t len, int *valid)
{
    uint32_t cp;
    size_t n = mt_utf8_decode(&cp, (const unsigned char *)s, len);

    *valid = n != 0;
    return n ? n : 1;
}

int mt_utf8_sanitize(mt_buf *out, const char *s, size_t len)
{
    size_t run = 0; /* start of the pending run of valid bytes */
    size_t i = 0;
    int rc;

    /* Valid text is copied in runs, so the common case is one mt_buf_put. */
    while (i < len) {
        int valid;
        size_t n = mt_utf8_ascii_run(s + i, len - i);

        if (n) {
            i += n;
            continue;
        }
        n = unit_len(s + i, len - i, &valid);
        if (valid) {
            i += n;
            continue;
        }
        if (i > run) {
            rc = mt_buf_put(out, s + run, i - run);
            if (rc < 0)
                return rc;
        }
        rc = mt_buf_put(out, MT_REPLACEMENT, MT_REPLACEMENT_LEN);
        if (rc < 0)
            return rc;
        i += 1;
        run = i;
    }
    if (i > run)
        return mt_buf_put(out, s + run, i - run);
    return 0;
}

size_t mt_utf8_width(const char *s, size_t len)
{
    size_t count = 0;
    size_t i = 0;

    while (i < len) {
        int valid;
        size_t n = mt_utf8_ascii_run(s + i, len - i);

        if (n) {
            i += n;
            count += n;
            continue;
        }
        i += unit_len(s + i, len - i, &valid);
        count++;
    }
    return count;
}

size_t mt_utf8_prefix(const char *s, size_t len, size_t chars)
{
    size_t count = 0;
    size_t i = 0;

    while (i < len && count < chars) {
        int valid;
        size_t n = mt_utf8_ascii_run(s + i, len - i);

        if (n) {
            n = n < chars - count ? n : chars - count;
            i += n;
            count += n;
            continue;
        }
        i += unit_len(s + i, len - i, &valid);
        count++;
    }
    return i;
}

size_t mt_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t back;

    if (len <= max)
        return len;
    /* A sequence is at most 4 bytes: only one that starts in the 3 bytes
     * before max can reach past it, and its first byte is the first one
     * met going back that does not continue a sequence. */
    for (back = 1; back <= 3 && back <= max; back++) {
        uint32_t cp;
        size_t at = max - back;

        if (is_cont((unsigned char)s[at]))
            continue;
        return mt_utf8_decode(&cp, (const unsigned char *)s + at, len - at) > back ? at : max;
    }
    return max;
}

/* UTF-8 as the SPEC reads it: strict (no overlong forms, no surrogates, nothing above U+10FFFF). */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Decode one code point at s; returns its length in bytes (1-4), or 0 when the
 * bytes there are not valid UTF-8 (then *cp is undefined). */
size_t mt_utf8_decode(uint32_t *cp, const unsigned char *s, size_t len);

/* Append s to out with every byte that is not part of valid UTF-8 shown as U+FFFD. */
int mt_utf8_sanitize(mt_buf *out, const char *s, size_t len);

/* How many bytes from the start of s are ASCII: text that needs neither
 * decoding nor replacing, one code point per byte. */
size_t mt_utf8_ascii_run(const char *s, size_t len);

/* The number of code points s shows as once sanitised (each bad byte counts one). */
size_t mt_utf8_width(const char *s, size_t len);

/* The longest prefix of s, in bytes, that shows as at most `chars` code points
 * once sanitised, never splitting a valid sequence. */
size_t mt_utf8_prefix(const char *s, size_t len, size_t chars);

/* The longest prefix of s, in bytes, that is at most max bytes and ends
 * between two code points, never inside a valid sequence: where text
 * bounded in bytes may be cut and stay valid UTF-8. len when len <= max. */
size_t mt_utf8_cut(const char *s, size_t len, size_t max);

/* The value of a hex digit, or -1. */
static inline int mt_hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif

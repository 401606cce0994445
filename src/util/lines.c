#include "util/lines.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/bytes.h"
#include "util/json.h"
#include "util/utf8.h"

#include <memtool.h>

size_t mt_text_line_count_ascii(const char *data, size_t len, int *ascii, int *plain)
{
    size_t n = 0, done = 0;
    unsigned high = 0, other = 0;
    const char *p, *end = data + len;

#if defined(__SSE2__)
    /* Lines of a memory are short: counting 16 bytes a step beats a
     * memchr call per line, and the same loads tell whether it is ASCII. */
    n = mt_bytes_count_eq(&high, plain ? &other : NULL, data, len / 16, '\n');
    done = len / 16 * 16;
#endif
    for (p = data + done; p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        n++;
    if (ascii)
        *ascii = !high && mt_utf8_ascii_run(data + done, len - done) == len - done;
    if (plain)
        *plain = !other && mt_json_plain_lines(data + done, len - done);
    if (len > 0 && data[len - 1] != '\n')
        n++;
    return n;
}

size_t mt_text_line_count(const char *data, size_t len)
{
    return mt_text_line_count_ascii(data, len, NULL, NULL);
}

size_t mt_text_line_at(const char *data, size_t len, size_t offset)
{
    size_t line = 1, upto = offset < len ? offset : len, done = 0;
    const char *p, *end = data + upto;

#if defined(__SSE2__)
    /* A memchr call a line is slow on a big file of short lines. */
    unsigned high = 0;
    line += mt_bytes_count_eq(&high, NULL, data, upto / 16, '\n');
    done = upto / 16 * 16;
#endif
    for (p = data + done; p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        line++;
    return line;
}

size_t mt_text_line_start(const char *data, size_t len, size_t line)
{
    const char *p = data, *end = data + len;

    while (line > 1 && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return len;
        p = nl + 1;
        line--;
    }
    return (size_t)(p - data);
}

size_t mt_text_line_prefix(char out[32], size_t line)
{
    char digits[24];
    size_t n = 0, o = 0;

    /* printf("\n%6zu\t") by hand: it is in the inner loop of every view. */
    do {
        digits[n++] = (char)('0' + line % 10);
        line /= 10;
    } while (line);
    out[o++] = '\n';
    while (n + o < 7)
        out[o++] = ' ';
    while (n)
        out[o++] = digits[--n];
    out[o++] = '\t';
    return o;
}

void mt_text_prefix_start(mt_text_prefix *p, size_t line)
{
    p->line = line;
    p->len = mt_text_line_prefix(p->text, line);
}

void mt_text_prefix_carry(mt_text_prefix *p)
{
    size_t i = p->len - 2; /* the last digit, before the tab */

    p->line++;
    for (;;) {
        if (p->text[i] != '9') {
            p->text[i] = p->text[i] == ' ' ? '1' : (char)(p->text[i] + 1);
            return;
        }
        p->text[i] = '0';
        if (i == 1) /* all nines, no pad left: the number grows a digit */
            break;
        i--;
    }
    p->len = mt_text_line_prefix(p->text, p->line);
}

int mt_text_put_cut(mt_buf *out, const char *s, size_t len, size_t max_chars)
{
    /* max_chars code points take at most 4 bytes each, so the prefix is
     * found without reading a long s to its end. */
    size_t scan = max_chars <= len / 4 ? 4 * max_chars : len;
    size_t head = mt_utf8_prefix(s, scan, max_chars);

    if (head == len)
        return mt_utf8_sanitize(out, s, len) < 0 ? MT_ENOMEM : 0;
    if (mt_utf8_sanitize(out, s, head) < 0 || mt_buf_puts(out, "\xE2\x80\xA6") < 0)
        return MT_ENOMEM;
    return 1;
}

int mt_text_number_lines(mt_buf *out, const char *data, size_t len, size_t first, size_t last,
                         size_t max_chars)
{
    return mt_text_number_lines_at(out, data, len, mt_text_line_start(data, len, first), first,
                                   last, max_chars);
}

int mt_text_number_lines_at(mt_buf *out, const char *data, size_t len, size_t off, size_t first,
                            size_t last, size_t max_chars)
{
    mt_text_prefix prefix;
    char count[32];
    size_t line;
    int rc;

    mt_text_prefix_start(&prefix, first);
    for (line = first; line <= last && off <= len; line++, mt_text_prefix_next(&prefix)) {
        const char *nl = memchr(data + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - data) : len;

        if (mt_buf_put(out, prefix.text, prefix.len) < 0 ||
            (rc = mt_text_put_cut(out, data + off, end - off, max_chars)) < 0)
            return MT_ENOMEM;
        if (rc == 1) {
            mt_text_format_count(count, end - off);
            if (mt_buf_printf(out, " [line cut: %s bytes in all]", count) < 0)
                return MT_ENOMEM;
        }
        off = end + 1;
    }
    return 0;
}

size_t mt_text_find(const char *data, size_t len, size_t from, const char *needle, size_t nlen)
{
    const char *hit;

    if (from > len || len - from < nlen)
        return len;
    hit = memmem(data + from, len - from, needle, nlen);
    return hit ? (size_t)(hit - data) : len;
}

int mt_text_find_all(const char *data, size_t len, size_t from, const char *needle, size_t nlen,
                     mt_text_match_cb cb, void *payload, size_t *steps)
{
    const unsigned char *t = (const unsigned char *)data, *p = (const unsigned char *)needle;
    size_t *border = NULL; /* border[i]: the longest proper border of needle[0..i] */
    size_t i, k, n = 0;
    int rc = 0;

    if (nlen == 0 || nlen > SIZE_MAX / sizeof(*border)) {
        rc = MT_EINVAL;
        goto done;
    }
    if (!(border = malloc(nlen * sizeof(*border)))) {
        rc = MT_ENOMEM;
        goto done;
    }
    border[0] = 0;
    for (i = 1, k = 0; i < nlen; i++) {
        for (; k > 0 && p[i] != p[k]; n++)
            k = border[k - 1];
        n++;
        if (p[i] == p[k])
            k++;
        border[i] = k;
    }
    for (i = from, k = 0; i < len; i++) {
        if (k == 0) {
            /* Nothing matched so far: memchr to the next possible start,
             * which is most of the work in ordinary text. */
            const unsigned char *q;
            if (len - i < nlen)
                break;
            q = memchr(t + i, p[0], len - i);
            n += (q ? (size_t)(q - t) : len) - i;
            if (!q)
                break;
            i = (size_t)(q - t);
        }
        for (; k > 0 && t[i] != p[k]; n++)
            k = border[k - 1];
        n++;
        if (t[i] == p[k] && ++k == nlen) {
            if ((rc = cb(i + 1 - nlen, payload)) != 0)
                goto done;
            k = border[nlen - 1];
        }
    }
done:
    free(border);
    if (steps)
        *steps = n;
    return rc;
}

void mt_text_format_size(char out[32], uint64_t bytes)
{
    static const char units[] = "KMGT";
    uint64_t unit = 1024, tenths = 0;
    size_t i;

    if (bytes < 1024) {
        snprintf(out, 32, "%uB", (unsigned)bytes);
        return;
    }
    for (i = 0; i < sizeof(units) - 1; i++, unit *= 1024) {
        /* Rounded half up in tenths, without the overflow of bytes * 10. */
        uint64_t rem10 = (bytes % unit) * 10, t = rem10 / unit;
        if (2 * (rem10 % unit) >= unit)
            t++;
        tenths = (bytes / unit) * 10 + t;
        if (tenths < 10240 || i == sizeof(units) - 2)
            break;
    }
    snprintf(out, 32, "%llu.%u%c", (unsigned long long)(tenths / 10), (unsigned)(tenths % 10),
             units[i]);
}

void mt_text_format_count(char out[32], uint64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
    int i, o = 0;

    for (i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

int mt_text_parse_size(uint64_t *out, const char *s)
{
    unsigned long long v;
    uint64_t mult = 1;
    char *end;

    if (!s || *s < '0' || *s > '9')
        return MT_EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return MT_EINVAL;
    if (*end == 'K' || *end == 'k')
        mult = 1ULL << 10;
    else if (*end == 'M' || *end == 'm')
        mult = 1ULL << 20;
    else if (*end == 'G' || *end == 'g')
        mult = 1ULL << 30;
    if (mult > 1)
        end++;
    if (*end || (v && mult > UINT64_MAX / v))
        return MT_EINVAL;
    *out = (uint64_t)v * mult;
    return 0;
}

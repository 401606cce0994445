/* Lines, numbered lines and sizes as the SPEC prints them (section 2). */
#ifndef MT_TEXT_H
#define MT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Lines are split at '\n'; a final '\n' ends the last line: "a\nb\n" and "a\nb" have 2. */
size_t mt_text_line_count(const char *data, size_t len);
/* The same, and *ascii (when not NULL) says whether every byte is ASCII,
 * *plain (when not NULL) whether no byte but '\n' is one a JSON string
 * escapes (mt_json_plain_lines), from the same pass. */
size_t mt_text_line_count_ascii(const char *data, size_t len, int *ascii, int *plain);

/* The 1-based line on which byte `offset` lies (offset may equal len). */
size_t mt_text_line_at(const char *data, size_t len, size_t offset);

/* Byte offset where 1-based line `line` starts (len when line is past the end). */
size_t mt_text_line_start(const char *data, size_t len, size_t line);

/* "\n%6zu\t" for a line number, into out; returns its length. */
size_t mt_text_line_prefix(char out[32], size_t line);

/* The prefixes of consecutive lines, counted up in place rather than
 * formatted afresh: a view prints one per line. */
typedef struct {
    char text[32];
    size_t len;
    size_t line;
} mt_text_prefix;

void mt_text_prefix_start(mt_text_prefix *p, size_t line);
/* The next line's prefix when its last digit carries (mt_text_prefix_next). */
void mt_text_prefix_carry(mt_text_prefix *p);

/* The next line's prefix: in line with the view's loop, as nine lines in
 * ten only count up their last digit. */
static inline void mt_text_prefix_next(mt_text_prefix *p)
{
    char *digit = &p->text[p->len - 2]; /* the last digit, before the tab */

    if (*digit >= '0' && *digit < '9') {
        (*digit)++;
        p->line++;
        return;
    }
    mt_text_prefix_carry(p);
}

/* Append lines first..last (1-based, inclusive, last <= line count), each as
 * "\n%6zu\t%s" with invalid UTF-8 shown as U+FFFD. A line of more than
 * max_chars code points (SIZE_MAX: no limit) is cut to its first max_chars
 * and ends "… [line cut: {n} bytes in all]", n its length in bytes. */
int mt_text_number_lines(mt_buf *out, const char *data, size_t len, size_t first, size_t last,
                         size_t max_chars);
/* The same, given off, where line `first` starts in data. */
int mt_text_number_lines_at(mt_buf *out, const char *data, size_t len, size_t off, size_t first,
                            size_t last, size_t max_chars);

/* Append s shown as valid UTF-8, or, when it shows as more than max_chars
 * code points, its first max_chars and then "…" (never half a character).
 * Returns 1 when s was cut, 0 when it was not, or MT_ENOMEM. */
int mt_text_put_cut(mt_buf *out, const char *s, size_t len, size_t max_chars);

/* The first start of needle (nlen > 0) in data at or after `from`, or len
 * when there is none. It is memmem, the fastest search there is for one
 * match, and linear however the bytes repeat: musl's is Two-Way, glibc's
 * too for needles over 256 bytes, and for shorter ones a hashed shift whose
 * worst case is bounded by the needle's length (bench/str_replace_worst.c). */
size_t mt_text_find(const char *data, size_t len, size_t from, const char *needle, size_t nlen);

/* Called with the offset of each match; a non-zero return stops the search. */
typedef int (*mt_text_match_cb)(size_t offset, void *payload);

/* Every start of needle (nlen > 0) in data at or after `from`, overlapping
 * ones included, ascending, in one Knuth-Morris-Pratt pass: O(len + nlen)
 * time and O(nlen) memory, where calling mt_text_find again after each match
 * would cost O(nlen) per match. *steps, when steps is not NULL, gets the
 * byte comparisons made (bytes that memchr skips count one each): at most
 * 2 * (len - from) + 2 * nlen, which tests check instead of timing. Returns
 * 0, the callback's non-zero value, or MT_ENOMEM. */
int mt_text_find_all(const char *data, size_t len, size_t from, const char *needle, size_t nlen,
                     mt_text_match_cb cb, void *payload, size_t *steps);

/* 1023 -> "1023B", 1280 -> "1.3K", 1048575 -> "1.0M" (SPEC section 3, view). */
void mt_text_format_size(char out[32], uint64_t bytes);

/* A size or count as people write it: digits with an optional K, M or G
 * (powers of 1024), nothing else. Returns 0, or MT_EINVAL on anything else
 * or on overflow. */
int mt_text_parse_size(uint64_t *out, const char *s);

/* 1234567 -> "1,234,567", for messages about limits. */
void mt_text_format_count(char out[32], uint64_t n);

#endif

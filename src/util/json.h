/* Parsing JSON that may not be trusted to survive a failed allocation. */
#ifndef MT_JSON_H
#define MT_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "util/buf.h"

/*
 * json_loadb, except that an allocation failing anywhere inside jansson makes
 * it fail with MT_ENOMEM: jansson 2.14's lexer drops a byte it could not
 * save and parses on, so "/memories/a/new.md" can come out as
 * "/memories/a/ne.md". A lone UTF-16 surrogate escape (\ud83c without its
 * pair, as JavaScript and Python write text cut inside an emoji) reads as
 * U+FFFD instead of failing the whole text. Returns 0 with *out set,
 * MT_EINVAL when the text is not JSON (err says why), or MT_ENOMEM.
 */
int mt_json_loadb(json_t **out, const char *buf, size_t len, size_t flags, json_error_t *err);

/* Append s as a JSON string, the bytes json_dumps(JSON_COMPACT) would write
 * for it, but copied in runs rather than a code point at a time: answers
 * carry whole files. s must be valid UTF-8 (results are, by construction). */
int mt_json_put_string(mt_buf *out, const char *s, size_t len);

/* Whether no byte of s but '\n' would be escaped in a JSON string: lines
 * that a view can write escaped as it numbers them (see mt_reply.json). */
int mt_json_plain_lines(const char *s, size_t len);

/* Nonzero when any of the 8 bytes in w is below 0x20, '"' or '\\' (a byte a
 * JSON string must escape): the word tricks for "a byte below n" and "a zero
 * byte". A mark can spill onto bytes more significant than a marked one,
 * never less, so any mark means there is such a byte, and on a little-endian
 * machine the lowest mark is the first of them. */
static inline uint64_t mt_json_word_escapes(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');

    return (((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash)) &
           high;
}

/* If text (JSON, or its beginning) holds a lone surrogate escape inside a
 * string, *fixed is a malloc'd copy of it with each such escape turned into
 * \ufffd (the same length); else NULL. Returns 0, or MT_ENOMEM. */
int mt_json_fix_surrogates(char **fixed, const char *text, size_t len);

/*
 * The "id" member of the object that text begins with, read as far as the
 * text is JSON: a request that is broken further on (or cut off at the line
 * limit) can still be answered under its id. Returns a new string or
 * integer value, or NULL when no such id can be read.
 */
json_t *mt_json_find_id(const char *text, size_t len);

/* What a JSON value is, for messages: "an object", "an integer", "null"... */
const char *mt_json_kind(const json_t *v);

#endif

/* RFC 3339 times, the memory-store API's, and the HTTP retry-after headers
 * (util: one copy for memtool server, the API client and the remote store). */
#ifndef MT_UTIL_RFC3339_H
#define MT_UTIL_RFC3339_H

#include <stdint.h>

/* The longest a formatted time is, with its NUL. */
#define MT_RFC3339_SIZE 32

/* ms since the epoch as "2026-11-29T05:01:21.123Z" (UTC, milliseconds). */
void mt_rfc3339_format(char out[MT_RFC3339_SIZE], int64_t ms);

/*
 * "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" into ms since the epoch
 * (a fraction past milliseconds is cut): 0, or MT_EINVAL with a message
 * saying what is wrong (the form, or a missing time zone).
 */
int mt_rfc3339_parse(int64_t *out, const char *s);

/*
 * The wait a server asks for before a request is tried again: retry-after-ms
 * (ms), else retry-after (seconds, or an HTTP date), either NULL when not
 * sent. The ms, or -1 when neither says one (a date passed is 0).
 */
double mt_retry_after_ms(const char *retry_after_ms, const char *retry_after);

#endif

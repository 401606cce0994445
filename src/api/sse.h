/*
 * Server-sent events, and the Messages API message they carry.
 *
 * Two layers, neither of which does any I/O, so both can be fed any bytes by
 * a test or a fuzzer:
 *
 * - mt_sse_parser turns bytes into events. Bytes may arrive in chunks of any
 *   size, cut anywhere (inside a field, between a CR and its LF); lines may
 *   end in LF, CRLF or CR, as the SSE standard allows.
 *
 * - mt_sse_message builds the final message from the events of one
 *   streamed response (message_start, content_block_start/delta/stop,
 *   message_delta, message_stop, ping, error). Events and block types it does
 *   not know are let through: unknown blocks are kept exactly as started.
 */
#ifndef MT_API_SSE_H
#define MT_API_SSE_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* One event. Pointers are valid only during the callback. */
typedef struct {
    const char *event; /* the `event:` field; "message" when there was none */
    const char *data;  /* the `data:` lines joined by "\n"; NUL-terminated */
    size_t data_len;
} mt_sse_event;

/* Called for each complete event; a non-zero return stops the feed and is
 * returned by mt_sse_feed. */
typedef int (*mt_sse_event_fn)(const mt_sse_event *ev, void *payload);

/* An event larger than this is refused (MT_ELIMIT): a broken or hostile
 * server must not make the client hold unbounded memory. */
#define MT_SSE_MAX_EVENT (64u * 1024u * 1024u)

typedef struct {
    mt_buf line;  /* the line being read */
    mt_buf event; /* the event field of the event being read */
    mt_buf data;  /* its data, each line followed by "\n" */
    int has_data; /* a data field was seen: an event with none is not dispatched */
    int after_cr; /* the last byte was a CR, so an LF right after it ends nothing */
    int bom;      /* bytes of a leading UTF-8 byte order mark matched; 3 once past it */
} mt_sse_parser;

void mt_sse_parser_init(mt_sse_parser *p);

/*
 * Parse the next `len` bytes and call `fn` for every event they complete.
 * Returns 0, MT_ENOMEM, MT_ELIMIT, or the callback's non-zero return.
 */
int mt_sse_feed(mt_sse_parser *p, const char *bytes, size_t len, mt_sse_event_fn fn, void *payload);

/* Whether bytes of an event that was never completed are held: at the end of
 * a stream they mean it was cut off. */
int mt_sse_pending(const mt_sse_parser *p);

void mt_sse_parser_dispose(mt_sse_parser *p);

/* The content block being streamed into, per block index. */
typedef struct {
    mt_buf acc;        /* streamed text of `field` */
    const char *field; /* "text", "thinking", "input" (JSON), or NULL */
} mt_sse_block;

typedef struct {
    json_t *message;   /* the message so far; NULL before message_start */
    json_t *error;     /* the `error` object of an error event, or NULL */
    int stopped;       /* message_stop was seen */
    size_t bad_inputs; /* tool inputs whose streamed JSON did not parse (cut off) */
    mt_sse_block *blocks;
    size_t nblocks;
} mt_sse_message;

void mt_sse_message_init(mt_sse_message *m);

/*
 * Apply one event, given by name and parsed data. Returns 0, MT_ENOMEM, or
 * MT_ERROR (with mt_error_set) when a known event breaks the protocol: a
 * delta for a block that was never started, content before message_start.
 * An error event is recorded in m->error and returns 0.
 */
int mt_sse_message_apply(mt_sse_message *m, const char *event, const json_t *data);

/* The event's type: its event field, or for an unnamed event (the SSE
 * default "message") the "type" its data names. */
const char *mt_sse_event_type(const mt_sse_event *ev, const json_t *data);

/* Parse ev's data as JSON and apply it. Unknown events whose data is not JSON
 * are ignored; a known one with bad JSON is a protocol error. */
int mt_sse_message_apply_event(mt_sse_message *m, const mt_sse_event *ev);

/* Fold what is still streaming into the blocks (at message_stop this is done
 * already; call it when a stream ends early) and hand over the message. */
json_t *mt_sse_message_finish(mt_sse_message *m);

void mt_sse_message_dispose(mt_sse_message *m);

#endif

/*
 * The SSE stream parser and the message builder on top of it.
 *
 * The same bytes are fed twice: whole, and cut into chunks at points the
 * input chooses (inside a field, between a CR and its LF...). Both feeds
 * must give the same events and the same outcome: how the network splits a
 * stream must never change what it means. An event's name and data hold no
 * CR or LF but the data's joining LFs, and data is NUL-terminated. Every event
 * is then applied to a message, which must finish as NULL or serialisable
 * JSON.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/sse.h"
#include "fuzz_common.h"
#include "util/buf.h"

/* The events seen, serialised: name, NUL, data length, data. */
static int record(const mt_sse_event *ev, void *payload)
{
    mt_buf *log = payload;
    size_t n = ev->data_len;

    FUZZ_CHECK(ev->event != NULL && ev->data != NULL, "an event without a name or data");
    FUZZ_CHECK(ev->data[n] == '\0', "event data is not NUL-terminated");
    FUZZ_CHECK(!strpbrk(ev->event, "\r\n"), "an event name holds a line break");
    FUZZ_CHECK(!memchr(ev->data, '\r', n), "event data holds a CR");
    if (mt_buf_puts(log, ev->event) < 0 || mt_buf_putc(log, '\0') < 0 ||
        mt_buf_put(log, (const char *)&n, sizeof(n)) < 0 || mt_buf_put(log, ev->data, n) < 0)
        return MT_ENOMEM;
    return 0;
}

typedef struct {
    mt_sse_message msg;
    int failed;
} apply_ctx;

static int apply(const mt_sse_event *ev, void *payload)
{
    apply_ctx *c = payload;

    if (!c->failed && mt_sse_message_apply_event(&c->msg, ev) < 0)
        c->failed = 1; /* a protocol error: the client stops here, and so do we */
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_buf whole = MT_BUF_INIT, chunked = MT_BUF_INIT;
    mt_sse_parser p;
    apply_ctx c;
    uint32_t seed;
    size_t off;
    int rc1, rc2, pend1, pend2;
    json_t *final;

    if (size < 2)
        return 0;
    seed = (uint32_t)data[0] << 8 | data[1];
    data += 2;
    size -= 2;

    mt_sse_parser_init(&p);
    rc1 = mt_sse_feed(&p, (const char *)data, size, record, &whole);
    pend1 = mt_sse_pending(&p);
    mt_sse_parser_dispose(&p);

    mt_sse_parser_init(&p);
    rc2 = 0;
    for (off = 0; off < size && rc2 == 0;) {
        size_t n;
        seed = seed * 1103515245u + 12345u;
        n = 1 + (seed >> 16) % 7;
        if (n > size - off)
            n = size - off;
        rc2 = mt_sse_feed(&p, (const char *)data + off, n, record, &chunked);
        off += n;
    }
    pend2 = mt_sse_pending(&p);
    mt_sse_parser_dispose(&p);
    if (rc1 != MT_ENOMEM && rc2 != MT_ENOMEM) {
        FUZZ_CHECK(rc1 == rc2, "whole feed returned %d, chunked %d", rc1, rc2);
        FUZZ_CHECK(pend1 == pend2, "pending differs: %d whole, %d chunked", pend1, pend2);
        FUZZ_CHECK(whole.len == chunked.len &&
                       (whole.len == 0 || memcmp(whole.ptr, chunked.ptr, whole.len) == 0),
                   "chunking changed the events (%zu vs %zu bytes of events)", whole.len,
                   chunked.len);
    }
    mt_buf_dispose(&whole);
    mt_buf_dispose(&chunked);

    memset(&c, 0, sizeof(c));
    mt_sse_message_init(&c.msg);
    mt_sse_parser_init(&p);
    mt_sse_feed(&p, (const char *)data, size, apply, &c);
    mt_sse_parser_dispose(&p);
    final = mt_sse_message_finish(&c.msg);
    if (final) {
        char *text = json_dumps(final, JSON_COMPACT);
        FUZZ_CHECK(text != NULL, "the finished message does not serialise");
        free(text);
        json_decref(final);
    }
    mt_sse_message_dispose(&c.msg);
    return 0;
}

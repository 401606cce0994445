#include "api/sse.h"

#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

static const unsigned char utf8_bom[3] = {0xEF, 0xBB, 0xBF};

void mt_sse_parser_init(mt_sse_parser *p)
{
    memset(p, 0, sizeof(*p));
}

void mt_sse_parser_dispose(mt_sse_parser *p)
{
    mt_buf_dispose(&p->line);
    mt_buf_dispose(&p->event);
    mt_buf_dispose(&p->data);
    memset(p, 0, sizeof(*p));
}

int mt_sse_pending(const mt_sse_parser *p)
{
    return p->line.len > 0 || p->has_data || p->event.len > 0;
}

static void reset_event(mt_sse_parser *p)
{
    mt_buf_truncate(&p->event, 0);
    mt_buf_truncate(&p->data, 0);
    p->has_data = 0;
}

static int dispatch(mt_sse_parser *p, mt_sse_event_fn fn, void *payload)
{
    mt_sse_event ev;
    int rc;

    /* The standard drops an event that had no data field at all. */
    if (!p->has_data) {
        reset_event(p);
        return 0;
    }
    /* Every data line was stored with a "\n" after it; the last one is not
     * part of the data. */
    ev.data_len = p->data.len - 1;
    p->data.ptr[ev.data_len] = '\0';
    ev.data = p->data.ptr;
    ev.event = p->event.len ? p->event.ptr : "message";
    rc = fn(&ev, payload);
    reset_event(p);
    return rc;
}

/* One complete line, without its terminator. */
static int process_line(mt_sse_parser *p, mt_sse_event_fn fn, void *payload)
{
    const char *line = p->line.ptr ? p->line.ptr : "";
    size_t len = p->line.len, nlen;
    const char *colon, *value;
    size_t vlen;
    int rc = 0;

    if (len == 0)
        return dispatch(p, fn, payload);
    if (line[0] == ':') /* a comment, e.g. a keep-alive */
        goto done;
    colon = memchr(line, ':', len);
    nlen = colon ? (size_t)(colon - line) : len;
    value = colon ? colon + 1 : line + len;
    vlen = len - (size_t)(value - line);
    if (vlen > 0 && value[0] == ' ') {
        value++;
        vlen--;
    }
    if (nlen == 5 && memcmp(line, "event", 5) == 0) {
        mt_buf_truncate(&p->event, 0);
        rc = mt_buf_put(&p->event, value, vlen);
    } else if (nlen == 4 && memcmp(line, "data", 4) == 0) {
        if (p->data.len + vlen + 1 > MT_SSE_MAX_EVENT) {
            rc = mt_error_set(MT_ELIMIT, "a server-sent event is larger than %u bytes",
                              MT_SSE_MAX_EVENT);
            goto done;
        }
        if ((rc = mt_buf_put(&p->data, value, vlen)) == 0)
            rc = mt_buf_putc(&p->data, '\n');
        p->has_data = 1;
    }
    /* id, retry and unknown fields mean nothing to a single POST response. */
done:
    mt_buf_truncate(&p->line, 0);
    return rc;
}

int mt_sse_feed(mt_sse_parser *p, const char *bytes, size_t len, mt_sse_event_fn fn, void *payload)
{
    const char *end = bytes + len;
    int rc;

    while (bytes < end && p->bom < 3) {
        if ((unsigned char)*bytes == utf8_bom[p->bom]) {
            p->bom++;
            bytes++;
            continue;
        }
        /* Not a byte order mark after all: what matched of it was content. */
        if (p->bom > 0 && mt_buf_put(&p->line, (const char *)utf8_bom, (size_t)p->bom) < 0)
            return MT_ENOMEM;
        p->bom = 3;
    }
    while (bytes < end) {
        const char *stop = bytes;

        if (p->after_cr) {
            p->after_cr = 0;
            if (*bytes == '\n') {
                bytes++;
                continue;
            }
        }
        while (stop < end && *stop != '\n' && *stop != '\r')
            stop++;
        if (stop > bytes) {
            if (p->line.len + (size_t)(stop - bytes) > MT_SSE_MAX_EVENT)
                return mt_error_set(MT_ELIMIT, "a server-sent event is larger than %u bytes",
                                    MT_SSE_MAX_EVENT);
            if (mt_buf_put(&p->line, bytes, (size_t)(stop - bytes)) < 0)
                return MT_ENOMEM;
        }
        if (stop == end)
            break;
        p->after_cr = *stop == '\r';
        bytes = stop + 1;
        if ((rc = process_line(p, fn, payload)) != 0)
            return rc;
    }
    return 0;
}

/* ---- the message ---- */

void mt_sse_message_init(mt_sse_message *m)
{
    memset(m, 0, sizeof(*m));
}

void mt_sse_message_dispose(mt_sse_message *m)
{
    size_t i;

    for (i = 0; i < m->nblocks; i++)
        mt_buf_dispose(&m->blocks[i].acc);
    free(m->blocks);
    json_decref(m->message);
    json_decref(m->error);
    memset(m, 0, sizeof(*m));
}

static int protocol_error(const char *event, const char *why)
{
    return mt_error_set(MT_ERROR, "malformed stream from the API: %s event %s", event, why);
}

/* Write what block i streamed into its field, and stop streaming into it. */
static int fold_block(mt_sse_message *m, size_t i)
{
    mt_sse_block *b = &m->blocks[i];
    json_t *content = json_object_get(m->message, "content");
    json_t *block = json_array_get(content, i);
    json_t *value;
    int rc = 0;

    if (!b->field || !block)
        goto done;
    if (strcmp(b->field, "input") == 0) {
        json_error_t jerr;

        /* A tool input streams as pieces of one JSON text; nothing at all
         * means no arguments. A text that does not parse was cut off (a
         * max_tokens stop): the block keeps the input it started with. */
        if (b->acc.len == 0)
            value = json_object();
        else
            value = json_loadb(b->acc.ptr, b->acc.len, JSON_DECODE_ANY, &jerr);
        if (!value) {
            m->bad_inputs++;
            goto done;
        }
    } else {
        value = json_stringn(b->acc.ptr ? b->acc.ptr : "", b->acc.len);
        if (!value) {
            /* Text that is not UTF-8 cannot be put in a JSON string. */
            rc = protocol_error("content_block_delta", "has text that is not UTF-8");
            goto done;
        }
    }
    if (json_object_set_new(block, b->field, value) < 0)
        rc = MT_ENOMEM;
done:
    mt_buf_dispose(&b->acc);
    b->field = NULL;
    return rc;
}

static int fold_all(mt_sse_message *m)
{
    size_t i;
    int rc, first = 0;

    for (i = 0; i < m->nblocks; i++)
        if ((rc = fold_block(m, i)) < 0 && first == 0)
            first = rc;
    return first;
}

static int block_index(size_t *out, const json_t *data, const char *event)
{
    json_t *index = json_object_get(data, "index");

    *out = 0;
    if (!json_is_integer(index) || json_integer_value(index) < 0)
        return protocol_error(event, "has no index");
    *out = (size_t)json_integer_value(index);
    return 0;
}

static int on_block_start(mt_sse_message *m, const json_t *data)
{
    json_t *content = json_object_get(m->message, "content");
    json_t *block = json_object_get(data, "content_block");
    json_t *copy;
    size_t i, n;
    int rc;

    if ((rc = block_index(&i, data, "content_block_start")) < 0)
        return rc;
    if (!json_is_object(block))
        return protocol_error("content_block_start", "has no content_block");
    if (!json_is_array(content)) {
        content = json_array();
        if (!content || json_object_set_new(m->message, "content", content) < 0)
            return MT_ENOMEM;
    }
    n = json_array_size(content);
    if (i > n)
        return protocol_error("content_block_start", "skips an index");
    if (i >= m->nblocks) {
        mt_sse_block *nb = realloc(m->blocks, (i + 1) * sizeof(*nb));

        if (!nb)
            return MT_ENOMEM;
        memset(nb + m->nblocks, 0, (i + 1 - m->nblocks) * sizeof(*nb));
        m->blocks = nb;
        m->nblocks = i + 1;
    }
    mt_buf_dispose(&m->blocks[i].acc);
    m->blocks[i].field = NULL;
    /* Kept as given, unknown types and fields included: it goes back to the
     * API exactly as it came. */
    if (!(copy = json_deep_copy(block)))
        return MT_ENOMEM;
    rc = i == n ? json_array_append_new(content, copy) : json_array_set_new(content, i, copy);
    return rc < 0 ? MT_ENOMEM : 0;
}

/* Start streaming into `field` of block i, carrying on from what the block
 * already holds when the field is a string (text starts as ""). */
static int stream_into(mt_sse_message *m, size_t i, const char *field)
{
    mt_sse_block *b = &m->blocks[i];
    json_t *block = json_array_get(json_object_get(m->message, "content"), i);
    json_t *have;
    int rc;

    if (b->field && strcmp(b->field, field) == 0)
        return 0;
    if ((rc = fold_block(m, i)) < 0)
        return rc;
    b->field = field;
    have = json_object_get(block, field);
    if (strcmp(field, "input") != 0 && json_is_string(have))
        return mt_buf_put(&b->acc, json_string_value(have), json_string_length(have));
    return 0;
}

static int on_block_delta(mt_sse_message *m, const json_t *data)
{
    json_t *delta = json_object_get(data, "delta");
    const char *type = json_string_value(json_object_get(delta, "type"));
    const char *field = NULL, *key = NULL;
    json_t *block, *piece;
    size_t i;
    int rc;

    if ((rc = block_index(&i, data, "content_block_delta")) < 0)
        return rc;
    block = json_array_get(json_object_get(m->message, "content"), i);
    if (!block || i >= m->nblocks)
        return protocol_error("content_block_delta", "is for a block that never started");
    if (!type)
        return protocol_error("content_block_delta", "has no delta type");
    if (strcmp(type, "text_delta") == 0) {
        field = "text";
        key = "text";
    } else if (strcmp(type, "input_json_delta") == 0) {
        field = "input";
        key = "partial_json";
    } else if (strcmp(type, "thinking_delta") == 0) {
        field = "thinking";
        key = "thinking";
    } else if (strcmp(type, "signature_delta") == 0) {
        piece = json_object_get(delta, "signature");
        if (!json_is_string(piece))
            return protocol_error("content_block_delta", "has no signature");
        return json_object_set(block, "signature", piece) < 0 ? MT_ENOMEM : 0;
    } else if (strcmp(type, "citations_delta") == 0) {
        json_t *list = json_object_get(block, "citations");

        piece = json_object_get(delta, "citation");
        if (!piece)
            return protocol_error("content_block_delta", "has no citation");
        if (!json_is_array(list)) {
            list = json_array();
            if (!list || json_object_set_new(block, "citations", list) < 0)
                return MT_ENOMEM;
        }
        return json_array_append(list, piece) < 0 ? MT_ENOMEM : 0;
    } else {
        return 0; /* a delta type from a newer API: nothing to add it to */
    }
    piece = json_object_get(delta, key);
    if (!json_is_string(piece))
        return protocol_error("content_block_delta", "has no text");
    if ((rc = stream_into(m, i, field)) < 0)
        return rc;
    if (m->blocks[i].acc.len + json_string_length(piece) > MT_SSE_MAX_EVENT)
        return mt_error_set(MT_ELIMIT, "a streamed content block is larger than %u bytes",
                            MT_SSE_MAX_EVENT);
    return mt_buf_put(&m->blocks[i].acc, json_string_value(piece), json_string_length(piece));
}

/* Set every key of `from` on `to`, replacing what was there. */
static int merge(json_t *to, const json_t *from)
{
    const char *key;
    json_t *value;

    json_object_foreach((json_t *)from, key,
                        value) if (json_object_set(to, key, value) < 0) return MT_ENOMEM;
    return 0;
}

static int on_message_delta(mt_sse_message *m, const json_t *data)
{
    json_t *delta = json_object_get(data, "delta");
    json_t *usage = json_object_get(data, "usage");
    json_t *have = json_object_get(m->message, "usage");
    json_t *cm = json_object_get(data, "context_management");
    int rc;

    if (json_is_object(delta) && (rc = merge(m->message, delta)) < 0)
        return rc;
    /* Usage in a message_delta is cumulative: its counts replace the ones
     * message_start gave, and counts it leaves out stay. */
    if (json_is_object(usage)) {
        if (json_is_object(have))
            rc = merge(have, usage);
        else
            rc = json_object_set(m->message, "usage", usage) < 0 ? MT_ENOMEM : 0;
        if (rc < 0)
            return rc;
    }
    if (cm && json_object_set(m->message, "context_management", cm) < 0)
        return MT_ENOMEM;
    return 0;
}

int mt_sse_message_apply(mt_sse_message *m, const char *event, const json_t *data)
{
    json_t *message;
    size_t i;
    int rc;

    if (strcmp(event, "ping") == 0)
        return 0;
    if (strcmp(event, "error") == 0) {
        json_t *err = json_object_get(data, "error");

        json_decref(m->error);
        m->error = json_deep_copy(json_is_object(err) ? err : data);
        return m->error ? 0 : MT_ENOMEM;
    }
    if (strcmp(event, "message_start") == 0) {
        message = json_object_get(data, "message");
        if (!json_is_object(message))
            return protocol_error(event, "has no message");
        if (m->message)
            return protocol_error(event, "came twice");
        if (!(m->message = json_deep_copy(message)))
            return MT_ENOMEM;
        return 0;
    }
    if (strcmp(event, "content_block_start") != 0 && strcmp(event, "content_block_delta") != 0 &&
        strcmp(event, "content_block_stop") != 0 && strcmp(event, "message_delta") != 0 &&
        strcmp(event, "message_stop") != 0)
        return 0; /* an event from a newer API */
    if (!json_is_object(data))
        return protocol_error(event, "is not a JSON object");
    if (!m->message)
        return protocol_error(event, "came before message_start");
    if (strcmp(event, "content_block_start") == 0)
        return on_block_start(m, data);
    if (strcmp(event, "content_block_delta") == 0)
        return on_block_delta(m, data);
    if (strcmp(event, "message_delta") == 0)
        return on_message_delta(m, data);
    if (strcmp(event, "message_stop") == 0) {
        m->stopped = 1;
        return fold_all(m);
    }
    /* content_block_stop */
    if ((rc = block_index(&i, data, event)) < 0)
        return rc;
    if (i >= m->nblocks)
        return protocol_error(event, "is for a block that never started");
    return fold_block(m, i);
}

static int is_known(const char *event)
{
    static const char *const known[] = {"message_start",
                                        "content_block_start",
                                        "content_block_delta",
                                        "content_block_stop",
                                        "message_delta",
                                        "message_stop",
                                        "ping",
                                        "error"};
    size_t i;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(event, known[i]) == 0)
            return 1;
    return 0;
}

const char *mt_sse_event_type(const mt_sse_event *ev, const json_t *data)
{
    const char *type = json_string_value(json_object_get(data, "type"));

    return strcmp(ev->event, "message") == 0 && type ? type : ev->event;
}

int mt_sse_message_apply_event(mt_sse_message *m, const mt_sse_event *ev)
{
    json_error_t jerr;
    json_t *data = json_loadb(ev->data, ev->data_len, 0, &jerr);
    int rc;

    if (!data)
        return is_known(ev->event) ? protocol_error(ev->event, "is not valid JSON") : 0;
    rc = mt_sse_message_apply(m, mt_sse_event_type(ev, data), data);
    json_decref(data);
    return rc;
}

json_t *mt_sse_message_finish(mt_sse_message *m)
{
    json_t *message;

    if (fold_all(m) < 0 || !m->message)
        return NULL;
    message = m->message;
    m->message = NULL;
    return message;
}

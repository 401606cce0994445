/* The SSE parser and the message accumulator: framing, chunking, the events
 * of the Messages API, and whatever a broken server may send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <memtool.h>

#include "api/sse.h"

#ifndef MT_AGENT_FIXTURES
#error "MT_AGENT_FIXTURES must name tests/agent/fixtures"
#endif

/* The events seen, as "name|data" lines. */
typedef struct {
    mt_buf log;
    int count;
    int stop_at; /* return 7 from this event on (0: never) */
} sink;

static int collect(const mt_sse_event *ev, void *payload)
{
    sink *s = payload;

    s->count++;
    mt_buf_printf(&s->log, "%s|%.*s\n", ev->event, (int)ev->data_len, ev->data);
    return s->stop_at && s->count >= s->stop_at ? 7 : 0;
}

/* Feed `text` in pieces of `chunk` bytes (0: whole) and return the log. */
static char *parse(const char *text, size_t len, size_t chunk, int *pending)
{
    mt_sse_parser p;
    sink s = {MT_BUF_INIT, 0, 0};
    size_t off;

    mt_sse_parser_init(&p);
    if (!chunk)
        chunk = len ? len : 1;
    for (off = 0; off < len; off += chunk)
        assert_int_equal(
            mt_sse_feed(&p, text + off, len - off < chunk ? len - off : chunk, collect, &s), 0);
    if (pending)
        *pending = mt_sse_pending(&p);
    mt_sse_parser_dispose(&p);
    return mt_buf_detach(&s.log, NULL);
}

static char *read_fixture(const char *name, size_t *len)
{
    char path[1024];
    FILE *f;
    mt_buf b = MT_BUF_INIT;
    char chunk[4096];
    size_t n;

    snprintf(path, sizeof(path), "%s/%s", MT_AGENT_FIXTURES, name);
    f = fopen(path, "rb");
    assert_non_null(f);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(mt_buf_put(&b, chunk, n), 0);
    fclose(f);
    return mt_buf_detach(&b, len);
}

/* s with every "\n" replaced by `eol`. */
static char *reframe(const char *s, const char *eol)
{
    mt_buf b = MT_BUF_INIT;

    for (; *s; s++)
        if (*s == '\n')
            mt_buf_puts(&b, eol);
        else
            mt_buf_putc(&b, *s);
    return mt_buf_detach(&b, NULL);
}

static const char basic[] = "event: one\ndata: 1\n\n"
                            ": a comment\n"
                            "data: two lines\ndata:second\n\n"
                            "event: three\ndata\n\n"
                            "event: no-data\n\n"
                            "id: 5\nretry: 10\nunknown: x\nevent: four\ndata: {\"a\": 1}\n\n";
static const char basic_log[] = "one|1\n"
                                "message|two lines\nsecond\n"
                                "three|\n"
                                "four|{\"a\": 1}\n";

static void test_framings(void **state)
{
    static const char *const eols[] = {"\n", "\r\n", "\r"};
    size_t i, chunk;

    (void)state;
    for (i = 0; i < 3; i++) {
        char *text = reframe(basic, eols[i]);

        for (chunk = 0; chunk <= 9; chunk++) {
            int pending;
            char *log = parse(text, strlen(text), chunk, &pending);

            assert_string_equal(log, basic_log);
            assert_false(pending);
            free(log);
        }
        free(text);
    }
}

static void test_mixed_framing(void **state)
{
    static const char text[] = "data: a\r\n\r\ndata: b\r\rdata: c\n\r\ndata: d\r\n\n";
    char *log = parse(text, strlen(text), 0, NULL);

    (void)state;
    assert_string_equal(log, "message|a\nmessage|b\nmessage|c\nmessage|d\n");
    free(log);
}

/* A CR at the end of one chunk and its LF at the start of the next are one
 * line end, not two: two would end the event early. */
static void test_crlf_split(void **state)
{
    static const char text[] = "data: a\r\ndata: b\r\n\r\n";
    size_t cut;

    (void)state;
    for (cut = 0; cut <= sizeof(text) - 1; cut++) {
        mt_sse_parser p;
        sink s = {MT_BUF_INIT, 0, 0};

        mt_sse_parser_init(&p);
        assert_int_equal(mt_sse_feed(&p, text, cut, collect, &s), 0);
        assert_int_equal(mt_sse_feed(&p, text + cut, sizeof(text) - 1 - cut, collect, &s), 0);
        assert_string_equal(s.log.ptr, "message|a\nb\n");
        mt_sse_parser_dispose(&p);
        mt_buf_dispose(&s.log);
    }
}

static void test_bom(void **state)
{
    static const char text[] = "\xEF\xBB\xBF"
                               "data: x\n\n";
    static const char not_bom[] = "\xEF\xBB"
                                  "data: x\n\n";
    size_t chunk;

    (void)state;
    for (chunk = 0; chunk < 5; chunk++) {
        char *log = parse(text, sizeof(text) - 1, chunk, NULL);

        assert_string_equal(log, "message|x\n");
        free(log);
        /* Half a BOM is content: the line is then no known field. */
        log = parse(not_bom, sizeof(not_bom) - 1, chunk, NULL);
        assert_string_equal(log, "");
        free(log);
    }
}

static void test_incomplete_event_is_pending(void **state)
{
    static const char text[] = "event: a\ndata: 1\n\nevent: b\ndata: 2\n";
    int pending;
    char *log = parse(text, sizeof(text) - 1, 0, &pending);

    (void)state;
    assert_string_equal(log, "a|1\n");
    assert_true(pending);
    free(log);
}

static void test_callback_stops_feed(void **state)
{
    mt_sse_parser p;
    sink s = {MT_BUF_INIT, 0, 2};

    (void)state;
    mt_sse_parser_init(&p);
    assert_int_equal(mt_sse_feed(&p, basic, sizeof(basic) - 1, collect, &s), 7);
    assert_int_equal(s.count, 2);
    mt_sse_parser_dispose(&p);
    mt_buf_dispose(&s.log);
}

static void test_event_limit(void **state)
{
    mt_sse_parser p;
    sink s = {MT_BUF_INIT, 0, 0};
    size_t size = MT_SSE_MAX_EVENT / 4 + 1, i;
    char *line = malloc(size + 7);
    int rc = 0;

    (void)state;
    assert_non_null(line);
    memcpy(line, "data: ", 6);
    memset(line + 6, 'x', size);
    line[6 + size] = '\n';
    mt_sse_parser_init(&p);
    for (i = 0; i < 5 && rc == 0; i++)
        rc = mt_sse_feed(&p, line, size + 7, collect, &s);
    assert_int_equal(rc, MT_ELIMIT);
    assert_int_equal(s.count, 0);
    mt_sse_parser_dispose(&p);
    mt_buf_dispose(&s.log);
    free(line);
}

/* ---- the message ---- */

typedef struct {
    mt_sse_message msg;
    int rc;
} builder;

static int build(const mt_sse_event *ev, void *payload)
{
    builder *b = payload;

    b->rc = mt_sse_message_apply_event(&b->msg, ev);
    return b->rc;
}

/* The message the text streams, fed in `chunk`-byte pieces; rc gets the
 * first failure. */
static json_t *stream(const char *text, size_t len, size_t chunk, int *rc, size_t *bad_inputs)
{
    mt_sse_parser p;
    builder b;
    size_t off;
    json_t *m;

    mt_sse_parser_init(&p);
    mt_sse_message_init(&b.msg);
    b.rc = 0;
    if (!chunk)
        chunk = len;
    for (off = 0; off < len && b.rc == 0; off += chunk)
        mt_sse_feed(&p, text + off, len - off < chunk ? len - off : chunk, build, &b);
    *rc = b.rc;
    if (bad_inputs)
        *bad_inputs = b.msg.bad_inputs;
    m = b.rc == 0 ? mt_sse_message_finish(&b.msg) : NULL;
    mt_sse_message_dispose(&b.msg);
    mt_sse_parser_dispose(&p);
    return m;
}

static void assert_json(const json_t *got, const char *want_text)
{
    json_error_t err;
    json_t *want = json_loads(want_text, 0, &err);

    assert_non_null(want);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT);

        print_error("got  %s\nwant %s\n", g, want_text);
        free(g);
        fail();
    }
    json_decref(want);
}

static const char fixture_message[] =
    "{\"model\":\"claude-sonnet-4-5-20250929\",\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\","
    "\"type\":\"message\",\"role\":\"assistant\",\"content\":["
    "{\"type\":\"text\",\"text\":\"Recording progress in memory.\"},"
    "{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"memory\","
    "\"input\":{\"command\":\"create\",\"path\":\"/memories/progress.md\","
    "\"file_text\":\"# Progress\\n- session 1: scaffolded\\n\"},\"caller\":{\"type\":\"direct\"}}],"
    "\"stop_reason\":\"tool_use\",\"stop_sequence\":null,"
    "\"context_management\":{\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\","
    "\"cleared_tool_uses\":8,\"cleared_input_tokens\":50000}]},"
    "\"usage\":{\"input_tokens\":2051,\"cache_creation_input_tokens\":0,"
    "\"cache_read_input_tokens\":0,\"output_tokens\":97,\"service_tier\":\"standard\"}}";

static void test_fixture_any_chunking(void **state)
{
    size_t len, chunk;
    char *text = read_fixture("stream_memory_create.sse", &len);
    static const char *const eols[] = {"\r\n", "\r"};
    size_t i;

    (void)state;
    for (chunk = 0; chunk <= 64; chunk++) {
        int rc;
        json_t *m = stream(text, len, chunk, &rc, NULL);

        assert_int_equal(rc, 0);
        assert_json(m, fixture_message);
        json_decref(m);
    }
    for (i = 0; i < 2; i++) {
        char *framed = reframe(text, eols[i]);
        int rc;
        json_t *m = stream(framed, strlen(framed), 5, &rc, NULL);

        assert_int_equal(rc, 0);
        assert_json(m, fixture_message);
        json_decref(m);
        free(framed);
    }
    free(text);
}

#define START                                                                                      \
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","           \
    "\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
#define EVENT(name, data) "event: " name "\ndata: " data "\n\n"

static void test_unknown_things_kept(void **state)
{
    static const char text[] = START EVENT("future_event", "{\"type\":\"future_event\",\"x\":1}")
        EVENT("future_event", "not json at all")
            EVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                         "\"content_block\":{\"type\":\"future_block\","
                                         "\"data\":[1,2],\"extra\":{\"y\":true}}}")
                EVENT("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,"
                                             "\"delta\":{\"type\":\"future_delta\",\"z\":1}}")
                    EVENT("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
                        EVENT("content_block_start",
                              "{\"type\":\"content_block_start\",\"index\":1,"
                              "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\","
                              "\"signature\":\"\"}}")
                            EVENT("content_block_delta",
                                  "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{"
                                  "\"type\":\"thinking_delta\",\"thinking\":\"Hm\"}}")
                                EVENT("content_block_delta",
                                      "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
                                      "{\"type\":\"thinking_delta\",\"thinking\":\"m.\"}}")
                                    EVENT("content_block_delta",
                                          "{\"type\":\"content_block_delta\",\"index\":1,"
                                          "\"delta\":{\"type\":\"signature_delta\","
                                          "\"signature\":\"sig\"}}")
                                        EVENT("content_block_stop",
                                              "{\"type\":\"content_block_stop\",\"index\":1}")
        /* No event: line: the type comes from the data. */
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\","
        "\"text\":\"\"}}\n\n" EVENT("content_block_delta",
                                    "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{"
                                    "\"type\":\"text_delta\",\"text\":\"Hi \\u00e9\"}}")
            EVENT("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{"
                                         "\"type\":\"citations_delta\",\"citation\":{\"n\":1}}}")
                EVENT("ping", "{\"type\":\"ping\"}")
                    EVENT("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                                           "\"end_turn\",\"future\":1},\"usage\":{"
                                           "\"output_tokens\":9}}")
                        EVENT("message_stop", "{\"type\":\"message_stop\"}");
    int rc;
    json_t *m = stream(text, sizeof(text) - 1, 3, &rc, NULL);

    (void)state;
    assert_int_equal(rc, 0);
    assert_json(m, "{\"id\":\"m\",\"content\":["
                   "{\"type\":\"future_block\",\"data\":[1,2],\"extra\":{\"y\":true}},"
                   "{\"type\":\"thinking\",\"thinking\":\"Hmm.\",\"signature\":\"sig\"},"
                   "{\"type\":\"text\",\"text\":\"Hi \\u00e9\",\"citations\":[{\"n\":1}]}],"
                   "\"stop_reason\":\"end_turn\",\"future\":1,"
                   "\"usage\":{\"input_tokens\":3,\"output_tokens\":9}}");
    json_decref(m);
}

static void test_error_event(void **state)
{
    static const char text[] =
        START EVENT("error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                             "\"message\":\"Overloaded\"}}");
    mt_sse_parser p;
    builder b;

    (void)state;
    mt_sse_parser_init(&p);
    mt_sse_message_init(&b.msg);
    b.rc = 0;
    assert_int_equal(mt_sse_feed(&p, text, sizeof(text) - 1, build, &b), 0);
    assert_non_null(b.msg.error);
    assert_json(b.msg.error, "{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}");
    assert_false(b.msg.stopped);
    mt_sse_message_dispose(&b.msg);
    mt_sse_parser_dispose(&p);
}

static void test_protocol_errors(void **state)
{
    static const char *const bad[] = {
        /* content before message_start */
        EVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                     "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"),
        /* a delta for a block never started */
        START EVENT("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,"
                                           "\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}"),
        /* an index that skips one */
        START EVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,"
                                           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"),
        /* a known event that is not JSON */
        START EVENT("message_delta", "{oops"),
        /* message_start twice */
        START START,
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc;
        json_t *m = stream(bad[i], strlen(bad[i]), 0, &rc, NULL);

        assert_null(m);
        assert_int_equal(rc, MT_ERROR);
        assert_non_null(strstr(mt_error_last()->message, "malformed stream"));
    }
}

/* max_tokens inside a tool call: the input JSON never completes. */
static void test_cut_tool_input(void **state)
{
    static const char text[] =
        START EVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                           "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\","
                                           "\"name\":\"memory\",\"input\":{}}}")
            EVENT("content_block_delta",
                  "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                  "\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"cre\"}}")
                EVENT("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
                    EVENT("message_delta", "{\"type\":\"message_delta\",\"delta\":{"
                                           "\"stop_reason\":\"max_tokens\"}}")
                        EVENT("message_stop", "{\"type\":\"message_stop\"}");
    int rc;
    size_t bad;
    json_t *m = stream(text, sizeof(text) - 1, 0, &rc, &bad);

    (void)state;
    assert_int_equal(rc, 0);
    assert_int_equal(bad, 1);
    assert_json(m, "{\"id\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":"
                   "\"memory\",\"input\":{}}],\"stop_reason\":\"max_tokens\","
                   "\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}");
    json_decref(m);
}

/* A stream cut off before content_block_stop: finish folds what came. */
static void test_finish_folds_open_blocks(void **state)
{
    static const char text[] =
        START EVENT("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
            EVENT("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,"
                                         "\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}");
    int rc;
    json_t *m = stream(text, sizeof(text) - 1, 0, &rc, NULL);

    (void)state;
    assert_int_equal(rc, 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(m, "content"), 0), "text")),
                        "Half");
    json_decref(m);
}

/* Whatever bytes come, nothing crashes, leaks or reads out of bounds (run
 * under the sanitizers by scripts/check.sh). */
static void test_random_input(void **state)
{
    size_t len, i, n;
    char *text = read_fixture("stream_memory_create.sse", &len);
    char *copy = malloc(len);
    unsigned int seed = 12345;

    (void)state;
    assert_non_null(copy);
    for (i = 0; i < 3000; i++) {
        int rc;
        json_t *m;

        memcpy(copy, text, len);
        /* A few flipped bytes, some of them the characters that matter. */
        for (n = 0; n < 1 + (size_t)rand_r(&seed) % 8; n++) {
            static const char special[] = "\r\n:{}\"\\ 0a";
            size_t at = (size_t)rand_r(&seed) % len;

            copy[at] = rand_r(&seed) % 2 ? special[rand_r(&seed) % (sizeof(special) - 1)]
                                         : (char)rand_r(&seed);
        }
        m = stream(copy, (size_t)rand_r(&seed) % (len + 1), 1 + (size_t)rand_r(&seed) % 97, &rc,
                   NULL);
        json_decref(m);
    }
    free(copy);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framings),
        cmocka_unit_test(test_mixed_framing),
        cmocka_unit_test(test_crlf_split),
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_incomplete_event_is_pending),
        cmocka_unit_test(test_callback_stops_feed),
        cmocka_unit_test(test_event_limit),
        cmocka_unit_test(test_fixture_any_chunking),
        cmocka_unit_test(test_unknown_things_kept),
        cmocka_unit_test(test_error_event),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_cut_tool_input),
        cmocka_unit_test(test_finish_folds_open_blocks),
        cmocka_unit_test(test_random_input),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

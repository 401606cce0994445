/* The server's line functions without processes: serve and MCP framing,
 * both MCP eras, and the shared read loop over pipes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "server/server.h"

static char store_dir[] = "/tmp/memtool-server-test-XXXXXX";
static char root[sizeof(store_dir) + 16];
static mt_memory *mem;

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(store_dir))
        return -1;
    snprintf(root, sizeof(root), "%s/memories", store_dir);
    return mt_memory_open(&mem, root, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[sizeof(store_dir) + 16];

    (void)state;
    mt_memory_free(mem);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", store_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Answer one line and parse the answer (NULL when there was none). */
static json_t *serve(const char *line)
{
    char *out = NULL;
    size_t len = 0;
    json_t *v = NULL;

    assert_int_equal(mt_serve_handle(&out, &len, mem, line, strlen(line)), 0);
    if (out) {
        assert_int_equal(strlen(out), len);
        assert_null(memchr(out, '\n', len));
        v = json_loadb(out, len, 0, NULL);
        assert_non_null(v);
    }
    free(out);
    return v;
}

static json_t *mcp(mt_mcp *s, const char *line)
{
    char *out = NULL;
    size_t len = 0;
    json_t *v = NULL;

    assert_int_equal(mt_mcp_handle(&out, &len, s, line, strlen(line)), 0);
    if (out) {
        assert_null(memchr(out, '\n', len));
        v = json_loadb(out, len, 0, NULL);
        assert_non_null(v);
    }
    free(out);
    return v;
}

static int error_code(const json_t *v)
{
    return (int)json_integer_value(json_object_get(json_object_get(v, "error"), "code"));
}

static void test_serve_lines(void **state)
{
    json_t *v;

    (void)state;
    assert_null(serve(""));
    assert_null(serve(" \t\r"));

    v = serve("{\"command\":\"create\",\"path\":\"/memories/u.md\",\"file_text\":\"x\"}");
    assert_string_equal(json_string_value(json_object_get(v, "content")),
                        "File created successfully at: /memories/u.md");
    assert_true(json_is_false(json_object_get(v, "is_error")));
    assert_null(json_object_get(v, "tool_use_id"));
    json_decref(v);

    v = serve("{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"memory\",\"input\":{\"command\":"
              "\"delete\",\"path\":\"/memories/u.md\"}}");
    assert_string_equal(json_string_value(json_object_get(v, "tool_use_id")), "t1");
    assert_string_equal(json_string_value(json_object_get(v, "content")),
                        "Successfully deleted /memories/u.md");
    json_decref(v);

    v = serve("[1]");
    assert_true(json_is_true(json_object_get(v, "is_error")));
    assert_string_equal(json_string_value(json_object_get(v, "type")), "tool_result");
    assert_int_equal(strncmp(json_string_value(json_object_get(v, "content")), "Error: ", 7), 0);
    json_decref(v);

    v = serve("{\"command\":");
    assert_true(json_is_true(json_object_get(v, "is_error")));
    json_decref(v);
}

/* One connection answering line after line reuses its text buffer: every
 * answer is byte for byte the one a fresh connection gives, whatever the
 * line before it left there (a long view, an error, nothing). */
static void test_serve_reuses_buffer(void **state)
{
    static const char *const lines[] = {
        "{\"command\":\"create\",\"path\":\"/memories/r/long.md\",\"file_text\":"
        "\"one \\\"quoted\\\" line\\nsecond\\tline\\n\\u00e9t\\u00e9\\nlast\"}",
        "{\"command\":\"create\",\"path\":\"/memories/r/short.md\",\"file_text\":\"s\"}",
        "{\"command\":\"view\",\"path\":\"/memories/r/long.md\"}",
        "{\"command\":\"view\",\"path\":\"/memories/r/short.md\"}",
        "{\"command\":\"view\",\"path\":\"/memories/r/none.md\"}",
        "   ",
        "{\"command\":\"view\",\"path\":\"/memories/r/long.md\",\"view_range\":[2,3]}",
        "{\"command\":\"view\",\"path\":\"/memories/r\"}",
        "{\"type\":\"tool_use\",\"id\":\"t9\",\"name\":\"memory\",\"input\":{\"command\":"
        "\"view\",\"path\":\"/memories/r/short.md\"}}",
        "{\"command\":\"view\",\"path\":\"/memories/r/short.md\"}",
        "not json",
        "{\"command\":\"view\",\"path\":\"/memories/r/short.md\"}",
    };
    mt_serve s;
    mt_buf all = MT_BUF_INIT, expected = MT_BUF_INIT;
    size_t i;

    (void)state;
    mt_serve_init(&s, mem);
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        char *out = NULL;
        size_t len = 0, before = all.len;

        /* Views answered before the creates would differ: make them first. */
        if (i < 2) {
            assert_int_equal(mt_serve_handle(&out, &len, mem, lines[i], strlen(lines[i])), 0);
            free(out);
            continue;
        }
        assert_int_equal(mt_serve_handle(&out, &len, mem, lines[i], strlen(lines[i])), 0);
        assert_int_equal(mt_serve_append(&all, &s, lines[i], strlen(lines[i])), 0);
        if (out)
            assert_int_equal(mt_buf_put(&expected, out, len), 0);
        else
            assert_int_equal(all.len, before); /* a blank line: nothing */
        free(out);
        assert_int_equal(all.len, expected.len);
        assert_memory_equal(all.ptr, expected.ptr, all.len);
    }
    assert_non_null(strstr(all.ptr, "\"tool_use_id\":\"t9\""));
    mt_buf_dispose(&all);
    mt_buf_dispose(&expected);
    mt_serve_dispose(&s);
}

static const char init_line[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

static void test_mcp_handshake(void **state)
{
    mt_mcp s;
    json_t *v;

    (void)state;
    mt_mcp_init(&s, mem);
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");
    assert_int_equal(error_code(v), -32600);
    json_decref(v);

    v = mcp(&s, init_line);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v, "result"), "protocolVersion")),
        "2025-03-26");
    assert_string_equal(s.version, "2025-03-26");
    assert_true(s.initialized);
    json_decref(v);

    assert_null(mcp(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));

    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}");
    assert_true(json_is_integer(json_object_get(v, "id")));
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 0);
    assert_int_equal(json_array_size(json_object_get(json_object_get(v, "result"), "tools")), 3);
    assert_null(json_object_get(json_object_get(v, "result"), "resultType"));
    json_decref(v);

    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"memory\",\"arguments\":{\"command\":\"view\",\"path\":\"/nope\"}}}");
    assert_true(json_is_true(json_object_get(json_object_get(v, "result"), "isError")));
    json_decref(v);
}

static void test_mcp_modern(void **state)
{
    mt_mcp s;
    json_t *v, *result;

    (void)state;
    mt_mcp_init(&s, mem);
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{"
                "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    result = json_object_get(v, "result");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(result, "supportedVersions"), 0)),
        MT_MCP_MODERN_VERSION);
    assert_true(json_is_integer(json_object_get(result, "ttlMs")));
    assert_non_null(
        json_object_get(json_object_get(result, "_meta"), "io.modelcontextprotocol/serverInfo"));
    /* Stateless: serving it did not open the handshake era. */
    assert_false(s.initialized);
    json_decref(v);

    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                "{\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
                "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    assert_int_equal(error_code(v), -32022);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(v, "error"), "data"), "requested")),
                        "2030-01-01");
    json_decref(v);
}

static void test_mcp_faults(void **state)
{
    mt_mcp s;
    json_t *v;

    (void)state;
    mt_mcp_init(&s, mem);
    v = mcp(&s, "{oops");
    assert_int_equal(error_code(v), -32700);
    assert_true(json_is_null(json_object_get(v, "id")));
    json_decref(v);

    v = mcp(&s, "[]");
    assert_int_equal(error_code(v), -32600);
    json_decref(v);

    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}");
    assert_int_equal(error_code(v), -32601);
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 5);
    json_decref(v);

    /* Notifications get no answer, even unknown or malformed ones. */
    assert_null(mcp(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":7}"));
    /* Nor do responses to requests this server never sent. */
    assert_null(mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"));
}

/* Quoting a long name must not cut a character in half: the answer would
 * not be valid UTF-8, and jansson would refuse to make it. */
static void test_mcp_quotes_utf8(void **state)
{
    char line[2048];
    mt_mcp s;
    json_t *v;
    size_t n;
    int i;

    (void)state;
    mt_mcp_init(&s, mem);
    n = (size_t)snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a");
    for (i = 0; i < 400; i++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, "\xc3\xa9");
    snprintf(line + n, sizeof(line) - n, "\"}");
    v = mcp(&s, line);
    assert_int_equal(error_code(v), -32601);
    json_decref(v);

    /* A NUL inside a method does not make it another method. */
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\\u0000x\"}");
    assert_int_equal(error_code(v), -32600);
    json_decref(v);
}

static void test_oversize(void **state)
{
    static const char serve_head[] = "{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"input\":{\"co";
    static const char mcp_head[] = "{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\",\"par";
    char *out = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(mt_serve_oversize(&out, &len, "{\"command\":\"vi", 15, 10), 0);
    assert_string_equal(
        out, "{\"type\":\"tool_result\",\"content\":\"Error: the line is longer than the 10-byte "
             "limit (--max-line); split the content into smaller files\",\"is_error\":true}");
    free(out);
    assert_int_equal(mt_mcp_oversize(&out, &len, "[1,", 3, 10), 0);
    assert_string_equal(out, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                             "\"message\":\"Invalid Request: the message is longer than the "
                             "10-byte limit (--max-line)\"}}");
    free(out);
    /* An id that can be read from the part that came: the answer is under it. */
    assert_int_equal(mt_serve_oversize(&out, &len, serve_head, sizeof(serve_head) - 1, 10), 0);
    assert_non_null(strstr(out, "\"tool_use_id\":\"toolu_9\""));
    free(out);
    assert_int_equal(mt_mcp_oversize(&out, &len, mcp_head, sizeof(mcp_head) - 1, 10), 0);
    assert_non_null(strstr(out, "\"id\":41,"));
    free(out);
    /* The part that came ends inside the id: no id rather than a wrong one. */
    assert_int_equal(mt_mcp_oversize(&out, &len, "{\"jsonrpc\":\"2.0\",\"id\":12", 24, 10), 0);
    assert_non_null(strstr(out, "\"id\":null,"));
    free(out);
    assert_int_equal(mt_serve_oversize(&out, &len, "{\"type\":\"tool_use\",\"id\":\"tool", 29, 10),
                     0);
    assert_null(strstr(out, "tool_use_id"));
    free(out);
}

/* Lone UTF-16 surrogates, as JavaScript and Python write text cut inside an
 * emoji: the request is read (the surrogate as U+FFFD) and answered under its
 * id; a line broken otherwise is answered under its id when it can be read. */
static char *read_store_file(const char *name)
{
    char path[256];
    FILE *f;
    char *data = calloc(1, 4096);

    snprintf(path, sizeof(path), "%s/%s", root, name);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_non_null(data);
    assert_true(fread(data, 1, 4095, f) < 4095);
    fclose(f);
    return data;
}

static void test_lone_surrogates(void **state)
{
    static const char use[] =
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"memory\",\"input\":{"
        "\"command\":\"create\",\"path\":\"/memories/s.md\",\"file_text\":\"\\ud83c\"}}";
    static const char broken[] =
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"input\":{\"command\":\"view\",}}";
    mt_mcp s;
    json_t *v;
    char *out = NULL, *data;
    size_t len = 0;
    (void)state;

    mt_mcp_init(&s, mem);
    json_decref(mcp(&s, init_line));
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"memory\",\"arguments\":{\"command\":\"create\",\"path\":"
                "\"/memories/cut.md\",\"file_text\":\"half \\ud83c emoji \\udc00 and a pair "
                "\\ud83d\\ude00\"}}}");
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 7);
    assert_null(json_object_get(v, "error"));
    json_decref(v);
    data = read_store_file("cut.md");
    assert_string_equal(data, "half \xef\xbf\xbd emoji \xef\xbf\xbd and a pair \xf0\x9f\x98\x80");
    free(data);
    /* "\\ud83c" is a backslash and text, not an escape: left as it is. */
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{"
                "\"name\":\"memory\",\"arguments\":{\"command\":\"create\",\"path\":"
                "\"/memories/bs.md\",\"file_text\":\"a\\\\ud83c\"}}}");
    assert_string_equal(json_string_value(json_object_get(v, "id")), "x");
    assert_null(json_object_get(v, "error"));
    json_decref(v);
    data = read_store_file("bs.md");
    assert_string_equal(data, "a\\ud83c");
    free(data);
    /* Broken further on: a parse error, under the request's id. */
    v = mcp(&s,
            "{\"jsonrpc\":\"2.0\",\"id\":\"req-5\",\"method\":\"ping\",\"params\":{\"a\":tru}}");
    assert_int_equal(error_code(v), -32700);
    assert_string_equal(json_string_value(json_object_get(v, "id")), "req-5");
    json_decref(v);

    /* serve: the same, under tool_use_id. */
    assert_int_equal(mt_serve_handle(&out, &len, mem, use, sizeof(use) - 1), 0);
    assert_string_equal(out,
                        "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":"
                        "\"File created successfully at: /memories/s.md\",\"is_error\":false}");
    free(out);
    data = read_store_file("s.md");
    assert_string_equal(data, "\xef\xbf\xbd");
    free(data);
    assert_int_equal(mt_serve_handle(&out, &len, mem, broken, sizeof(broken) - 1), 0);
    assert_non_null(strstr(out, "\"tool_use_id\":\"toolu_2\""));
    assert_non_null(strstr(out, "not valid JSON"));
    free(out);

    /* A tool_use id is a string: an integer one is no tool_use_id (it was
     * written as "", an id no client sent). */
    v = serve("{\"type\":\"tool_use\",\"id\":5,\"input\":{");
    assert_null(json_object_get(v, "tool_use_id"));
    assert_true(json_is_true(json_object_get(v, "is_error")));
    json_decref(v);
    /* A lone surrogate in the id itself: read as U+FFFD, answered under it. */
    v = serve("{\"type\":\"tool_use\",\"id\":\"t\\ud83c\",\"name\":\"memory\",\"input\":{"
              "\"command\":\"view\",\"path\":\"/memories/s.md\"}}");
    assert_string_equal(json_string_value(json_object_get(v, "tool_use_id")), "t\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(v, "content")),
                        "Here's the content of /memories/s.md with line numbers:\n"
                        "     1\t\xef\xbf\xbd");
    json_decref(v);

    /* MCP: an id that is not an integer is not read as the one its digits
     * begin (4.5 answered as 4 would answer request 4). */
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":4.5,\"method\":\"ping\",}");
    assert_int_equal(error_code(v), -32700);
    assert_true(json_is_null(json_object_get(v, "id")));
    json_decref(v);
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":45 ,\"method\":\"ping\",}");
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 45);
    json_decref(v);
    /* Duplicate keys make a parse error, still under the one id. */
    v = mcp(&s, "{\"jsonrpc\":\"2.0\",\"id\":46,\"method\":\"ping\",\"method\":\"x\"}");
    assert_int_equal(error_code(v), -32700);
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 46);
    json_decref(v);
}

/* A handler that echoes each line with its length, to test the loop alone. */
static int echo(char **out, size_t *out_len, void *ctx, const char *line, size_t len)
{
    char buf[64];
    int n;

    (void)ctx;
    if (len == 0)
        return 0;
    n = snprintf(buf, sizeof(buf), "%zu:%.*s", len, (int)(len < 20 ? len : 20), line);
    *out = strdup(buf);
    *out_len = (size_t)n;
    return *out ? 0 : MT_ENOMEM;
}

static int too_long(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit)
{
    char buf[64];
    int n = snprintf(buf, sizeof(buf), "long>%zu", limit);

    (void)head;
    (void)head_len;
    *out = strdup(buf);
    *out_len = (size_t)n;
    return *out ? 0 : MT_ENOMEM;
}

/* The same echo, appended to the loop's queue; a line "oom" leaves some
 * bytes behind and fails, as an answer that ran out of memory half made. */
static int echo_append(mt_buf *out, void *ctx, const char *line, size_t len)
{
    (void)ctx;
    if (len == 0)
        return 0;
    if (len == 3 && memcmp(line, "oom", 3) == 0) {
        assert_int_equal(mt_buf_puts(out, "half an answer"), 0);
        return MT_ENOMEM;
    }
    return mt_buf_printf(out, "%zu:%.*s", len, (int)(len < 20 ? len : 20), line);
}

/* Feed `input` through mt_server_run and return what it wrote. */
static char *run_loop_with(const mt_server_handler *hp, const char *input, size_t input_len,
                           size_t max_line)
{
    mt_server_handler h = *hp;
    int in[2], out[2];
    char *result = malloc(1 << 16);
    size_t got = 0;
    ssize_t n;

    assert_non_null(result);
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    /* Small inputs fit in the pipe buffers, so one thread is enough. */
    assert_int_equal(write(in[1], input, input_len), (ssize_t)input_len);
    close(in[1]);
    assert_int_equal(mt_server_run(in[0], out[1], &h, max_line), 0);
    close(in[0]);
    close(out[1]);
    while ((n = read(out[0], result + got, (1 << 16) - 1 - got)) > 0)
        got += (size_t)n;
    close(out[0]);
    result[got] = '\0';
    return result;
}

static char *run_loop(const char *input, size_t input_len, size_t max_line)
{
    mt_server_handler h = {echo, too_long, NULL, "fallback", NULL, NULL, NULL};

    return run_loop_with(&h, input, input_len, max_line);
}

/* Answers appended straight to the queue frame as handed-back ones do, and
 * one that fails half made is replaced whole by the fallback. */
static void test_loop_append(void **state)
{
    mt_server_handler h = {echo, too_long, NULL, "fallback", NULL, NULL, echo_append};
    char *out;

    (void)state;
    out = run_loop_with(&h, "a\n\nbb\nccc", 9, 0);
    assert_string_equal(out, "1:a\n2:bb\n3:ccc\n");
    free(out);

    out = run_loop_with(&h, "12345\n123456\n1234567890123\nok\n", 30, 6);
    assert_string_equal(out, "5:12345\n6:123456\nlong>6\n2:ok\n");
    free(out);

    out = run_loop_with(&h, "a\noom\nbb\n", 9, 0);
    assert_string_equal(out, "1:a\nfallback\n2:bb\n");
    free(out);
}

static void test_loop(void **state)
{
    char *out;

    (void)state;
    out = run_loop("a\n\nbb\nccc", 9, 0);
    assert_string_equal(out, "1:a\n2:bb\n3:ccc\n");
    free(out);

    out = run_loop("12345\n123456\n1234567890123\nok\n", 30, 6);
    assert_string_equal(out, "5:12345\n6:123456\nlong>6\n2:ok\n");
    free(out);

    out = run_loop("", 0, 0);
    assert_string_equal(out, "");
    free(out);
}

static void test_parse_size(void **state)
{
    size_t v = 0;

    (void)state;
    assert_int_equal(mt_server_parse_size(&v, "100"), 0);
    assert_int_equal(v, 100);
    assert_int_equal(mt_server_parse_size(&v, "2K"), 0);
    assert_int_equal(v, 2048);
    assert_int_equal(mt_server_parse_size(&v, "3m"), 0);
    assert_int_equal(v, (size_t)3 << 20);
    assert_true(mt_server_parse_size(&v, "0") < 0);
    assert_true(mt_server_parse_size(&v, "-1") < 0);
    assert_true(mt_server_parse_size(&v, "1T") < 0);
    assert_true(mt_server_parse_size(&v, "") < 0);
    assert_true(mt_server_parse_size(&v, "99999999999999999999999") < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_lines),   cmocka_unit_test(test_serve_reuses_buffer),
        cmocka_unit_test(test_mcp_handshake), cmocka_unit_test(test_mcp_modern),
        cmocka_unit_test(test_mcp_faults),    cmocka_unit_test(test_mcp_quotes_utf8),
        cmocka_unit_test(test_oversize),      cmocka_unit_test(test_lone_surrogates),
        cmocka_unit_test(test_loop),          cmocka_unit_test(test_loop_append),
        cmocka_unit_test(test_parse_size),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* The pieces of the API client and the agent that need no server: the retry
 * policy, setup errors, the request the agent builds, and how calls are shown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "api/client.h"

static void test_should_retry(void **state)
{
    static const long yes[] = {408, 409, 429, 500, 502, 503, 504, 529};
    static const long no[] = {400, 401, 403, 404, 413, 422};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        assert_true(mt_api_should_retry(yes[i], NULL));
        assert_false(mt_api_should_retry(yes[i], "false"));
    }
    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        assert_false(mt_api_should_retry(no[i], NULL));
        assert_true(mt_api_should_retry(no[i], "true"));
    }
    /* Anything else in the header means nothing. */
    assert_true(mt_api_should_retry(529, "maybe"));
}

static void test_retry_delay(void **state)
{
    char date[64];
    time_t later = time(NULL) + 30;
    struct tm tm;
    long d;

    (void)state;
    /* Backoff: 0.5 s doubling to 8 s, less up to a quarter. */
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, NULL, 0), 500);
    assert_int_equal(mt_api_retry_delay_ms(1, NULL, NULL, 0), 1000);
    assert_int_equal(mt_api_retry_delay_ms(2, NULL, NULL, 0), 2000);
    assert_int_equal(mt_api_retry_delay_ms(3, NULL, NULL, 0), 4000);
    assert_int_equal(mt_api_retry_delay_ms(4, NULL, NULL, 0), 8000);
    assert_int_equal(mt_api_retry_delay_ms(9, NULL, NULL, 0), 8000);
    assert_int_equal(mt_api_retry_delay_ms(1, NULL, NULL, 0.999999), 750);
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, NULL, 0.5), 437);
    /* What the server asks for, up to 60 s; retry-after-ms first. */
    assert_int_equal(mt_api_retry_delay_ms(0, "150", "9", 0), 150);
    assert_int_equal(mt_api_retry_delay_ms(0, "12.5", NULL, 0), 12);
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, "2", 0), 2000);
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, "0", 0), 0);
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, "60", 0), 60000);
    assert_int_equal(mt_api_retry_delay_ms(0, "60000", NULL, 0), 60000);
    /* Too long, negative or nonsense: backoff instead. */
    assert_int_equal(mt_api_retry_delay_ms(0, NULL, "61", 0), 500);
    assert_int_equal(mt_api_retry_delay_ms(0, "-5", NULL, 0), 500);
    assert_int_equal(mt_api_retry_delay_ms(1, "soon", "later", 0), 1000);
    assert_int_equal(mt_api_retry_delay_ms(0, "1e9", NULL, 0), 500);
    /* An HTTP date. */
    gmtime_r(&later, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    d = mt_api_retry_delay_ms(0, NULL, date, 0);
    assert_true(d > 28000 && d <= 30000);
}

static void test_new_needs_key(void **state)
{
    mt_api_options o = {"http://127.0.0.1:1/", NULL, -1, NULL, MT_API_AUTH_BEARER};
    mt_api *api = (mt_api *)1;

    (void)state;
    unsetenv("ANTHROPIC_API_KEY");
    assert_int_equal(mt_api_new(&api, &o), MT_EINVAL);
    assert_null(api);
    assert_non_null(strstr(mt_error_last()->message, "ANTHROPIC_API_KEY is not set"));
    o.api_key = "k";
    assert_int_equal(mt_api_new(&api, &o), 0);
    assert_string_equal(mt_api_url(api), "http://127.0.0.1:1/v1/messages");
    mt_api_free(api);
    setenv("ANTHROPIC_API_KEY", "from-env", 1);
    setenv("ANTHROPIC_BASE_URL", "http://example.invalid:9", 1);
    assert_int_equal(mt_api_new(&api, NULL), 0);
    assert_string_equal(mt_api_url(api), "http://example.invalid:9/v1/messages");
    mt_api_free(api);
    unsetenv("ANTHROPIC_BASE_URL");
    assert_int_equal(mt_api_new(&api, NULL), 0);
    assert_string_equal(mt_api_url(api), "https://api.anthropic.com/v1/messages");
    mt_api_free(api);
}

/* A version that would split or end its header is refused by the library
 * too, not only by the command. */
static void test_version_one_word(void **state)
{
    static const char *const bad[] = {"", "2026-10-21 x", "2026-10-21,2023-06-01", "a\r\nb: c",
                                      "\x7f"};
    mt_api_options o = {"http://127.0.0.1:1/", "k", -1, NULL, MT_API_AUTH_BEARER};
    mt_api *api = (mt_api *)1;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(mt_api_version_ok(bad[i]));
        o.version = bad[i];
        assert_int_equal(mt_api_new(&api, &o), MT_EINVAL);
        assert_null(api);
        assert_non_null(strstr(mt_error_last()->message, "the API version must be one word"));
    }
    assert_true(mt_api_version_ok("2023-06-01"));
    o.version = "2023-06-01";
    assert_int_equal(mt_api_new(&api, &o), 0);
    mt_api_free(api);
}

/* Nothing listens on port 1: a connection failure, retried, then one line. */
static void test_connection_refused(void **state)
{
    mt_api_options o = {"http://127.0.0.1:1", "k", 1, NULL, MT_API_AUTH_BEARER};
    mt_api *api;
    json_t *req = json_pack("{s:s}", "model", "m"), *out = NULL;

    (void)state;
    assert_int_equal(mt_api_new(&api, &o), 0);
    assert_int_equal(mt_api_send(&out, api, req, NULL, NULL), MT_ERROR);
    assert_null(out);
    assert_non_null(
        strstr(mt_error_last()->message, "cannot reach http://127.0.0.1:1/v1/messages"));
    assert_non_null(strstr(mt_error_last()->message, "gave up after 2 attempts"));
    assert_null(strchr(mt_error_last()->message, '\n'));
    json_decref(req);
    mt_api_free(api);
}

static void test_cancel_before_retry(void **state)
{
    mt_api_options o = {"http://127.0.0.1:1", "k", 5, NULL, MT_API_AUTH_BEARER};
    volatile sig_atomic_t cancel = 1;
    mt_api_hooks hooks;
    mt_api *api;
    json_t *req = json_object(), *out = NULL;

    (void)state;
    memset(&hooks, 0, sizeof(hooks));
    hooks.cancel = &cancel;
    assert_int_equal(mt_api_new(&api, &o), 0);
    assert_int_equal(mt_api_send(&out, api, req, NULL, &hooks), MT_API_ECANCELED);
    json_decref(req);
    mt_api_free(api);
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

static void test_agent_request(void **state)
{
    mt_agent_options o;
    mt_agent *ag;
    json_t *req;

    (void)state;
    assert_int_equal(mt_agent_new(&ag, NULL, NULL, NULL), 0);
    req = mt_agent_request(ag);
    /* By default memory_search is offered beside memory, as a custom tool. */
    {
        json_t *tools = json_object_get(req, "tools"), *search = json_array_get(tools, 1);

        assert_int_equal(json_array_size(tools), 2);
        assert_string_equal(json_string_value(json_object_get(search, "name")), "memory_search");
        assert_non_null(json_object_get(json_object_get(search, "input_schema"), "properties"));
        assert_int_equal(json_array_remove(tools, 1), 0);
    }
    assert_json(req, "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":8192,\"tools\":[{\"type\":"
                     "\"memory_20250818\",\"name\":\"memory\"}],\"context_management\":{\"edits\":"
                     "[{\"type\":\"clear_tool_uses_20250919\"}]},\"messages\":[]}");
    json_decref(req);
    mt_agent_free(ag);

    memset(&o, 0, sizeof(o));
    o.model = "m";
    o.system = "sys";
    o.max_tokens = 5;
    o.clear_at = 1000;
    o.keep = 0;
    o.exclude = "memory,,web_search";
    o.stream = 1;
    o.no_search = 1;
    assert_int_equal(mt_agent_new(&ag, NULL, NULL, &o), 0);
    req = mt_agent_request(ag);
    assert_json(req, "{\"model\":\"m\",\"max_tokens\":5,\"system\":\"sys\",\"stream\":true,"
                     "\"tools\":[{\"type\":\"memory_20250818\",\"name\":\"memory\"}],"
                     "\"context_management\":{\"edits\":[{\"type\":\"clear_tool_uses_20250919\","
                     "\"trigger\":{\"type\":\"input_tokens\",\"value\":1000},\"keep\":{\"type\":"
                     "\"tool_uses\",\"value\":0},\"exclude_tools\":[\"memory\",\"web_search\"]}]},"
                     "\"messages\":[]}");
    json_decref(req);
    mt_agent_free(ag);

    o.clear_at = -1;
    assert_int_equal(mt_agent_new(&ag, NULL, NULL, &o), 0);
    req = mt_agent_request(ag);
    assert_null(json_object_get(req, "context_management"));
    json_decref(req);
    mt_agent_free(ag);
}

static void describe(const char *use, const char *result, const char *want)
{
    json_error_t err;
    json_t *u = json_loads(use, 0, &err), *r = json_loads(result, 0, &err);
    mt_buf b = MT_BUF_INIT;

    assert_non_null(u);
    assert_non_null(r);
    assert_int_equal(mt_agent_describe_call(&b, u, r), 0);
    assert_string_equal(b.ptr, want);
    mt_buf_dispose(&b);
    json_decref(u);
    json_decref(r);
}

static void test_describe_call(void **state)
{
    static const char ok[] = "{\"content\":\"fine\",\"is_error\":false}";

    (void)state;
    describe("{\"name\":\"memory\",\"input\":{\"command\":\"create\",\"path\":\"/memories/a\"}}",
             ok, "create /memories/a");
    describe("{\"name\":\"memory\",\"input\":{\"command\":\"view\",\"path\":\"/memories/a\","
             "\"view_range\":[2,-1]}}",
             ok, "view /memories/a [2, -1]");
    describe("{\"name\":\"memory\",\"input\":{\"command\":\"insert\",\"path\":\"/memories/a\","
             "\"insert_line\":0}}",
             ok, "insert /memories/a at line 0");
    describe("{\"name\":\"memory\",\"input\":{\"command\":\"rename\",\"old_path\":\"/memories/a\","
             "\"new_path\":\"/memories/b\"}}",
             ok, "rename /memories/a -> /memories/b");
    /* A path cannot move the cursor, and an error shows its first line. */
    describe("{\"name\":\"memory\",\"input\":{\"command\":\"delete\",\"path\":\"/memories/"
             "\\u001b[2J\"}}",
             "{\"content\":\"Error: no\\nmore\",\"is_error\":true}",
             "delete /memories/?[2J (Error: no)");
    describe("{\"name\":\"memory\",\"input\":{}}", ok, "(no command)");
    describe("{\"name\":\"bash\",\"input\":{}}", ok, "unknown tool bash");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_should_retry),       cmocka_unit_test(test_retry_delay),
        cmocka_unit_test(test_new_needs_key),      cmocka_unit_test(test_version_one_word),
        cmocka_unit_test(test_connection_refused), cmocka_unit_test(test_cancel_before_retry),
        cmocka_unit_test(test_agent_request),      cmocka_unit_test(test_describe_call),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

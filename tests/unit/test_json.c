/* mt_json_put_compact writes what json_dumps(JSON_COMPACT) writes, faster. */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "lib/json.h"

static void same_as_jansson(const json_t *v)
{
    char *ref = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    mt_buf b = MT_BUF_INIT;

    assert_int_equal(mt_json_put_compact(&b, v), 0);
    assert_string_equal(b.ptr, ref);
    free(ref);
    mt_buf_dispose(&b);
}

static void test_every_ascii_byte_and_utf8(void **state)
{
    char s[300];
    size_t n = 0;
    int c;
    json_t *o;
    const char *u = "\xe4\xb8\xad\xe2\x80\xa8/\xf0\x9f\x98\x80\x7f";
    (void)state;
    for (c = 0; c < 128; c++)
        s[n++] = (char)c;
    memcpy(s + n, u, strlen(u));
    n += strlen(u);
    o = json_pack("{s:s, s:s%, s:b, s:b, s:s, s:i, s:n, s:[i,s]}", "type", "tool_result", "content",
                  s, n, "is_error", 1, "ok", 0, "a\"k\\", "v", "num", -5, "nothing", "list", 1,
                  "x");
    same_as_jansson(o);
    json_decref(o);
}

static void test_empty_and_escapes_only(void **state)
{
    json_t *v;
    (void)state;
    v = json_string("");
    same_as_jansson(v);
    json_decref(v);
    v = json_string("\"\\\n\t\r\b\f\x01");
    same_as_jansson(v);
    json_decref(v);
    v = json_object();
    same_as_jansson(v);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_ascii_byte_and_utf8),
        cmocka_unit_test(test_empty_and_escapes_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * mt_json_put_string writes what json_dumps(JSON_COMPACT) writes for a string,
 * faster; mt_json_loadb reads a lone surrogate escape as U+FFFD, and
 * mt_json_find_id reads a broken request's id as far as it can be read.
 */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util/json.h"

static void same_as_jansson(const char *s, size_t len)
{
    json_t *v = json_stringn(s, len);
    char *ref;
    mt_buf b = MT_BUF_INIT;

    assert_non_null(v);
    ref = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_int_equal(mt_json_put_string(&b, s, len), 0);
    assert_string_equal(b.ptr, ref);
    free(ref);
    json_decref(v);
    mt_buf_dispose(&b);
}

static void test_every_ascii_byte_and_utf8(void **state)
{
    char s[300];
    size_t n = 0;
    int c;
    const char *u = "\xe4\xb8\xad\xe2\x80\xa8/\xf0\x9f\x98\x80\x7f";
    (void)state;
    for (c = 0; c < 128; c++)
        s[n++] = (char)c;
    memcpy(s + n, u, strlen(u));
    n += strlen(u);
    same_as_jansson(s, n);
}

static void test_empty_and_escapes_only(void **state)
{
    static const char escapes[] = "\"\\\n\t\r\b\f\x01";
    (void)state;
    same_as_jansson("", 0);
    same_as_jansson(escapes, sizeof(escapes) - 1);
}

/* The block-at-a-time scan: escapes at every offset within a block of 8 or
 * 16 bytes, at the ends, UTF-8 beside them, and strings of every length
 * around the steps, appended to a buffer that already holds text (so the
 * room it reserves is tested too). */
static void test_escapes_at_every_alignment(void **state)
{
    static const char specials[] = {'"', '\\', '\n', '\t', '\x01', '\x1f', 'a', '\x7f', ' '};
    unsigned seed = 12345;
    int round;

    (void)state;
    for (round = 0; round < 8000; round++) {
        char s[128];
        size_t len = (size_t)(round % 100), i;
        json_t *str;
        char *ref;
        mt_buf b = MT_BUF_INIT;

        for (i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            if ((seed >> 16) % 16 == 0 && i + 1 < len) {
                s[i++] = '\xc3'; /* e acute: bytes above 0x7f are copied as they are */
                s[i] = '\xa9';
                continue;
            }
            s[i] = (seed >> 16) % 4 ? (char)('a' + (seed >> 20) % 26)
                                    : specials[(seed >> 20) % sizeof(specials)];
        }
        str = json_stringn(s, len);
        assert_non_null(str);
        ref = json_dumps(str, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_int_equal(mt_buf_puts(&b, "x:"), 0);
        assert_int_equal(mt_json_put_string(&b, s, len), 0);
        assert_int_equal(b.len, strlen(ref) + 2);
        assert_memory_equal(b.ptr + 2, ref, strlen(ref));
        assert_int_equal(b.ptr[b.len], '\0');
        free(ref);
        json_decref(str);
        mt_buf_dispose(&b);
    }
}

/* Nothing but escapes: the output is six times the input. */
static void test_all_control_bytes(void **state)
{
    char s[1000];
    mt_buf b = MT_BUF_INIT;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(s); i++)
        s[i] = '\x02';
    assert_int_equal(mt_json_put_string(&b, s, sizeof(s)), 0);
    assert_int_equal(b.len, 6 * sizeof(s) + 2);
    assert_memory_equal(b.ptr, "\"\\u0002\\u0002", 13);
    assert_int_equal(b.ptr[b.len - 1], '"');
    mt_buf_dispose(&b);
}

/* fix_surrogates(text) is the text mt_json_loadb hands to jansson. */
static void fixes(const char *text, const char *want)
{
    char *fixed = NULL;

    assert_int_equal(mt_json_fix_surrogates(&fixed, text, strlen(text)), 0);
    if (!want) {
        assert_null(fixed);
        return;
    }
    assert_non_null(fixed);
    assert_memory_equal(fixed, want, strlen(text));
    free(fixed);
}

static void test_fix_surrogates(void **state)
{
    (void)state;
    fixes("{\"a\":\"\\ud83c\"}", "{\"a\":\"\\ufffd\"}");
    fixes("{\"a\":\"\\uDC00\"}", "{\"a\":\"\\ufffd\"}");
    fixes("[\"\\ud83c\\ud83d\\ude00\\ude00\"]", "[\"\\ufffd\\ud83d\\ude00\\ufffd\"]");
    fixes("[\"\\ud83c\\u0041\"]", "[\"\\ufffd\\u0041\"]");
    fixes("{\"\\ud800\":1}", "{\"\\ufffd\":1}"); /* keys are strings too */
    /* Cut off after a high surrogate: the pair cannot be seen, so no pair. */
    fixes("{\"a\":\"\\ud83c", "{\"a\":\"\\ufffd");
    /* No copy when there is nothing to fix. */
    fixes("{\"a\":\"\\ud83d\\ude00 \\u00e9\"}", NULL);
    fixes("{\"a\":\"plain\"}", NULL);
    /* An escaped backslash and then text; \" inside a string; a \ud outside
     * any string (not JSON: jansson's to refuse, as it is). */
    fixes("[\"\\\\ud83c\"]", NULL);
    fixes("[\"\\\\\\ud83c\"]", "[\"\\\\\\ufffd\"]");
    fixes("[\"\\\"\\ud83c\"]", "[\"\\\"\\ufffd\"]");
    fixes("[\"a\",\\ud83c]", NULL);
    fixes("[\"\\\"\",\\ud83c]", NULL);
}

static void test_loadb_lone_surrogates(void **state)
{
    json_error_t err;
    json_t *v = NULL;
    (void)state;
    assert_int_equal(mt_json_loadb(&v, "[\"x\\udc00y\"]", 12, 0, &err), 0);
    assert_string_equal(json_string_value(json_array_get(v, 0)), "x\xef\xbf\xbdy");
    json_decref(v);
    /* Still JSON's rules everywhere else. */
    assert_int_equal(mt_json_loadb(&v, "[\"\\ud83c\\x\"]", 12, 0, &err), MT_EINVAL);
    assert_null(v);
}

/* The id a broken request can still be answered under, or NULL. */
static void id_is(const char *text, const char *want)
{
    json_t *id = mt_json_find_id(text, strlen(text));
    char *got;

    if (!want) {
        if (id)
            print_message("unexpected id in %s\n", text);
        assert_null(id);
        return;
    }
    assert_non_null(id);
    got = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_string_equal(got, want);
    free(got);
    json_decref(id);
}

static void test_find_id(void **state)
{
    (void)state;
    id_is("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\",}", "7");
    id_is(" {\"id\" : \"req-1\" , \"params\":{\"a\":tru", "\"req-1\"");
    id_is("{\"params\":{\"id\":3,\"s\":\"}\\\"\"},\"id\":4,", "4");
    id_is("{\"id\":\"a\\ud83c\",\"x\":", "\"a\xef\xbf\xbd\"");
    id_is("{\"id\":-12}", "-12");
    /* Cut off, or not an integer: no id rather than a wrong one. */
    id_is("{\"id\":12", NULL);
    id_is("{\"id\":\"tool", NULL);
    id_is("{\"id\":4.5,\"method\":", NULL);
    id_is("{\"id\":4e2,\"method\":", NULL);
    id_is("{\"id\":45x}", NULL);
    id_is("{\"id\":null,\"method\":", NULL);
    id_is("{\"id\":[1],\"method\":", NULL);
    /* Two ids are no one's. */
    id_is("{\"id\":1,\"id\":2,", NULL);
    /* Broken before the id: nothing after the break is trusted. */
    id_is("{\"a\" 1,\"id\":2}", NULL);
    id_is("[{\"id\":2}]", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_ascii_byte_and_utf8),
        cmocka_unit_test(test_empty_and_escapes_only),
        cmocka_unit_test(test_escapes_at_every_alignment),
        cmocka_unit_test(test_all_control_bytes),
        cmocka_unit_test(test_fix_surrogates),
        cmocka_unit_test(test_loadb_lone_surrogates),
        cmocka_unit_test(test_find_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The flat tool-input reader: what it takes itself, and what it leaves to jansson. */
#include <string.h>

#include "helpers.h"
#include "lib/input.h"

static int flat(mt_input *in, const char *text)
{
    return mt_input_parse_flat(in, text, strlen(text));
}

static void test_plain_view(void **state)
{
    mt_input in;
    (void)state;
    assert_int_equal(flat(&in, " {\"command\" : \"view\",\n\"path\":\"/memories/a.md\"}\r\n"), 1);
    assert_int_equal(in.arg[MT_IN_COMMAND].type, MT_ARG_STRING);
    assert_int_equal(in.arg[MT_IN_COMMAND].str.len, 4);
    assert_memory_equal(in.arg[MT_IN_COMMAND].str.ptr, "view", 4);
    assert_int_equal(in.arg[MT_IN_PATH].str.len, 14);
    assert_int_equal(in.arg[MT_IN_VIEW_RANGE].type, MT_ARG_ABSENT);
    assert_int_equal(in.has_type, 0);
    assert_null(in.scratch); /* nothing to unescape: strings point into the text */
    mt_input_dispose(&in);
}

static void test_values(void **state)
{
    mt_input in;
    (void)state;
    assert_int_equal(flat(&in, "{\"view_range\":[ 3 ,-1 ],\"insert_line\":-42,\"old_str\":null,"
                               "\"new_str\":false,\"other\":\"x\",\"type\":1}"),
                     1);
    assert_true(in.arg[MT_IN_VIEW_RANGE].is_pair);
    assert_int_equal(in.arg[MT_IN_VIEW_RANGE].pair[0], 3);
    assert_int_equal(in.arg[MT_IN_VIEW_RANGE].pair[1], -1);
    assert_string_equal(in.arg[MT_IN_VIEW_RANGE].kind, "an array");
    assert_int_equal(in.arg[MT_IN_INSERT_LINE].num, -42);
    assert_string_equal(in.arg[MT_IN_INSERT_LINE].kind, "an integer");
    assert_int_equal(in.arg[MT_IN_OLD_STR].type, MT_ARG_NULL);
    assert_string_equal(in.arg[MT_IN_OLD_STR].kind, "null");
    assert_int_equal(in.arg[MT_IN_NEW_STR].type, MT_ARG_OTHER);
    assert_string_equal(in.arg[MT_IN_NEW_STR].kind, "a boolean");
    assert_int_equal(in.has_type, 1);
    mt_input_dispose(&in);
}

static void test_escapes(void **state)
{
    static const char want[] = "a\n\t\"\\/\b\f\r\xc3\xa9\0\xf0\x9f\x98\x80z";
    mt_input in;
    (void)state;
    assert_int_equal(flat(&in, "{\"file_text\":\"a\\n\\t\\\"\\\\\\/\\b\\f\\r\\u00e9\\u0000"
                               "\\ud83d\\ude00z\",\"path\":\"p\"}"),
                     1);
    assert_int_equal(in.arg[MT_IN_FILE_TEXT].str.len, sizeof(want) - 1);
    assert_memory_equal(in.arg[MT_IN_FILE_TEXT].str.ptr, want, sizeof(want) - 1);
    assert_memory_equal(in.arg[MT_IN_PATH].str.ptr, "p", 1);
    mt_input_dispose(&in);
}

/* Everything jansson must decide: bad JSON, shapes the commands never
 * take, and what jansson is told to refuse. */
static void test_left_to_jansson(void **state)
{
    static const char *const texts[] = {
        "",
        "[]",
        "\"view\"",
        "{\"command\":\"view\",\"command\":\"view\"}",
        "{\"a\\u0062\":1}",
        "{\"input\":{\"command\":\"view\"}}",
        "{\"view_range\":[1,2,3]}",
        "{\"view_range\":[1]}",
        "{\"view_range\":[\"1\",2]}",
        "{\"insert_line\":1.0}",
        "{\"insert_line\":1e3}",
        "{\"insert_line\":012}",
        "{\"insert_line\":1234567890123456789}",
        "{\"insert_line\":-}",
        "{\"path\":\"\\ud800\"}",
        "{\"path\":\"\\udc00\"}",
        "{\"path\":\"\\ud800\\u0041\"}",
        "{\"path\":\"\\x\"}",
        "{\"path\":\"\\u12G4\"}",
        "{\"path\":\"a\nb\"}",
        "{\"path\":\"\xc0\xaf\"}",
        "{\"path\":\"\xed\xa0\x80\"}",
        "{\"path\":\"unterminated}",
        "{\"command\":\"view\"} x",
        "{\"command\":\"view\",}",
        "{\"command\" \"view\"}",
        "{\"command\":tru}",
        "{\"command\":nul}",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        mt_input in;
        int rc = flat(&in, texts[i]);
        if (rc != 0)
            print_message("accepted: %s\n", texts[i]);
        assert_int_equal(rc, 0);
        assert_null(in.scratch);
    }
}

static void test_no_text(void **state)
{
    mt_input in;
    (void)state;
    assert_int_equal(mt_input_parse_flat(&in, NULL, 0), 0);
    assert_null(in.scratch);
}

static void test_empty_object(void **state)
{
    mt_input in;
    int k;
    (void)state;
    assert_int_equal(flat(&in, "{ }"), 1);
    for (k = 0; k < MT_IN_COUNT; k++)
        assert_int_equal(in.arg[k].type, MT_ARG_ABSENT);
    mt_input_dispose(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_view),   cmocka_unit_test(test_values),
        cmocka_unit_test(test_escapes),      cmocka_unit_test(test_left_to_jansson),
        cmocka_unit_test(test_empty_object), cmocka_unit_test(test_no_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The flat tool-input reader: what it takes itself, and what it leaves to jansson. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "core/tool_input.h"

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

#define FFFD "\xef\xbf\xbd"

/* A lone UTF-16 surrogate escape (JavaScript and Python write one when text
 * is cut inside an emoji) reads as U+FFFD, as mt_json_loadb reads it: the
 * flat reader takes such inputs itself rather than leave them to jansson. */
static void test_lone_surrogates(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"path\":\"\\ud800\"}", FFFD},
        {"{\"path\":\"\\udc00\"}", FFFD},
        {"{\"path\":\"\\uDBFF\\u0041\"}", FFFD "A"},
        {"{\"path\":\"a\\ud83c\"}", "a" FFFD},
        {"{\"path\":\"\\ude00\\ud83d\"}", FFFD FFFD},
        {"{\"path\":\"\\ud83c\\ud83d\\ude00\"}", FFFD "\xf0\x9f\x98\x80"},
        {"{\"path\":\"\\ud83d\\ude00\\udc00x\"}", "\xf0\x9f\x98\x80" FFFD "x"},
        {"{\"path\":\"\\ud83c\\n\"}", FFFD "\n"},
        /* An escaped backslash, then text: no escape at all. */
        {"{\"path\":\"\\\\ud83c\"}", "\\ud83c"},
        {"{\"path\":\"\\\\\\ud83c\"}", "\\" FFFD},
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mt_input in;
        const mt_str *got = &in.arg[MT_IN_PATH].str;

        assert_int_equal(flat(&in, cases[i].text), 1);
        assert_int_equal(in.arg[MT_IN_PATH].type, MT_ARG_STRING);
        assert_int_equal(got->len, strlen(cases[i].want));
        assert_memory_equal(got->ptr, cases[i].want, got->len);
        mt_input_dispose(&in);
    }
}

/* mt_memory_call, through the flat reader and through jansson (a nested
 * value sends it there): lone surrogates in path, file_text, old_str and
 * new_str land as U+FFFD in the store and in the results. */
static void test_call_lone_surrogates(void **state)
{
    static const char *const extra[] = {"", ",\"extra\":{\"nested\":[1]}"};
    size_t i;
    (void)state;
    for (i = 0; i < 2; i++) {
        mt_test_store ts;
        char json[512];
        char *data;
        size_t len;

        mt_test_store_init(&ts, NULL);
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/cut\\ud83c.md\","
                 "\"file_text\":\"Launch day \\ud83d\\nnext \\udc00 line\\n\"%s}",
                 extra[i]);
        mt_test_expect(ts.mem, json, 0, "File created successfully at: /memories/cut" FFFD ".md");
        data = mt_test_read(&ts, "cut" FFFD ".md", &len);
        assert_non_null(data);
        assert_string_equal(data, "Launch day " FFFD "\nnext " FFFD " line\n");
        free(data);

        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/cut\\ud83c.md\","
                 "\"old_str\":\"next \\udc00\",\"new_str\":\"then \\ud83d\\ude80 \\ude80\"%s}",
                 extra[i]);
        mt_test_expect(ts.mem, json, 0,
                       "The memory file has been edited. Here is the snippet showing the change "
                       "(with line numbers):\n"
                       "     1\tLaunch day " FFFD "\n"
                       "     2\tthen \xf0\x9f\x9a\x80 " FFFD " line");
        data = mt_test_read(&ts, "cut" FFFD ".md", &len);
        assert_string_equal(data, "Launch day " FFFD "\nthen \xf0\x9f\x9a\x80 " FFFD " line\n");
        free(data);

        /* old_str with a lone surrogate that is not there: echoed as U+FFFD. */
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/cut" FFFD ".md\","
                 "\"old_str\":\"\\ud800x\"%s}",
                 extra[i]);
        mt_test_expect(ts.mem, json, 1,
                       "No replacement was performed, old_str `" FFFD "x` did not appear verbatim "
                       "in /memories/cut" FFFD ".md.");
        mt_test_store_free(&ts);
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
        cmocka_unit_test(test_plain_view),      cmocka_unit_test(test_values),
        cmocka_unit_test(test_escapes),         cmocka_unit_test(test_left_to_jansson),
        cmocka_unit_test(test_empty_object),    cmocka_unit_test(test_no_text),
        cmocka_unit_test(test_lone_surrogates), cmocka_unit_test(test_call_lone_surrogates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* mt_json_put_string writes what json_dumps(JSON_COMPACT) writes for a string, faster. */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "lib/json.h"

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

/* The word-at-a-time scan: escapes at every offset within a word, at the
 * ends, and strings of every length around the 8-byte steps, appended to a
 * buffer that already holds text (so the room it reserves is tested too). */
static void test_escapes_at_every_alignment(void **state)
{
    static const char specials[] = {'"', '\\', '\n', '\t', '\x01', '\x1f', 'a', '\x7f'};
    unsigned seed = 12345;
    int round;

    (void)state;
    for (round = 0; round < 4000; round++) {
        char s[80];
        size_t len = (size_t)(round % 70), i;
        json_t *str;
        char *ref;
        mt_buf b = MT_BUF_INIT;

        for (i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_ascii_byte_and_utf8),
        cmocka_unit_test(test_empty_and_escapes_only),
        cmocka_unit_test(test_escapes_at_every_alignment),
        cmocka_unit_test(test_all_control_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

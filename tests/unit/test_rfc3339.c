/* util/rfc3339.h: the one copy of RFC 3339 times and retry-after that
 * memtool server, the API client and the remote store share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <memtool/store.h>

#include "util/api_actor.h"
#include "util/rfc3339.h"

static void test_times(void **state)
{
    char out[MT_RFC3339_SIZE];
    int64_t ms = 0;

    (void)state;
    mt_rfc3339_format(out, 1764392481123);
    assert_string_equal(out, "2025-11-29T05:01:21.123Z");
    assert_int_equal(mt_rfc3339_parse(&ms, "2025-11-29T05:01:21.123Z"), 0);
    assert_int_equal(ms, 1764392481123);
    /* An offset, and a fraction past milliseconds cut. */
    assert_int_equal(mt_rfc3339_parse(&ms, "2025-11-29T07:01:21.1239+02:00"), 0);
    assert_int_equal(ms, 1764392481123);
    assert_int_equal(mt_rfc3339_parse(&ms, "2025-11-29T05:01:21"), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "no time zone"));
    assert_int_equal(mt_rfc3339_parse(&ms, "2025-13-29T05:01:21Z"), MT_EINVAL);
    assert_int_equal(mt_rfc3339_parse(&ms, "2025-11-29T05:01:21Zjunk"), MT_EINVAL);
    assert_int_equal(mt_rfc3339_parse(&ms, NULL), MT_EINVAL);
}

static void test_retry_after(void **state)
{
    char date[64];
    time_t later = time(NULL) + 30;
    struct tm tm;
    double ms;

    (void)state;
    assert_true(mt_retry_after_ms(NULL, NULL) < 0);
    assert_true(mt_retry_after_ms("250", "9") == 250);
    assert_true(mt_retry_after_ms(NULL, "2") == 2000);
    assert_true(mt_retry_after_ms("x", "1.5") == 1500);
    /* No sign, space or hex that strtod would take. */
    assert_true(mt_retry_after_ms(NULL, "-1") < 0);
    assert_true(mt_retry_after_ms(NULL, " 1") < 0);
    assert_true(mt_retry_after_ms(NULL, "0x10") < 0);
    /* An HTTP date: the seconds until then; one passed is no wait. */
    gmtime_r(&later, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    ms = mt_retry_after_ms(NULL, date);
    assert_true(ms > 25000 && ms <= 30000);
    assert_true(mt_retry_after_ms(NULL, "Sun, 06 Nov 1994 08:49:37 GMT") == 0);
}

static void test_actors(void **state)
{
    const char *const actors[] = {"api:apikey_0123", "session:sesn_9", "cli", "mcp:claude"};
    size_t i;

    (void)state;
    /* Each way and back again. */
    for (i = 0; i < sizeof(actors) / sizeof(actors[0]); i++) {
        json_t *by = mt_api_actor_json(actors[i]);
        char *back = mt_api_actor_name(by);
        assert_string_equal(back, actors[i]);
        free(back);
        json_decref(by);
    }
    {
        json_t *by = mt_api_actor_json("external");
        char *back = mt_api_actor_name(by);
        assert_true(json_is_null(by));
        assert_string_equal(back, "external");
        free(back);
        json_decref(by);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_actors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* remote_ids.c: the table of API ids a process meets is of fixed size and
 * finds an id by its key, however many ids a server answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "remote/remote_store.h"

static mt_remote_ids table = MT_REMOTE_IDS_INIT;

static size_t held(void)
{
    size_t i, n = 0;

    for (i = 0; i < MT_REMOTE_IDS_SLOTS; i++)
        n += table.slot[i].api != NULL;
    return n;
}

static void test_bounded(void **state)
{
    char api[64], got[64];
    uint64_t k;
    size_t found = 0;

    (void)state;
    /* Ten times the slots: the table keeps at most its slots. */
    for (k = 1; k <= 10 * MT_REMOTE_IDS_SLOTS; k++) {
        snprintf(api, sizeof(api), "memver_x%llu", (unsigned long long)k);
        mt_remote_ids_put(&table, k * 0x9e3779b97f4a7c15ULL, api);
    }
    assert_true(held() <= MT_REMOTE_IDS_SLOTS);
    /* The id met last is found, and what is found is the id of its key. */
    snprintf(api, sizeof(api), "memver_x%llu", (unsigned long long)(10 * MT_REMOTE_IDS_SLOTS));
    assert_int_equal(mt_remote_ids_get(&table, 10ULL * MT_REMOTE_IDS_SLOTS * 0x9e3779b97f4a7c15ULL,
                                       got, sizeof(got)),
                     1);
    assert_string_equal(got, api);
    for (k = 1; k <= 10 * MT_REMOTE_IDS_SLOTS; k++) {
        if (mt_remote_ids_get(&table, k * 0x9e3779b97f4a7c15ULL, got, sizeof(got))) {
            snprintf(api, sizeof(api), "memver_x%llu", (unsigned long long)k);
            assert_string_equal(got, api);
            found++;
        }
    }
    assert_true(found <= MT_REMOTE_IDS_SLOTS);
    /* An id met again is replaced, not added. */
    mt_remote_ids_put(&table, 7, "memver_a");
    mt_remote_ids_put(&table, 7, "memver_b");
    assert_int_equal(mt_remote_ids_get(&table, 7, got, sizeof(got)), 1);
    assert_string_equal(got, "memver_b");
    /* Too small a buffer: not found, never cut. */
    assert_int_equal(mt_remote_ids_get(&table, 7, got, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

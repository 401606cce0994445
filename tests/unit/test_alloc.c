/*
 * src/util/alloc.c: a big buffer carries the kernel's huge-page advice over
 * every whole 2 MiB page of it ("hg" in its mapping's VmFlags, which the
 * kernel shows whatever transparent_hugepage is set to); a small one does
 * not; both hold what is written to them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/alloc.h"

/* Whether the mapping holding address a is advised for huge pages. */
static int advised(uintptr_t a)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = -1;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[8];
        /* A mapping's first line: "lo-hi perms offset dev inode path". */
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    assert_int_not_equal(found, -1);
    return found;
}

static void test_big_advised(void **state)
{
    const size_t size = 3 * MT_ALLOC_BIG + 12345;
    const uintptr_t huge = (uintptr_t)2 << 20;
    char *p = mt_alloc_big(size), *q;
    uintptr_t from, to;

    (void)state;
    assert_non_null(p);
    memset(p, 'x', size);
    from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    to = ((uintptr_t)p + size) & ~(huge - 1);
    assert_true(to > from);
    assert_true(advised(from));
    assert_true(advised(to - 1));
    /* The part before the first whole huge page is left as it was (a big
     * malloc is a mapping of its own, its block just past the mapping's
     * first bytes: never on a huge page's edge). */
    assert_true((uintptr_t)p < from);
    assert_false(advised((uintptr_t)p));
    assert_int_equal(p[0], 'x');
    assert_int_equal(p[size - 1], 'x');
    /* Under the size, a plain malloc: the heap's pages are never advised. */
    q = mt_alloc_big(1000);
    assert_non_null(q);
    memset(q, 'y', 1000);
    assert_false(advised((uintptr_t)q));
    free(q);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_advised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void *mt_alloc_big(size_t size)
{
    void *p = malloc(size);

#ifdef MADV_HUGEPAGE
    if (p && size >= MT_ALLOC_BIG) {
        uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uintptr_t to = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
        /* Advice only: a kernel without huge pages says EINVAL, and the
         * buffer works as it is. */
        if (to > from)
            (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
    }
#endif
    return p;
}

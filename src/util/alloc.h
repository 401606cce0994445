/*
 * Buffers that hold a whole file: a big one is asked for on huge pages.
 * Reading or editing a 100 MB memory otherwise touches 25,000 fresh 4 KiB
 * pages per buffer, each a page fault and most of the cost of the edit
 * beyond its reads and writes; on 2 MiB pages that is 50 faults.
 */
#ifndef MT_LIB_ALLOC_H
#define MT_LIB_ALLOC_H

#include <stddef.h>

/* Buffers of at least this many bytes are advised. */
#define MT_ALLOC_BIG (4u << 20)

/* malloc(size), then, for a big buffer, transparent huge pages asked for
 * over the part of it that whole huge pages cover (where the kernel offers
 * them on request, as Debian's does; elsewhere nothing changes). Freed with
 * free(). */
void *mt_alloc_big(size_t size);

#endif

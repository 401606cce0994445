/* Libraries loaded at first use (libcurl, libpq, libcrypto): linking them
 * would make every process start pay for their loading. */
#ifndef MT_DL_H
#define MT_DL_H

#include <stddef.h>

/* The symbol `name` of lib into the function pointer at slot (size bytes):
 * 0, or -1 when lib lacks it. dlsym hands back a void *; the conversion to
 * a function pointer is what POSIX requires to work, done through memcpy so
 * ISO C has nothing to object to. */
int mt_dl_resolve(void *lib, const char *name, void *slot, size_t size);

#endif

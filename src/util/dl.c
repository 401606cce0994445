#include "util/dl.h"

#include <dlfcn.h>
#include <string.h>

int mt_dl_resolve(void *lib, const char *name, void *slot, size_t size)
{
    void *sym = dlsym(lib, name);

    if (!sym || size != sizeof(sym))
        return -1;
    memcpy(slot, &sym, size);
    return 0;
}

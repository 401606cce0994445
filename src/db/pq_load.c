#include "db/pq_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <memtool/store.h>

#include "util/dl.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static mt_pq_fns fns;
static int load_rc;
static char load_error[300];

static void load(void)
{
    void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    const char *why;

    if (!lib) {
        why = dlerror();
        snprintf(load_error, sizeof(load_error),
                 "the PostgreSQL store needs libpq, which cannot be loaded (%s); install "
                 "Debian's libpq5 package",
                 why ? why : "libpq.so.5 not found");
        load_rc = MT_ENOSYS;
        return;
    }
#define MT_PQ_RESOLVE(name)                                                                        \
    if (mt_dl_resolve(lib, #name, &fns.name, sizeof(fns.name)) < 0) {                              \
        snprintf(load_error, sizeof(load_error),                                                   \
                 "libpq.so.5 lacks %s, which memtool needs; install Debian's libpq5 package",      \
                 #name);                                                                           \
        load_rc = MT_ENOSYS;                                                                       \
        return;                                                                                    \
    }
    MT_PQ_FNS(MT_PQ_RESOLVE)
#undef MT_PQ_RESOLVE
}

int mt_pq_load(const mt_pq_fns **out)
{
    pthread_once(&load_once, load);
    if (load_rc < 0)
        return mt_error_set(load_rc, "%s", load_error);
    *out = &fns;
    return 0;
}

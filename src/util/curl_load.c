#include "util/curl_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <memtool/store.h>

#include "util/dl.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static mt_curl_fns fns;
static int load_rc;
static char load_error[256];

#define RESOLVE(lib, field, name) mt_dl_resolve(lib, name, &fns.field, sizeof(fns.field))

static void load(void)
{
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    const char *why;
    CURLcode cc;

    if (!lib) {
        why = dlerror();
        snprintf(load_error, sizeof(load_error),
                 "cannot load libcurl (%s); install Debian's libcurl4 package",
                 why ? why : "libcurl.so.4 not found");
        load_rc = MT_ENOSYS;
        return;
    }
    if (RESOLVE(lib, global_init, "curl_global_init") ||
        RESOLVE(lib, easy_init, "curl_easy_init") ||
        RESOLVE(lib, easy_cleanup, "curl_easy_cleanup") ||
        RESOLVE(lib, easy_reset, "curl_easy_reset") ||
        RESOLVE(lib, easy_setopt, "curl_easy_setopt") ||
        RESOLVE(lib, easy_perform, "curl_easy_perform") ||
        RESOLVE(lib, easy_getinfo, "curl_easy_getinfo") ||
        RESOLVE(lib, easy_strerror, "curl_easy_strerror") ||
        RESOLVE(lib, slist_append, "curl_slist_append") ||
        RESOLVE(lib, slist_free_all, "curl_slist_free_all")) {
        snprintf(load_error, sizeof(load_error), "libcurl.so.4 lacks a function memtool needs");
        load_rc = MT_ENOSYS;
        return;
    }
    if ((cc = fns.global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK) {
        snprintf(load_error, sizeof(load_error), "libcurl did not start: %s",
                 fns.easy_strerror(cc));
        load_rc = MT_ERROR;
    }
}

int mt_curl_load(const mt_curl_fns **out)
{
    pthread_once(&load_once, load);
    if (load_rc < 0)
        return mt_error_set(load_rc, "%s", load_error);
    *out = &fns;
    return 0;
}

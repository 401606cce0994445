#include "json.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <memtool/store.h>

static _Thread_local int alloc_failed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static json_malloc_t next_malloc;

static void *tracking_malloc(size_t size)
{
    void *p = next_malloc(size);
    if (!p)
        alloc_failed = 1;
    return p;
}

/* In front of whatever allocator jansson has (its default, or the program's
 * own), which still does the work. A program that sets jansson's allocator
 * after this replaces the tracking; then errno is the only sign left. */
static void install_tracking(void)
{
    json_free_t f;

    json_get_alloc_funcs(&next_malloc, &f);
    json_set_alloc_funcs(tracking_malloc, f);
}

int mt_json_loadb(json_t **out, const char *buf, size_t len, size_t flags, json_error_t *err)
{
    json_t *v;

    pthread_once(&install_once, install_tracking);
    alloc_failed = 0;
    errno = 0;
    v = json_loadb(buf, len, flags, err);
    if (alloc_failed || (!v && errno == ENOMEM)) {
        json_decref(v);
        *out = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory reading JSON");
    }
    *out = v;
    return v ? 0 : MT_EINVAL;
}

const char *mt_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* The memory handle: a store, the options, and the limits. */
#include "memory.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"

void mt_options_init(mt_options *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->version = MT_OPTIONS_VERSION;
    opts->max_file_size = 1024 * 1024;
    opts->max_store_size = 100 * 1024 * 1024;
    opts->max_files = 10000;
    opts->view_limit = 16000;
    opts->durability = MT_DURABILITY_FULL;
}

int mt_durability_parse(mt_durability *out, const char *name)
{
    if (name && strcmp(name, "full") == 0)
        *out = MT_DURABILITY_FULL;
    else if (name && strcmp(name, "file") == 0)
        *out = MT_DURABILITY_FILE;
    else if (name && strcmp(name, "none") == 0)
        *out = MT_DURABILITY_NONE;
    else
        return mt_error_set(MT_EINVAL, "unknown durability '%s': use full, file or none",
                            name ? name : "");
    return 0;
}

static int options_check(const mt_options *o)
{
    if (o->version != MT_OPTIONS_VERSION)
        return mt_error_set(MT_EINVAL, "mt_options version %u is not %d: call mt_options_init",
                            o->version, MT_OPTIONS_VERSION);
    if (o->durability != MT_DURABILITY_FULL && o->durability != MT_DURABILITY_FILE &&
        o->durability != MT_DURABILITY_NONE)
        return mt_error_set(MT_EINVAL, "unknown durability %d", (int)o->durability);
    /* Below this a view could not show its own header and one line. */
    if (o->view_limit < 200)
        return mt_error_set(MT_EINVAL, "the view limit must be at least 200 characters, not %llu",
                            (unsigned long long)o->view_limit);
    return 0;
}

int mt_memory_new(mt_memory **out, mt_store *store, const mt_options *opts)
{
    mt_memory *m;
    mt_options defaults;
    int rc;

    if (out)
        *out = NULL;
    if (!out || !store) {
        rc = mt_error_set(MT_EINVAL, "mt_memory_new needs an out pointer and a store");
        goto fail;
    }
    if (!opts) {
        mt_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = options_check(opts)) < 0)
        goto fail;
    if (!(m = calloc(1, sizeof(*m)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto fail;
    }
    m->store = store;
    m->opts = *opts;
    pthread_mutex_init(&m->usage_lock, NULL);
    *out = m;
    return 0;
fail:
    if (store && store->free)
        store->free(store);
    return rc;
}

int mt_memory_open(mt_memory **out, const char *root, const mt_options *opts)
{
    mt_durability d = opts ? opts->durability : MT_DURABILITY_FULL;
    mt_store *store;
    int rc;

    if (out)
        *out = NULL;
    if (!out)
        return mt_error_set(MT_EINVAL, "mt_memory_open needs an out pointer");
    if (opts && (rc = options_check(opts)) < 0)
        return rc;
    if ((rc = mt_store_fs_open(&store, root, d)) < 0)
        return rc;
    return mt_memory_new(out, store, opts);
}

void mt_memory_free(mt_memory *m)
{
    if (!m)
        return;
    m->store->free(m->store);
    pthread_mutex_destroy(&m->usage_lock);
    free(m);
}

static long long elapsed_ns(const struct timespec *since)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000000000LL + (now.tv_nsec - since->tv_nsec);
}

int mt_limits_check(mt_reply *r, mt_memory *m, mt_str path, uint64_t file_size, int64_t delta_bytes,
                    uint64_t new_files)
{
    const mt_options *o = &m->opts;
    char a[32], b[32];
    int rc = 0;

    if (file_size > o->max_file_size) {
        mt_text_format_count(a, file_size);
        mt_text_format_count(b, o->max_file_size);
        mt_reply_fail(r, "Error: Cannot write ", path, "");
        return mt_buf_printf(&r->text,
                             ": the file would hold %s bytes, over the max file size limit of "
                             "%s bytes; keep memory files small and split large content",
                             a, b) < 0
                   ? MT_ENOMEM
                   : 1;
    }
    pthread_mutex_lock(&m->usage_lock);
    if (!m->usage_known || elapsed_ns(&m->usage_time) > MT_USAGE_TTL_NS) {
        uint64_t bytes, files;
        if (m->store->usage(m->store, &bytes, &files) == 0) {
            m->usage_bytes = bytes;
            m->usage_files = files;
            m->usage_known = 1;
            clock_gettime(CLOCK_MONOTONIC, &m->usage_time);
        }
    }
    if (m->usage_known && delta_bytes > 0 &&
        m->usage_bytes + (uint64_t)delta_bytes > o->max_store_size) {
        mt_text_format_count(a, m->usage_bytes + (uint64_t)delta_bytes);
        mt_text_format_count(b, o->max_store_size);
        rc = 1;
        if (mt_reply_fail(r, "Error: Cannot write ", path, "") < 0 ||
            mt_buf_printf(&r->text,
                          ": the store would hold %s bytes, over the max store size limit of %s "
                          "bytes; delete memory files that are no longer needed",
                          a, b) < 0)
            rc = MT_ENOMEM;
    } else if (m->usage_known && new_files && m->usage_files + new_files > o->max_files) {
        mt_text_format_count(a, m->usage_files);
        mt_text_format_count(b, o->max_files);
        rc = 1;
        if (mt_reply_fail(r, "Error: Cannot create ", path, "") < 0 ||
            mt_buf_printf(&r->text,
                          ": the store holds %s files, the max files limit is %s; delete "
                          "or merge memory files that are no longer needed",
                          a, b) < 0)
            rc = MT_ENOMEM;
    } else if (m->usage_known) {
        /* Reserve what this write adds, so concurrent threads cannot all pass. */
        m->usage_bytes += (uint64_t)(delta_bytes > 0 ? delta_bytes : 0);
        m->usage_files += new_files;
    }
    pthread_mutex_unlock(&m->usage_lock);
    return rc;
}

void mt_usage_note(mt_memory *m, int64_t delta_bytes, int64_t delta_files)
{
    pthread_mutex_lock(&m->usage_lock);
    if (m->usage_known) {
        m->usage_bytes = (int64_t)m->usage_bytes + delta_bytes < 0
                             ? 0
                             : (uint64_t)((int64_t)m->usage_bytes + delta_bytes);
        m->usage_files = (int64_t)m->usage_files + delta_files < 0
                             ? 0
                             : (uint64_t)((int64_t)m->usage_files + delta_files);
    }
    pthread_mutex_unlock(&m->usage_lock);
}

void mt_usage_forget(mt_memory *m)
{
    pthread_mutex_lock(&m->usage_lock);
    m->usage_known = 0;
    pthread_mutex_unlock(&m->usage_lock);
}

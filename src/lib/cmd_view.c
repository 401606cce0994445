/* view: a file with line numbers, or a directory two levels deep. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "path.h"
#include "text.h"
#include "utf8.h"

#define MT_MAX_LINES  999999
#define ASCII_AT_ONCE ((size_t)64 << 10)

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Append one numbered line if it fits in `room` characters; with `cut`, put
 * as much of it as fits instead and set *was_cut. `ascii` says the line is
 * known to be ASCII (as wide as it is long, nothing to replace). Returns
 * characters used, 0 if it did not fit, or MT_ENOMEM. */
static long put_line(mt_buf *out, int *was_cut, const mt_text_prefix *prefix, const char *s,
                     size_t len, size_t room, int cut, int ascii)
{
    size_t plen = prefix->len, width;

    *was_cut = 0;
    if (ascii && plen + len <= room) {
        if (mt_buf_grow(out, plen + len) < 0)
            return MT_ENOMEM;
        memcpy(out->ptr + out->len, prefix->text, plen);
        memcpy(out->ptr + out->len + plen, s, len);
        out->len += plen + len;
        out->ptr[out->len] = '\0';
        return (long)(plen + len);
    }
    width = plen + mt_utf8_width(s, len);
    if (width > room) {
        if (!cut || plen >= room)
            return 0;
        len = mt_utf8_prefix(s, len, room - plen);
        width = plen + mt_utf8_width(s, len);
        *was_cut = 1;
    }
    if (mt_buf_put(out, prefix->text, plen) < 0 || mt_utf8_sanitize(out, s, len) < 0)
        return MT_ENOMEM;
    return (long)width;
}

typedef struct {
    mt_reply *r;
    mt_memory *m;
    mt_str path;
    const int64_t *range;
} view_ctx;

static int view_text(void *payload, const char *data, size_t len, uint64_t off_unused,
                     int last_unused)
{
    view_ctx *v = payload;
    mt_reply *r = v->r;
    mt_str path = v->path;
    const int64_t *range = v->range;
    size_t n, first, last, line, off, used, limit = (size_t)v->m->opts.view_limit;
    mt_text_prefix prefix;
    int rc, cut = 0, ascii;

    (void)off_unused;
    (void)last_unused;
    n = mt_text_line_count(data, len);
    if (n > MT_MAX_LINES) {
        rc = mt_reply_fail(r, "File ", path, " exceeds maximum line limit of 999,999 lines.");
        goto done;
    }
    first = 1;
    last = n;
    if (range) {
        if (n == 0) {
            rc = mt_reply_failf(r,
                                "Error: Invalid view_range [%lld, %lld]: the file is empty; "
                                "view it without view_range",
                                (long long)range[0], (long long)range[1]);
            goto done;
        }
        if (range[0] < 1 || (uint64_t)range[0] > n) {
            rc = mt_reply_failf(r,
                                "Error: Invalid view_range [%lld, %lld]: the file has %zu "
                                "lines; start must be within [1, %zu]",
                                (long long)range[0], (long long)range[1], n, n);
            goto done;
        }
        if (range[1] != -1 && range[1] < range[0]) {
            rc =
                mt_reply_failf(r,
                               "Error: Invalid view_range [%lld, %lld]: the file has %zu "
                               "lines; end must be -1 or within [%lld, %zu]",
                               (long long)range[0], (long long)range[1], n, (long long)range[0], n);
            goto done;
        }
        first = (size_t)range[0];
        if (range[1] != -1 && (uint64_t)range[1] < n)
            last = (size_t)range[1];
    }
    /* Room for the whole answer at once: each line adds at most a 9-byte
     * prefix, and no more than the view limit's worth (4 bytes a code point)
     * is ever shown. */
    if (mt_buf_grow(&r->text,
                    path.len + 64 + min_size(len + 9 * (last - first + 1), 4 * limit + 256)) < 0) {
        rc = MT_ENOMEM;
        goto done;
    }
    if ((rc = mt_reply_ok(r, "Here's the content of ", path, " with line numbers:")) < 0)
        goto done;
    used = mt_utf8_width(r->text.ptr, r->text.len);
    off = mt_text_line_start(data, len, first);
    /* A small file is checked for ASCII once, not line by line; a big one
     * line by line, so a view_range of a few lines does not scan the rest. */
    ascii = len - off <= ASCII_AT_ONCE && mt_utf8_ascii_run(data + off, len - off) == len - off;
    mt_text_prefix_start(&prefix, first);
    for (line = first; line <= last; line++, mt_text_prefix_next(&prefix)) {
        const char *nl = memchr(data + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - data) : len;
        /* Whole lines only, but a first line too long for the limit is cut
         * inside: otherwise it could never be read at all. */
        long w = put_line(&r->text, &cut, &prefix, data + off, end - off,
                          used < limit ? limit - used : 0, line == first,
                          ascii || mt_utf8_ascii_run(data + off, end - off) == end - off);

        if (w < 0) {
            rc = MT_ENOMEM;
            goto done;
        }
        if (w == 0)
            break;
        used += (size_t)w;
        off = end + 1;
        if (cut) {
            line++;
            break;
        }
    }
    if (line <= last || cut) {
        size_t shown = line - 1;
        if (shown < last)
            rc = mt_buf_printf(&r->text,
                               "\n[output truncated at line %zu of %zu; call view with "
                               "view_range [%zu, %zu] to read more]",
                               shown, n, shown + 1, last);
        else
            rc = mt_buf_printf(&r->text,
                               "\n[output truncated inside line %zu of %zu: the line is longer "
                               "than the view limit]",
                               shown, n);
    }
done:
    return rc == MT_ENOMEM ? rc : 0;
}

static int view_file(mt_reply *r, mt_memory *m, mt_str path, const char *rel, const int64_t *range)
{
    view_ctx v = {r, m, path, range};
    uint64_t size;
    int rc = m->store->read(m->store, &size, rel, SIZE_MAX, view_text, &v);

    if (rc == MT_EISDIR || rc == MT_ENOMEM)
        return rc; /* a directory: the caller lists it */
    if (rc == MT_ENOTFOUND)
        return mt_reply_fail(r, "The path ", path, " does not exist. Please provide a valid path.");
    if (rc < 0)
        return mt_reply_store_error(r, rc, path);
    return 0;
}

/* The listing, from at most max_entries entries of the store's; *short_of
 * is set when those ran out before the view limit did. */
static int list_dir(mt_reply *r, mt_memory *m, mt_str path, const char *rel, size_t max_entries,
                    int *short_of)
{
    mt_store_listing l = {NULL, 0, 0, 0};
    const char *skip = NULL; /* a directory left out, with everything beneath it */
    size_t i, shown = 0, used, limit = (size_t)m->opts.view_limit, skip_len = 0;
    size_t base_depth = 0;
    char size[32];
    mt_buf line = MT_BUF_INIT;
    int rc;

    *short_of = 0;
    if ((rc = m->store->list(m->store, &l, rel, 2, max_entries)) < 0) {
        if (rc == MT_ENOTFOUND)
            rc = mt_reply_fail(r, "The path ", path,
                               " does not exist. Please provide a valid path.");
        else
            rc = mt_reply_store_error(r, rc, path);
        goto done;
    }
    for (i = 0; rel[i]; i++)
        base_depth += rel[i] == '/';
    base_depth += *rel ? 1 : 0;
    mt_text_format_size(size, l.size);
    if ((rc = mt_reply_ok(r, "Here're the files and directories up to 2 levels deep in ", path,
                          ", excluding hidden items and node_modules:")) < 0 ||
        (rc = mt_buf_printf(&r->text, "\n%s\t/memories%s%s", size, *rel ? "/" : "", rel)) < 0)
        goto done;
    used = mt_utf8_width(r->text.ptr, r->text.len);
    for (i = 0; i < l.count; i++) {
        const mt_store_entry *e = &l.entries[i];
        const char *name = strrchr(e->path, '/');
        size_t w;

        name = name ? name + 1 : e->path;
        if (skip && strncmp(e->path, skip, skip_len) == 0 && e->path[skip_len] == '/')
            continue;
        /* A name memtool would refuse (made outside it) could forge a listing line. */
        if (!mt_path_name_ok(name, strlen(name)) || base_depth + e->depth > MT_PATH_MAX_DEPTH ||
            strlen(e->path) + 10 > MT_PATH_MAX) {
            skip = e->path;
            skip_len = strlen(e->path);
            continue;
        }
        mt_text_format_size(size, e->size);
        mt_buf_truncate(&line, 0);
        if ((rc = mt_buf_printf(&line, "\n%s\t/memories/%s%s", size, e->path,
                                e->type == MT_NODE_DIR ? "/" : "")) < 0)
            goto done;
        w = mt_utf8_width(line.ptr, line.len);
        if (used + w > limit) {
            rc = mt_buf_printf(&r->text,
                               "\n[listing truncated after %zu entries; view a subdirectory to "
                               "see more]",
                               shown);
            goto done;
        }
        if ((rc = mt_buf_put(&r->text, line.ptr, line.len)) < 0)
            goto done;
        used += w;
        shown++;
    }
    *short_of = l.more;
done:
    mt_buf_dispose(&line);
    mt_store_listing_dispose(&l);
    return rc < 0 ? rc : 0;
}

static int view_dir(mt_reply *r, mt_memory *m, mt_str path, const char *rel)
{
    /* Every listing line is at least 15 characters ("\n0B\t/memories/x"), so
     * that many more entries than the limit holds are enough, unless some are
     * left out for their names; then the store lists them all. Sizes are
     * totals either way. */
    size_t enough = (size_t)m->opts.view_limit / 15 + 1;
    int short_of, rc = list_dir(r, m, path, rel, enough, &short_of);

    if (rc == 0 && short_of)
        rc = list_dir(r, m, path, rel, 0, &short_of);
    return rc;
}

int mt_op_view(mt_reply *r, mt_memory *m, mt_str path, const char *rel, const int64_t *range)
{
    /* Files are what is viewed most: try to read first, and list only when
     * the store says it is a directory (one open instead of a stat and an open). */
    int rc = view_file(r, m, path, rel, range);

    if (rc == MT_EISDIR)
        return view_dir(r, m, path, rel);
    return rc;
}

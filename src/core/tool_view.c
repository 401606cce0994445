/* view: a file with line numbers, or a directory two levels deep. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/bytes.h"
#include "util/json.h"
#include "core/memory.h"
#include "util/path.h"
#include "util/lines.h"
#include "util/utf8.h"

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

/* Files up to this size are read whole and shown straight from the buffer;
 * bigger ones (put there from outside: no write makes them) stream past in
 * pieces, and only the part a view can show is kept. A variable, so the
 * tests can send small files down the streaming way too. */
size_t mt_view_whole = (size_t)4 << 20;
/* However long the header, the first line shown gets this many characters. */
#define FIRST_LINE_MIN 100

/* The range asked for, checked against the file's n lines. Returns 0 with
 * *first and *last set, 1 with the error in r, or MT_ENOMEM. */
static int check_range(mt_reply *r, mt_str path, const int64_t *range, size_t n, size_t *first,
                       size_t *last)
{
    if (n > MT_MAX_LINES)
        return mt_reply_fail(r, "File ", path, " exceeds maximum line limit of 999,999 lines.") < 0
                   ? MT_ENOMEM
                   : 1;
    *first = 1;
    *last = n;
    if (!range)
        return 0;
    if (n == 0)
        return mt_reply_failf(r,
                              "Error: Invalid view_range [%lld, %lld]: the file is empty; "
                              "view it without view_range",
                              (long long)range[0], (long long)range[1]) < 0
                   ? MT_ENOMEM
                   : 1;
    if (range[0] < 1 || (uint64_t)range[0] > n)
        return mt_reply_failf(r,
                              "Error: Invalid view_range [%lld, %lld]: the file has %zu "
                              "lines; start must be within [1, %zu]",
                              (long long)range[0], (long long)range[1], n, n) < 0
                   ? MT_ENOMEM
                   : 1;
    if (range[1] != -1 && range[1] < range[0])
        return mt_reply_failf(r,
                              "Error: Invalid view_range [%lld, %lld]: the file has %zu "
                              "lines; end must be -1 or within [%lld, %zu]",
                              (long long)range[0], (long long)range[1], n, (long long)range[0],
                              n) < 0
                   ? MT_ENOMEM
                   : 1;
    *first = (size_t)range[0];
    if (range[1] != -1 && (uint64_t)range[1] < n)
        *last = (size_t)range[1];
    return 0;
}

/* Copy s up to its first '\n' (or all n bytes) to d; return how many. Blocks
 * are stored whole before the newline is found: d has room for 16 more. */
static inline size_t copy_line(char *d, const char *s, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    while (i + 16 <= n) {
        unsigned nl = mt_bytes_eq16(s + i, '\n');

        mt_bytes_copy16(d + i, s + i);
        if (nl)
            return i + mt_bytes_first(nl);
        i += 16;
    }
    while (i < n && s[i] != '\n') {
        d[i] = s[i];
        i++;
    }
#else
    const char *nl = memchr(s, '\n', n);

    i = nl ? (size_t)(nl - s) : n;
    memcpy(d, s, i);
#endif
    return i;
}

/*
 * The numbered lines first..last of ASCII text that the view has room for
 * whole: each line's end found and its bytes copied in one pass instead of
 * a search and two copies a line. out must have room for the lines and 16
 * bytes more. Returns the line after the last one put, as the line by line
 * way counts it.
 */
static size_t put_ascii_lines(mt_buf *out, mt_text_prefix *prefix, const char *data, size_t len,
                              size_t first, size_t last)
{
    char *o = out->ptr + out->len;
    size_t line, off = 0;

    for (line = first; line <= last && off <= len; line++, mt_text_prefix_next(prefix)) {
        size_t n;

        mt_bytes_copy16(o, prefix->text); /* a prefix is at most 10 bytes here */
        o += prefix->len;
        n = copy_line(o, data + off, len - off);
        o += n;
        off += n + 1;
    }
    out->len = (size_t)(o - out->ptr);
    out->ptr[out->len] = '\0';
    return line;
}

/*
 * put_ascii_lines for a caller that sends the answer on as a JSON string
 * (mt_reply.json): the header (in r->text) escaped, then each line with its
 * prefix's newline and tab escaped as they are written. data must need no
 * other escape (mt_json_plain_lines), and need is what fits_whole counted.
 * Returns 1 with the answer in r->json, 0 (r->json as it was) if the lines
 * ran out before `last`, which the caller's count rules out, or MT_ENOMEM.
 */
static int put_json_lines(mt_reply *r, mt_text_prefix *prefix, const char *data, size_t len,
                          size_t first, size_t last, size_t need)
{
    mt_buf *out = r->json;
    size_t line, off = 0, mark = out->len, lines = last - first + 1;
    char *o, *body;

    /* Two bytes more a line for the escapes, copy_line's 16, the quote. */
    if (mt_json_put_string(out, r->text.ptr, r->text.len) < 0 ||
        mt_buf_grow(out, need + 2 * lines + 16 + 1) < 0) {
        mt_buf_truncate(out, mark);
        return MT_ENOMEM;
    }
    body = o = out->ptr + out->len - 1; /* over the header's closing quote */
    for (line = first; line <= last && off <= len; line++, mt_text_prefix_next(prefix)) {
        size_t n, p = prefix->len; /* "\n%6zu\t", at most 10 bytes here */

        o[0] = '\\';
        o[1] = 'n';
        mt_bytes_copy16(o + 2, prefix->text + 1);
        o[p] = '\\';
        o[p + 1] = 't';
        o += p + 2;
        n = copy_line(o, data + off, len - off);
        o += n;
        off += n + 1;
    }
    if (line <= last) {
        mt_buf_truncate(out, mark);
        return 0;
    }
    /* The plain answer: the header, and each line two bytes shorter. */
    r->plain_len = r->text.len + (size_t)(o - body) - 2 * lines;
    *o++ = '"';
    out->len = (size_t)(o - out->ptr);
    out->ptr[out->len] = '\0';
    r->in_json = 1;
    return 1;
}

/* Whether lines first..last of `len` bytes of ASCII show whole in what the
 * limit leaves after `used`: even if the bytes were all line and each line
 * had the longest prefix. The common view of a small memory. */
static int fits_whole(size_t *need, size_t used, size_t limit, size_t len, size_t first,
                      size_t last)
{
    char longest[32];
    size_t lines = last - first + 1, plen = mt_text_line_prefix(longest, last);
    size_t room = used < limit ? limit - used : 0;

    *need = len + lines * plen;
    return lines <= room / plen && len <= room - lines * plen;
}

/*
 * The numbered lines first..last of a file of n lines, from `data`, which
 * starts at line `first` and holds at least what the view limit can show
 * (the whole rest of the file, or, for a big file, enough of it).
 * known_ascii: the caller has seen that data is all ASCII (0: not known);
 * known_plain: that it has no byte but '\n' a JSON string escapes (1), that
 * it has (0), or not known (-1).
 */
static int render(mt_reply *r, size_t limit, mt_str path, const char *data, size_t len,
                  size_t first, size_t last, size_t n, int known_ascii, int known_plain)
{
    size_t line, off = 0, used, need;
    mt_text_prefix prefix;
    int rc, cut = 0, ascii;

    /* Room for the whole answer at once: each line adds at most a 9-byte
     * prefix, and no more than the view limit's worth (4 bytes a code point)
     * is ever shown. */
    if (mt_buf_grow(&r->text, path.len + 64 +
                                  min_size(len + 9 * (last - first + 1), 4 * limit + 4 * 256)) < 0)
        return MT_ENOMEM;
    if ((rc = mt_reply_ok(r, "Here's the content of ", path, " with line numbers:")) < 0)
        return rc;
    used = mt_utf8_width(r->text.ptr, r->text.len);
    /* A small file is checked for ASCII once, not line by line; a big one
     * line by line, so a view_range of a few lines does not scan the rest. */
    ascii = known_ascii || (len <= ASCII_AT_ONCE && mt_utf8_ascii_run(data, len) == len);
    mt_text_prefix_start(&prefix, first);
    if (ascii && fits_whole(&need, used, limit, len, first, last)) {
        if (r->json && (known_plain < 0 ? mt_json_plain_lines(data, len) : known_plain)) {
            mt_text_prefix start = prefix;
            if ((rc = put_json_lines(r, &prefix, data, len, first, last, need)) != 0)
                return rc < 0 ? rc : 0;
            prefix = start;
        }
        if (mt_buf_grow(&r->text, need + 16) < 0)
            return MT_ENOMEM;
        line = put_ascii_lines(&r->text, &prefix, data, len, first, last);
    } else {
        for (line = first; line <= last; line++, mt_text_prefix_next(&prefix)) {
            const char *nl;
            size_t end, room = used < limit ? limit - used : 0;
            long w;

            /* Never past what was kept: the keeping makes sure the limit stops
             * the view first, and this keeps a mistake there from reading on. */
            if (off > len)
                break;
            nl = memchr(data + off, '\n', len - off);
            end = nl ? (size_t)(nl - data) : len;

            /* Whole lines only, but a first line too long for the limit is cut
             * inside (otherwise it could never be read at all), and it is shown
             * even when a long path made the header alone fill the limit. */
            if (line == first && room < prefix.len + FIRST_LINE_MIN)
                room = prefix.len + FIRST_LINE_MIN;
            w = put_line(&r->text, &cut, &prefix, data + off, end - off, room, line == first,
                         ascii || mt_utf8_ascii_run(data + off, end - off) == end - off);
            if (w < 0)
                return MT_ENOMEM;
            if (w == 0)
                break;
            used += (size_t)w;
            off = end + 1;
            if (cut) {
                line++;
                break;
            }
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
    return rc;
}

typedef struct {
    mt_reply *r;
    mt_memory *m;
    mt_str path;
    const int64_t *range;
    /* For a file that comes in pieces: */
    size_t first;            /* the first line wanted (what range[0] says, or 1) */
    uint64_t newlines;       /* seen so far */
    char *keep;              /* the bytes from line `first` on, as many as a view can show */
    size_t kept, alloc, cap; /* bytes in keep, its size, and the most it takes */
    int started;             /* line `first` has begun */
    char last_byte;          /* of the file so far */
    int too_many;            /* over the line limit: the rest is not read */
    int was_whole;           /* it came in one piece and is answered */
} view_ctx;

static int view_whole(view_ctx *v, const char *data, size_t len)
{
    int ascii, plain = 0; /* the whole file is, so any part of it is */
    size_t n = mt_text_line_count_ascii(data, len, &ascii, v->r->json ? &plain : NULL), first, last;
    int rc = check_range(v->r, v->path, v->range, n, &first, &last);

    v->was_whole = 1;
    if (rc != 0)
        return rc < 0 ? rc : 0;
    {
        size_t off = mt_text_line_start(data, len, first);
        return render(v->r, (size_t)v->m->opts.view_limit, v->path, data + off, len - off, first,
                      last, n, ascii, plain);
    }
}

/*
 * Enough of a big file for the most a view can show: 4 bytes a character
 * (invalid bytes show as one each), the first line's minimum, line endings.
 * With that much, the limit always stops a view before the end of what was
 * kept, so a line cut short by the keeping is never shown as whole. A limit
 * too big for that to be counted keeps everything.
 */
static size_t keep_cap(uint64_t limit)
{
    const size_t extra = 4 * FIRST_LINE_MIN + 1024;

    if (limit > (SIZE_MAX - extra) / 5)
        return SIZE_MAX;
    return 5 * (size_t)limit + extra;
}

/* Keep what a view of a big file can show, counting its lines as they pass.
 * The buffer grows as it fills: a huge limit costs only what the file has. */
static int view_keep(view_ctx *v, const char *data, size_t len)
{
    size_t take = min_size(v->cap - v->kept, len);

    if (take == 0)
        return 0; /* nothing yet (a line begins at a piece's end), or full */
    if (take > v->alloc - v->kept) {
        size_t want = v->alloc > v->cap / 2 ? v->cap : 2 * v->alloc;
        char *p;
        if (want - v->kept < take)
            want = v->kept + take;
        if (!(p = realloc(v->keep, want)))
            return MT_ENOMEM;
        v->keep = p;
        v->alloc = want;
    }
    memcpy(v->keep + v->kept, data, take);
    v->kept += take;
    return 0;
}

static uint64_t count_newlines(const char *p, const char *end)
{
    uint64_t n = 0;

    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

static int view_piece(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    view_ctx *v = payload;
    const char *p = data, *end = data + len;
    int rc = 0;

    if (off == 0 && last)
        return view_whole(v, data, len);
    if (v->started) {
        rc = view_keep(v, data, len);
    } else {
        /* Pass whole lines until line `first` begins, then keep from there. */
        while (v->newlines + 1 < v->first) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) {
                p = end;
                break;
            }
            v->newlines++;
            p = nl + 1;
        }
        if (v->newlines + 1 == v->first) {
            v->started = 1;
            rc = view_keep(v, p, (size_t)(end - p));
        }
    }
    if (rc < 0)
        return rc;
    v->newlines += count_newlines(p, end);
    if (len)
        v->last_byte = data[len - 1];
    /* Over the line limit: the answer is that, and the rest need not be read. */
    if (v->newlines > MT_MAX_LINES) {
        v->too_many = 1;
        return 1;
    }
    return 0;
}

static int view_file(mt_reply *r, mt_memory *m, mt_str path, const char *rel, const int64_t *range)
{
    size_t limit = (size_t)m->opts.view_limit;
    view_ctx v;
    uint64_t size = 0;
    int rc;

    memset(&v, 0, sizeof(v));
    v.r = r;
    v.m = m;
    v.path = path;
    v.range = range;
    v.first = range && range[0] >= 1 ? (size_t)range[0] : 1;
    v.cap = keep_cap(m->opts.view_limit);
    /* A view is an access: recorded before the read, so that a removal of
     * idle files ordered after this view sees it (store.h, touch). It never
     * fails the view; a directory is found so here or by the read. */
    if (*rel && m->store->version >= 5 && m->store->touch)
        mt_memory_touch(m, rel);
    rc = m->store->read(m->store, &size, rel, mt_view_whole, view_piece, &v);
    if (rc == MT_EISDIR || rc == MT_ENOMEM)
        goto done; /* a directory: the caller lists it */
    if (rc == MT_ENOTFOUND) {
        rc = mt_reply_fail(r, "The path ", path, " does not exist. Please provide a valid path.");
        goto done;
    }
    if (rc < 0) {
        rc = mt_reply_store_error(r, rc, path);
        goto done;
    }
    if (!v.was_whole) {
        /* Came in pieces: what was kept is the file from line `first` on,
         * at least as much as the limit can show (4 bytes a character, a
         * line ending for each numbered line). */
        size_t n = (size_t)v.newlines + (v.last_byte != '\n' ? 1 : 0), first, last;
        if (v.too_many)
            n = MT_MAX_LINES + 1; /* what check_range needs to say so */
        if ((rc = check_range(r, path, range, n, &first, &last)) == 0)
            rc = render(r, limit, path, v.keep ? v.keep : "", v.kept, first, last, n, 0, -1);
        rc = rc < 0 ? rc : 0;
    }
done:
    free(v.keep);
    return rc;
}

/* The listing, from at most max_entries entries of the store's; *short_of
 * is set when those ran out before the view limit did. */
static int list_dir(mt_reply *r, mt_memory *m, mt_str path, const char *rel, size_t max_entries,
                    int *short_of)
{
    mt_store_listing l = {NULL, 0, 0, 0, 0};
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
        /* The first entry is shown even when a long path made the header
         * alone fill the limit: the model learns a name to view next. */
        if (used + w > limit && shown > 0) {
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

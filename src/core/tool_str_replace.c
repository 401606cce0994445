/* str_replace: one exact, unique match, replaced under the file's lock. */
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "core/memory.h"
#include "util/lines.h"

typedef struct {
    mt_edit e; /* first: the store hands this payload to mt_edit_run's callback */
    mt_str old_str, new_str;
} replace_ctx;

/* What a result shows at most (SPEC section 3, str_replace): a file with a
 * short old_str on every line, or with megabyte lines, would otherwise answer
 * with megabytes the model cannot use. */
#define ECHO_MAX_CHARS    200 /* of old_str, echoed in the errors */
#define LIST_MAX_LINES    100 /* listed for multiple occurrences */
#define SNIPPET_MAX_CHARS 500 /* of each line in the snippet */
#define SNIPPET_MAX_LINES 40  /* a many-line new_str shows its head and its tail */

/* Echo old_str and close its backquote, cut if it is long. */
static int put_old_str(mt_reply *r, mt_str old_str)
{
    char count[32];
    int cut = mt_text_put_cut(&r->text, old_str.ptr, old_str.len, ECHO_MAX_CHARS);

    if (cut < 0 || mt_reply_put(r, "`") < 0)
        return MT_ENOMEM;
    if (cut) {
        mt_text_format_count(count, old_str.len);
        if (mt_buf_printf(&r->text, " [old_str cut: %s bytes in all]", count) < 0)
            return MT_ENOMEM;
    }
    return 0;
}

/* The distinct lines on which matches start, as mt_text_find_all reports
 * the matches in order: newlines are counted once, from one match to the next. */
typedef struct {
    mt_buf *out;
    const char *data;
    size_t counted; /* newlines before this offset are in `line` */
    size_t line;
    size_t last_line; /* the line of the last match, 0 before the first */
    size_t lines;     /* distinct lines so far */
} line_list;

static int list_line(size_t offset, void *payload)
{
    line_list *l = payload;
    const char *q = l->data + l->counted, *end = l->data + offset;

    while ((q = memchr(q, '\n', (size_t)(end - q))) != NULL) {
        l->line++;
        q++;
    }
    l->counted = offset;
    if (l->line == l->last_line)
        return 0;
    l->last_line = l->line;
    if (++l->lines <= LIST_MAX_LINES &&
        mt_buf_printf(l->out, l->lines == 1 ? "%zu" : ", %zu", l->line) < 0)
        return MT_ENOMEM;
    return 0;
}

/* "1, 3, 7" for the lines on which old_str starts, overlapping matches
 * counted; the search starts at the first match, `hit`. */
static int list_match_lines(mt_buf *out, const char *data, size_t len, size_t hit, mt_str old_str)
{
    line_list l = {out, data, 0, 1, 0, 0};
    size_t more;
    int rc = mt_text_find_all(data, len, hit, old_str.ptr, old_str.len, list_line, &l, NULL);

    if (rc < 0)
        return rc;
    if (l.lines <= LIST_MAX_LINES)
        return 0;
    more = l.lines - LIST_MAX_LINES;
    return mt_buf_printf(out, " and %zu more line%s", more, more == 1 ? "" : "s") < 0 ? MT_ENOMEM
                                                                                      : 0;
}

/* The snippet of new text put at [at, at + ins) of d: lines first..last,
 * four either side of those it is on, and `off`, where line first starts.
 * Newlines are counted up to the edit and a few lines either side of it, not
 * over the whole file (SPEC's line count: a last line without its newline
 * counts). */
typedef struct {
    size_t first, last, off;
} snippet;

static void snippet_find(snippet *sn, const char *d, size_t len, size_t at, size_t ins)
{
    size_t s, e, pe = ins ? at + ins - 1 : at, after = 0, k;
    const char *nl;

    s = mt_text_line_at(d, len, at);
    e = ins ? s + mt_text_line_at(d + at, len - at, ins - 1) - 1 : s;
    sn->first = s > 4 ? s - 4 : 1;
    nl = at ? memrchr(d, '\n', at) : NULL;
    sn->off = nl ? (size_t)(nl - d) + 1 : 0;
    for (k = s; k > sn->first; k--) {
        nl = sn->off > 1 ? memrchr(d, '\n', sn->off - 1) : NULL;
        sn->off = nl ? (size_t)(nl - d) + 1 : 0;
    }
    /* Line e and the four after it exist when five newlines follow pe;
     * fewer, and the file's last line is the snippet's. */
    for (nl = d + pe; after < 5 && pe < len && (nl = memchr(nl, '\n', len - (size_t)(nl - d)));
         nl++)
        after++;
    sn->last = after == 5 ? e + 4 : e - 1 + after + (len > 0 && d[len - 1] != '\n');
    if (sn->last > e + 4)
        sn->last = e + 4;
}

static int replace_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    replace_ctx *c = payload;
    size_t at, new_len, first, last, off;
    snippet sn;
    char *buf;
    int rc;

    at = mt_text_find(data, len, 0, c->old_str.ptr, c->old_str.len);
    if (at == len) {
        c->e.answered = 1;
        if (mt_reply_fail(c->e.r, "No replacement was performed, old_str `", (mt_str){"", 0}, "") <
                0 ||
            put_old_str(c->e.r, c->old_str) < 0 ||
            mt_reply_put(c->e.r, " did not appear verbatim in ") < 0 ||
            mt_reply_str(c->e.r, c->e.path) < 0 || mt_reply_put(c->e.r, ".") < 0)
            return MT_ENOMEM;
        return MT_ERROR;
    }
    /* The common case, a unique match, costs two memmem calls; only a
     * second match pays for the pass that lists them all. */
    if (mt_text_find(data, len, at + 1, c->old_str.ptr, c->old_str.len) != len) {
        c->e.answered = 1;
        if (mt_reply_fail(c->e.r, "No replacement was performed. Multiple occurrences of old_str `",
                          (mt_str){"", 0}, "") < 0 ||
            put_old_str(c->e.r, c->old_str) < 0 || mt_reply_put(c->e.r, " in lines: ") < 0 ||
            list_match_lines(&c->e.r->text, data, len, at, c->old_str) < 0 ||
            mt_reply_put(c->e.r, ". Please ensure it is unique") < 0)
            return MT_ENOMEM;
        return MT_ERROR;
    }
    new_len = len - c->old_str.len + c->new_str.len;
    if ((rc = mt_edit_reserve(&c->e, new_len)) != 0)
        return rc;
    if (!(buf = mt_alloc_big(new_len + 1)))
        return MT_ENOMEM;
    memcpy(buf, data, at);
    memcpy(buf + at, c->new_str.ptr, c->new_str.len);
    memcpy(buf + at + c->new_str.len, data + at + c->old_str.len, len - at - c->old_str.len);
    buf[new_len] = '\0';

    /* The snippet: four lines either side of the replaced text, in the new
     * file (as written: a redaction keeps every line where it was, not
     * every byte). */
    snippet_find(&sn, buf, new_len, at, c->new_str.len);
    first = sn.first;
    last = sn.last;
    /* The file as it would be is what may not hold a secret: one split
     * between old_str and new_str is whole only here. */
    if ((rc = mt_edit_guard(&c->e, &buf, &new_len)) != 0)
        return rc;
    off = c->e.redacted.count ? mt_text_line_start(buf, new_len, first) : sn.off;
    *out = buf;
    *out_len = new_len;
    if (mt_reply_ok(c->e.r, "The memory file has been edited", (mt_str){"", 0}, "") < 0 ||
        mt_guard_note(&c->e.r->text, &c->e.redacted) < 0 ||
        mt_reply_put(c->e.r, ". Here is the snippet showing the change (with line numbers):") < 0)
        return MT_ENOMEM;
    if (first > last)
        return 0;
    if (last - first + 1 <= SNIPPET_MAX_LINES)
        return mt_text_number_lines_at(&c->e.r->text, buf, new_len, off, first, last,
                                       SNIPPET_MAX_CHARS) < 0
                   ? MT_ENOMEM
                   : 0;
    /* A model that wrote a hundred lines knows them: the first and the last
     * twenty are shown, with what was left out said in between. */
    if (mt_text_number_lines_at(&c->e.r->text, buf, new_len, off, first,
                                first + SNIPPET_MAX_LINES / 2 - 1, SNIPPET_MAX_CHARS) < 0 ||
        mt_buf_printf(&c->e.r->text,
                      "\n[snippet cut: lines %zu to %zu not shown; view them with view_range]",
                      first + SNIPPET_MAX_LINES / 2, last - SNIPPET_MAX_LINES / 2) < 0 ||
        mt_text_number_lines_at(
            &c->e.r->text, buf, new_len,
            off + mt_text_line_start(buf + off, new_len - off,
                                     last - SNIPPET_MAX_LINES / 2 + 1 - first + 1),
            last - SNIPPET_MAX_LINES / 2 + 1, last, SNIPPET_MAX_CHARS) < 0)
        return MT_ENOMEM;
    return 0;
}

int mt_op_str_replace(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str old_str,
                      mt_str new_str)
{
    replace_ctx c = {{r, m, path, 0, {0}, NULL, 0}, old_str, new_str};
    int rc = mt_edit_run(&c.e, rel, replace_cb, " does not exist. Please provide a valid path.");

    /* On success the callback has already written the snippet. */
    return rc < 0 ? rc : 0;
}

/* str_replace: one exact, unique match, replaced under the file's lock. */
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "text.h"

typedef struct {
    mt_edit e; /* first: the store hands this payload to mt_edit_run's callback */
    mt_str old_str, new_str;
} replace_ctx;

/* The distinct lines on which old_str starts, overlapping matches counted. */
static int list_match_lines(mt_buf *out, const char *data, size_t len, mt_str old_str)
{
    const char *p = data, *end = data + len, *counted = data;
    size_t line = 1, last_line = 0;
    int first = 1;

    while ((size_t)(end - p) >= old_str.len &&
           (p = memmem(p, (size_t)(end - p), old_str.ptr, old_str.len)) != NULL) {
        const char *q = counted;
        while ((q = memchr(q, '\n', (size_t)(p - q))) != NULL) {
            line++;
            q++;
        }
        counted = p;
        if (line != last_line) {
            if (mt_buf_printf(out, first ? "%zu" : ", %zu", line) < 0)
                return MT_ENOMEM;
            first = 0;
            last_line = line;
        }
        p++;
    }
    return 0;
}

static int replace_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    replace_ctx *c = payload;
    const char *hit, *again;
    size_t at, new_len, s, e, n, first, last;
    char *buf;
    int rc;

    hit = c->old_str.len <= len ? memmem(data, len, c->old_str.ptr, c->old_str.len) : NULL;
    if (!hit) {
        c->e.answered = 1;
        mt_reply_fail(c->e.r, "No replacement was performed, old_str `", c->old_str, "");
        if (mt_reply_put(c->e.r, "` did not appear verbatim in ") < 0 ||
            mt_reply_str(c->e.r, c->e.path) < 0 || mt_reply_put(c->e.r, ".") < 0)
            return MT_ENOMEM;
        return MT_ERROR;
    }
    again = (size_t)(data + len - hit - 1) >= c->old_str.len
                ? memmem(hit + 1, (size_t)(data + len - hit - 1), c->old_str.ptr, c->old_str.len)
                : NULL;
    if (again) {
        c->e.answered = 1;
        mt_reply_fail(c->e.r, "No replacement was performed. Multiple occurrences of old_str `",
                      c->old_str, "` in lines: ");
        if (list_match_lines(&c->e.r->text, data, len, c->old_str) < 0 ||
            mt_reply_put(c->e.r, ". Please ensure it is unique") < 0)
            return MT_ENOMEM;
        return MT_ERROR;
    }
    at = (size_t)(hit - data);
    new_len = len - c->old_str.len + c->new_str.len;
    if ((rc = mt_edit_reserve(&c->e, new_len)) != 0)
        return rc;
    if (!(buf = malloc(new_len + 1)))
        return MT_ENOMEM;
    memcpy(buf, data, at);
    memcpy(buf + at, c->new_str.ptr, c->new_str.len);
    memcpy(buf + at + c->new_str.len, hit + c->old_str.len, len - at - c->old_str.len);
    buf[new_len] = '\0';
    *out = buf;
    *out_len = new_len;

    /* The snippet: four lines either side of the replaced text, in the new file. */
    n = mt_text_line_count(buf, new_len);
    s = mt_text_line_at(buf, new_len, at);
    e = c->new_str.len ? mt_text_line_at(buf, new_len, at + c->new_str.len - 1) : s;
    first = s > 4 ? s - 4 : 1;
    last = e + 4 < n ? e + 4 : n;
    if (mt_reply_ok(c->e.r,
                    "The memory file has been edited. Here is the snippet showing the change "
                    "(with line numbers):",
                    (mt_str){"", 0}, "") < 0 ||
        (first <= last && mt_text_number_lines(&c->e.r->text, buf, new_len, first, last) < 0))
        return MT_ENOMEM;
    return 0;
}

int mt_op_str_replace(mt_reply *r, mt_memory *m, mt_str path, const char *rel, mt_str old_str,
                      mt_str new_str)
{
    replace_ctx c = {{r, m, path, 0}, old_str, new_str};
    int rc = mt_edit_run(&c.e, rel, replace_cb, " does not exist. Please provide a valid path.");

    /* On success the callback has already written the snippet. */
    return rc < 0 ? rc : 0;
}

/* insert: new lines after a given line, under the file's lock. */
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "core/memory.h"
#include "util/lines.h"

typedef struct {
    mt_edit e; /* first: the store hands this payload to mt_edit_run's callback */
    mt_str text;
    int64_t line;
} insert_ctx;

static int insert_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    insert_ctx *c = payload;
    size_t n = mt_text_line_count(data, len), at, text_len = c->text.len, new_len, o = 0;
    int needs_nl, rc;
    char *buf;

    if (c->line < 0 || (uint64_t)c->line > n) {
        c->e.answered = 1;
        return mt_reply_failf(c->e.r,
                              "Error: Invalid `insert_line` parameter: %lld. It should be within "
                              "the range of lines of the file: [0, %zu]",
                              (long long)c->line, n) < 0
                   ? MT_ENOMEM
                   : MT_ERROR;
    }
    /* One trailing newline of the text is dropped; every inserted line ends in one. */
    if (text_len > 0 && c->text.ptr[text_len - 1] == '\n')
        text_len--;
    at = mt_text_line_start(data, len, (size_t)c->line + 1);
    needs_nl = at == len && len > 0 && data[len - 1] != '\n';
    new_len = len + (size_t)needs_nl + text_len + 1;
    if ((rc = mt_edit_reserve(&c->e, new_len)) != 0)
        return rc;
    if (!(buf = mt_alloc_big(new_len + 1)))
        return MT_ENOMEM;
    memcpy(buf, data, at);
    o = at;
    if (needs_nl)
        buf[o++] = '\n';
    memcpy(buf + o, c->text.ptr, text_len);
    o += text_len;
    buf[o++] = '\n';
    memcpy(buf + o, data + at, len - at);
    buf[new_len] = '\0';
    if ((rc = mt_edit_guard(&c->e, &buf, &new_len)) != 0)
        return rc;
    *out = buf;
    *out_len = new_len;
    return 0;
}

int mt_op_insert(mt_reply *r, mt_memory *m, mt_str path, const char *rel, int64_t line, mt_str text)
{
    insert_ctx c = {{r, m, path, 0, {0}, NULL, 0}, text, line};
    int rc = mt_edit_run(&c.e, rel, insert_cb, " does not exist");

    if (rc <= 0)
        return rc;
    if (mt_reply_ok(r, "The file ", path, " has been edited") < 0 ||
        mt_guard_note(&r->text, &c.e.redacted) < 0 || mt_reply_put(r, ".") < 0)
        return MT_ENOMEM;
    return 0;
}

/* insert: new lines after a given line, under the file's lock. */
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "text.h"

typedef struct {
    mt_reply *r;
    mt_memory *m;
    mt_str path, text;
    int64_t line;
    int64_t reserved;
    int answered;
} insert_ctx;

static int insert_cb(char **out, size_t *out_len, const char *data, size_t len, void *payload)
{
    insert_ctx *c = payload;
    size_t n = mt_text_line_count(data, len), at, text_len = c->text.len, new_len, o = 0;
    int needs_nl, rc;
    char *buf;

    if (c->line < 0 || (uint64_t)c->line > n) {
        c->answered = 1;
        return mt_reply_failf(c->r,
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
    c->reserved = (int64_t)(new_len - len);
    if ((rc = mt_limits_check(c->r, c->m, c->path, new_len, c->reserved, 0)) != 0) {
        c->reserved = 0;
        c->answered = 1;
        return rc < 0 ? rc : MT_ELIMIT;
    }
    if (!(buf = malloc(new_len + 1)))
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
    *out = buf;
    *out_len = new_len;
    return 0;
}

int mt_op_insert(mt_reply *r, mt_memory *m, mt_str path, const char *rel, int64_t line, mt_str text)
{
    insert_ctx c = {r, m, path, text, line, 0, 0};
    int rc;

    if (!*rel)
        return mt_reply_fail(r, "Error: The path ", path, " does not exist");
    rc = m->store->edit(m->store, rel, insert_cb, &c);
    if (rc == MT_ENOMEM)
        return rc;
    if (rc < 0) {
        if (rc != MT_ENOTDURABLE)
            mt_usage_note(m, -c.reserved, 0);
        if (c.answered)
            return 0;
        if (rc == MT_ENOTFOUND || rc == MT_EISDIR)
            return mt_reply_fail(r, "Error: The path ", path, " does not exist");
        return mt_reply_store_error(r, rc, path);
    }
    r->is_error = 0;
    mt_buf_truncate(&r->text, 0);
    if (mt_reply_put(r, "The file ") < 0 || mt_reply_str(r, path) < 0 ||
        mt_reply_put(r, " has been edited.") < 0)
        return MT_ENOMEM;
    return 0;
}

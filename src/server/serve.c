/*
 * `memtool serve`: one JSON object per line in, one tool_result block per
 * line out (SPEC section 4). The library decides everything about a tool
 * input or a tool_use block; this file only frames lines and answers the
 * lines that are not JSON objects at all.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/json.h"
#include "core/tool_input.h"
#include "core/memory.h"
#include "util/utf8.h"
#include "server/server.h"

static const char block_head[] = "{\"type\":\"tool_result\",", block_id[] = "\"tool_use_id\":",
                  block_content[] = "\"content\":", block_failed[] = ",\"is_error\":true}",
                  block_ok[] = ",\"is_error\":false}";

/* The end of a tool_result block: is_error, and the closing brace. */
static int block_close(mt_buf *line, int is_error)
{
    return is_error ? mt_buf_put(line, block_failed, sizeof(block_failed) - 1)
                    : mt_buf_put(line, block_ok, sizeof(block_ok) - 1);
}

/* The tool_result block for a result, appended to line straight from its
 * text: the same bytes json_dumps would give for {"type", "tool_use_id",
 * "content", "is_error"} in that order, without copying a file's worth into
 * a json_t. On MT_ENOMEM line is as it was. */
static int result_line(mt_buf *line, const char *text, size_t len, int is_error, const json_t *id)
{
    size_t mark = line->len;

    if (mt_buf_grow(line, len + len / 8 + 64) < 0 ||
        mt_buf_put(line, block_head, sizeof(block_head) - 1) < 0 ||
        (id && (mt_buf_put(line, block_id, sizeof(block_id) - 1) < 0 ||
                mt_json_put_string(line, json_string_value(id), json_string_length(id)) < 0 ||
                mt_buf_putc(line, ',') < 0)) ||
        mt_buf_put(line, block_content, sizeof(block_content) - 1) < 0 ||
        mt_json_put_string(line, text, len) < 0 || block_close(line, is_error) < 0) {
        mt_buf_truncate(line, mark);
        return MT_ENOMEM;
    }
    return MT_OK;
}

/* The same for a flat tool input, run with its answer escaped straight
 * into the line (the library writes a view's answer escaped as it numbers
 * its lines), text being the scratch buffer kept across lines. */
static int run_line(mt_buf *line, mt_buf *text, mt_memory *mem, const mt_input *in)
{
    size_t mark = line->len;
    int is_error = 0;

    if (mt_buf_put(line, block_head, sizeof(block_head) - 1) < 0 ||
        mt_buf_put(line, block_content, sizeof(block_content) - 1) < 0 ||
        mt_memory_run_input_json(line, text, &is_error, mem, in) < 0 ||
        block_close(line, is_error) < 0) {
        mt_buf_truncate(line, mark);
        return MT_ENOMEM;
    }
    return MT_OK;
}

/* A tool_result that carries only an error text: for lines the library
 * never sees. The text may quote the parser, which may quote the line, so
 * it is made valid UTF-8 first. */
static int error_line(mt_buf *line, const char *message, const json_t *id)
{
    mt_buf text = MT_BUF_INIT;
    int rc;

    if (mt_utf8_sanitize(&text, message, strlen(message)) < 0) {
        mt_buf_dispose(&text);
        return MT_ENOMEM;
    }
    rc = result_line(line, text.ptr ? text.ptr : "", text.len, 1, id);
    mt_buf_dispose(&text);
    return rc;
}

/* The answer to a line that is not a JSON object, under the tool_use id the
 * line begins with when one can be read, so the client is not left waiting.
 * A tool_use id is a string; an integer one would be written as "", which
 * answers no one (a whole line with one gets no tool_use_id either). */
static int broken_line(mt_buf *line, const char *message, const char *text, size_t len)
{
    json_t *id = mt_json_find_id(text, len);
    int rc = error_line(line, message, json_is_string(id) ? id : NULL);

    json_decref(id);
    return rc;
}

/* A search line: {"command": "search", "query": ...} (serve's own input,
 * beside the memory tool's six commands), or a tool_use block of the
 * memory_search tool. */
static int is_search(const mt_input *in)
{
    const mt_arg *c = &in->arg[MT_IN_COMMAND];

    return c->type == MT_ARG_STRING && c->str.len == 6 && memcmp(c->str.ptr, "search", 6) == 0;
}

/* Run input as a search if it is one: 1 with res (and *id) set, 0 when it
 * is not a search, or MT_ENOMEM. */
static int search_call(mt_result *res, const json_t **id, mt_memory *mem, const json_t *input)
{
    const char *command = json_string_value(json_object_get(input, "command"));
    const char *type = json_string_value(json_object_get(input, "type"));
    const char *name = json_string_value(json_object_get(input, "name"));
    json_t *args;
    int rc;

    *id = NULL;
    if (type && strcmp(type, "tool_use") == 0 && name && strcmp(name, "memory_search") == 0) {
        *id = json_object_get(input, "id");
        if (!json_is_string(*id))
            *id = NULL;
        args = json_object_get(input, "input");
        rc = mt_memory_search_tool(res, mem, args ? args : json_null());
        return rc < 0 ? MT_ENOMEM : 1;
    }
    if (type || !command || strcmp(command, "search") != 0)
        return 0;
    if (!(args = json_deep_copy(input)))
        return MT_ENOMEM;
    json_object_del(args, "command");
    rc = mt_memory_search_tool(res, mem, args);
    json_decref(args);
    return rc < 0 ? MT_ENOMEM : 1;
}

void mt_serve_init(mt_serve *s, mt_memory *mem)
{
    s->mem = mem;
    s->text = (mt_buf)MT_BUF_INIT;
}

void mt_serve_dispose(mt_serve *s)
{
    mt_buf_dispose(&s->text);
}

/* A result's text bigger than this is not kept for the next line: one big
 * view must not hold its memory for as long as the server runs. */
#define KEEP_TEXT ((size_t)1 << 20)

int mt_serve_append(mt_buf *out, mt_serve *s, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *input = NULL;
    const json_t *id;
    mt_input flat;
    mt_result res;
    char message[JSON_ERROR_TEXT_LENGTH + 128];
    int rc;

    if (mt_server_is_blank(line, len))
        return MT_OK;

    /* A flat tool input, the usual line, is read without a jansson tree and
     * answered from the text buffer kept across lines; anything else (a
     * tool_use block, a nested value, bad JSON) below. */
    if ((rc = mt_input_parse_flat(&flat, line, len)) < 0)
        return MT_ENOMEM;
    if (rc == 1 && !flat.has_type && !is_search(&flat)) {
        /* Running an input fails only for want of memory. */
        rc = run_line(out, &s->text, s->mem, &flat);
        mt_input_dispose(&flat);
        if (s->text.cap > KEEP_TEXT)
            mt_buf_dispose(&s->text);
        return rc < 0 ? MT_ENOMEM : MT_OK;
    }
    mt_input_dispose(&flat);

    /* Duplicate keys are refused: {"command":"view","command":"delete"}
     * must not mean whichever one a parser happens to keep. NUL is allowed
     * so the library, not the parser, says why such a path is refused. */
    if (mt_json_loadb(&input, line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY,
                      &jerr) == MT_ENOMEM)
        return MT_ENOMEM;
    if (!input) {
        snprintf(message, sizeof(message), "Error: the line is not valid JSON: %s (column %d)",
                 jerr.text, jerr.column);
        rc = broken_line(out, message, line, len);
        goto done;
    }
    if (!json_is_object(input)) {
        snprintf(message, sizeof(message),
                 "Error: each line must be a JSON object (a tool input or a tool_use block), "
                 "got %s",
                 mt_json_kind(input));
        rc = error_line(out, message, NULL);
        goto done;
    }

    if ((rc = search_call(&res, &id, s->mem, input)) == 0)
        rc = mt_memory_tool_call(&res, &id, s->mem, input);
    else if (rc == 1)
        rc = 0;
    if (rc == MT_ENOMEM)
        goto done;
    if (rc < 0) {
        snprintf(message, sizeof(message), "Error: %s", mt_error_last()->message);
        rc = error_line(out, message, id);
        goto done;
    }
    rc = result_line(out, res.text, res.len, res.is_error, id);
    mt_result_dispose(&res);
done:
    json_decref(input);
    return rc;
}

/* A line's answer as its own buffer, for callers without one of theirs. */
static int detached(char **out, size_t *out_len, mt_buf *b, int rc)
{
    *out = NULL;
    *out_len = 0;
    if (rc == MT_OK && b->len > 0)
        *out = mt_buf_detach(b, out_len);
    mt_buf_dispose(b);
    return rc;
}

int mt_serve_handle(char **out, size_t *out_len, mt_memory *mem, const char *line, size_t len)
{
    mt_serve s;
    mt_buf b = MT_BUF_INIT;
    int rc;

    mt_serve_init(&s, mem);
    rc = mt_serve_append(&b, &s, line, len);
    mt_serve_dispose(&s);
    return detached(out, out_len, &b, rc);
}

int mt_serve_oversize(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit)
{
    mt_buf b = MT_BUF_INIT;
    char message[160];

    snprintf(message, sizeof(message),
             "Error: the line is longer than the %zu-byte limit (--max-line); split the content "
             "into smaller files",
             limit);
    return detached(out, out_len, &b, broken_line(&b, message, head, head_len));
}

int mt_serve_handler_fn(char **out, size_t *out_len, void *s, const char *line, size_t len)
{
    mt_buf b = MT_BUF_INIT;

    return detached(out, out_len, &b, mt_serve_append(&b, s, line, len));
}

int mt_serve_append_fn(mt_buf *out, void *s, const char *line, size_t len)
{
    return mt_serve_append(out, s, line, len);
}

/* From a JSON tool input to one of the six commands: every parameter is
 * checked here, so the commands see only well-typed values and valid paths. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "json.h"
#include "path.h"

#define VALID_COMMANDS "view, create, str_replace, insert, delete, rename"

/* A string parameter. Returns 0 when found, 1 when absent and optional (or
 * null), 2 when the reply now holds the error, or MT_ENOMEM. */
static int get_str(mt_reply *r, mt_str *out, const json_t *input, const char *name,
                   const char *command, int required)
{
    const json_t *v = json_object_get(input, name);

    out->ptr = "";
    out->len = 0;
    if (!v || (json_is_null(v) && !required)) {
        if (!required)
            return 1;
        return mt_reply_failf(r, "Error: Missing required parameter `%s` for command `%s`", name,
                              command) < 0
                   ? MT_ENOMEM
                   : 2;
    }
    if (!json_is_string(v))
        return mt_reply_failf(r, "Error: Parameter `%s` of command `%s` must be a string, not %s",
                              name, command, mt_json_kind(v)) < 0
                   ? MT_ENOMEM
                   : 2;
    out->ptr = json_string_value(v);
    out->len = json_string_length(v);
    return 0;
}

/* A path parameter, checked against the path rules; *rel is its normalised form. */
static int get_path(mt_reply *r, mt_str *out, char **rel, const json_t *input, const char *name,
                    const char *command)
{
    int rc = get_str(r, out, input, name, command, 1);

    *rel = NULL;
    if (rc != 0)
        return rc;
    switch (mt_path_parse(rel, out->ptr, out->len)) {
    case MT_PATH_OK:
        return 0;
    case MT_PATH_NOT_UNDER_ROOT:
        return mt_reply_fail(r, "Error: Path must start with /memories, got: ", *out, "") < 0
                   ? MT_ENOMEM
                   : 2;
    case MT_PATH_ESCAPE:
        return mt_reply_fail(r, "Error: Path ", *out, " would escape /memories directory") < 0
                   ? MT_ENOMEM
                   : 2;
    default:
        return MT_ENOMEM;
    }
}

static int get_view_range(mt_reply *r, int64_t range[2], int *has, const json_t *input)
{
    const json_t *v = json_object_get(input, "view_range");

    *has = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(json_array_get(v, 0)) ||
        !json_is_integer(json_array_get(v, 1)))
        return mt_reply_failf(r,
                              "Error: Parameter `view_range` of command `view` must be an "
                              "array of two integers [start, end], not %s",
                              json_is_array(v) ? "that array" : mt_json_kind(v)) < 0
                   ? MT_ENOMEM
                   : 2;
    range[0] = json_integer_value(json_array_get(v, 0));
    range[1] = json_integer_value(json_array_get(v, 1));
    *has = 1;
    return 0;
}

static int run_command(mt_reply *r, mt_memory *m, const json_t *input)
{
    const json_t *cmd;
    const char *name;
    mt_str path, path2, s1, s2;
    char *rel = NULL, *rel2 = NULL;
    int64_t range[2];
    int rc, has;

    if (!json_is_object(input))
        return mt_reply_failf(r, "Error: The tool input must be a JSON object, not %s",
                              mt_json_kind(input));
    cmd = json_object_get(input, "command");
    if (!cmd)
        return mt_reply_failf(r, "Error: Missing required parameter `command`. Valid commands "
                                 "are: " VALID_COMMANDS);
    if (!json_is_string(cmd))
        return mt_reply_failf(r, "Error: Parameter `command` must be a string, not %s",
                              mt_json_kind(cmd));
    name = json_string_value(cmd);
    if (strlen(name) != json_string_length(cmd) ||
        (strcmp(name, "view") && strcmp(name, "create") && strcmp(name, "str_replace") &&
         strcmp(name, "insert") && strcmp(name, "delete") && strcmp(name, "rename"))) {
        mt_str shown = {name, json_string_length(cmd)};
        return mt_reply_fail(r, "Error: Unknown command: '", shown,
                             "'. Valid commands are: " VALID_COMMANDS);
    }

    if (strcmp(name, "rename") == 0) {
        if ((rc = get_path(r, &path, &rel, input, "old_path", name)) != 0 ||
            (rc = get_path(r, &path2, &rel2, input, "new_path", name)) != 0)
            goto done;
        rc = mt_op_rename(r, m, path, rel, path2, rel2);
        goto done;
    }
    if ((rc = get_path(r, &path, &rel, input, "path", name)) != 0)
        goto done;
    if (strcmp(name, "view") == 0) {
        if ((rc = get_view_range(r, range, &has, input)) == 0)
            rc = mt_op_view(r, m, path, rel, has ? range : NULL);
    } else if (strcmp(name, "create") == 0) {
        if ((rc = get_str(r, &s1, input, "file_text", name, 1)) == 0)
            rc = mt_op_create(r, m, path, rel, s1);
    } else if (strcmp(name, "str_replace") == 0) {
        if ((rc = get_str(r, &s1, input, "old_str", name, 1)) != 0 ||
            (rc = get_str(r, &s2, input, "new_str", name, 0)) > 1 || rc < 0)
            goto done;
        if (s1.len == 0)
            rc = mt_reply_failf(r, "Error: Parameter `old_str` of command `str_replace` must "
                                   "not be empty");
        else
            rc = mt_op_str_replace(r, m, path, rel, s1, s2);
    } else if (strcmp(name, "insert") == 0) {
        const json_t *line = json_object_get(input, "insert_line");
        if (!line)
            rc = mt_reply_failf(r, "Error: Missing required parameter `insert_line` for command "
                                   "`insert`");
        else if (!json_is_integer(line))
            rc = mt_reply_failf(r,
                                "Error: Parameter `insert_line` of command `insert` must be "
                                "an integer, not %s",
                                mt_json_kind(line));
        else if ((rc = get_str(r, &s1, input, "insert_text", name, 1)) == 0)
            rc = mt_op_insert(r, m, path, rel, json_integer_value(line), s1);
    } else {
        rc = mt_op_delete(r, m, path, rel);
    }
done:
    free(rel);
    free(rel2);
    return rc < 0 ? rc : 0;
}

static int finish(mt_result *res, mt_reply *r, int rc)
{
    if (rc < 0) {
        mt_buf_dispose(&r->text);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    res->is_error = r->is_error;
    res->text = mt_buf_detach(&r->text, &res->len);
    if (!res->text)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

int mt_memory_call_object(mt_result *res, mt_memory *m, const json_t *input)
{
    mt_reply r = {MT_BUF_INIT, 0};

    if (!res)
        return mt_error_set(MT_EINVAL, "mt_memory_call_object needs a result");
    memset(res, 0, sizeof(*res));
    if (!m || !input)
        return mt_error_set(MT_EINVAL, "mt_memory_call_object needs a handle and an input");
    return finish(res, &r, run_command(&r, m, input));
}

int mt_memory_call(mt_result *res, mt_memory *m, const char *json, size_t len)
{
    mt_reply r = {MT_BUF_INIT, 0};
    json_error_t err;
    json_t *input;
    int rc;

    if (!res)
        return mt_error_set(MT_EINVAL, "mt_memory_call needs a result");
    memset(res, 0, sizeof(*res));
    if (!m || (!json && len))
        return mt_error_set(MT_EINVAL, "mt_memory_call needs a handle and an input");
    /* NULs are allowed inside strings (a path with one is refused by the path
     * rules with a clear message); duplicate keys would make intent ambiguous. */
    rc =
        mt_json_loadb(&input, json ? json : "", len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err);
    if (rc == MT_ENOMEM)
        return rc;
    if (!input) {
        /* jansson's words may quote the input's bytes, which need not be UTF-8. */
        mt_str why = {err.text, strlen(err.text)};
        rc = mt_reply_fail(&r, "Error: The tool input is not valid JSON: ", why, "");
        if (rc == 0)
            rc = mt_buf_printf(&r.text, " (line %d, column %d)", err.line, err.column);
        return finish(res, &r, rc);
    }
    rc = run_command(&r, m, input);
    json_decref(input);
    return finish(res, &r, rc);
}

int mt_memory_tool_call(mt_result *res, const json_t **id_out, mt_memory *m, const json_t *block)
{
    mt_reply r = {MT_BUF_INIT, 0};
    const json_t *id = NULL, *type, *name, *input = block;
    int rc;

    memset(res, 0, sizeof(*res));
    *id_out = NULL;
    type = json_is_object(block) ? json_object_get(block, "type") : NULL;
    if (type) {
        id = json_object_get(block, "id");
        name = json_object_get(block, "name");
        input = json_object_get(block, "input");
        if (!json_is_string(type) || strcmp(json_string_value(type), "tool_use") != 0)
            rc = mt_reply_failf(&r, "Error: Expected a tool input or a tool_use block, got a "
                                    "block of another type");
        else if (name && (!json_is_string(name) || strcmp(json_string_value(name), "memory") != 0))
            rc = mt_reply_failf(&r, "Error: This tool_use block is not for the memory tool "
                                    "(its name is not \"memory\")");
        else if (!input)
            rc = mt_reply_failf(&r, "Error: The tool_use block has no `input`");
        else
            rc = run_command(&r, m, input);
        if (id && json_is_string(id))
            *id_out = id;
    } else {
        rc = run_command(&r, m, input);
    }
    return finish(res, &r, rc);
}

int mt_memory_tool_result(json_t **out, mt_memory *m, const json_t *block)
{
    const json_t *id;
    json_t *result = NULL;
    mt_result res;
    int rc;

    if (!out)
        return mt_error_set(MT_EINVAL, "mt_memory_tool_result needs an out pointer");
    *out = NULL;
    if (!m || !block)
        return mt_error_set(MT_EINVAL, "mt_memory_tool_result needs a handle and a block");
    if ((rc = mt_memory_tool_call(&res, &id, m, block)) < 0)
        return rc;
    /* Results are valid UTF-8 by construction (the fuzz target checks it), so
     * jansson need not check a whole file's worth again. */
    result = json_object();
    if (!result || json_object_set_new(result, "type", json_string("tool_result")) < 0 ||
        (id && json_object_set(result, "tool_use_id", (json_t *)id) < 0) ||
        json_object_set_new(result, "content", json_stringn_nocheck(res.text, res.len)) < 0 ||
        json_object_set_new(result, "is_error", json_boolean(res.is_error)) < 0) {
        json_decref(result);
        mt_result_dispose(&res);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    mt_result_dispose(&res);
    *out = result;
    return 0;
}

void mt_result_dispose(mt_result *res)
{
    if (!res)
        return;
    free(res->text);
    memset(res, 0, sizeof(*res));
}

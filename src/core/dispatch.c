/* From a JSON tool input to one of the six commands: every parameter is
 * checked here, so the commands see only well-typed values and valid paths. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "util/json.h"
#include "core/tool_input.h"
#include "util/path.h"
#include "core/audit.h"
#include "util/utf8.h"

#define VALID_COMMANDS "view, create, str_replace, insert, delete, rename"

/* A string parameter. Returns 0 when found, 1 when absent and optional (or
 * null), 2 when the reply now holds the error, or MT_ENOMEM. */
static int get_str(mt_reply *r, mt_str *out, const mt_input *in, mt_input_key key,
                   const char *command, int required)
{
    const mt_arg *a = &in->arg[key];

    out->ptr = "";
    out->len = 0;
    if (a->type == MT_ARG_ABSENT || (a->type == MT_ARG_NULL && !required)) {
        if (!required)
            return 1;
        return mt_reply_failf(r, "Error: Missing required parameter `%s` for command `%s`",
                              mt_input_name(key), command) < 0
                   ? MT_ENOMEM
                   : 2;
    }
    if (a->type != MT_ARG_STRING)
        return mt_reply_failf(r, "Error: Parameter `%s` of command `%s` must be a string, not %s",
                              mt_input_name(key), command, a->kind) < 0
                   ? MT_ENOMEM
                   : 2;
    *out = a->str;
    return 0;
}

/* A path parameter, checked against the path rules; *rel is its normalised form. */
static int get_path(mt_reply *r, mt_str *out, char **rel, const mt_input *in, mt_input_key key,
                    const char *command)
{
    int rc = get_str(r, out, in, key, command, 1);

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

static int get_view_range(mt_reply *r, int64_t range[2], int *has, const mt_input *in)
{
    const mt_arg *a = &in->arg[MT_IN_VIEW_RANGE];

    *has = 0;
    if (a->type == MT_ARG_ABSENT || a->type == MT_ARG_NULL)
        return 0;
    if (!a->is_pair)
        return mt_reply_failf(r,
                              "Error: Parameter `view_range` of command `view` must be an "
                              "array of two integers [start, end], not %s",
                              a->type == MT_ARG_ARRAY ? "that array" : a->kind) < 0
                   ? MT_ENOMEM
                   : 2;
    range[0] = a->pair[0];
    range[1] = a->pair[1];
    *has = 1;
    return 0;
}

/* The command's name as a C string, or NULL when it is none of the six. */
static const char *command_name(mt_str name)
{
    static const char *const commands[] = {"view",   "create", "str_replace",
                                           "insert", "delete", "rename"};
    size_t i;

    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strlen(commands[i]) == name.len && memcmp(name.ptr, commands[i], name.len) == 0)
            return commands[i];
    }
    return NULL;
}

/*
 * expected_sha256 (0 when absent or good, 2 when the reply holds the error):
 * a program's precondition (the model never sends it) for
 * the commands that change an existing file. Checked strictly: a program
 * that sent one relies on it, so a malformed one must not be ignored.
 */
static int get_expected(mt_reply *r, char out[65], const mt_input *in, const char *name)
{
    const mt_arg *a = &in->arg[MT_IN_EXPECTED_SHA256];
    size_t i;

    if (a->type == MT_ARG_ABSENT)
        return 0;
    if (strcmp(name, "view") == 0 || strcmp(name, "create") == 0)
        return mt_reply_failf(r,
                              "Error: Parameter `expected_sha256` does not apply to command `%s`; "
                              "it guards str_replace, insert, delete and rename",
                              name) < 0
                   ? MT_ENOMEM
                   : 2;
    if (a->type != MT_ARG_STRING || a->str.len != 64)
        goto bad;
    for (i = 0; i < 64; i++) {
        int v = mt_hex_value((unsigned char)a->str.ptr[i]);
        if (v < 0)
            goto bad;
        out[i] = "0123456789abcdef"[v];
    }
    out[64] = '\0';
    r->expect_sha256 = out;
    return 0;
bad:
    return mt_reply_failf(r, "Error: Parameter `expected_sha256` must be a SHA-256 in hex (64 "
                             "digits), as `memtool log --json` shows it") < 0
               ? MT_ENOMEM
               : 2;
}

static int run_command(mt_reply *r, mt_memory *m, const mt_input *in)
{
    const mt_arg *cmd = &in->arg[MT_IN_COMMAND];
    const mt_arg *line = &in->arg[MT_IN_INSERT_LINE];
    mt_str path, path2, s1, s2;
    const char *name;
    char *rel = NULL, *rel2 = NULL, expect[65];
    int64_t range[2];
    int rc, has;

    if (cmd->type == MT_ARG_ABSENT)
        return mt_reply_failf(r, "Error: Missing required parameter `command`. Valid commands "
                                 "are: " VALID_COMMANDS);
    if (cmd->type != MT_ARG_STRING)
        return mt_reply_failf(r, "Error: Parameter `command` must be a string, not %s", cmd->kind);
    if (!(name = command_name(cmd->str)))
        return mt_reply_fail(r, "Error: Unknown command: '", cmd->str,
                             "'. Valid commands are: " VALID_COMMANDS);

    r->command = name;
    if ((rc = get_expected(r, expect, in, name)) != 0)
        goto done;
    if (strcmp(name, "rename") == 0) {
        r->path = in->arg[MT_IN_OLD_PATH].str;
        r->new_path = in->arg[MT_IN_NEW_PATH].str;
        if ((rc = get_path(r, &path, &rel, in, MT_IN_OLD_PATH, name)) != 0 ||
            (rc = get_path(r, &path2, &rel2, in, MT_IN_NEW_PATH, name)) != 0)
            goto done;
        rc = mt_op_rename(r, m, path, rel, path2, rel2);
        goto done;
    }
    r->path = in->arg[MT_IN_PATH].str;
    r->bytes_written = in->arg[MT_IN_FILE_TEXT].str.len + in->arg[MT_IN_NEW_STR].str.len +
                       in->arg[MT_IN_INSERT_TEXT].str.len;
    if ((rc = get_path(r, &path, &rel, in, MT_IN_PATH, name)) != 0)
        goto done;
    if (strcmp(name, "view") == 0) {
        if ((rc = get_view_range(r, range, &has, in)) == 0)
            rc = mt_op_view(r, m, path, rel, has ? range : NULL);
    } else if (strcmp(name, "create") == 0) {
        if ((rc = get_str(r, &s1, in, MT_IN_FILE_TEXT, name, 1)) == 0)
            rc = mt_op_create(r, m, path, rel, s1);
    } else if (strcmp(name, "str_replace") == 0) {
        if ((rc = get_str(r, &s1, in, MT_IN_OLD_STR, name, 1)) != 0 ||
            (rc = get_str(r, &s2, in, MT_IN_NEW_STR, name, 0)) > 1 || rc < 0)
            goto done;
        if (s1.len == 0)
            rc = mt_reply_failf(r, "Error: Parameter `old_str` of command `str_replace` must "
                                   "not be empty");
        else
            rc = mt_op_str_replace(r, m, path, rel, s1, s2);
    } else if (strcmp(name, "insert") == 0) {
        if (line->type == MT_ARG_ABSENT)
            rc = mt_reply_failf(r, "Error: Missing required parameter `insert_line` for command "
                                   "`insert`");
        else if (line->type != MT_ARG_INTEGER)
            rc = mt_reply_failf(r,
                                "Error: Parameter `insert_line` of command `insert` must be "
                                "an integer, not %s",
                                line->kind);
        else if ((rc = get_str(r, &s1, in, MT_IN_INSERT_TEXT, name, 1)) == 0)
            rc = mt_op_insert(r, m, path, rel, line->num, s1);
    } else {
        rc = mt_op_delete(r, m, path, rel);
    }
done:
    r->expect_sha256 = NULL; /* it pointed at this frame */
    free(rel);
    free(rel2);
    return rc < 0 ? rc : 0;
}

/* A parsed value as the tool input: it must be an object. */
static int run_json(mt_reply *r, mt_memory *m, const json_t *input)
{
    mt_input in;

    if (!json_is_object(input))
        return mt_reply_failf(r, "Error: The tool input must be a JSON object, not %s",
                              mt_json_kind(input));
    mt_input_from_json(&in, input);
    return run_command(r, m, &in);
}

/* One line in the audit log, when there is one. A failed append leaves
 * the result as it is: the change, if any, was made. */
static void audit(const mt_memory *m, const mt_reply *r)
{
    mt_audit_entry e;

    memset(&e, 0, sizeof(e));
    e.actor = m->actor;
    e.command = r->command;
    e.path = r->path.ptr;
    e.path_len = r->path.len;
    e.new_path = r->new_path.ptr;
    e.new_path_len = r->new_path.len;
    e.is_error = r->is_error;
    e.guard = r->is_error && r->guard[0] ? r->guard : NULL;
    if (!r->is_error && r->command && strcmp(r->command, "view") == 0)
        e.bytes_read = r->in_json ? r->plain_len : r->text.len;
    else if (!r->is_error)
        e.bytes_written = r->bytes_written;
    mt_audit_record(m->audit_fd, &e);
}

static int finish(mt_result *res, mt_reply *r, int rc, const mt_memory *m)
{
    if (rc < 0) {
        mt_buf_dispose(&r->text);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    if (m->audit_fd >= 0)
        audit(m, r);
    res->is_error = r->is_error;
    res->text = mt_buf_detach(&r->text, &res->len);
    if (!res->text)
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

int mt_memory_call_object(mt_result *res, mt_memory *m, const json_t *input)
{
    mt_reply r = MT_REPLY_INIT;

    if (!res)
        return mt_error_set(MT_EINVAL, "mt_memory_call_object needs a result");
    memset(res, 0, sizeof(*res));
    if (!m || !input)
        return mt_error_set(MT_EINVAL, "mt_memory_call_object needs a handle and an input");
    return finish(res, &r, run_json(&r, m, input), m);
}

int mt_memory_call(mt_result *res, mt_memory *m, const char *json, size_t len)
{
    mt_reply r = MT_REPLY_INIT;
    json_error_t err;
    json_t *input;
    mt_input in;
    int rc;

    if (!res)
        return mt_error_set(MT_EINVAL, "mt_memory_call needs a result");
    memset(res, 0, sizeof(*res));
    if (!m || (!json && len))
        return mt_error_set(MT_EINVAL, "mt_memory_call needs a handle and an input");
    /* A flat object, the usual input, needs no jansson tree. */
    if ((rc = mt_input_parse_flat(&in, json, len)) != 0) {
        if (rc < 0)
            return mt_error_set(MT_ENOMEM, "out of memory");
        /* The audit line in finish may point into the input: it goes after. */
        rc = finish(res, &r, run_command(&r, m, &in), m);
        mt_input_dispose(&in);
        return rc;
    }
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
        return finish(res, &r, rc, m);
    }
    rc = finish(res, &r, run_json(&r, m, input), m);
    json_decref(input);
    return rc;
}

int mt_memory_run_input(mt_result *res, mt_memory *m, const mt_input *in)
{
    mt_reply r = MT_REPLY_INIT;

    memset(res, 0, sizeof(*res));
    return finish(res, &r, run_command(&r, m, in), m);
}

int mt_memory_run_input_json(mt_buf *json, mt_buf *text, int *is_error, mt_memory *m,
                             const mt_input *in)
{
    mt_reply r = MT_REPLY_INIT;
    size_t mark = json->len;
    int rc;

    r.text = *text;
    r.json = json;
    mt_buf_truncate(&r.text, 0);
    rc = run_command(&r, m, in);
    if (rc == 0 && !r.in_json)
        rc = mt_json_put_string(json, r.text.ptr ? r.text.ptr : "", r.text.len);
    *text = r.text; /* grown, perhaps: the caller keeps it for the next input */
    if (rc < 0) {
        mt_buf_truncate(json, mark);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    if (m->audit_fd >= 0)
        audit(m, &r);
    *is_error = r.is_error;
    return 0;
}

int mt_memory_tool_call(mt_result *res, const json_t **id_out, mt_memory *m, const json_t *block)
{
    mt_reply r = MT_REPLY_INIT;
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
            rc = run_json(&r, m, input);
        if (id && json_is_string(id))
            *id_out = id;
    } else {
        rc = run_json(&r, m, input);
    }
    return finish(res, &r, rc, m);
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

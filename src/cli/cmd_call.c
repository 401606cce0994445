/* memtool call: one JSON object on stdin, as an agent's client would pass it. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "util/json.h"
#include "server/server.h"

static const char help[] =
    "usage: memtool [options] call < INPUT.json\n\n"
    "Reads ONE JSON object from stdin.\n"
    "  A tool input ({\"command\": \"view\", \"path\": \"/memories\"}): prints the result text\n"
    "  exactly, with no newline added.\n"
    "  A tool_use block ({\"type\":\"tool_use\",\"id\":...,\"name\":\"memory\",\"input\":{...}}):\n"
    "  prints a tool_result block as JSON.\n"
    "The input may be up to 64 MiB (like one serve line); a lone UTF-16 surrogate\n"
    "escape in it reads as U+FFFD.\n"
    "Exit status: 0 success, 1 the tool reported an error (the result is still printed),\n"
    "2 usage error, input that is not one JSON object, or input over 64 MiB.\n";

/* No options but --help; the input comes on stdin. */
static const mt_cli_command call_command = {"call", help, NULL, 0, 0, "the input comes on stdin",
                                            0};

int mt_cmd_call(const mt_cli *cli, int argc, char **argv)
{
    json_error_t err;
    json_t *input = NULL, *result = NULL;
    mt_memory *mem = NULL;
    mt_result res = {NULL, 0, 0};
    char *data = NULL, *out = NULL;
    size_t len;
    int status, is_error, rc;

    if ((status = mt_cli_parse(&call_command, NULL, argc, argv)) >= 0)
        return status;
    status = MT_EXIT_USAGE;
    /* Bounded like a serve line: a runaway producer must not take the memory. */
    if ((rc = mt_cli_read_max(&data, &len, STDIN_FILENO, MT_SERVER_MAX_LINE)) < 0) {
        if (rc == -EFBIG)
            mt_cli_usage_error("call",
                               "the input is longer than the %zu-byte limit of one tool input; "
                               "put large content in several smaller files",
                               (size_t)MT_SERVER_MAX_LINE);
        else
            mt_cli_usage_error("call", "cannot read stdin: %s", strerror(-rc));
        goto done;
    }
    if (mt_json_loadb(&input, data, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err) ==
        MT_ENOMEM) {
        fprintf(stderr, "memtool call: out of memory reading the input\n");
        status = MT_EXIT_TOOL;
        goto done;
    }
    if (!input || !json_is_object(input)) {
        if (input)
            mt_cli_usage_error("call", "the input must be one JSON object, got another JSON value");
        else
            mt_cli_usage_error("call", "the input is not one JSON object: %s (line %d, column %d)",
                               err.text, err.line, err.column);
        goto done;
    }
    if (!(mem = mt_cli_open(cli))) {
        status = MT_EXIT_USAGE;
        goto done;
    }
    status = MT_EXIT_TOOL;
    if (json_object_get(input, "type")) {
        if (mt_memory_tool_result(&result, mem, input) < 0 ||
            !(out = json_dumps(result, JSON_COMPACT))) {
            fprintf(stderr, "memtool call: %s\n", mt_error_last()->message);
            goto done;
        }
        fputs(out, stdout);
        is_error = json_is_true(json_object_get(result, "is_error"));
    } else {
        if (mt_memory_call_object(&res, mem, input) < 0) {
            fprintf(stderr, "memtool call: %s\n", mt_error_last()->message);
            goto done;
        }
        fwrite(res.text, 1, res.len, stdout);
        is_error = res.is_error;
    }
    status = is_error ? MT_EXIT_TOOL : MT_EXIT_OK;
    mt_cli_warn_history("call", mem);
done:
    if (fflush(stdout) != 0)
        status = MT_EXIT_TOOL;
    free(out);
    json_decref(result);
    mt_result_dispose(&res);
    mt_memory_free(mem);
    json_decref(input);
    free(data);
    return status;
}

/* memtool view PATH [--range START:END] */
#include <getopt.h>
#include <jansson.h>
#include <stddef.h>

#include "cli/cli.h"
#include "cli/input.h"
#include "cli/spec.h"

static const char help[] =
    "usage: memtool [options] view PATH [--range START:END] [--json]\n\n"
    "Show a file with line numbers, or a directory two levels deep.\n"
    "  -r, --range START:END  only lines START to END (1-based; END -1 is the last line)\n"
    "  --json                 print {\"content\": RESULT, \"is_error\": BOOL} on one line\n"
    "                         (on stdout either way; exit 1 on an error)\n";

typedef struct {
    mt_cli_range range;
    int json;
} view_args;

static const mt_cli_option view_options[] = {
    {"range", MT_CLI_RANGE, offsetof(view_args, range), 'r', 0, 0},
    {"json", MT_CLI_FLAG, offsetof(view_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command view_command = {"view", help, view_options, 1, 1, NULL, 0};

int mt_cmd_view(const mt_cli *cli, int argc, char **argv)
{
    view_args a = {{0, 0, 0}, 0};
    json_t *input;
    int status;

    if ((status = mt_cli_parse(&view_command, &a, argc, argv)) >= 0)
        return status;
    input = json_pack("{s:s, s:s}", "command", "view", "path", argv[optind]);
    if (input && a.range.given)
        json_object_set_new(input, "view_range", json_pack("[I, I]", a.range.start, a.range.end));
    return mt_cli_run_input_with(cli, "view", input, a.json, 1);
}

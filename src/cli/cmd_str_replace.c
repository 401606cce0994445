/* memtool str-replace PATH OLD NEW */
#include <jansson.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] str-replace [--json] [--] PATH OLD NEW\n\n"
    "Replace the one occurrence of OLD in PATH with NEW (matched as bytes,\n"
    "across lines; NEW may be empty). OLD and NEW are text: options go before\n"
    "PATH, and -- before PATH lets them hold anything, a global option's name too.\n"
    "  --json  print {\"content\": RESULT, \"is_error\": BOOL} on one line (on stdout\n"
    "          either way; exit 1 on an error)\n";

int mt_cmd_str_replace(const mt_cli *cli, int argc, char **argv)
{
    int json, status = mt_cli_args(&json, "str-replace", argc, argv, 3, 3, 1, help);
    char **w = argv + optind;

    if (status >= 0)
        return status;
    return mt_cli_run_input(cli, "str-replace",
                            json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path",
                                      w[0], "old_str", w[1], "new_str", w[2]),
                            json);
}

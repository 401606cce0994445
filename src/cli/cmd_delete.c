/* memtool delete PATH */
#include <jansson.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] delete [--json] PATH\n\n"
    "Delete a file, or a directory and everything in it.\n"
    "  --json  print {\"content\": RESULT, \"is_error\": BOOL} on one line (on stdout\n"
    "          either way; exit 1 on an error)\n";

int mt_cmd_delete(const mt_cli *cli, int argc, char **argv)
{
    int json, status = mt_cli_args(&json, "delete", argc, argv, 1, 1, 0, help);

    if (status >= 0)
        return status;
    return mt_cli_run_input(
        cli, "delete", json_pack("{s:s, s:s}", "command", "delete", "path", argv[optind]), json);
}

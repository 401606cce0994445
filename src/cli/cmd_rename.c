/* memtool rename OLD NEW */
#include <jansson.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] rename [--json] OLD NEW\n\n"
    "Rename or move OLD to NEW, making missing parents; never replaces.\n"
    "  --json  print {\"content\": RESULT, \"is_error\": BOOL} on one line (on stdout\n"
    "          either way; exit 1 on an error)\n";

int mt_cmd_rename(const mt_cli *cli, int argc, char **argv)
{
    int json, status = mt_cli_args(&json, "rename", argc, argv, 2, 2, 0, help);

    if (status >= 0)
        return status;
    return mt_cli_run_input(cli, "rename",
                            json_pack("{s:s, s:s, s:s}", "command", "rename", "old_path",
                                      argv[optind], "new_path", argv[optind + 1]),
                            json);
}

/* memtool rename OLD NEW */
#include <jansson.h>

#include "cli.h"
#include "input.h"

static const char help[] = "usage: memtool [options] rename OLD NEW\n\n"
                           "Rename or move OLD to NEW, making missing parents; never replaces.\n";

int mt_cmd_rename(const mt_cli *cli, int argc, char **argv)
{
    int status = mt_cli_simple_args(argc, argv, 2, help);

    if (status >= 0)
        return status;
    return mt_cli_run_input(cli, "rename",
                            json_pack("{s:s, s:s, s:s}", "command", "rename", "old_path", argv[1],
                                      "new_path", argv[2]));
}

/* memtool delete PATH */
#include <jansson.h>

#include "cli.h"
#include "input.h"

static const char help[] = "usage: memtool [options] delete PATH\n\n"
                           "Delete a file, or a directory and everything in it.\n";

int mt_cmd_delete(const mt_cli *cli, int argc, char **argv)
{
    int status = mt_cli_simple_args(argc, argv, 1, help);

    if (status >= 0)
        return status;
    return mt_cli_run_input(cli, "delete",
                            json_pack("{s:s, s:s}", "command", "delete", "path", argv[1]));
}

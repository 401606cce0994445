/* memtool str-replace PATH OLD NEW */
#include <jansson.h>

#include "cli.h"
#include "input.h"

static const char help[] = "usage: memtool [options] str-replace PATH OLD NEW\n\n"
                           "Replace the one occurrence of OLD in PATH with NEW (matched as "
                           "bytes,\nacross lines; NEW may be empty).\n";

int mt_cmd_str_replace(const mt_cli *cli, int argc, char **argv)
{
    int status = mt_cli_simple_args(argc, argv, 3, help);

    if (status >= 0)
        return status;
    return mt_cli_run_input(cli, "str-replace",
                            json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path",
                                      argv[1], "old_str", argv[2], "new_str", argv[3]));
}

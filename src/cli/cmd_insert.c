/* memtool insert PATH LINE TEXT */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "cli.h"
#include "input.h"

static const char help[] = "usage: memtool [options] insert PATH LINE TEXT\n\n"
                           "Insert TEXT as new lines after line LINE of PATH (0 inserts before "
                           "the first line).\n";

int mt_cmd_insert(const mt_cli *cli, int argc, char **argv)
{
    int status = mt_cli_simple_args(argc, argv, 3, help);
    long long line;
    char *end;

    if (status >= 0)
        return status;
    errno = 0;
    line = strtoll(argv[2], &end, 10);
    if (errno || end == argv[2] || *end)
        return mt_cli_usage_error("insert", "LINE must be a whole number, not '%s'", argv[2]);
    return mt_cli_run_input(cli, "insert",
                            json_pack("{s:s, s:s, s:I, s:s}", "command", "insert", "path", argv[1],
                                      "insert_line", line, "insert_text", argv[3]));
}

/* memtool insert PATH LINE TEXT */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] insert [--json] [--] PATH LINE TEXT\n\n"
    "Insert TEXT as new lines after line LINE of PATH (0 inserts before the first line).\n"
    "TEXT is text: options go before PATH, and -- before PATH lets it hold anything.\n"
    "  --json  print {\"content\": RESULT, \"is_error\": BOOL} on one line (on stdout\n"
    "          either way; exit 1 on an error)\n";

int mt_cmd_insert(const mt_cli *cli, int argc, char **argv)
{
    int json, status = mt_cli_args(&json, "insert", argc, argv, 3, 3, 1, help);
    char **w = argv + optind;
    long long line;
    char *end;

    if (status >= 0)
        return status;
    errno = 0;
    line = strtoll(w[1], &end, 10);
    if (errno || end == w[1] || *end)
        return mt_cli_usage_error("insert", "LINE must be a whole number, not '%s'", w[1]);
    return mt_cli_run_input(cli, "insert",
                            json_pack("{s:s, s:s, s:I, s:s}", "command", "insert", "path", w[0],
                                      "insert_line", line, "insert_text", w[2]),
                            json);
}

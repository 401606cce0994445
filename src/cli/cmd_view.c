/* memtool view PATH [--range START:END] */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] view PATH [--range START:END] [--json]\n\n"
    "Show a file with line numbers, or a directory two levels deep.\n"
    "  -r, --range START:END  only lines START to END (1-based; END -1 is the last line)\n"
    "  --json                 print {\"content\": RESULT, \"is_error\": BOOL} on one line\n"
    "                         (on stdout either way; exit 1 on an error)\n";

static int parse_range(long long range[2], const char *s)
{
    char *end;

    errno = 0;
    range[0] = strtoll(s, &end, 10);
    if (errno || end == s || *end != ':')
        return -1;
    s = end + 1;
    range[1] = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    return 0;
}

int mt_cmd_view(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {{"range", required_argument, NULL, 'r'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    long long range[2] = {0, 0};
    int c, has_range = 0, json = 0, status = MT_EXIT_USAGE;
    json_t *input;

    while ((c = mt_cli_getopt(&status, "view", argc, argv, "r:h", longopts, help)) > 0) {
        if (c == 'j') {
            json = 1;
            continue;
        }
        if (parse_range(range, optarg) < 0)
            return mt_cli_usage_error("view", "--range takes START:END, e.g. 1:20 or 5:-1");
        has_range = 1;
    }
    if (c == 0)
        return status;
    if (argc - optind != 1)
        return mt_cli_usage_error("view", "takes one PATH; see memtool view --help");
    input = json_pack("{s:s, s:s}", "command", "view", "path", argv[optind]);
    if (input && has_range)
        json_object_set_new(input, "view_range", json_pack("[I, I]", range[0], range[1]));
    return mt_cli_run_input_with(cli, "view", input, json, 1);
}

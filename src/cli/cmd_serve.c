/* memtool serve: JSON lines in, tool_result blocks out, until end of input. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "server/server.h"

static const char help[] =
    "usage: memtool [options] serve [--max-line BYTES]\n\n"
    "Answers tool calls for other programs, one JSON object per line on stdin:\n"
    "  a tool input   {\"command\":\"view\",\"path\":\"/memories\"}\n"
    "  or a tool_use block "
    "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"memory\",\"input\":{...}}\n"
    "Each line gets exactly one line on stdout, in order, flushed at once: the tool_result\n"
    "block as compact JSON, {\"type\":\"tool_result\",\"tool_use_id\":...,\"content\":...,\n"
    "\"is_error\":...} (tool_use_id only when the input had an id). Blank lines are skipped;\n"
    "a line that is not a JSON object gets an error result and serving goes on.\n"
    "Many serve processes may share one store. Exits 0 at end of input.\n\n"
    "Options:\n"
    "  --max-line BYTES  longest line accepted (default 64M; K, M, G suffixes); a longer\n"
    "                    line is answered with an error and skipped\n";

int mt_cmd_serve(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"max-line", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mt_server_handler h;
    mt_memory *mem;
    size_t max_line = 0;
    int c, rc;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            return MT_EXIT_OK;
        }
        if (c != 'l' || mt_server_parse_size(&max_line, optarg) < 0) {
            fputs(help, stderr);
            return MT_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return mt_cli_usage_error("serve", "takes no arguments (requests come on stdin)");

    /* A client that goes away must end the loop with an error, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_TOOL;
    h.handle = mt_serve_handler_fn;
    h.oversize = mt_serve_oversize;
    h.ctx = mem;
    h.fallback = MT_SERVE_FALLBACK;
    rc = mt_server_run(STDIN_FILENO, STDOUT_FILENO, &h, max_line);
    if (rc < 0)
        fprintf(stderr, "memtool serve: %s\n", mt_error_last()->message);
    mt_memory_free(mem);
    return rc < 0 ? MT_EXIT_TOOL : MT_EXIT_OK;
}

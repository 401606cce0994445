/* memtool mcp: a Model Context Protocol server on stdin and stdout. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "server/server.h"

static const char help[] =
    "usage: memtool [options] mcp [--max-line BYTES]\n\n"
    "A Model Context Protocol server over stdio: newline-delimited JSON-RPC 2.0 on stdin\n"
    "and stdout (stdout carries the protocol only; messages go to stderr). It offers two\n"
    "tools on the store: `memory` (view, create, str_replace, insert, delete, rename) and\n"
    "the read-only `memory_view`. Protocol revisions 2024-11-05 to 2025-11-25 (initialize\n"
    "handshake) and 2026-07-28 (stateless, server/discover) are served. Exits 0 at end\n"
    "of input.\n\n"
    "Register it with Claude Code:\n"
    "  claude mcp add memtool -- memtool --root ~/.local/share/memtool/memories mcp\n\n"
    "Options:\n"
    "  --max-line BYTES  longest message accepted (default 64M; K, M, G suffixes); a longer\n"
    "                    one is answered with an error and skipped\n";

int mt_cmd_mcp(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"max-line", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mt_server_handler h;
    mt_memory *mem;
    mt_mcp mcp;
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
        return mt_cli_usage_error("mcp", "takes no arguments (messages come on stdin)");

    /* A client that goes away must end the loop with an error, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_TOOL;
    mt_mcp_init(&mcp, mem);
    h.handle = mt_mcp_handler_fn;
    h.oversize = mt_mcp_oversize;
    h.ctx = &mcp;
    h.fallback = MT_MCP_FALLBACK;
    rc = mt_server_run(STDIN_FILENO, STDOUT_FILENO, &h, max_line);
    if (rc < 0)
        fprintf(stderr, "memtool mcp: %s\n", mt_error_last()->message);
    mt_memory_free(mem);
    return rc < 0 ? MT_EXIT_TOOL : MT_EXIT_OK;
}

/* memtool mcp: a Model Context Protocol server on stdin and stdout. */
#include "cli/serve_stdio.h"

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

/* No --actor: changes are recorded as made by "mcp:<client name>". */
static int name_actor;

static void bind_mcp(mt_server_handler *h, mt_memory *mem, void *state)
{
    mt_mcp_init(state, mem);
    ((mt_mcp *)state)->name_actor = name_actor;
    h->handle = mt_mcp_handler_fn;
    h->oversize = mt_mcp_oversize;
    h->ctx = state;
    h->fallback = MT_MCP_FALLBACK;
}

int mt_cmd_mcp(const mt_cli *cli, int argc, char **argv)
{
    mt_mcp mcp;

    name_actor = !cli->actor_given;
    return mt_cli_serve_stdio(cli, argc, argv, "mcp", help, bind_mcp, &mcp);
}

/* memtool serve: JSON lines in, tool_result blocks out, until end of input. */
#include "cli/serve_stdio.h"

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

static void bind_serve(mt_server_handler *h, mt_memory *mem, void *state)
{
    mt_serve_init(state, mem);
    h->handle = mt_serve_handler_fn;
    h->append = mt_serve_append_fn;
    h->oversize = mt_serve_oversize;
    h->ctx = state;
    h->fallback = MT_SERVE_FALLBACK;
}

int mt_cmd_serve(const mt_cli *cli, int argc, char **argv)
{
    mt_serve s;
    int rc;

    mt_serve_init(&s, NULL); /* bound to the handle once the store is open */
    rc = mt_cli_serve_stdio(cli, argc, argv, "serve", help, bind_serve, &s);
    mt_serve_dispose(&s);
    return rc;
}

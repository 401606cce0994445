/* What `serve` and `mcp` share: options, the store, a line server on stdio. */
#ifndef MT_CLI_SERVE_STDIO_H
#define MT_CLI_SERVE_STDIO_H

#include "cli/cli.h"
#include "server/server.h"

/* Fill the handler for the opened store; `state` is the caller's per-connection state. */
typedef void (*mt_cli_bind_fn)(mt_server_handler *h, mt_memory *mem, void *state);

/* Parse [--max-line BYTES] and --help, open the store, and answer stdin's
 * lines on stdout until end of input. Returns the exit status. */
int mt_cli_serve_stdio(const mt_cli *cli, int argc, char **argv, const char *name, const char *help,
                       mt_cli_bind_fn bind, void *state);

#endif

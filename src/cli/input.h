/* Turning a command line into a tool input. */
#ifndef MT_CLI_INPUT_H
#define MT_CLI_INPUT_H

#include <jansson.h>

#include "cli/cli.h"

/* Run a tool input built from the command line (taking the reference; NULL
 * means it could not be built, e.g. an argument that is not valid UTF-8) and
 * print the result for a person. Returns the exit status. */
int mt_cli_run_input(const mt_cli *cli, const char *name, json_t *input, int json);
/* The same; reads: the input only reads, and the store (and tenant) must
 * exist (mt_cli_open_read). */
int mt_cli_run_input_with(const mt_cli *cli, const char *name, json_t *input, int json, int reads);

/* The usual shape of a subcommand: --help, --json (json NULL: not taken) and
 * from min to max words, left in argv[optind..argc-1]. With text set the
 * words may be any text (str-replace, insert): options come before them, and
 * a global option among them is refused unless "--" precedes the words.
 * max 0: a word is refused as "takes no arguments". Returns -1 to go on,
 * else the exit status. */
int mt_cli_args(int *json, const char *name, int argc, char **argv, int min, int max, int text,
                const char *help);

/* Print o (taking the reference; NULL: out of memory) as one compact line
 * and flush it; a write that fails (ENOSPC, EPIPE) is named on stderr.
 * Returns the exit status. */
int mt_cli_print_json(const char *name, json_t *o);
/* The same with jansson's dump flags (JSON_COMPACT and others). */
int mt_cli_print_json_with(const char *name, json_t *o, size_t flags);

/* o's "content": data as a JSON string, or, when it is not UTF-8, null and
 * "content_base64". Returns 0 or -1 (out of memory). */
int mt_cli_json_set_bytes(json_t *o, const char *data, size_t len);

#endif

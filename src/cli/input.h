/* Turning a command line into a tool input. */
#ifndef MT_CLI_INPUT_H
#define MT_CLI_INPUT_H

#include <jansson.h>

#include "cli.h"

/* Run a tool input built from the command line (taking the reference; NULL
 * means it could not be built, e.g. an argument that is not valid UTF-8) and
 * print the result for a person. Returns the exit status. */
int mt_cli_run_input(const mt_cli *cli, const char *name, json_t *input);
/* The same; reads: the input only reads, and the store (and tenant) must
 * exist (mt_cli_open_read). */
int mt_cli_run_input_with(const mt_cli *cli, const char *name, json_t *input, int reads);

/* The usual shape of a subcommand without options: --help, then exactly
 * `nargs` arguments. Returns -1 to go on, else the exit status. */
int mt_cli_simple_args(int argc, char **argv, int nargs, const char *help);

/* The same for a subcommand whose only option is --json, and no arguments. */
int mt_cli_json_args(int *json, const char *name, int argc, char **argv, const char *help);

#endif

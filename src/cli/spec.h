/* A subcommand stated as data: its options, words and help, read by one
 * parser, so that every command's command line behaves alike. */
#ifndef MT_CLI_SPEC_H
#define MT_CLI_SPEC_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    MT_CLI_FLAG = 1, /* int, set to 1 */
    MT_CLI_STRING,   /* const char *, the value as given */
    MT_CLI_DURATION, /* mt_cli_duration ("30d", "1d12h") */
    MT_CLI_VERSION,  /* int64_t, a version id */
    MT_CLI_RANGE,    /* mt_cli_range: START:END, as view_range takes it */
    MT_CLI_NUMBER,   /* uint64_t, a whole number from the option's min to its max */
    MT_CLI_COLOR     /* int: auto (-1), always (1) or never (0), for mt_cli_color_resolve */
} mt_cli_kind;

/* A duration as read, and as given (for messages); text NULL: not given. */
typedef struct {
    uint64_t ms;
    const char *text;
} mt_cli_duration;

/* Lines START to END as given (END -1: the last); given: the option was there. */
typedef struct {
    long long start, end;
    int given;
} mt_cli_range;

/* One option: --name (or --name=V / --name V when it takes a value), and
 * where its value goes in the command's options struct; short_name (0:
 * none) is its one-letter form (-r V); min and max bound an MT_CLI_NUMBER. */
typedef struct {
    const char *name;
    mt_cli_kind kind;
    size_t offset;
    char short_name;
    uint64_t min, max;
} mt_cli_option;

typedef struct {
    const char *name; /* as typed: "gc", "str-replace" */
    const char *help; /* --help's text; its lines up to the first blank one are the usage */
    const mt_cli_option *options; /* ends with {NULL}; --help is always there */
    int min_words, max_words;     /* left in argv[optind..argc-1] */
    /* With max_words 0, what "takes no arguments" goes on to say (NULL: nothing). */
    const char *no_words;
    /* The words are text (str-replace, insert): options only before them,
     * and a global option's name among them refused unless "--" precedes. */
    int text;
} mt_cli_command;

/* Fill opts (a struct the command's options point into) from argv, the same
 * grammar for every command; errors are printed naming the option and the
 * fix. Returns -1 to go on, else the exit status (0 after --help). */
int mt_cli_parse(const mt_cli_command *cmd, void *opts, int argc, char **argv);

#endif

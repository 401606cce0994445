/* The one parser of a subcommand's command line, read from its mt_cli_command. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/color.h"
#include "cli/input.h"
#include "cli/spec.h"
#include "util/lines.h"

/* More options than any command has: the table is built on the stack. */
#define MAX_OPTIONS 32

/* START:END into *r (view_range's two numbers). */
static int parse_range(mt_cli_range *r, const char *s)
{
    char *end;

    errno = 0;
    r->start = strtoll(s, &end, 10);
    if (errno || end == s || *end != ':')
        return -1;
    s = end + 1;
    r->end = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    r->given = 1;
    return 0;
}

/* Store optarg in the field o names; a value that does not parse is a usage
 * error naming the option. Returns -1 to go on, else the exit status. */
static int store_value(const mt_cli_command *cmd, const mt_cli_option *o, void *opts,
                       const char *value)
{
    char *field = (char *)opts + o->offset;

    switch (o->kind) {
    case MT_CLI_FLAG:
        *(int *)(void *)field = 1;
        return -1;
    case MT_CLI_STRING:
        *(const char **)(void *)field = value;
        return -1;
    case MT_CLI_DURATION:
        if (mt_cli_parse_duration(&((mt_cli_duration *)(void *)field)->ms, value) < 0)
            return mt_cli_usage_error(cmd->name, "--%s: %s", o->name, mt_error_last()->message);
        ((mt_cli_duration *)(void *)field)->text = value;
        return -1;
    case MT_CLI_VERSION:
        return mt_cli_parse_version((int64_t *)(void *)field, cmd->name, value) != 0 ? MT_EXIT_USAGE
                                                                                     : -1;
    case MT_CLI_RANGE:
        if (parse_range((mt_cli_range *)(void *)field, value) < 0)
            return mt_cli_usage_error(cmd->name, "--%s takes START:END, e.g. 1:20 or 5:-1",
                                      o->name);
        return -1;
    case MT_CLI_NUMBER: {
        uint64_t n;

        /* Digits only: a size's K, M or G is no count. */
        if (mt_text_parse_size(&n, value) < 0 || strpbrk(value, "KMGkmg") || n < o->min ||
            n > o->max)
            return mt_cli_usage_error(
                cmd->name, "--%s needs a number from %" PRIu64 " to %" PRIu64 ", not '%s'", o->name,
                o->min, o->max, value);
        *(uint64_t *)(void *)field = n;
        return -1;
    }
    case MT_CLI_COLOR:
        if ((*(int *)(void *)field = mt_cli_color_parse(value)) == -2)
            return mt_cli_usage_error(cmd->name, "--%s takes auto, always or never, not '%s'",
                                      o->name, value);
        return -1;
    }
    return -1;
}

/* Whether arg is "--NAME" of one of cmd's options. */
static int own_option(const mt_cli_command *cmd, const char *arg)
{
    const mt_cli_option *o;

    if (strncmp(arg, "--", 2) != 0)
        return 0;
    for (o = cmd->options; o && o->name; o++)
        if (strcmp(arg + 2, o->name) == 0)
            return 1;
    return 0;
}

/* Words of text may hold anything but a global option's name (most likely
 * one put in the wrong place) unless "--" came before them. */
static int check_text(const mt_cli_command *cmd, int argc, char **argv, int words)
{
    int i, status;

    if (optind > 1 && strcmp(argv[optind - 1], "--") == 0)
        return -1;
    for (i = optind; i < argc; i++) {
        if ((status =
                 mt_cli_refuse_global(cmd->name, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) >= 0)
            return status;
        if (words > cmd->max_words && own_option(cmd, argv[i]))
            return mt_cli_usage_error(cmd->name,
                                      "options go before the words, which are text: memtool "
                                      "%s %s [--] ...",
                                      cmd->name, argv[i]);
    }
    return -1;
}

int mt_cli_parse(const mt_cli_command *cmd, void *opts, int argc, char **argv)
{
    struct option longopts[MAX_OPTIONS + 2];
    char shortopts[2 * MAX_OPTIONS + 3];
    size_t i, n = 0;
    int c, words, status = MT_EXIT_USAGE;

    for (; cmd->options && cmd->options[n].name; n++) {
        if (n == MAX_OPTIONS)
            return mt_cli_usage_error(cmd->name, "has too many options to read");
        longopts[n].name = cmd->options[n].name;
        longopts[n].has_arg = cmd->options[n].kind == MT_CLI_FLAG ? no_argument : required_argument;
        longopts[n].flag = NULL;
        longopts[n].val = (int)n + 1; /* 1..32: never 'h', '?' or ':' */
    }
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    /* The one-letter forms: after 'h', each with ':' when it takes a value. */
    snprintf(shortopts, sizeof(shortopts), "%sh", cmd->text ? "+" : "");
    for (i = 0; i < n; i++) {
        size_t len = strlen(shortopts);

        if (!cmd->options[i].short_name || len + 3 > sizeof(shortopts))
            continue;
        shortopts[len] = cmd->options[i].short_name;
        shortopts[len + 1] = cmd->options[i].kind == MT_CLI_FLAG ? '\0' : ':';
        shortopts[len + 2] = '\0';
    }
    /* Words of text may be anything, --help aside: it is looked for first. */
    if (cmd->text && mt_cli_wants_help(argc, argv)) {
        fputs(cmd->help, stdout);
        return MT_EXIT_OK;
    }
    while ((c = mt_cli_getopt(&status, cmd->name, argc, argv, shortopts, longopts, cmd->help)) >
           0) {
        if (c > (int)n) {
            /* A one-letter form: its option. */
            for (i = 0; i < n && cmd->options[i].short_name != c; i++)
                ;
            if (i == n)
                continue;
        } else {
            i = (size_t)c - 1;
        }
        if ((status = store_value(cmd, &cmd->options[i], opts, optarg)) >= 0)
            return status;
    }
    if (c == 0)
        return status;
    words = argc - optind;
    if (cmd->text && (status = check_text(cmd, argc, argv, words)) >= 0)
        return status;
    if (cmd->max_words == 0 && words > 0)
        return mt_cli_usage_error(cmd->name, "takes no arguments%s%s", cmd->no_words ? ": " : "",
                                  cmd->no_words ? cmd->no_words : "");
    if (words < cmd->min_words || words > cmd->max_words) {
        fputs(cmd->help, stderr);
        return MT_EXIT_USAGE;
    }
    return -1;
}

int mt_cli_args(int *json, const char *name, int argc, char **argv, int min, int max, int text,
                const char *help)
{
    static const mt_cli_option with_json[] = {
        {"json", MT_CLI_FLAG, 0, 0, 0, 0},
        {NULL, 0, 0, 0, 0, 0},
    };
    const mt_cli_command cmd = {name, help, json ? with_json : NULL, min, max, NULL, text};
    int on = 0, status = mt_cli_parse(&cmd, &on, argc, argv);

    if (json)
        *json = on;
    return status;
}

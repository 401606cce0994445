/* memtool search QUERY: memories ranked by relevance, with where they match. */
#include <getopt.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/color.h"
#include "cli/history_ui.h"
#include "cli/spec.h"
#include "core/search_tool.h"
#include "util/lines.h"

static const char help[] =
    "usage: memtool [options] search [--path DIR] [--limit N] [--json] [--color=WHEN] QUERY\n\n"
    "The memories that hold every word of QUERY, best match first, each with the lines\n"
    "where its words occur (the first 20), every one shown with its matches marked. A\n"
    "query is words, \"phrases in quotes\" and prefixes (deploy*); -word or NOT word\n"
    "leaves out the memories that hold it; a OR b takes either (OR binds tighter than the\n"
    "words around it: x a OR b is x and either). Case, Latin accents and ё/е do not\n"
    "matter; Chinese, Japanese and Korean are matched by pairs of characters. The words\n"
    "after the options are the query (memtool search deploy -staging); a word starting\n"
    "with -- is an option, and after -- every word is the query's.\n\n"
    "Options:\n"
    "  --path DIR     search at or beneath DIR (default /memories)\n"
    "  --limit N      at most N memories, 1 to 100 (default 10)\n"
    "  --json         one JSON object: query, path, hits (path, score, lines, more_lines,\n"
    "                 matches, snippet: line, before, match, after)\n"
    "  --color=WHEN   mark matches in colour: auto (on a terminal, unless NO_COLOR is\n"
    "                 set; the default), always or never. Without colour, matches are\n"
    "                 not marked.\n\n"
    "Exit status: 0 when a memory matches, 1 when none does (\"No memories match.\"), 2\n"
    "on a bad query or option or when the search fails.\n";

/* One hit as JSON, or NULL: out of memory. */
static json_t *hit_json(const mt_search_hit *h)
{
    json_t *lines = json_array(), *o;
    size_t i;

    for (i = 0; lines && i < h->line_count; i++) {
        if (json_array_append_new(lines, json_integer(h->lines[i])) < 0) {
            json_decref(lines);
            return NULL;
        }
    }
    /* "o" takes lines even when the pack fails (NULL fails it too). */
    o = json_pack("{s:s, s:f, s:o, s:b, s:I}", "path", h->path, "score", h->score, "lines", lines,
                  "more_lines", h->more_lines, "matches", (json_int_t)h->matches);
    if (o && h->match &&
        json_object_set_new(o, "snippet",
                            json_pack("{s:I, s:s, s:s, s:s}", "line", (json_int_t)h->line, "before",
                                      h->before, "match", h->match, "after", h->after)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Out of memory after the search: a failure, 2 (1 says nothing matched). */
static int no_memory(void)
{
    fputs("memtool search: out of memory\n", stderr);
    return MT_EXIT_USAGE;
}

typedef struct {
    const char *path;
    uint64_t limit;
    int json, color;
} search_args;

static const mt_cli_option search_options[] = {
    {"path", MT_CLI_STRING, offsetof(search_args, path), 0, 0, 0},
    {"limit", MT_CLI_NUMBER, offsetof(search_args, limit), 0, 1, 100},
    {"json", MT_CLI_FLAG, offsetof(search_args, json), 0, 0, 0},
    {"color", MT_CLI_COLOR, offsetof(search_args, color), 0, 0, 0},
    {"colour", MT_CLI_COLOR, offsetof(search_args, color), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

/* The query's words are taken apart before the options are read
 * (split_args), so none is left for the parser. */
static const mt_cli_command search_command = {"search", help, search_options, 0, 0, NULL, 0};

static int search(const mt_cli *cli, int argc, char **argv, const char *query);

/* Whether arg is a long option (or a unique start of one) that takes a value
 * in the next argument: search's own, or a global option put after the
 * command, whose value must not become a word of the query (the option is
 * then refused, naming its value, as every command refuses it). */
static int takes_value(const char *arg)
{
    const mt_cli_option *o;
    const struct option *g;
    size_t n = strlen(arg + 2);

    if (!n || strchr(arg, '='))
        return 0;
    for (o = search_options; o->name; o++)
        if (o->kind != MT_CLI_FLAG && n <= strlen(o->name) && memcmp(arg + 2, o->name, n) == 0)
            return 1;
    for (g = mt_cli_global_options; g->name; g++)
        if (g->has_arg == required_argument && strcmp(arg + 2, g->name) == 0)
            return 1;
    return 0;
}

/*
 * The command line split in two: options (--name, --name VALUE, -h) into
 * opts, and every other word, joined by spaces, into *query. A word starting
 * with one - is an exclusion in the query, not an option, so
 * `memtool search deploy -staging` reads as typed; after -- everything is
 * query. Returns the number of options (with opts[0] the command's name).
 */
static int split_args(char **opts, char **query, int argc, char **argv)
{
    mt_buf q = MT_BUF_INIT;
    size_t len;
    int i, n = 1, words = 0, rest = 0;

    opts[0] = argv[0];
    for (i = 1; i < argc; i++) {
        if (!rest && strcmp(argv[i], "--") == 0) {
            rest = 1;
            continue;
        }
        if (!rest && (strncmp(argv[i], "--", 2) == 0 || strcmp(argv[i], "-h") == 0)) {
            opts[n++] = argv[i];
            if (takes_value(argv[i]) && i + 1 < argc)
                opts[n++] = argv[++i];
            continue;
        }
        if ((words++ && mt_buf_putc(&q, ' ') < 0) || mt_buf_puts(&q, argv[i]) < 0) {
            mt_buf_dispose(&q);
            return -1;
        }
    }
    opts[n] = NULL;
    *query = words ? mt_buf_detach(&q, &len) : NULL;
    if (words && !*query)
        return -1;
    return n;
}

int mt_cmd_search(const mt_cli *cli, int argc, char **argv)
{
    char **opts = calloc((size_t)argc + 1, sizeof(*opts)), *query = NULL;
    int nopts, status;

    if (!opts || (nopts = split_args(opts, &query, argc, argv)) < 0) {
        free(opts);
        return no_memory();
    }
    status = search(cli, nopts, opts, query);
    free(opts);
    free(query);
    return status;
}

static int search(const mt_cli *cli, int argc, char **argv, const char *query)
{
    search_args a = {NULL, 0, 0, -1};
    mt_search_options so = {NULL, 0};
    mt_search_hit *hits = NULL;
    mt_memory *mem = NULL;
    char *text;
    size_t count = 0, i;
    int status;

    if ((status = mt_cli_parse(&search_command, &a, argc, argv)) >= 0)
        return status;
    so.path = a.path;
    so.limit = (size_t)a.limit;
    if (!query)
        return mt_cli_usage_error("search", "give a QUERY: memtool search deploy script");
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_search(&hits, &count, mem, query, &so) < 0) {
        /* Like grep and rg: 1 means nothing matched, so a failed search is 2. */
        status = MT_EXIT_USAGE;
        if (mt_error_last()->code == MT_EINVAL)
            mt_cli_usage_error("search", "%s", mt_error_last()->message);
        else
            mt_cli_fail("search");
        goto done;
    }
    /* Once, and not on stdout: the answer is whole, but the index is not kept. */
    if (mt_memory_read_only(mem))
        fputs("memtool search: the store is read-only: nothing was saved to it (its search index, "
              "if it has one, was brought up to date in memory only)\n",
              stderr);
    if (a.json) {
        json_t *arr = json_array(), *o;

        for (i = 0; arr && i < count; i++) {
            if (json_array_append_new(arr, hit_json(&hits[i])) < 0) {
                json_decref(arr);
                arr = NULL;
            }
        }
        o = json_pack("{s:s, s:s, s:o}", "query", query, "path", so.path ? so.path : "/memories",
                      "hits", arr);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!text) {
            status = no_memory();
            goto done;
        }
        /* a write error shows at the flush below */
        fputs(text, stdout);
        putchar('\n');
        free(text);
    } else if (count == 0) {
        printf("No memories match.\n");
    } else {
        /* Marked in colour, or not at all: text piped to a file or a program
         * is the memory's own, as grep and rg leave it. */
        int on = mt_cli_color_resolve(a.color);
        mt_buf out = MT_BUF_INIT;

        if (mt_search_hits_text(&out, mem, query, hits, count, on ? "\033[1;31m" : "",
                                on ? "\033[0m" : "") < 0) {
            mt_buf_dispose(&out);
            status = no_memory();
            goto done;
        }
        fwrite(out.ptr, 1, out.len, stdout);
        putchar('\n');
        mt_buf_dispose(&out);
    }
    status = fflush(stdout) != 0 ? MT_EXIT_USAGE : count ? MT_EXIT_OK : MT_EXIT_TOOL;
done:
    mt_search_hits_free(hits, count);
    mt_memory_free(mem);
    return status;
}

/* memtool search QUERY: memories ranked by relevance, with where they match. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history_ui.h"
#include "lib/search_tool.h"
#include "lib/text.h"

static const char help[] =
    "usage: memtool [options] search QUERY [--path DIR] [--limit N] [--json]\n\n"
    "The memories that hold every word of QUERY, best match first, each with the lines\n"
    "where its words occur and the first of them shown. A query is words, \"phrases in\n"
    "quotes\" and prefixes (deploy*); case, Latin accents and ё/е do not matter; Chinese,\n"
    "Japanese and Korean are matched by pairs of characters.\n\n"
    "Options:\n"
    "  --path DIR   search at or beneath DIR (default /memories)\n"
    "  --limit N    at most N memories, 1 to 100 (default 10)\n"
    "  --json       one JSON object: query, path, hits (path, score, lines, more_lines,\n"
    "               matches, snippet: line, before, match, after)\n";

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

/* Out of memory after the search: the command line was fine, so a tool
 * error (exit 1), as every command says it. */
static int no_memory(void)
{
    fputs("memtool search: out of memory\n", stderr);
    return MT_EXIT_TOOL;
}

int mt_cmd_search(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"path", required_argument, NULL, 'p'},
        {"limit", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mt_search_options so = {NULL, 0};
    mt_search_hit *hits = NULL;
    mt_memory *mem = NULL;
    char *text;
    size_t count = 0, i;
    uint64_t n;
    int json = 0, c, status = MT_EXIT_USAGE;

    while ((c = mt_cli_getopt(&status, "search", argc, argv, "h", longopts, help)) > 0) {
        switch (c) {
        case 'p':
            so.path = optarg;
            break;
        case 'n':
            if (mt_text_parse_size(&n, optarg) < 0 || strpbrk(optarg, "KMGkmg") || n == 0 ||
                n > 100)
                return mt_cli_usage_error("search",
                                          "--limit needs a number from 1 to 100, not '%s'", optarg);
            so.limit = (size_t)n;
            break;
        case 'j':
            json = 1;
            break;
        }
    }
    if (c == 0)
        return status;
    if (optind != argc - 1)
        return mt_cli_usage_error("search", "give one QUERY (quote it in the shell: "
                                            "memtool search 'deploy script')");
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_search(&hits, &count, mem, argv[optind], &so) < 0) {
        status = mt_error_last()->code == MT_EINVAL
                     ? mt_cli_usage_error("search", "%s", mt_error_last()->message)
                     : mt_cli_fail("search");
        goto done;
    }
    /* Once, and not on stdout: the answer is whole, but the index is not kept. */
    if (mt_memory_read_only(mem))
        fputs("memtool search: the store is read-only: nothing was saved to it (its search index, "
              "if it has one, was brought up to date in memory only)\n",
              stderr);
    if (json) {
        json_t *arr = json_array(), *o;

        for (i = 0; arr && i < count; i++) {
            if (json_array_append_new(arr, hit_json(&hits[i])) < 0) {
                json_decref(arr);
                arr = NULL;
            }
        }
        o = json_pack("{s:s, s:s, s:o}", "query", argv[optind], "path",
                      so.path ? so.path : "/memories", "hits", arr);
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
        /* Marked in colour on a terminal, with ** elsewhere (text a person
         * or a model reads either way). */
        int tty = isatty(STDOUT_FILENO);
        mt_buf out = MT_BUF_INIT;

        if (mt_search_hits_text(&out, hits, count, tty ? "\033[1;31m" : "**",
                                tty ? "\033[0m" : "**") < 0) {
            mt_buf_dispose(&out);
            status = no_memory();
            goto done;
        }
        fwrite(out.ptr, 1, out.len, stdout);
        putchar('\n');
        mt_buf_dispose(&out);
    }
    status = fflush(stdout) == 0 ? MT_EXIT_OK : MT_EXIT_TOOL;
done:
    mt_search_hits_free(hits, count);
    mt_memory_free(mem);
    return status;
}

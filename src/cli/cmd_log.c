/* memtool log [PATH] [options]: versions, newest first. */
#include <ctype.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/history_ui.h"
#include "cli/spec.h"
#include "util/lines.h"

static const char help[] =
    "usage: memtool [options] log [PATH] [--json] [--limit N] [--since TIME] [--until TIME]\n"
    "                             [--actor NAME] [--op created|modified|deleted] [--before ID]\n\n"
    "The versions of the memories at PATH (a file, a directory: everything beneath it, or a\n"
    "memory that no longer exists; default /memories), newest first. Changes made outside\n"
    "memtool are recorded first, as actor \"external\".\n\n"
    "Options:\n"
    "  --json         one JSON object per line: id, memory_id, path, previous_path (renames),\n"
    "                 operation, actor, created_at, content_sha256, content_size_bytes, redacted\n"
    "  --limit N      at most N versions (default 100; 0: all); when there are older ones, a\n"
    "                 line on stderr says so and gives the --before ID of the next page\n"
    "  --since TIME   at or after TIME: RFC 3339 (2026-11-22T10:00:00Z), a date or a date and\n"
    "                 time in UTC (2026-11-22, 2026-11-22 10:00) or an age (30d, 12h, 15m)\n"
    "  --until TIME   at or before TIME (a date alone: the end of that day, UTC)\n"
    "  --actor NAME   made by NAME only\n"
    "  --op OP        created, modified or deleted only\n"
    "  --before ID    older than version ID (to page through a long log)\n";

/* What the command line of log says; the values are read after the parse. */
typedef struct {
    const char *limit, *since, *until, *actor, *op;
    int64_t before;
    int json;
} log_args;

static const mt_cli_option log_options[] = {
    {"json", MT_CLI_FLAG, offsetof(log_args, json), 0, 0, 0},
    {"limit", MT_CLI_STRING, offsetof(log_args, limit), 0, 0, 0},
    {"since", MT_CLI_STRING, offsetof(log_args, since), 0, 0, 0},
    {"until", MT_CLI_STRING, offsetof(log_args, until), 0, 0, 0},
    {"actor", MT_CLI_STRING, offsetof(log_args, actor), 0, 0, 0},
    {"op", MT_CLI_STRING, offsetof(log_args, op), 0, 0, 0},
    {"before", MT_CLI_VERSION, offsetof(log_args, before), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

/* Options may come after PATH too ("log /memories/a.md --json"): the parser
 * moves them to the front. */
static const mt_cli_command log_command = {"log", help, log_options, 0, 1, NULL, 0};

/* --since or --until's time into *ms. Returns -1 to go on, else the status. */
static int parse_time(int64_t *ms, const char *option, const char *s)
{
    if (mt_cli_time_parse(ms, s) < 0)
        return mt_cli_usage_error("log",
                                  "--%s needs a time (2026-11-22T10:00:00Z, "
                                  "2026-11-22 10:00 or 2026-11-22, in UTC) or an age "
                                  "(30d, 12h, 15m, 45s), not '%s'",
                                  option, s);
    return -1;
}

/* Whether s is a date alone, YYYY-MM-DD (not an age of 10 characters). */
static int is_date(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    size_t i;

    for (i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return 0;
    return s[i] == '\0';
}

int mt_cmd_log(const mt_cli *cli, int argc, char **argv)
{
    mt_log_query q;
    mt_version *v = NULL;
    mt_memory *mem = NULL;
    size_t count = 0, i, shown;
    log_args a = {0};
    int json, status, more;
    uint64_t n;

    memset(&q, 0, sizeof(q));
    q.limit = 100;
    if ((status = mt_cli_parse(&log_command, &a, argc, argv)) >= 0)
        return status;
    json = a.json;
    q.actor = a.actor;
    q.before_id = a.before;
    if (a.limit) {
        if (mt_text_parse_size(&n, a.limit) < 0 || strpbrk(a.limit, "KMGkmg"))
            return mt_cli_usage_error("log", "--limit needs a whole number, not '%s'", a.limit);
        q.limit = n ? (size_t)n : SIZE_MAX;
    }
    if (a.since && (status = parse_time(&q.since, "since", a.since)) >= 0)
        return status;
    if (a.until && (status = parse_time(&q.until, "until", a.until)) >= 0)
        return status;
    /* --until a day takes the whole day in, as people mean it. */
    if (a.until && is_date(a.until))
        q.until += 86400000 - 1;
    if (a.op && mt_cli_op_parse(&q.operation, a.op) < 0)
        return mt_cli_usage_error("log", "--op needs created, modified or deleted, not '%s'", a.op);
    q.path = optind < argc ? argv[optind] : "/memories";
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    /* One more than shown, to tell whether the log goes on. */
    shown = q.limit;
    if (q.limit != SIZE_MAX)
        q.limit++;
    if (mt_memory_log(&v, &count, mem, &q) < 0) {
        status = mt_cli_fail("log");
        goto done;
    }
    status = MT_EXIT_OK;
    more = count > shown;
    for (i = 0; i < count && i < shown; i++) {
        if (!json)
            mt_cli_version_print(stdout, &v[i]);
        else if (mt_cli_version_json(stdout, &v[i]) < 0) {
            fprintf(stderr, "memtool log: version %lld cannot be written as JSON\n",
                    (long long)v[i].id);
            status = MT_EXIT_TOOL;
        }
    }
    /* On stderr, as git's hints are: stdout stays one version a line. */
    if (more)
        fprintf(stderr,
                "memtool log: %zu versions shown, and there are older ones: --before %lld for "
                "the next page, --limit N for more, --limit 0 for all\n",
                shown, (long long)v[shown - 1].id);
done:
    mt_versions_free(v, count);
    mt_memory_free(mem);
    return status;
}

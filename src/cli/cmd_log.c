/* memtool log [PATH] [options]: versions, newest first. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history_ui.h"
#include "lib/text.h"

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

int mt_cmd_log(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"limit", required_argument, NULL, 'n'},
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"actor", required_argument, NULL, 'a'},
        {"op", required_argument, NULL, 'o'},
        {"before", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mt_log_query q;
    mt_version *v = NULL;
    mt_memory *mem = NULL;
    size_t count = 0, i, shown;
    int json = 0, c, status = MT_EXIT_USAGE, more;

    memset(&q, 0, sizeof(q));
    q.limit = 100;
    /* Options may come after PATH too ("log /memories/a.md --json"): getopt
     * moves them to the front. */
    while ((c = mt_cli_getopt(&status, "log", argc, argv, "h", longopts, help)) > 0) {
        uint64_t n;
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'n':
            if (mt_text_parse_size(&n, optarg) < 0 || strpbrk(optarg, "KMGkmg"))
                return mt_cli_usage_error("log", "--limit needs a whole number, not '%s'", optarg);
            q.limit = n ? (size_t)n : SIZE_MAX;
            break;
        case 's':
        case 'u':
            if (mt_cli_time_parse(c == 's' ? &q.since : &q.until, optarg) < 0)
                return mt_cli_usage_error("log",
                                          "--%s needs a time (2026-11-22T10:00:00Z, "
                                          "2026-11-22 10:00 or 2026-11-22, in UTC) or an age "
                                          "(30d, 12h, 15m, 45s), not '%s'",
                                          c == 's' ? "since" : "until", optarg);
            /* --until a day takes the whole day in, as people mean it. */
            if (c == 'u' && strlen(optarg) == 10)
                q.until += 86400000 - 1;
            break;
        case 'a':
            q.actor = optarg;
            break;
        case 'o':
            if (mt_cli_op_parse(&q.operation, optarg) < 0)
                return mt_cli_usage_error(
                    "log", "--op needs created, modified or deleted, not '%s'", optarg);
            break;
        case 'b':
            if ((status = mt_cli_parse_version(&q.before_id, "log", optarg)) != 0)
                return status;
            break;
        }
    }
    if (c == 0)
        return status;
    if (argc - optind > 1) {
        fputs(help, stderr);
        return MT_EXIT_USAGE;
    }
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

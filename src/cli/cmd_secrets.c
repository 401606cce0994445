/* memtool secrets scan: find (and redact) secrets a store already holds. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/history_ui.h"
#include "cli/spec.h"
#include "core/secrets_scan.h"

static const char help[] =
    "usage: memtool [options] secrets scan [PATH] [--history] [--json] [--redact]\n\n"
    "Scan what the store already holds for secrets (the guard's detectors and\n"
    "--secrets-allow): every memory at or beneath PATH (default /memories), as it is now,\n"
    "and with --history every older version too. For a store written before the guard\n"
    "or with --secrets off. Each finding is one line, never the secret:\n"
    "  PATH:LINE: KIND              in a memory's current content\n"
    "  version ID PATH:LINE: KIND   in an older version\n"
    "On an encrypted store the memories are decrypted to be scanned; nothing is written\n"
    "unless --redact.\n\n"
    "Options:\n"
    "  --history   scan every older version too (a store that keeps history)\n"
    "  --redact    fix what is found: each memory holding a secret is rewritten with it\n"
    "              replaced by [REDACTED:kind], as --secrets redact does on a write (a new\n"
    "              version, by the actor), and the version that held it is redacted from\n"
    "              history (memtool redact); with --history, so is every older version\n"
    "              holding one\n"
    "  --json      one JSON object: findings (path, version: null for current content,\n"
    "              line, kind), fixed (path, version, secrets), redacted (version ids)\n\n"
    "Exit status: 0 when nothing is found, 1 when something is (also when --redact fixed\n"
    "it), 2 on an error.\n";

static int print_json(const mt_secrets_report *r)
{
    json_t *o = json_object(), *f = json_array(), *x = json_array(), *v = json_array();
    size_t i;
    char *text;
    int bad = !o || !f || !x || !v;

    for (i = 0; !bad && i < r->count; i++) {
        const mt_secrets_finding *s = &r->findings[i];
        bad =
            json_array_append_new(f, json_pack("{s:s, s:o, s:I, s:s}", "path", s->path, "version",
                                               s->version ? json_integer(s->version) : json_null(),
                                               "line", (json_int_t)s->line, "kind", s->kind)) < 0;
    }
    for (i = 0; !bad && i < r->fixed_count; i++)
        bad =
            json_array_append_new(
                x, json_pack("{s:s, s:o, s:I}", "path", r->fixed[i].path, "version",
                             r->fixed[i].version ? json_integer(r->fixed[i].version) : json_null(),
                             "secrets", (json_int_t)r->fixed[i].secrets)) < 0;
    for (i = 0; !bad && i < r->redacted_count; i++)
        bad = json_array_append_new(v, json_integer(r->redacted[i])) < 0;
    if (!bad)
        bad = json_object_set(o, "findings", f) < 0 || json_object_set(o, "fixed", x) < 0 ||
              json_object_set(o, "redacted", v) < 0;
    text = bad ? NULL : json_dumps(o, JSON_COMPACT);
    json_decref(f);
    json_decref(x);
    json_decref(v);
    json_decref(o);
    if (!text)
        return -1;
    puts(text);
    free(text);
    return 0;
}

static void print_text(const mt_secrets_report *r)
{
    size_t i;

    for (i = 0; i < r->count; i++) {
        const mt_secrets_finding *s = &r->findings[i];
        if (s->version)
            printf("version %" PRId64 " %s:%zu: %s\n", s->version, s->path, s->line, s->kind);
        else
            printf("%s:%zu: %s\n", s->path, s->line, s->kind);
    }
    for (i = 0; i < r->fixed_count; i++) {
        printf("Redacted %zu secret%s in %s", r->fixed[i].secrets,
               r->fixed[i].secrets == 1 ? "" : "s", r->fixed[i].path);
        if (r->fixed[i].version)
            printf(" (now version %" PRId64 ")", r->fixed[i].version);
        putchar('\n');
    }
    for (i = 0; i < r->redacted_count; i++)
        printf("Redacted version %" PRId64 "\n", r->redacted[i]);
}

/* What the command line of secrets scan says. */
typedef struct {
    int history, json, fix;
} scan_args;

static const mt_cli_option scan_options[] = {
    {"history", MT_CLI_FLAG, offsetof(scan_args, history), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(scan_args, json), 0, 0, 0},
    {"redact", MT_CLI_FLAG, offsetof(scan_args, fix), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static int scan(const mt_cli *cli, int argc, char **argv)
{
    /* Any number of words: more than one PATH is refused naming the second. */
    const mt_cli_command scan_command = {"secrets scan", help, scan_options, 0, argc, NULL, 0};
    mt_secrets_report r;
    mt_memory *mem = NULL;
    scan_args a = {0};
    int history, json, fix, status, rc;

    if ((status = mt_cli_parse(&scan_command, &a, argc, argv)) >= 0)
        return status;
    history = a.history;
    json = a.json;
    fix = a.fix;
    if (argc - optind > 1)
        return mt_cli_usage_error("secrets scan", "give at most one PATH, not '%s'",
                                  argv[optind + 1]);
    /* A scan only reads: a store or tenant that is not there is named, not
     * made (and then called clean). */
    if (!(mem = fix ? mt_cli_open(cli) : mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    rc = mt_secrets_scan_store(&r, mem, optind < argc ? argv[optind] : NULL, history, fix);
    /* What was found and fixed before a failure is still said. */
    if (json ? print_json(&r) < 0 : (print_text(&r), 0)) {
        fputs("memtool secrets scan: out of memory\n", stderr);
        rc = rc < 0 ? rc : MT_ENOMEM;
    }
    if (rc < 0) {
        mt_cli_fail("secrets scan");
        status = MT_EXIT_USAGE;
    } else {
        status = r.count ? MT_EXIT_TOOL : MT_EXIT_OK;
    }
    if (fflush(stdout) != 0)
        status = MT_EXIT_USAGE;
    mt_secrets_report_dispose(&r);
    mt_memory_free(mem);
    return status;
}

int mt_cmd_secrets(const mt_cli *cli, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "scan") == 0)
        return scan(cli, argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    fputs(help, stderr);
    return MT_EXIT_USAGE;
}

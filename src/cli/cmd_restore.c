/* memtool restore [--json] VERSION: a version's content, current again. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/history_ui.h"

static const char help[] =
    "usage: memtool [options] restore [--json] VERSION\n\n"
    "Make the content of version VERSION the memory's current content, as a new version: where\n"
    "the memory is now, or, if it was deleted, at the version's path (an error if another memory\n"
    "holds that path now). A memory that holds that content already is left as it is, with no\n"
    "new version (\"Nothing changed\", exit 0).\n"
    "  --json  print {\"restored\": VERSION, \"version\": NEW, \"path\": PATH} on one line\n"
    "          (with \"secrets\": what was redacted, under --secrets redact; \"version\": null\n"
    "          and \"unchanged\": true when nothing changed)\n";

int mt_cmd_restore(const mt_cli *cli, int argc, char **argv)
{
    mt_version v;
    mt_memory *mem;
    int64_t id, now = 0;
    int json, status = mt_cli_args(&json, "restore", argc, argv, 1, 1, 0, help);

    if (status >= 0)
        return status;
    if ((status = mt_cli_parse_version(&id, "restore", argv[optind])) != 0)
        return status;
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    memset(&v, 0, sizeof(v));
    /* No new version (now 0): the memory held that content already; the
     * path told is then the restored version's own. */
    if (mt_memory_restore(&now, mem, id) < 0 || mt_memory_version(&v, mem, now ? now : id) < 0) {
        status = mt_cli_fail("restore");
        goto done;
    }
    status = MT_EXIT_OK;
    if (!now) {
        if (!json) {
            printf("Nothing changed: the memory already holds the content of version %" PRId64
                   " (no new version)\n",
                   id);
            goto done;
        }
        printf("{\"restored\":%" PRId64 ",\"version\":null,\"unchanged\":true,\"path\":", id);
        if (mt_cli_json_string(stdout, v.path) < 0)
            fputs("null", stdout);
        fputs("}\n", stdout);
        goto done;
    }
    if (!json) {
        printf("Restored %s to version %" PRId64 " (now version %" PRId64 ")", v.path, id, now);
        mt_cli_print_secrets_note(mem);
        goto done;
    }
    /* The path through jansson, so any name comes out as valid JSON. */
    printf("{\"restored\":%" PRId64 ",\"version\":%" PRId64 ",", id, now);
    if (mt_memory_secrets_note(mem)) {
        fputs("\"secrets\":", stdout);
        if (mt_cli_json_string(stdout, mt_memory_secrets_note(mem)) < 0)
            fputs("null", stdout);
        fputs(",", stdout);
    }
    fputs("\"path\":", stdout);
    if (mt_cli_json_string(stdout, v.path) < 0) {
        fputs("null}\n", stdout);
        fprintf(stderr, "memtool restore: the path of version %" PRId64 " cannot be written\n",
                now);
        status = MT_EXIT_TOOL;
    } else {
        fputs("}\n", stdout);
    }
done:
    mt_version_dispose(&v);
    mt_memory_free(mem);
    return status;
}

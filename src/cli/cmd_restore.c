/* memtool restore VERSION: a version's content, current again. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "history_ui.h"

static const char help[] =
    "usage: memtool [options] restore [--json] VERSION\n\n"
    "Make the content of version VERSION the memory's current content, as a new version: where\n"
    "the memory is now, or, if it was deleted, at the version's path (an error if another memory\n"
    "holds that path now).\n";

int mt_cmd_restore(const mt_cli *cli, int argc, char **argv)
{
    mt_version v;
    mt_memory *mem;
    int64_t id, now = 0;
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    int status;

    if (json) {
        argv++;
        argc--;
    }
    if ((status = mt_cli_simple_args(argc, argv, 1, help)) >= 0)
        return status;
    if ((status = mt_cli_parse_version(&id, "restore", argv[argc - 1])) != 0)
        return status;
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_TOOL;
    memset(&v, 0, sizeof(v));
    if (mt_memory_restore(&now, mem, id) < 0 || mt_memory_version(&v, mem, now) < 0) {
        status = mt_cli_fail("restore");
    } else {
        if (json)
            printf("{\"restored\":%" PRId64 ",\"version\":%" PRId64 ",\"path\":", id, now);
        else
            printf("Restored %s to version %" PRId64 " (now version %" PRId64 ")\n", v.path, id,
                   now);
        if (json && mt_cli_json_string(stdout, v.path) == 0)
            fputs("}\n", stdout);
        status = MT_EXIT_OK;
    }
    mt_version_dispose(&v);
    mt_memory_free(mem);
    return status;
}

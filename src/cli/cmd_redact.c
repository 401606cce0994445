/* memtool redact VERSION: erase a version's content and path. */
#include <inttypes.h>
#include <stdio.h>

#include "history_ui.h"

static const char help[] =
    "usage: memtool [options] redact [--json] VERSION\n\n"
    "Erase the content and path of version VERSION for good (zeroed in the history database,\n"
    "gone from its log); the version stays in the log, marked redacted. A memory's current\n"
    "content cannot be redacted: change or delete the memory first.\n"
    "  --json  print {\"redacted\": VERSION} on one line\n";

int mt_cmd_redact(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    int64_t id;
    int json, status = mt_cli_args(&json, "redact", argc, argv, 1, 1, 0, help);

    if (status >= 0)
        return status;
    if ((status = mt_cli_parse_version(&id, "redact", argv[optind])) != 0)
        return status;
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_redact(mem, id) < 0) {
        status = mt_cli_fail("redact");
    } else if (json) {
        status = mt_cli_print_json("redact", json_pack("{s:I}", "redacted", (json_int_t)id));
    } else {
        printf("Redacted version %" PRId64 "\n", id);
        status = MT_EXIT_OK;
    }
    mt_memory_free(mem);
    return status;
}

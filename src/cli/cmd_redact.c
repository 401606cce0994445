/* memtool redact VERSION: erase a version's content, path and words. */
#include <inttypes.h>
#include <stdio.h>

#include "cli/history_ui.h"

static const char help[] =
    "usage: memtool [options] redact [--json] VERSION\n\n"
    "Erase the content and path of version VERSION; the version stays in the log, marked\n"
    "redacted. A memory's current content cannot be redacted: change or delete the memory\n"
    "first.\n\n"
    "What is erased where:\n"
    "  file: and sqlite: stores: the content, its path and its words in the search index are\n"
    "    gone from every file of the store at once: SQLite zeros the freed pages, the index\n"
    "    is merged, and the write-ahead log and the history's log are emptied. When another\n"
    "    process is reading the store at that instant the write-ahead log cannot be emptied:\n"
    "    redact then fails saying so (the version is redacted all the same), and the same\n"
    "    redaction run again once that process is done empties it.\n"
    "  postgresql: stores: the rows are deleted or changed, but the server keeps the old ones\n"
    "    in its table files until a vacuum: have the tables' owner run\n"
    "    `memtool store vacuum URL`. The server's WAL, archives, replicas and backups keep\n"
    "    them as long as they are kept.\n"
    "Content is stored once however many versions hold it: bytes that another version or\n"
    "memory also holds stay, as theirs (redact each version that holds them).\n"
    "Copies outside the store are not reached: backups, and the paths an --audit file holds.\n\n"
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

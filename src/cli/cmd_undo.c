/* memtool undo PATH: back to the version before the newest. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/history_ui.h"

static const char help[] =
    "usage: memtool [options] undo [--json] PATH\n\n"
    "Restore the memory at PATH (or last at PATH, if deleted) to its latest earlier version whose\n"
    "content differs from its current content (renames and restores of the same content are\n"
    "passed over), as a new version. A second undo brings back what the first replaced. With\n"
    "no such version, nothing changes: an error saying there is nothing to undo (exit 1).\n"
    "  --json  print {\"restored\": VERSION, \"version\": NEW, \"path\": PATH} on one line\n"
    "          (with \"secrets\": what was redacted, under --secrets redact)\n";

int mt_cmd_undo(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    int64_t now = 0, restored = 0;
    int json, status = mt_cli_args(&json, "undo", argc, argv, 1, 1, 0, help);
    const char *path = argv[optind];

    if (status >= 0)
        return status;
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_undo(&now, &restored, mem, path) < 0) {
        status = mt_cli_fail("undo");
    } else if (json) {
        /* restore --json's shape, keys in its order. */
        const char *note = mt_memory_secrets_note(mem);
        json_t *o = note ? json_pack("{s:I, s:I, s:s, s:s}", "restored", (json_int_t)restored,
                                     "version", (json_int_t)now, "secrets", note, "path", path)
                         : json_pack("{s:I, s:I, s:s}", "restored", (json_int_t)restored, "version",
                                     (json_int_t)now, "path", path);

        status = mt_cli_print_json("undo", o);
    } else {
        printf("Restored %s to version %" PRId64 " (now version %" PRId64 ")", path, restored, now);
        mt_cli_print_secrets_note(mem);
        status = MT_EXIT_OK;
    }
    mt_memory_free(mem);
    return status;
}

/* memtool undo PATH: back to the version before the newest. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "history_ui.h"

static const char help[] =
    "usage: memtool [options] undo PATH\n\n"
    "Restore the memory at PATH (or last at PATH, if deleted) to its latest earlier version whose\n"
    "content differs from its current content (renames and restores of the same content are\n"
    "passed over), as a new version. A second undo brings back what the first replaced. With\n"
    "no such version, nothing changes: an error saying there is nothing to undo (exit 1).\n";

int mt_cmd_undo(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    int64_t now = 0, restored = 0;
    int status = mt_cli_simple_args(argc, argv, 1, help);

    if (status >= 0)
        return status;
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_undo(&now, &restored, mem, argv[argc - 1]) < 0) {
        status = mt_cli_fail("undo");
    } else {
        printf("Restored %s to version %" PRId64 " (now version %" PRId64 ")", argv[argc - 1],
               restored, now);
        mt_cli_print_secrets_note(mem);
        status = MT_EXIT_OK;
    }
    mt_memory_free(mem);
    return status;
}

/* memtool cat PATH: a memory's content, exactly. */
#include <stdio.h>
#include <stdlib.h>

#include "history_ui.h"

static const char help[] =
    "usage: memtool [options] cat PATH\n\n"
    "Print the content of the memory at PATH (/memories/...) exactly: no line\n"
    "numbers, nothing added, NUL bytes included. For scripts and pipes; view shows\n"
    "it numbered, as the model sees it. A file over --max-file-size is refused.\n";

int mt_cmd_cat(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    char *data = NULL;
    size_t len = 0;
    int status = mt_cli_simple_args(argc, argv, 1, help);

    if (status >= 0)
        return status;
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_read(&data, &len, mem, argv[argc - 1]) < 0) {
        status = mt_error_last()->code == MT_EINVAL
                     ? mt_cli_usage_error("cat", "%s", mt_error_last()->message)
                     : mt_cli_fail("cat");
    } else {
        status = mt_cli_put_bytes("cat", data, len);
    }
    free(data);
    mt_memory_free(mem);
    return status;
}

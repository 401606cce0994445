/* memtool show VERSION: a version's content, exactly. */
#include <stdio.h>
#include <stdlib.h>

#include "history_ui.h"

static const char help[] = "usage: memtool [options] show VERSION\n\n"
                           "Print the content of version VERSION (an id from memtool log) exactly\n"
                           "as it was: no line numbers, nothing added.\n";

int mt_cmd_show(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    int64_t id;
    char *data = NULL;
    size_t len = 0;
    int status = mt_cli_simple_args(argc, argv, 1, help);

    if (status >= 0)
        return status;
    if ((status = mt_cli_parse_version(&id, "show", argv[argc - 1])) != 0)
        return status;
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_version_content(&data, &len, mem, id) < 0) {
        status = mt_cli_fail("show");
    } else {
        status = mt_cli_put_bytes("show", data, len);
    }
    free(data);
    mt_memory_free(mem);
    return status;
}

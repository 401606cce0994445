/* memtool create PATH [FILE|-] */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] create [--json] PATH [FILE|-]\n\n"
    "Create the file PATH (and missing parent directories) with the\n"
    "content of FILE, or of stdin when FILE is - or left out (-- before PATH\n"
    "lets FILE begin with a dash).\n"
    "  --json  print {\"content\": RESULT, \"is_error\": BOOL} on one line (on stdout\n"
    "          either way; exit 1 on an error)\n";

int mt_cmd_create(const mt_cli *cli, int argc, char **argv)
{
    const char *from;
    char *data = NULL;
    size_t len;
    int fd, rc, json, status = mt_cli_args(&json, "create", argc, argv, 1, 2, 0, help);

    if (status >= 0)
        return status;
    from = argc - optind == 2 ? argv[optind + 1] : "-";
    fd = strcmp(from, "-") == 0 ? STDIN_FILENO : open(from, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mt_cli_usage_error("create", "cannot open %s: %s", from, strerror(errno));
    rc = mt_cli_read_all(&data, &len, fd);
    if (fd != STDIN_FILENO)
        close(fd);
    if (rc < 0)
        return mt_cli_usage_error("create", "cannot read %s: %s", from, strerror(-rc));
    status = mt_cli_run_input(cli, "create",
                              json_pack("{s:s, s:s, s:s%}", "command", "create", "path",
                                        argv[optind], "file_text", data, len),
                              json);
    free(data);
    return status;
}

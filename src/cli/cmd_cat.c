/* memtool cat PATH: a memory's content, exactly. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/history_ui.h"

static const char help[] =
    "usage: memtool [options] cat [--json] PATH\n\n"
    "Print the content of the memory at PATH (/memories/...) exactly: no line\n"
    "numbers, nothing added, NUL bytes included. For scripts and pipes; view shows\n"
    "it numbered, as the model sees it. A file over --max-file-size is refused.\n"
    "  --json  print {\"path\": PATH, \"size\": BYTES, \"content\": TEXT} on one line\n"
    "          (content that is not UTF-8: \"content\": null, \"content_base64\": ...)\n";

int mt_cmd_cat(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    char *data = NULL;
    size_t len = 0;
    int json, status = mt_cli_args(&json, "cat", argc, argv, 1, 1, 0, help);
    const char *path = argv[optind];
    json_t *o;

    if (status >= 0)
        return status;
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_read(&data, &len, mem, path) < 0) {
        status = mt_error_last()->code == MT_EINVAL
                     ? mt_cli_usage_error("cat", "%s", mt_error_last()->message)
                     : mt_cli_fail("cat");
    } else if (json) {
        o = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)len);
        if (o && mt_cli_json_set_bytes(o, data, len) < 0)
            o = (json_decref(o), NULL);
        status = mt_cli_print_json("cat", o);
    } else {
        status = mt_cli_put_bytes("cat", data, len);
    }
    free(data);
    mt_memory_free(mem);
    return status;
}

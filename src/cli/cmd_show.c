/* memtool show VERSION: a version's content, exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/history_ui.h"

static const char help[] =
    "usage: memtool [options] show [--json] VERSION\n\n"
    "Print the content of version VERSION (an id from memtool log) exactly\n"
    "as it was: no line numbers, nothing added.\n"
    "  --json  print {\"version\": VERSION, \"path\": PATH, \"size\": BYTES,\n"
    "          \"content\": TEXT} on one line (content that is not UTF-8: \"content\": null,\n"
    "          \"content_base64\": ...)\n";

int mt_cmd_show(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    int64_t id;
    char *data = NULL;
    size_t len = 0;
    int json, status = mt_cli_args(&json, "show", argc, argv, 1, 1, 0, help);
    mt_version v;
    json_t *o;

    if (status >= 0)
        return status;
    if ((status = mt_cli_parse_version(&id, "show", argv[optind])) != 0)
        return status;
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    memset(&v, 0, sizeof(v));
    if (mt_memory_version_content(&data, &len, mem, id) < 0 ||
        (json && mt_memory_version(&v, mem, id) < 0)) {
        status = mt_cli_fail("show");
    } else if (json) {
        o = json_pack("{s:I, s:s?, s:I}", "version", (json_int_t)id, "path", v.path, "size",
                      (json_int_t)len);
        if (o && mt_cli_json_set_bytes(o, data, len) < 0)
            o = (json_decref(o), NULL);
        status = mt_cli_print_json("show", o);
    } else {
        status = mt_cli_put_bytes("show", data, len);
    }
    mt_version_dispose(&v);
    free(data);
    mt_memory_free(mem);
    return status;
}

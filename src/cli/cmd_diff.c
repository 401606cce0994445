/* memtool diff VERSION [VERSION2]: a unified diff between versions. */
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/color.h"
#include "core/version_base.h"
#include "cli/history_ui.h"
#include "cli/spec.h"
#include "util/buf.h"
#include "diff/diff.h"
#include "util/json.h"
#include "util/utf8.h"

static const char help[] =
    "usage: memtool [options] diff [--color=always|never|auto] [--json] VERSION [VERSION2]\n\n"
    "A unified diff from the version before VERSION of the same memory (nothing, for a\n"
    "created one) to VERSION, or from VERSION to VERSION2. Colour on a terminal unless\n"
    "NO_COLOR is set. Versions before VERSION that were redacted are passed over: the diff is\n"
    "from the nearest readable one, and a first line says so. A rename is told as\n"
    "\"Renamed from OLD to NEW\", before the diff of the content if that changed too.\n"
    "  --json  one JSON object: from and to (each {\"version\", \"path\"}; from is null for\n"
    "          nothing), renamed, redacted_skipped (the redacted versions passed over), same\n"
    "          (the contents are equal) and diff (the unified diff, without colour)\n";

/* A version's content, or nothing for a deletion (and for no version at all). */
static int content_of(char **data, size_t *len, mt_memory *mem, const mt_version *v)
{
    *data = NULL;
    *len = 0;
    if (!v || v->operation == MT_VERSION_DELETED)
        return 0;
    return mt_memory_version_content(data, len, mem, v->id);
}

static void label(char *out, size_t size, const mt_version *v, const char *other_path)
{
    const char *p = v && v->path ? v->path : other_path ? other_path : "/dev/null";

    if (v)
        snprintf(out, size, "%s (version %" PRId64 ")", p, v->id);
    else
        snprintf(out, size, "/dev/null");
}

static int json_side(mt_buf *b, const mt_version *v)
{
    if (!v)
        return mt_buf_puts(b, "null");
    if (mt_buf_printf(b, "{\"version\":%" PRId64 ",\"path\":", v->id) < 0 ||
        mt_json_put_string(b, v->path, strlen(v->path)) < 0 || mt_buf_puts(b, "}") < 0)
        return MT_ENOMEM;
    return 0;
}

/* What the command line of diff says. */
typedef struct {
    const char *color;
    int json;
} diff_args;

static const mt_cli_option diff_options[] = {
    {"color", MT_CLI_STRING, offsetof(diff_args, color), 0, 0, 0},
    {"colour", MT_CLI_STRING, offsetof(diff_args, color), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(diff_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command diff_command = {"diff", help, diff_options, 1, 2, NULL, 0};

int mt_cmd_diff(const mt_cli *cli, int argc, char **argv)
{
    mt_version va, vb;
    mt_memory *mem = NULL;
    mt_buf out = MT_BUF_INIT, head = MT_BUF_INIT, text = MT_BUF_INIT;
    mt_diff_opts o = MT_DIFF_OPTS_INIT;
    char *a = NULL, *b = NULL, la[4200], lb[4200];
    size_t alen = 0, blen = 0, skipped = 0, i;
    int64_t ida, idb = 0, skipped_newest = 0, *skipped_ids = NULL;
    diff_args args = {0};
    const char *from_path;
    int color = -1, json, renamed, status, rc = 0;

    memset(&va, 0, sizeof(va));
    memset(&vb, 0, sizeof(vb));
    if ((status = mt_cli_parse(&diff_command, &args, argc, argv)) >= 0)
        return status;
    json = args.json;
    if (args.color && (color = mt_cli_color_parse(args.color)) == -2) {
        fputs(help, stderr);
        return MT_EXIT_USAGE;
    }
    if ((status = mt_cli_parse_version(&ida, "diff", argv[optind])) != 0 ||
        (argc - optind == 2 &&
         (status = mt_cli_parse_version(&idb, "diff", argv[optind + 1])) != 0))
        return status;
    color = mt_cli_color_resolve(color);
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    status = MT_EXIT_TOOL;
    if (mt_memory_version(&va, mem, ida) < 0)
        goto fail;
    if (idb) {
        if (mt_memory_version(&vb, mem, idb) < 0)
            goto fail;
    } else {
        /* VERSION against the readable one before it of the same memory: a
         * redacted one has no content to diff against. */
        vb = va;
        memset(&va, 0, sizeof(va));
        if ((rc = mt_history_find_base(&va, &skipped_ids, &skipped, mem, &vb)) < 0)
            goto fail;
        skipped_newest = skipped ? skipped_ids[0] : 0;
    }
    if (content_of(&a, &alen, mem, va.id ? &va : NULL) < 0 || content_of(&b, &blen, mem, &vb) < 0)
        goto fail;
    label(la, sizeof(la), va.id ? &va : NULL, vb.path);
    label(lb, sizeof(lb), &vb, va.path);
    o.old_label = la;
    o.new_label = lb;
    o.color = json ? 0 : color;
    if (mt_diff_unified(&out, a ? a : "", alen, b ? b : "", blen, &o) < 0)
        goto fail;
    /* One memory at another path: a rename, which the content's diff (empty
     * when only the path changed) does not show. With no readable version
     * before VERSION, its own record still names the path it came from. */
    from_path = va.id ? (strcmp(va.memory_id, vb.memory_id) == 0 ? va.path : NULL)
                      : (idb ? NULL : vb.previous_path);
    renamed = from_path && vb.path && strcmp(from_path, vb.path) != 0 &&
              vb.operation != MT_VERSION_DELETED;
    if (json) {
        if (mt_buf_puts(&head, "{\"from\":") < 0 || json_side(&head, va.id ? &va : NULL) < 0 ||
            mt_buf_puts(&head, ",\"to\":") < 0 || json_side(&head, &vb) < 0 ||
            mt_buf_printf(&head, ",\"renamed\":%s,\"redacted_skipped\":[",
                          renamed ? "true" : "false") < 0)
            goto oom;
        for (i = 0; i < skipped; i++)
            if (mt_buf_printf(&head, i ? ",%" PRId64 : "%" PRId64, skipped_ids[i]) < 0)
                goto oom;
        /* JSON strings are text: a byte that is not UTF-8 shows as U+FFFD. */
        if (mt_buf_printf(&head, "],\"same\":%s,\"diff\":", out.len ? "false" : "true") < 0 ||
            mt_utf8_sanitize(&text, out.ptr ? out.ptr : "", out.len) < 0 ||
            mt_json_put_string(&head, text.ptr ? text.ptr : "", text.len) < 0 ||
            mt_buf_puts(&head, "}\n") < 0)
            goto oom;
        out.len = 0;
    } else {
        /* The redacted versions passed over, named in the header as git
         * names a rename: the diff below is not from the version before. */
        if (skipped_newest &&
            (mt_buf_printf(&head, "Version %" PRId64 " was redacted", skipped_newest) < 0 ||
             (skipped > 1 && mt_buf_printf(&head, ", and %zu earlier one%s", skipped - 1,
                                           skipped > 2 ? "s" : "") < 0) ||
             (va.id ? mt_buf_printf(&head,
                                    ": this diff is from version %" PRId64
                                    ", the nearest readable version before it\n",
                                    va.id)
                    : mt_buf_puts(&head, ": this diff is from nothing, as no version before "
                                         "it can be read\n")) < 0))
            goto oom;
        if (renamed && mt_buf_printf(&head, "Renamed from %s to %s\n", from_path, vb.path) < 0)
            goto oom;
    }
    if ((head.len && fwrite(head.ptr, 1, head.len, stdout) != head.len) ||
        (out.len && fwrite(out.ptr, 1, out.len, stdout) != out.len)) {
        perror("memtool diff");
        goto done;
    }
    status = MT_EXIT_OK;
    goto done;
fail:
    if (rc != MT_ENOMEM) {
        status = mt_cli_fail("diff");
        goto done;
    }
oom:
    fputs("memtool diff: out of memory\n", stderr);
    status = MT_EXIT_TOOL;
done:
    mt_buf_dispose(&out);
    mt_buf_dispose(&head);
    mt_buf_dispose(&text);
    free(skipped_ids);
    free(a);
    free(b);
    mt_version_dispose(&va);
    mt_version_dispose(&vb);
    mt_memory_free(mem);
    return status;
}

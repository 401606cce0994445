/* memtool diff VERSION [VERSION2]: a unified diff between versions. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "color.h"
#include "history_ui.h"
#include "lib/buf.h"
#include "lib/diff.h"

static const char help[] =
    "usage: memtool [options] diff [--color=always|never|auto] VERSION [VERSION2]\n\n"
    "A unified diff from the version before VERSION of the same memory (nothing, for a\n"
    "created one) to VERSION, or from VERSION to VERSION2. Colour on a terminal unless\n"
    "NO_COLOR is set.\n";

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

int mt_cmd_diff(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"color", required_argument, NULL, 'c'},
        {"colour", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    mt_version va, vb, *older = NULL;
    mt_memory *mem = NULL;
    mt_buf out = MT_BUF_INIT;
    mt_diff_opts o = MT_DIFF_OPTS_INIT;
    char *a = NULL, *b = NULL, la[4200], lb[4200];
    size_t alen = 0, blen = 0, n = 0;
    int64_t ida, idb = 0;
    int color = -1, c, status = MT_EXIT_USAGE;

    memset(&va, 0, sizeof(va));
    memset(&vb, 0, sizeof(vb));
    while ((c = mt_cli_getopt(&status, "diff", argc, argv, "h", longopts, help)) > 0) {
        if (c == 'c' && mt_cli_color_parse(optarg) > -2)
            color = mt_cli_color_parse(optarg);
        else {
            fputs(help, stderr);
            return MT_EXIT_USAGE;
        }
    }
    if (c == 0)
        return status;
    if (argc - optind < 1 || argc - optind > 2) {
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
        /* VERSION against the one before it of the same memory. */
        mt_log_query q;
        memset(&q, 0, sizeof(q));
        q.memory_id = va.memory_id;
        q.before_id = va.id;
        q.limit = 1;
        if (mt_memory_log(&older, &n, mem, &q) < 0)
            goto fail;
        vb = va;
        memset(&va, 0, sizeof(va));
        if (n)
            va = older[0], memset(&older[0], 0, sizeof(older[0]));
    }
    if (content_of(&a, &alen, mem, va.id ? &va : NULL) < 0 || content_of(&b, &blen, mem, &vb) < 0)
        goto fail;
    label(la, sizeof(la), va.id ? &va : NULL, vb.path);
    label(lb, sizeof(lb), &vb, va.path);
    o.old_label = la;
    o.new_label = lb;
    o.color = color;
    if (mt_diff_unified(&out, a ? a : "", alen, b ? b : "", blen, &o) < 0)
        goto fail;
    if (out.len && fwrite(out.ptr, 1, out.len, stdout) != out.len) {
        perror("memtool diff");
        goto done;
    }
    status = MT_EXIT_OK;
    goto done;
fail:
    status = mt_cli_fail("diff");
done:
    mt_buf_dispose(&out);
    free(a);
    free(b);
    mt_version_dispose(&va);
    mt_version_dispose(&vb);
    mt_versions_free(older, n);
    mt_memory_free(mem);
    return status;
}

/* memtool web: the memory browser, served on 127.0.0.1 (src/web). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "httpd/httpd.h"
#include "web/web.h"

static const char help[] =
    "usage: memtool [options] web [--port N] [--open]\n\n"
    "Browse, search and correct the memories of the store that --store or --root\n"
    "names (and --tenant) in a web page: the tree of memories, each with its\n"
    "history, diffs, restore and redaction; edits saved only over the content you\n"
    "saw; search; usage against the limits, and when memories expire (give the\n"
    "agent's --expire-after). The memory stores of memtool server in\n"
    "the same store are listed beside it. Listens on 127.0.0.1 only and prints one\n"
    "line on stdout, the address to open: it holds a login token that works once\n"
    "(the page trades it for a session cookie at once). Logs go to stderr. SIGINT\n"
    "or SIGTERM stop it. docs/web.md has more.\n\n"
    "Options:\n"
    "  --port N   the port on 127.0.0.1 (default 0: any free one)\n"
    "  --open     start the desktop's browser on the address (xdg-open; needs\n"
    "             DISPLAY or WAYLAND_DISPLAY)\n";

typedef struct {
    uint64_t port;
    int open;
} web_opts;

static const mt_cli_option options[] = {
    {"port", MT_CLI_NUMBER, offsetof(web_opts, port), 0, 0, 65535},
    {"open", MT_CLI_FLAG, offsetof(web_opts, open), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0}};

static const mt_cli_command command = {"web", help, options, 0, 0, NULL, 0};

int mt_cmd_web(const mt_cli *cli, int argc, char **argv)
{
    web_opts o = {0};
    mt_httpd_config cfg = {0};
    mt_web *w = NULL;
    char listen[32], *url = NULL;
    int status, failed;

    if ((status = mt_cli_parse(&command, &o, argc, argv)) >= 0)
        return status;
    cfg.key = mt_cli_key(cli, &failed);
    if (failed)
        return MT_EXIT_USAGE;
    url = mt_cli_store_url(cli);
    if (!url || mt_web_new(&w, cli->opts.tenant, o.open) < 0) {
        fprintf(stderr, "memtool web: %s\n", url ? mt_error_last()->message : "out of memory");
        free(url);
        return MT_EXIT_TOOL;
    }
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)o.port);
    cfg.listen = listen;
    cfg.store_url = url;
    cfg.opts = cli->opts;
    cfg.opts.tenant = NULL;
    cfg.hook = mt_web_hook(w);
    cfg.no_keys = 1;
    cfg.plain_store = 1;
    /* The agents' expiry, when given: the page shows when each memory goes. */
    cfg.expire_after_ms = cli->expire_after_ms;
    /* One person's page: a few threads are plenty. */
    cfg.threads = 4;
    cfg.max_conns = 64;
    status = mt_httpd_run(&cfg) < 0 ? MT_EXIT_TOOL : MT_EXIT_OK;
    if (status)
        fprintf(stderr, "memtool web: %s\n", mt_error_last()->message);
    mt_web_free(w);
    free(url);
    return status;
}

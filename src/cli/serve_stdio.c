#include "cli/serve_stdio.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/spec.h"

int mt_cli_serve_stdio(const mt_cli *cli, int argc, char **argv, const char *name, const char *help,
                       mt_cli_bind_fn bind, void *state)
{
    static const mt_cli_option options[] = {
        {"max-line", MT_CLI_STRING, 0, 0, 0, 0},
        {NULL, 0, 0, 0, 0, 0},
    };
    const mt_cli_command command = {name, help, options, 0, 0, "input comes on stdin", 0};
    const char *max_line_text = NULL;
    mt_server_handler h;
    mt_cli_expiry expiry;
    mt_memory *mem;
    size_t max_line = 0;
    int rc;

    if ((rc = mt_cli_parse(&command, &max_line_text, argc, argv)) >= 0)
        return rc;
    if (max_line_text && mt_server_parse_size(&max_line, max_line_text) < 0)
        return mt_cli_usage_error(name,
                                  "--max-line needs a size in bytes (K, M or G after it: 1M), "
                                  "not '%s'",
                                  max_line_text);

    /* A client that goes away must end the loop with an error, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    if (!(mem = mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    memset(&h, 0, sizeof(h));
    bind(&h, mem, state);
    if (cli->expire_after_ms) {
        /* The expiry policy: between lines only, never during one. */
        expiry.mem = mem;
        expiry.after_ms = cli->expire_after_ms;
        expiry.after_text = cli->expire_after;
        expiry.actor = cli->actor_given ? NULL : "gc";
        expiry.name = name;
        expiry.next_ms = 0;
        h.between = mt_cli_expiry_tick;
        h.between_ctx = &expiry;
    }
    rc = mt_server_run(STDIN_FILENO, STDOUT_FILENO, &h, max_line);
    if (rc < 0)
        fprintf(stderr, "memtool %s: %s\n", name, mt_error_last()->message);
    mt_memory_free(mem);
    return rc < 0 ? MT_EXIT_TOOL : MT_EXIT_OK;
}

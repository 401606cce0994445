/* memtool chat [options]: a conversation with Claude, with memory, on the terminal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_ui.h"
#include "cli.h"

static const char help[] =
    "usage: memtool chat [options]\n\n"
    "Talk with Claude, which has the memory tool on the store. Each line you type is\n"
    "one turn; the conversation is kept across turns. Claude's text streams as it\n"
    "arrives, each memory call shows as a line (memory: create /memories/notes.md)\n"
    "and each turn ends with its token usage. Ctrl-C cancels the running request\n"
    "(or the line being typed); Ctrl-D ends the session.\n\n"
    "Options:\n" MT_AGENT_CLI_OPTIONS;

/* Whether a line holds nothing but blanks. */
static int is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return 0;
    return 1;
}

int mt_cmd_chat(const mt_cli *cli, int argc, char **argv)
{
    mt_agent_cli o;
    mt_agent_session s;
    mt_agent_view view;
    mt_agent_ui ui;
    char *line = NULL;
    size_t cap = 0;
    int status, tty = isatty(STDIN_FILENO);

    if ((status = mt_agent_cli_parse(&o, "chat", argc, argv, 0)) != 0)
        return status;
    if (o.help) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    if (o.first_arg < argc)
        return mt_cli_usage_error("chat", "takes no arguments (did you mean memtool run?)");
    if ((status = mt_agent_session_open(&s, cli, &o, "chat")) != 0)
        return status;
    memset(&view, 0, sizeof(view));
    view.out = stdout;
    view.err = stderr;
    mt_agent_view_ui(&ui, &view, &mt_agent_interrupted);
    mt_agent_catch_interrupt();
    if (tty)
        fprintf(stderr,
                "memtool chat: %s, memory in %s\n"
                "Ctrl-C cancels a request, Ctrl-D ends the session.\n",
                o.agent.model, o.root ? o.root : cli->root);
    for (;;) {
        mt_agent_turn turn;
        ssize_t n;
        int rc;

        mt_agent_interrupted = 0;
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        errno = 0;
        n = getline(&line, &cap, stdin);
        if (n < 0) {
            if (mt_agent_interrupted || errno == EINTR) {
                /* Ctrl-C at the prompt drops the line being typed. */
                clearerr(stdin);
                fputc('\n', stdout);
                continue;
            }
            if (tty)
                fputc('\n', stdout);
            break;
        }
        if (is_blank(line))
            continue;
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        rc = mt_agent_run_turn(&turn, s.agent, line, &ui);
        /* The terminal echoed ^C where the cursor was: end that line. */
        if (rc == MT_API_ECANCELED && tty)
            view.mid_line = 1;
        mt_agent_view_break(&view);
        if (rc == MT_API_ECANCELED)
            fputs("[cancelled]\n", stderr);
        else if (rc < 0)
            fprintf(stderr, "error: %s\n", mt_error_last()->message);
        else
            mt_agent_view_summary(&view, &turn, o.agent.max_tokens);
        fflush(stderr);
        mt_agent_turn_dispose(&turn);
    }
    free(line);
    mt_agent_session_close(&s);
    return MT_EXIT_OK;
}

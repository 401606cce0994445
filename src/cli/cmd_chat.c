/* memtool chat [options]: a conversation with Claude, with memory, on the terminal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/agent_ui.h"
#include "cli/cli.h"
#include "agent/project.h"
#include "cli/prompt.h"

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
    mt_prompt prompt;
    mt_cli_expiry expiry;
    mt_project_session proj;
    const char *end = "end of input";
    char *line, reason[512];
    int status, tty = isatty(STDIN_FILENO), last_rc = 0;

    if ((status = mt_agent_cli_parse(&o, "chat", argc, argv, 0)) != 0)
        return status;
    if (o.help) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    if (o.first_arg < argc)
        return mt_cli_usage_error("chat", "takes no arguments (did you mean memtool run?)");
    if (o.print_system)
        return mt_agent_cli_print_system(&o, "chat");
    if ((status = mt_agent_session_open(&s, cli, &o, "chat")) != 0)
        return status;
    mt_project_begin(&proj, s.mem);
    memset(&expiry, 0, sizeof(expiry));
    expiry.mem = s.mem;
    expiry.after_ms = cli->expire_after_ms;
    expiry.after_text = cli->expire_after;
    expiry.actor = cli->actor_given ? NULL : "gc";
    expiry.name = "chat";
    memset(&prompt, 0, sizeof(prompt));
    memset(&view, 0, sizeof(view));
    view.out = stdout;
    view.err = stderr;
    mt_agent_view_ui(&ui, &view, &mt_agent_interrupted);
    mt_agent_catch_interrupt();
    if (tty) {
        char where[512];
        if (o.root)
            snprintf(where, sizeof(where), "%s", o.root);
        else
            mt_cli_store_name(where, sizeof(where), cli);
        fprintf(stderr,
                "memtool chat: %s, memory in %s\n"
                "Ctrl-C cancels a request, Ctrl-D ends the session.\n",
                o.agent.model, where);
    }
    for (;;) {
        mt_agent_turn turn;
        char *send = NULL;
        size_t n;
        int rc;

        mt_agent_interrupted = 0;
        /* The expiry policy runs between turns, never during one. */
        if (expiry.after_ms)
            mt_cli_expiry_tick(&expiry);
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        rc = mt_prompt_read(&prompt, STDIN_FILENO, &mt_agent_interrupted, &line, &n);
        if (rc == MT_PROMPT_INTR) {
            /* Ctrl-C at the prompt drops the line being typed (the
             * terminal discards it); the echoed ^C needs its line ended. */
            fputc('\n', stdout);
            continue;
        }
        if (rc == MT_PROMPT_FAIL) {
            fprintf(stderr, "memtool chat: cannot read standard input: %s\n", strerror(errno));
            status = MT_EXIT_USAGE;
            end = "standard input failed";
            break;
        }
        if (rc == MT_PROMPT_EOF) {
            if (tty)
                fputc('\n', stdout);
            if (tty)
                end = "end of input (Ctrl-D)";
            break;
        }
        if (is_blank(line))
            continue;
        if (o.project && mt_project_turn_begin(&send, &proj, line) < 0) {
            fprintf(stderr, "error: %s\n", mt_error_last()->message);
            continue;
        }
        rc = mt_agent_run_turn(&turn, s.agent, send ? send : line, &ui);
        free(send);
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
        if (o.project) {
            /* A turn that failed or was cut short leaves the session
             * without its ending: the closing turn says so. */
            if (turn.message || rc == MT_API_ECANCELED)
                mt_project_turn_reached(&proj);
            mt_agent_end_reason(reason, sizeof(reason), rc, &turn, o.agent.max_iterations);
            mt_project_turn_end(&proj, rc < 0 || turn.outcome != MT_AGENT_END_TURN,
                                json_array_size(mt_agent_messages(s.agent)) == 0);
            last_rc = rc < 0 || turn.outcome != MT_AGENT_END_TURN;
        }
        mt_agent_turn_dispose(&turn);
    }
    if (o.project) {
        char why[600];

        /* The log learns how the last turn went, when it went wrong. */
        if (last_rc)
            snprintf(why, sizeof(why), "%s, after a turn that ended with %s", end, reason);
        else
            snprintf(why, sizeof(why), "%s", end);
        if (mt_agent_project_finish(NULL, &view, &proj, s.agent, why, o.agent.max_tokens) < 0 &&
            status == MT_EXIT_OK)
            status = MT_EXIT_TOOL;
    }
    mt_project_dispose(&proj);
    mt_prompt_dispose(&prompt);
    mt_agent_session_close(&s);
    return status;
}

/* memtool run [options] PROMPT: one task for Claude with memory, then exit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/agent_ui.h"
#include "cli/cli.h"

static const char help[] =
    "usage: memtool run [options] [--json] PROMPT...\n"
    "       ... | memtool run [options] [--json]\n\n"
    "Give Claude one task, with the memory tool on the store, and exit when it ends\n"
    "its turn. The prompt is the arguments joined by spaces, or else all of stdin.\n"
    "Claude's text goes to stdout as it arrives; memory calls and usage to stderr.\n"
    "Exit status: 0 when Claude ended its turn; 1 on an API error or when the turn\n"
    "stopped early (max_tokens, refusal, the iteration limit); 2 for a bad command\n"
    "line; 130 when interrupted. With --project, also 1 when the session's entry\n"
    "could not be written to the progress log.\n\n"
    "Options:\n"
    "  --json                     print the final message, the transcript and usage\n"
    "                             as one JSON object on stdout instead of the "
    "text\n" MT_AGENT_CLI_OPTIONS;

/* The prompt: the arguments joined by spaces, or stdin. */
static int read_prompt(char **out, int argc, char **argv, int first)
{
    mt_buf b = MT_BUF_INIT;
    size_t len;
    int i;

    *out = NULL;
    if (first < argc) {
        for (i = first; i < argc; i++)
            if ((i > first && mt_buf_putc(&b, ' ') < 0) || mt_buf_puts(&b, argv[i]) < 0)
                goto nomem;
        if (!(*out = mt_buf_detach(&b, NULL)))
            goto nomem;
        return 0;
    }
    if (isatty(STDIN_FILENO))
        return mt_cli_usage_error("run", "give a PROMPT, or pipe one on stdin");
    if (mt_cli_read_all(out, &len, STDIN_FILENO) < 0)
        return mt_cli_usage_error("run", "cannot read the prompt from stdin");
    if (strlen(*out) != len) {
        free(*out);
        *out = NULL;
        return mt_cli_usage_error("run", "the prompt holds a NUL byte");
    }
    /* The newline that ends a piped prompt is not part of it. */
    while (len > 0 && ((*out)[len - 1] == '\n' || (*out)[len - 1] == '\r'))
        (*out)[--len] = '\0';
    return 0;
nomem:
    mt_buf_dispose(&b);
    fputs("memtool run: out of memory\n", stderr);
    return MT_EXIT_TOOL;
}

static int print_json(mt_agent_session *s, const mt_agent_turn *turn, const char *error,
                      json_t *project)
{
    const char *stop = json_string_value(json_object_get(turn->message, "stop_reason"));
    json_t *edits = turn->applied_edits ? json_incref(turn->applied_edits) : json_array();
    json_t *out =
        json_pack("{s:s?,s:s?,s:s?,s:O?,s:O,s:o,s:{s:I,s:I,s:I,s:I},s:I,s:I}", "outcome",
                  error ? NULL : mt_agent_outcome_name(turn->outcome), "stop_reason", stop, "error",
                  error, "message", turn->message, "transcript", mt_agent_messages(s->agent),
                  "applied_edits", edits, "usage", "input_tokens", (json_int_t)turn->input_tokens,
                  "output_tokens", (json_int_t)turn->output_tokens, "cache_read_input_tokens",
                  (json_int_t)turn->cache_read_tokens, "cache_creation_input_tokens",
                  (json_int_t)turn->cache_creation_tokens, "requests", (json_int_t)turn->requests,
                  "memory_calls", (json_int_t)turn->tool_calls);
    int rc = 0;

    if (!out)
        return -1;
    if (project && json_object_set(out, "project", project) < 0)
        rc = -1;
    if (json_dumpf(out, stdout, JSON_INDENT(2)) < 0 || fputc('\n', stdout) == EOF)
        rc = -1;
    json_decref(out);
    return rc;
}

int mt_cmd_run(const mt_cli *cli, int argc, char **argv)
{
    mt_agent_cli o;
    mt_agent_session s;
    mt_agent_view view;
    mt_agent_turn turn;
    mt_agent_ui ui;
    mt_project_session proj;
    json_t *project = NULL;
    char *prompt = NULL, *send = NULL, *error = NULL, reason[512];
    int rc, status;

    memset(&turn, 0, sizeof(turn));
    memset(&s, 0, sizeof(s));
    memset(&proj, 0, sizeof(proj));
    if ((status = mt_agent_cli_parse(&o, "run", argc, argv, 1)) != 0)
        return status;
    if (o.help) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    if (o.print_system)
        return o.first_arg < argc
                   ? mt_cli_usage_error("run", "--print-system-prompt takes no PROMPT")
                   : mt_agent_cli_print_system(&o, "run");
    if ((status = read_prompt(&prompt, argc, argv, o.first_arg)) != 0)
        return status;
    if (!*prompt) {
        status = mt_cli_usage_error("run", "the prompt is empty");
        goto done;
    }
    if ((status = mt_agent_session_open(&s, cli, &o, "run")) != 0)
        goto done;
    if (cli->expire_after_ms) {
        /* The expiry policy, before the task: never in the middle of it. */
        mt_cli_expiry x = {
            s.mem, cli->expire_after_ms, cli->expire_after, cli->actor_given ? NULL : "gc", "run",
            0};
        mt_cli_expire(&x);
    }
    memset(&view, 0, sizeof(view));
    view.out = stdout;
    view.err = stderr;
    view.quiet_text = o.json;
    mt_agent_catch_interrupt();
    mt_agent_view_ui(&ui, &view, &mt_agent_interrupted);
    if (o.project) {
        mt_project_begin(&proj, s.mem);
        if (mt_project_turn_begin(&send, &proj, prompt) < 0) {
            fprintf(stderr, "memtool run: %s\n", mt_error_last()->message);
            status = MT_EXIT_TOOL;
            goto done;
        }
    }
    rc = mt_agent_run_turn(&turn, s.agent, send ? send : prompt, &ui);
    mt_agent_view_break(&view);
    if (rc < 0) {
        const char *why = rc == MT_API_ECANCELED ? "interrupted" : mt_error_last()->message;

        fprintf(stderr, "memtool run: %s\n", why);
        if (!(error = strdup(why))) {
            status = MT_EXIT_TOOL;
            goto done;
        }
        status = rc == MT_API_ECANCELED ? 130 : MT_EXIT_TOOL;
    } else {
        mt_agent_view_summary(&view, &turn, o.agent.max_tokens);
        status = turn.outcome == MT_AGENT_END_TURN ? MT_EXIT_OK : MT_EXIT_TOOL;
    }
    if (o.project) {
        if (turn.message || rc == MT_API_ECANCELED)
            mt_project_turn_reached(&proj);
        mt_agent_end_reason(reason, sizeof(reason), rc, &turn, o.agent.max_iterations);
        mt_project_turn_end(&proj, rc < 0 || turn.outcome != MT_AGENT_END_TURN,
                            json_array_size(mt_agent_messages(s.agent)) == 0);
        /* The session's entry is part of the task: without it the run failed. */
        if (mt_agent_project_finish(o.json ? &project : NULL, &view, &proj, s.agent, reason,
                                    o.agent.max_tokens) < 0 &&
            status == MT_EXIT_OK)
            status = MT_EXIT_TOOL;
    }
    if (o.json && print_json(&s, &turn, error, project) < 0) {
        fputs("memtool run: cannot write the JSON\n", stderr);
        status = MT_EXIT_TOOL;
    }
done:
    json_decref(project);
    mt_agent_turn_dispose(&turn);
    mt_project_dispose(&proj);
    mt_agent_session_close(&s);
    free(prompt);
    free(send);
    free(error);
    return status;
}

/* What `memtool chat` and `memtool run` share: options, setup, and showing a turn. */
#ifndef MT_CLI_AGENT_UI_H
#define MT_CLI_AGENT_UI_H

#include <signal.h>
#include <stdio.h>

#include "agent/agent.h"
#include "agent/project.h"
#include "cli/cli.h"

/* The options both commands take. */
#define MT_AGENT_CLI_OPTIONS                                                                       \
    "  --root DIR                 the store (also a global option)\n"                              \
    "  --model MODEL              the model (MEMTOOL_MODEL; default " MT_AGENT_DEFAULT_MODEL ")\n" \
    "  --system FILE              a system prompt, read from FILE\n"                               \
    "  --max-tokens N             the longest response (default 8192)\n"                           \
    "  --clear-tool-uses-at TOKENS  clear old tool uses from the context once the input\n"         \
    "                             reaches TOKENS (default: the API's, 100000; 0: never)\n"         \
    "  --keep-tool-uses N         tool uses kept when clearing (default: the API's, 3)\n"          \
    "  --exclude-tools NAMES      tools whose uses are never cleared, e.g. memory\n"               \
    "  --compact                  let the API compact (summarise) the context when it grows\n"     \
    "  --compact-at TOKENS        compact once the input reaches TOKENS (default: the\n"           \
    "                             API's, 150000); implies --compact\n"                             \
    "  --pause-after-compaction   have the API pause after compacting; memtool goes on\n"          \
    "  --thinking TOKENS          let Claude think first, up to TOKENS (at least 1024,\n"          \
    "                             below --max-tokens)\n"                                           \
    "  --clear-thinking KEEP      clear thinking from all but the last KEEP turns (a number,\n"    \
    "                             or all to keep every turn's); needs --thinking\n"                \
    "  --max-iterations N         requests per turn before stopping (default 50)\n"                \
    "  --no-stream                wait for whole responses instead of streaming\n"                 \
    "  --no-search                offer Claude only the memory tool, not memory_search\n"          \
    "  --no-thread                send the whole conversation with every request instead of\n"     \
    "                             continuing a message thread (the default from API version\n"     \
    "                             " MT_API_THREADS_VERSION ")\n"                                   \
    "  --api-version V            the anthropic-version to send (MEMTOOL_API_VERSION;\n"           \
    "                             default " MT_API_VERSION                                         \
    "); threads are off before " MT_API_THREADS_VERSION "\n"                                       \
    "  --auth x-api-key|bearer    how the key is sent (MEMTOOL_API_AUTH; default bearer:\n"        \
    "                             Authorization: Bearer KEY)\n"                                    \
    "  --project                  follow the project pattern: read the progress log and\n"         \
    "                             feature list first, one feature at a time, and leave an\n"       \
    "                             entry in the log when the session ends (memtool init)\n"         \
    "  --print-system-prompt      print the system prompt that would be sent, and exit\n"          \
    "  -h, --help                 this help\n"                                                     \
    "The API key is read from ANTHROPIC_API_KEY, the server from ANTHROPIC_BASE_URL\n"             \
    "(default https://api.anthropic.com).\n"

typedef struct {
    mt_agent_options agent;
    const char *root;        /* --root, or NULL for the global one */
    const char *system_file; /* --system */
    mt_api_options api;      /* --api-version, --auth */
    int json;                /* --json (run only) */
    int project;             /* --project: the multi-session project pattern */
    int print_system;        /* --print-system-prompt */
    int first_arg;           /* index of the first argument after the options */
    int help;                /* --help was asked for */
} mt_agent_cli;

/* Parse the options of `name` (chat or run; --json only when allow_json).
 * Returns 0, or the exit status after printing why. */
int mt_agent_cli_parse(mt_agent_cli *o, const char *name, int argc, char **argv, int allow_json);

/* The system prompt the options make (--project's, then --system's file
 * after a blank line), or NULL for none. Returns 0, or the exit status after
 * printing why. */
int mt_agent_cli_system(char **out, const mt_agent_cli *o, const char *name);

/* --print-system-prompt: print it exactly as it would be sent; the exit status. */
int mt_agent_cli_print_system(const mt_agent_cli *o, const char *name);

/* Everything a session needs. */
typedef struct {
    mt_memory *mem;
    mt_api *api;
    mt_agent *agent;
    char *system; /* the system prompt sent */
} mt_agent_session;

/* Open the store, the API client and the agent. Returns 0, or the exit status
 * after printing why. */
int mt_agent_session_open(mt_agent_session *s, const mt_cli *cli, mt_agent_cli *o,
                          const char *name);
void mt_agent_session_close(mt_agent_session *s);

/* Showing a turn on a terminal: text on `out` as it arrives, one line per memory
 * call and per notice on `err`. */
typedef struct {
    FILE *out, *err;
    int quiet_text; /* do not print Claude's text (run --json) */
    int mid_line;   /* out is in the middle of a line */
} mt_agent_view;

/* Fill ui with callbacks that show a turn through v. */
void mt_agent_view_ui(mt_agent_ui *ui, mt_agent_view *v, volatile sig_atomic_t *cancel);

/* Print how the turn ended (when it was not end_turn) and its token usage. */
void mt_agent_view_summary(mt_agent_view *v, const mt_agent_turn *turn, long max_tokens);

/* End a line of streamed text, if one is open. */
void mt_agent_view_break(mt_agent_view *v);

/* Why a session ended, in words for the progress log and the user: from the
 * last turn's result (rc < 0: it failed) and outcome. */
void mt_agent_end_reason(char *out, size_t size, int rc, const mt_agent_turn *turn,
                         unsigned max_iterations);

/* --project: end the session (mt_project_end), showing the closing turn
 * through v and saying what became of the progress entry. *report (may be
 * NULL) gets {"closing_turn": bool, "entry": "...", "error": ...} for --json.
 * Returns 0, or -1 when no entry could be written. */
int mt_agent_project_finish(json_t **report, mt_agent_view *v, mt_project_session *p, mt_agent *ag,
                            const char *reason, long max_tokens);

/* Set by SIGINT once mt_agent_catch_interrupt installed the handler. */
extern volatile sig_atomic_t mt_agent_interrupted;

/* Let SIGINT set mt_agent_interrupted instead of ending the process, and
 * interrupt a blocked read (no SA_RESTART). */
int mt_agent_catch_interrupt(void);

#endif

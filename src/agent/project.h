/*
 * The multi-session project pattern: three memories carry a project from one
 * session to the next (the progress log, the feature list, the start-up
 * note), a prompt has Claude read and keep them, and the end of a session
 * always leaves the session's entry in the progress log.
 *
 * Claude is asked to write that entry; memtool cannot make it. So when a
 * session ends without one (Claude did not touch the log in its last turn,
 * or the turn was cut short), memtool sends one more, small turn asking for
 * it, and when that writes nothing either (or fails), memtool appends a
 * minimal entry itself, through the library like any other write.
 */
#ifndef MT_AGENT_PROJECT_H
#define MT_AGENT_PROJECT_H

#include "agent/agent.h"

#define MT_PROJECT_PROGRESS "/memories/project/progress.md"
#define MT_PROJECT_FEATURES "/memories/project/features.json"
#define MT_PROJECT_STARTUP  "/memories/project/startup.md"
/* Requests the closing turn may take: a view, an insert, a features update. */
#define MT_PROJECT_WRAPUP_ITERATIONS 5

/* The parts of src/agent/project_prompt.md, which is built into memtool. */
typedef enum {
    MT_PROJECT_PART_SYSTEM, /* the system prompt */
    MT_PROJECT_PART_FIRST,  /* put before the first message of a session */
    MT_PROJECT_PART_WRAPUP  /* the closing turn's message */
} mt_project_part;

/* A part's text with {{now}} ("2026-11-22 16:22 UTC") and {{reason}} filled
 * in (reason may be NULL where the part has none). */
int mt_project_text(char **out, mt_project_part part, const char *reason);

/* The system prompt as sent: the project's when `project`, then `own` (from
 * --system) after a blank line; either alone as it is; NULL for neither. */
int mt_project_system(char **out, int project, const char *own);

/* "2026-11-22 16:22 UTC", the form of the log's headings. */
void mt_project_now(char out[32]);

typedef struct {
    mt_memory *mem;
    char *task;       /* the first prompt's first line: memtool's entry names it */
    unsigned turns;   /* turns begun */
    int reminded;     /* the reminder went out with a turn the conversation kept */
    int changed;      /* the progress log changed during the session */
    int last_changed; /* ... during the last turn */
    int last_cut;     /* the last turn did not end with Claude ending it */
    int reached;      /* some turn got an answer from the API (or was interrupted waiting) */
    char before[65];  /* the log's SHA-256 as the last turn began ("" when absent) */
    int64_t own;      /* the newest version of the log by this handle's actor as the last
                         turn began: 0 none, -1 no history (then `before` decides) */
} mt_project_session;

void mt_project_begin(mt_project_session *p, mt_memory *mem);
void mt_project_dispose(mt_project_session *p);

/* The turn got an answer from the API, or was interrupted while waiting for
 * one: the session is one to record. A session none of whose turns did
 * (no connection, every attempt failed) gets no entry: it did nothing. */
void mt_project_turn_reached(mt_project_session *p);

/* The text to send for `prompt`: on the session's first turn the pattern's
 * reminder comes before it. Call mt_project_turn_end when the turn is over;
 * `cut`: it ended any other way than Claude ending its turn; `taken_back`:
 * the conversation is empty again (a first turn that got no answer), so the
 * next turn carries the reminder. */
int mt_project_turn_begin(char **out, mt_project_session *p, const char *prompt);
void mt_project_turn_end(mt_project_session *p, int cut, int taken_back);

typedef enum {
    MT_PROJECT_ENTRY_NONE = 0, /* no turn ran: nothing to record */
    MT_PROJECT_ENTRY_SESSION,  /* Claude wrote it in the session's last turn */
    MT_PROJECT_ENTRY_CLAUDE,   /* Claude wrote it in the closing turn */
    MT_PROJECT_ENTRY_EARLIER,  /* the closing turn wrote none, but the session had */
    MT_PROJECT_ENTRY_MEMTOOL,  /* memtool wrote a minimal one */
    MT_PROJECT_ENTRY_FAILED,   /* none could be written: `error` says why */
    MT_PROJECT_ENTRY_UNREACHED /* no turn reached the API: nothing happened to record */
} mt_project_entry;

typedef struct {
    mt_project_entry entry;
    int asked;          /* the closing turn was sent */
    int turn_rc;        /* its result: 0, or why it failed (MT_API_ECANCELED...) */
    mt_agent_turn turn; /* the closing turn, when asked */
    char *error;        /* why the closing turn or memtool's entry failed, or NULL */
} mt_project_end_result;

/*
 * End the session, `reason` saying why ("Claude ended its turn", "end of
 * input"). Unless the last turn ended with Claude ending it after writing
 * to the log, ask Claude for its entry in one closing turn (at most
 * MT_PROJECT_WRAPUP_ITERATIONS requests, shown through ui, cancellable
 * through ui->cancel). If that turn wrote nothing to the log and the
 * session had written nothing (or was cut short), append memtool's entry:
 * the date, "session ended: <reason>", the task. Returns 0 (what happened is
 * in *r, failures included), or MT_ENOMEM.
 */
int mt_project_end(mt_project_end_result *r, mt_project_session *p, mt_agent *ag,
                   const char *reason, const mt_agent_ui *ui);
void mt_project_end_dispose(mt_project_end_result *r);

/* Append memtool's minimal entry to the progress log (creating the log
 * when it is missing). */
int mt_project_append_entry(mt_memory *mem, const char *reason, const char *task);

#endif

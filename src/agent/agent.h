/*
 * The tool loop: a conversation with Claude in which every `memory` tool call
 * is carried out on a store through the library.
 *
 * One turn sends the user's text, then for as long as Claude stops for tools
 * runs each memory call in order (so edits in one response never race) and
 * answers with one user message holding all the tool_results. The assistant
 * content goes back exactly as it came, unknown blocks and fields included.
 * end_turn ends the turn; pause_turn and compaction send the conversation
 * again as it is; max_tokens ends it without running a call that may be cut
 * off; refusal ends it and takes the turn out of the conversation, as the API
 * asks.
 *
 * With threads on, the conversation runs over a message thread (beta
 * message-threads-2026-08-12), as the official SDK's tool runner does: the
 * first request creates it with the whole history, each later one continues
 * from the last reply with only the messages the server lacks, and without
 * system and tools, which the server keeps. A thread the server lost or that
 * was continued elsewhere is replaced by replaying the whole history on a new
 * one; a request the server cannot thread (thread_unsupported_request) goes
 * again without, and so does the rest of the conversation. A refusal, a stream
 * cut before message_stop, a reply kept only in part, or a changed system
 * prompt or tool set starts a new thread with the next request.
 */
#ifndef MT_AGENT_H
#define MT_AGENT_H

#include <signal.h>

#include <jansson.h>

#include <memtool.h>

#include "api/client.h"
#include "util/buf.h"

#define MT_AGENT_DEFAULT_MODEL      "claude-sonnet-4-5"
#define MT_AGENT_DEFAULT_MAX_TOKENS 8192
#define MT_AGENT_MAX_ITERATIONS     50
#define MT_AGENT_EDIT_TYPE          "clear_tool_uses_20250919"
#define MT_AGENT_COMPACT_TYPE       "compact_20260112"
#define MT_AGENT_CLEAR_THINKING     "clear_thinking_20251015"

typedef struct {
    const char *model;        /* NULL: MT_AGENT_DEFAULT_MODEL */
    const char *system;       /* the system prompt, or NULL */
    long max_tokens;          /* <= 0: MT_AGENT_DEFAULT_MAX_TOKENS */
    long clear_at;            /* input tokens that trigger clearing old tool uses; 0: the
                                 API's default; < 0: no context editing at all */
    long keep;                /* tool uses kept when clearing; < 0: the API's default */
    const char *exclude;      /* comma-separated tools whose uses are never cleared, or NULL */
    unsigned max_iterations;  /* requests per turn; 0: MT_AGENT_MAX_ITERATIONS */
    int stream;               /* stream responses (SSE) */
    int no_search;            /* offer only the memory tool, not memory_search */
    int threads;              /* run over a message thread */
    int compact;              /* let the API compact the context (compact_20260112) */
    long compact_at;          /* input tokens that trigger it; 0: the API's default */
    int compact_pause;        /* ask the API to pause after compacting (the turn goes on) */
    long thinking;            /* extended thinking's budget_tokens; 0: no thinking */
    int clear_thinking;       /* clear old thinking blocks (clear_thinking_20251015) */
    long clear_thinking_keep; /* thinking turns kept; 0: the API's default; < 0: all */
} mt_agent_options;

/* What a front end hears during a turn. All optional. */
typedef struct {
    /* Claude's text as it arrives (whole blocks when not streaming). */
    void (*text)(void *payload, const char *text, size_t len);
    /* A text block ended. */
    void (*text_end)(void *payload);
    /* A memory call was carried out (or refused): the tool_use block and the
     * tool_result sent back. */
    void (*tool)(void *payload, const json_t *tool_use, const json_t *tool_result);
    /* Something the user should know, as one line: a retry, context edits the
     * API applied, a pause. */
    void (*notice)(void *payload, const char *line);
    volatile sig_atomic_t *cancel; /* set to cancel the running request */
    void *payload;
} mt_agent_ui;

/* How a turn ended. */
typedef enum {
    MT_AGENT_END_TURN = 0, /* end_turn or stop_sequence: Claude is done */
    MT_AGENT_MAX_TOKENS,   /* the response reached max_tokens */
    MT_AGENT_REFUSAL,      /* Claude declined; the turn was taken back */
    MT_AGENT_ITERATIONS,   /* the per-turn request limit was reached */
    MT_AGENT_OTHER         /* a stop reason this loop cannot continue from */
} mt_agent_outcome;

typedef struct {
    mt_agent_outcome outcome;
    json_t *message;        /* the last response, as received */
    json_t *applied_edits;  /* every context edit the API reported in the turn */
    unsigned requests;      /* requests sent, retries and recoveries not counted */
    unsigned tool_calls;    /* memory calls carried out */
    unsigned skipped_calls; /* tool calls not run because the response was cut off */
    int64_t input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens;
} mt_agent_turn;

typedef struct mt_agent mt_agent;

/* The agent borrows api and mem; they must outlive it. */
int mt_agent_new(mt_agent **out, mt_api *api, mt_memory *mem, const mt_agent_options *opts);
void mt_agent_free(mt_agent *ag);

/*
 * Run one turn for the user's `prompt`. Returns 0 when the turn came to a stop
 * (see turn->outcome), or < 0: MT_API_ECANCELED, an API or connection error
 * (mt_error_last() has the line), MT_ENOMEM. After a failure the conversation
 * keeps what completed, so the next turn can go on from it; a turn that got
 * no response at all is taken back.
 */
int mt_agent_run_turn(mt_agent_turn *turn, mt_agent *ag, const char *prompt, const mt_agent_ui *ui);

void mt_agent_turn_dispose(mt_agent_turn *turn);

/* The request limit of the turns that follow; 0: the one the agent was made
 * with. A session's closing turn gets a small budget of its own. */
void mt_agent_set_max_iterations(mt_agent *ag, unsigned n);

/* The conversation so far: the `messages` of the next request. */
const json_t *mt_agent_messages(const mt_agent *ag);

/* The request the agent would send now: on a thread, a create with the whole
 * conversation or a continue with only the messages the server lacks. */
json_t *mt_agent_request(const mt_agent *ag);

/* One line for a memory call: "create /memories/progress.md", with the
 * first line of the result after it when the call failed. */
int mt_agent_describe_call(mt_buf *out, const json_t *tool_use, const json_t *tool_result);

/* The outcome's stop reason as the API names it, or a word for the others. */
const char *mt_agent_outcome_name(mt_agent_outcome outcome);

#endif

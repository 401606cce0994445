#include "agent/agent.h"

#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

#include "core/search_tool.h"

struct mt_agent {
    mt_api *api;
    mt_memory *mem;
    json_t *base;     /* every request's fields but `messages` */
    json_t *messages; /* the conversation */
    unsigned max_iterations;
    unsigned default_iterations; /* max_iterations as made */
    int search;                  /* memory_search is offered */
    /* The message thread: see agent.h. */
    int threading;     /* requests carry a thread (until the server refuses one) */
    char *prev_id;     /* the reply the next request continues from; NULL: it creates one */
    size_t held;       /* the messages the thread holds, with that reply */
    int thread_made;   /* the thread prev_id is in was created by this agent */
    int replaces_lost; /* the thread replaces one the server lost and was not continued yet */
};

const char *mt_agent_outcome_name(mt_agent_outcome outcome)
{
    switch (outcome) {
    case MT_AGENT_END_TURN:
        return "end_turn";
    case MT_AGENT_MAX_TOKENS:
        return "max_tokens";
    case MT_AGENT_REFUSAL:
        return "refusal";
    case MT_AGENT_ITERATIONS:
        return "iteration_limit";
    case MT_AGENT_OTHER:
        break;
    }
    return "other";
}

/* {"edits":[{"type":"clear_tool_uses_20250919", ...}]}, or NULL when context
 * editing is off. */
static int make_context_management(json_t **out, const mt_agent_options *o)
{
    json_t *edit = NULL, *cm = NULL, *list = NULL, *compact = NULL, *thinking = NULL;
    const char *p, *comma;
    int rc = MT_ENOMEM;

    *out = NULL;
    if (o->clear_thinking) {
        if (!(thinking = json_pack("{s:s}", "type", MT_AGENT_CLEAR_THINKING)))
            goto done;
        if (o->clear_thinking_keep != 0 &&
            json_object_set_new(thinking, "keep",
                                o->clear_thinking_keep < 0
                                    ? json_pack("{s:s}", "type", "all")
                                    : json_pack("{s:s,s:I}", "type", "thinking_turns", "value",
                                                (json_int_t)o->clear_thinking_keep)) < 0)
            goto done;
    }
    if (o->compact) {
        if (!(compact = json_pack("{s:s}", "type", MT_AGENT_COMPACT_TYPE)))
            goto done;
        if (o->compact_at > 0 &&
            json_object_set_new(compact, "trigger",
                                json_pack("{s:s,s:I}", "type", "input_tokens", "value",
                                          (json_int_t)o->compact_at)) < 0)
            goto done;
        if (o->compact_pause &&
            json_object_set_new(compact, "pause_after_compaction", json_true()) < 0)
            goto done;
    }
    if (o->clear_at < 0) {
        if ((thinking || compact) && !(*out = json_pack("{s:[O*,O*]}", "edits", thinking, compact)))
            goto done;
        rc = 0;
        goto done;
    }
    if (!(edit = json_pack("{s:s}", "type", MT_AGENT_EDIT_TYPE)))
        goto done;
    if (o->clear_at > 0 && json_object_set_new(edit, "trigger",
                                               json_pack("{s:s,s:I}", "type", "input_tokens",
                                                         "value", (json_int_t)o->clear_at)) < 0)
        goto done;
    if (o->keep >= 0 && json_object_set_new(edit, "keep",
                                            json_pack("{s:s,s:I}", "type", "tool_uses", "value",
                                                      (json_int_t)o->keep)) < 0)
        goto done;
    if (o->exclude && *o->exclude) {
        if (!(list = json_array()))
            goto done;
        for (p = o->exclude; *p; p = *comma ? comma + 1 : comma) {
            comma = strchr(p, ',');
            if (!comma)
                comma = p + strlen(p);
            if (comma > p && json_array_append_new(list, json_stringn(p, (size_t)(comma - p))) < 0)
                goto done;
        }
        if (json_object_set_new(edit, "exclude_tools", list) < 0) {
            list = NULL;
            goto done;
        }
        list = NULL;
    }
    /* The API takes clear_thinking first of all. */
    if (!(cm = json_pack("{s:[O*,O]}", "edits", thinking, edit)))
        goto done;
    /* Clearing first, so compaction summarises what is left. */
    if (compact && json_array_append(json_object_get(cm, "edits"), compact) < 0)
        goto done;
    *out = cm;
    cm = NULL;
    rc = 0;
done:
    json_decref(cm);
    json_decref(compact);
    json_decref(thinking);
    json_decref(list);
    json_decref(edit);
    return rc;
}

int mt_agent_new(mt_agent **out, mt_api *api, mt_memory *mem, const mt_agent_options *opts)
{
    mt_agent_options o;
    mt_agent *ag = NULL;
    json_t *cm = NULL;
    int rc = MT_ENOMEM;

    *out = NULL;
    memset(&o, 0, sizeof(o));
    if (opts)
        o = *opts;
    else
        o.keep = -1;
    if (!(ag = calloc(1, sizeof(*ag))))
        goto done;
    ag->api = api;
    ag->mem = mem;
    ag->max_iterations = o.max_iterations ? o.max_iterations : MT_AGENT_MAX_ITERATIONS;
    ag->default_iterations = ag->max_iterations;
    ag->base = json_pack(
        "{s:s,s:I,s:[{s:s,s:s}]}", "model", o.model && *o.model ? o.model : MT_AGENT_DEFAULT_MODEL,
        "max_tokens", (json_int_t)(o.max_tokens > 0 ? o.max_tokens : MT_AGENT_DEFAULT_MAX_TOKENS),
        "tools", "type", "memory_20250818", "name", "memory");
    if (!ag->base || !(ag->messages = json_array()))
        goto done;
    ag->search = !o.no_search;
    ag->threading = o.threads;
    if (ag->search) {
        /* Search beside memory: a custom tool, read-only, answered here. */
        json_t *t = json_pack("{s:s, s:s, s:o*}", "name", "memory_search", "description",
                              mt_search_tool_description, "input_schema", mt_search_tool_schema());
        if (!t || json_array_append_new(json_object_get(ag->base, "tools"), t) < 0)
            goto done;
    }
    if (o.system && json_object_set_new(ag->base, "system", json_string(o.system)) < 0) {
        rc = mt_error_set(MT_EINVAL, "the system prompt is not valid UTF-8");
        goto done;
    }
    if (make_context_management(&cm, &o) < 0)
        goto done;
    if (cm && json_object_set_new(ag->base, "context_management", cm) < 0)
        goto done;
    if (o.stream && json_object_set_new(ag->base, "stream", json_true()) < 0)
        goto done;
    if (o.thinking > 0 &&
        json_object_set_new(
            ag->base, "thinking",
            json_pack("{s:s,s:I}", "type", "enabled", "budget_tokens", (json_int_t)o.thinking)) < 0)
        goto done;
    *out = ag;
    ag = NULL;
    rc = 0;
done:
    mt_agent_free(ag);
    if (rc == MT_ENOMEM)
        mt_error_set(rc, "out of memory");
    return rc;
}

void mt_agent_free(mt_agent *ag)
{
    if (!ag)
        return;
    json_decref(ag->base);
    json_decref(ag->messages);
    free(ag->prev_id);
    free(ag);
}

void mt_agent_set_max_iterations(mt_agent *ag, unsigned n)
{
    ag->max_iterations = n ? n : ag->default_iterations;
}

const json_t *mt_agent_messages(const mt_agent *ag)
{
    return ag->messages;
}

/* The next request starts a new thread (with the whole history). */
static void new_thread(mt_agent *ag)
{
    free(ag->prev_id);
    ag->prev_id = NULL;
    ag->held = 0;
}

/* Whether the next request continues the thread: there is a reply to go on
 * from, made on a thread this agent created, and the conversation still has
 * every message the thread holds. (A thread keeps the system prompt and
 * tools it was created with; the agent's never change after mt_agent_new.) */
static int continues(const mt_agent *ag)
{
    return ag->threading && ag->prev_id && ag->thread_made &&
           ag->held <= json_array_size(ag->messages);
}

json_t *mt_agent_request(const mt_agent *ag)
{
    json_t *req = json_copy(ag->base), *msgs = NULL;
    size_t i;

    if (!req)
        return NULL;
    if (continues(ag)) {
        /* The server has the rest, and keeps system and tools itself. */
        json_object_del(req, "system");
        json_object_del(req, "tools");
        if (!(msgs = json_array()))
            goto fail;
        for (i = ag->held; i < json_array_size(ag->messages); i++)
            if (json_array_append(msgs, json_array_get(ag->messages, i)) < 0)
                goto fail;
        if (json_object_set_new(req, "messages", msgs) < 0) {
            msgs = NULL; /* taken, even on failure */
            goto fail;
        }
        msgs = NULL;
        if (json_object_set_new(
                req, "thread",
                json_pack("{s:s,s:s}", "type", "continue", "previous_message_id", ag->prev_id)) < 0)
            goto fail;
        return req;
    }
    if (ag->threading &&
        json_object_set_new(req, "thread", json_pack("{s:s}", "type", "create")) < 0)
        goto fail;
    if (json_object_set(req, "messages", ag->messages) < 0)
        goto fail;
    return req;
fail:
    json_decref(msgs);
    json_decref(req);
    return NULL;
}

/* The anthropic-beta header a request needs: context management (and
 * compaction) when it asks for them, threads when it has one. */
static int request_betas(mt_buf *out, const json_t *req)
{
    const json_t *edits = json_object_get(json_object_get(req, "context_management"), "edits"),
                 *edit;
    size_t i;
    int compact = 0, rc = 0;

    mt_buf_truncate(out, 0);
    json_array_foreach(edits, i, edit)
    {
        const char *type = json_string_value(json_object_get(edit, "type"));

        compact |= type && strcmp(type, MT_AGENT_COMPACT_TYPE) == 0;
    }
    if (json_array_size(edits) > 0)
        rc |= mt_buf_puts(out, MT_API_BETA_CONTEXT);
    if (compact)
        rc |= mt_buf_printf(out, "%s" MT_API_BETA_COMPACT, out->len ? "," : "");
    if (json_object_get(req, "thread"))
        rc |= mt_buf_printf(out, "%s" MT_API_BETA_THREADS, out->len ? "," : "");
    return rc < 0 ? MT_ENOMEM : 0;
}

void mt_agent_turn_dispose(mt_agent_turn *turn)
{
    json_decref(turn->message);
    json_decref(turn->applied_edits);
    memset(turn, 0, sizeof(*turn));
}

/* ---- describing calls ---- */

/* The first n bytes of s, with control characters shown as '?' so a path
 * cannot move the cursor, and cut after 200 bytes. */
static void put_clean_n(mt_buf *b, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n && i < 200; i++) {
        unsigned char c = (unsigned char)s[i];

        mt_buf_putc(b, c < 0x20 || c == 0x7f ? '?' : (char)c);
    }
    if (i < n)
        mt_buf_puts(b, "...");
}

static void put_clean(mt_buf *b, const char *s)
{
    put_clean_n(b, s, strlen(s));
}

static const char *str_field(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    return s ? s : "?";
}

int mt_agent_describe_call(mt_buf *out, const json_t *tool_use, const json_t *tool_result)
{
    const json_t *input = json_object_get(tool_use, "input");
    const char *name = json_string_value(json_object_get(tool_use, "name"));
    const char *command = json_string_value(json_object_get(input, "command"));
    const json_t *range = json_object_get(input, "view_range");
    const json_t *content = json_object_get(tool_result, "content");

    if (!name || strcmp(name, "memory") != 0) {
        mt_buf_puts(out, "unknown tool ");
        put_clean(out, name ? name : "?");
    } else if (!command) {
        mt_buf_puts(out, "(no command)");
    } else {
        put_clean(out, command);
        mt_buf_putc(out, ' ');
        if (strcmp(command, "rename") == 0) {
            put_clean(out, str_field(input, "old_path"));
            mt_buf_puts(out, " -> ");
            put_clean(out, str_field(input, "new_path"));
        } else {
            put_clean(out, str_field(input, "path"));
        }
        if (strcmp(command, "insert") == 0 &&
            json_is_integer(json_object_get(input, "insert_line")))
            mt_buf_printf(out, " at line %" JSON_INTEGER_FORMAT,
                          json_integer_value(json_object_get(input, "insert_line")));
        if (strcmp(command, "view") == 0 && json_array_size(range) == 2)
            mt_buf_printf(out, " [%" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT "]",
                          json_integer_value(json_array_get(range, 0)),
                          json_integer_value(json_array_get(range, 1)));
    }
    if (json_is_true(json_object_get(tool_result, "is_error"))) {
        const char *text = json_string_value(content);
        const char *nl;

        if (!text && json_is_array(content))
            text = json_string_value(json_object_get(json_array_get(content, 0), "text"));
        if (!text)
            text = "failed";
        mt_buf_puts(out, " (");
        nl = strchr(text, '\n');
        put_clean_n(out, text, nl ? (size_t)(nl - text) : strlen(text));
        mt_buf_puts(out, ")");
    }
    return out->ptr ? 0 : MT_ENOMEM;
}

/* ---- one turn ---- */

typedef struct {
    const mt_agent_ui *ui;
    int in_text; /* the block being streamed is text */
} stream_state;

static int on_stream_event(void *payload, const char *type, const json_t *data)
{
    stream_state *st = payload;
    const mt_agent_ui *ui = st->ui;

    if (strcmp(type, "content_block_start") == 0) {
        const char *btype =
            json_string_value(json_object_get(json_object_get(data, "content_block"), "type"));

        st->in_text = btype && strcmp(btype, "text") == 0;
    } else if (strcmp(type, "content_block_delta") == 0) {
        const json_t *delta = json_object_get(data, "delta");
        const json_t *text = json_object_get(delta, "text");

        if (st->in_text && json_is_string(text) && ui->text)
            ui->text(ui->payload, json_string_value(text), json_string_length(text));
    } else if (strcmp(type, "content_block_stop") == 0) {
        if (st->in_text && ui->text_end)
            ui->text_end(ui->payload);
        st->in_text = 0;
    }
    return 0;
}

static void on_retry(void *payload, unsigned attempt, long delay_ms, const char *why)
{
    stream_state *st = payload;
    mt_buf line = MT_BUF_INIT;

    (void)attempt;
    if (!st->ui->notice)
        return;
    if (delay_ms < 1000)
        mt_buf_printf(&line, "%s; retrying in %ld ms", why, delay_ms);
    else
        mt_buf_printf(&line, "%s; retrying in %.1f s", why, (double)delay_ms / 1000);
    if (line.ptr)
        st->ui->notice(st->ui->payload, line.ptr);
    mt_buf_dispose(&line);
}

/* The text blocks of a response that was not streamed, as if they had been. */
static void show_text(const mt_agent_ui *ui, const json_t *content)
{
    size_t i;
    json_t *block;

    json_array_foreach(content, i, block)
    {
        const char *type = json_string_value(json_object_get(block, "type"));
        const json_t *text = json_object_get(block, "text");

        if (!type || strcmp(type, "text") != 0 || !json_is_string(text))
            continue;
        if (ui->text)
            ui->text(ui->payload, json_string_value(text), json_string_length(text));
        if (ui->text_end)
            ui->text_end(ui->payload);
    }
}

static void add_usage(mt_agent_turn *turn, const json_t *usage)
{
    turn->input_tokens += json_integer_value(json_object_get(usage, "input_tokens"));
    turn->output_tokens += json_integer_value(json_object_get(usage, "output_tokens"));
    turn->cache_read_tokens +=
        json_integer_value(json_object_get(usage, "cache_read_input_tokens"));
    turn->cache_creation_tokens +=
        json_integer_value(json_object_get(usage, "cache_creation_input_tokens"));
}

/* Tell the user about context edits the API made, and keep them. */
static int note_edits(mt_agent_turn *turn, const json_t *message, const mt_agent_ui *ui)
{
    json_t *edits =
        json_object_get(json_object_get(message, "context_management"), "applied_edits");
    json_t *edit, *value;
    const char *key;
    size_t i;

    json_array_foreach(edits, i, edit)
    {
        mt_buf line = MT_BUF_INIT;

        if (json_array_append(turn->applied_edits, edit) < 0)
            return MT_ENOMEM;
        if (!ui->notice)
            continue;
        mt_buf_puts(&line, "context edited: ");
        put_clean(&line, str_field(edit, "type"));
        json_object_foreach(edit, key, value)
        {
            if (strcmp(key, "type") == 0 || !json_is_integer(value))
                continue;
            mt_buf_puts(&line, ", ");
            put_clean(&line, key);
            mt_buf_printf(&line, " %" JSON_INTEGER_FORMAT, json_integer_value(value));
        }
        if (line.ptr)
            ui->notice(ui->payload, line.ptr);
        mt_buf_dispose(&line);
    }
    return 0;
}

static int is_type(const json_t *block, const char *type)
{
    const char *t = json_string_value(json_object_get(block, "type"));

    return t && strcmp(t, type) == 0;
}

static int has_tool_use(const json_t *content)
{
    size_t i;
    json_t *block;

    json_array_foreach(content, i, block) if (is_type(block, "tool_use")) return 1;
    return 0;
}

/* A memory_search call's tool_result block. */
static int search_result(json_t **out, mt_agent *ag, const json_t *block)
{
    const json_t *input = json_object_get(block, "input");
    mt_result res;
    int rc;

    *out = NULL;
    if ((rc = mt_memory_search_tool(&res, ag->mem, input ? input : json_null())) < 0)
        return rc;
    *out = json_pack("{s:s,s:O*,s:s%,s:b}", "type", "tool_result", "tool_use_id",
                     json_object_get(block, "id"), "content", res.text, res.len, "is_error",
                     res.is_error);
    mt_result_dispose(&res);
    return *out ? 0 : mt_error_set(MT_ENOMEM, "out of memory");
}

/* Answer every tool_use block of `content`, in order, in one user message. */
static int run_tools(json_t **out, mt_agent *ag, const json_t *content, mt_agent_turn *turn,
                     const mt_agent_ui *ui)
{
    json_t *results = json_array(), *block, *res = NULL;
    size_t i;
    int rc = MT_ENOMEM;

    *out = NULL;
    if (!results)
        goto done;
    json_array_foreach(content, i, block)
    {
        const char *name = json_string_value(json_object_get(block, "name"));

        if (!is_type(block, "tool_use"))
            continue;
        if (name && strcmp(name, "memory") == 0) {
            if ((rc = mt_memory_tool_result(&res, ag->mem, block)) < 0)
                goto done;
            turn->tool_calls++;
        } else if (ag->search && name && strcmp(name, "memory_search") == 0) {
            if ((rc = search_result(&res, ag, block)) < 0)
                goto done;
            turn->tool_calls++;
        } else {
            /* Say so rather than leave the call unanswered, which the API
             * would refuse. */
            res = json_pack("{s:s,s:O*,s:s,s:b}", "type", "tool_result", "tool_use_id",
                            json_object_get(block, "id"), "content",
                            ag->search ? "Error: no such tool; the tools here are memory and "
                                         "memory_search"
                                       : "Error: no such tool; the only tool here is memory",
                            "is_error", 1);
            if (!res) {
                rc = MT_ENOMEM;
                goto done;
            }
        }
        if (ui->tool)
            ui->tool(ui->payload, block, res);
        if (json_array_append_new(results, res) < 0) {
            res = NULL;
            rc = MT_ENOMEM;
            goto done;
        }
        res = NULL;
    }
    if (!(*out = json_pack("{s:s,s:O}", "role", "user", "content", results))) {
        rc = MT_ENOMEM;
        goto done;
    }
    rc = 0;
done:
    json_decref(results);
    return rc;
}

/* The user's text as the next message; when the conversation already ends
 * with a user message (tool results of a turn that stopped early), the text
 * joins it, since roles must alternate. `saved` gets that message's content
 * as it was, for taking the turn back. */
static int add_prompt(mt_agent *ag, const char *prompt, json_t **saved)
{
    json_t *last = json_array_get(ag->messages, json_array_size(ag->messages) - 1);
    json_t *content = json_object_get(last, "content");
    const char *role = json_string_value(json_object_get(last, "role"));
    json_t *text, *list;

    *saved = NULL;
    if (!(text = json_string(prompt)))
        return mt_error_set(MT_EINVAL, "the prompt is not valid UTF-8");
    if (!role || strcmp(role, "user") != 0)
        return json_array_append_new(ag->messages,
                                     json_pack("{s:s,s:o}", "role", "user", "content", text)) < 0
                   ? MT_ENOMEM
                   : 0;
    if (!(*saved = json_deep_copy(content))) {
        json_decref(text);
        return MT_ENOMEM;
    }
    if (json_is_array(content)) {
        list = json_incref(content);
    } else {
        list = json_pack("[{s:s,s:O}]", "type", "text", "text", content);
    }
    if (!list ||
        json_array_append_new(list, json_pack("{s:s,s:o}", "type", "text", "text", text)) < 0 ||
        json_object_set_new(last, "content", list) < 0) {
        return MT_ENOMEM;
    }
    return 0;
}

static void take_back(mt_agent *ag, size_t len, json_t *saved)
{
    while (json_array_size(ag->messages) > len)
        json_array_remove(ag->messages, json_array_size(ag->messages) - 1);
    if (saved && len > 0)
        json_object_set(json_array_get(ag->messages, len - 1), "content", saved);
}

/* Add a response to the conversation. After a pause_turn the conversation
 * already ends with this turn's assistant message: the API continued it, so
 * the new blocks join it and roles keep alternating. */
static int add_assistant(mt_agent *ag, json_t *content)
{
    json_t *last = json_array_get(ag->messages, json_array_size(ag->messages) - 1);
    const char *role = json_string_value(json_object_get(last, "role"));
    json_t *have = json_object_get(last, "content");

    if (role && strcmp(role, "assistant") == 0 && json_is_array(have))
        return json_array_extend(have, content) < 0 ? MT_ENOMEM : 0;
    /* A copy of the list (the blocks are shared), so extending it later
     * leaves the response it came from as it was. */
    return json_array_append_new(ag->messages, json_pack("{s:s,s:o}", "role", "assistant",
                                                         "content", json_copy(content))) < 0
               ? MT_ENOMEM
               : 0;
}

/* After max_tokens: the response without its tool calls, none of which ran
 * (the last may be cut off), so the conversation stays one the API accepts. */
static int add_cut_response(mt_agent *ag, const json_t *content, mt_agent_turn *turn)
{
    json_t *kept = json_array(), *block;
    size_t i;
    int rc = MT_ENOMEM;

    if (!kept)
        return MT_ENOMEM;
    json_array_foreach(content, i, block)
    {
        if (is_type(block, "tool_use")) {
            turn->skipped_calls++;
            continue;
        }
        if (json_array_append(kept, block) < 0)
            goto done;
    }
    rc = json_array_size(kept) > 0 ? add_assistant(ag, kept) : 0;
done:
    json_decref(kept);
    return rc;
}

/* Whether a request is sent as `type` ("create" or "continue") on a thread. */
static int thread_is(const json_t *req, const char *type)
{
    const char *t = json_string_value(json_object_get(json_object_get(req, "thread"), "type"));

    return t && strcmp(t, type) == 0;
}

static int code_is(const mt_api_failure *f, const char *code)
{
    return strcmp(f->error_code, code) == 0;
}

/*
 * After a failed request: adjust the thread as the API asks, and say whether
 * the request should go again (the SDK tool runner's rules). A thread the
 * server lost or that was continued elsewhere is replaced with the whole
 * history on a new one, unless it was lost again right after such a replay
 * (the server may be unable to keep it); a request the server cannot thread
 * goes without, and so does the rest of the conversation. A stream cut short
 * leaves the server with a reply the conversation lacks: the next request
 * starts a new thread.
 */
static int recover(mt_agent *ag, const json_t *req, const mt_agent_ui *ui)
{
    const mt_api_failure *f = mt_api_last_failure(ag->api);
    mt_buf line = MT_BUF_INIT;
    int again = 0;

    if (!ag->threading || !json_object_get(req, "thread"))
        return 0;
    if (f->stream_cut) {
        new_thread(ag);
        return 0;
    }
    if (thread_is(req, "continue") &&
        (code_is(f, "thread_not_found") || code_is(f, "thread_already_continued") ||
         code_is(f, "thread_continue_in_flight"))) {
        if (code_is(f, "thread_not_found") && ag->replaces_lost) {
            ag->threading = 0;
            mt_buf_puts(&line, "the API lost the message thread again right after it was "
                               "replayed (thread_not_found); continuing without a thread");
        } else {
            ag->replaces_lost = code_is(f, "thread_not_found");
            mt_buf_printf(&line,
                          "the API cannot continue the message thread (%s); sending the whole "
                          "conversation again on a new thread",
                          f->error_code);
        }
        again = 1;
    } else if (code_is(f, "thread_unsupported_request")) {
        ag->threading = 0;
        mt_buf_printf(&line,
                      "the API cannot keep this conversation on a message thread "
                      "(thread_unsupported_request%s%s); continuing without a thread",
                      f->unsupported[0] ? ": " : "", f->unsupported);
        again = 1;
    }
    if (again) {
        new_thread(ag);
        if (ui->notice && line.ptr)
            ui->notice(ui->payload, line.ptr);
    }
    mt_buf_dispose(&line);
    return again;
}

/* The reply to `req` is in the conversation, whole: the next request
 * continues from it. */
static int keep_reply(mt_agent *ag, const json_t *req, const json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "id"));

    if (!ag->threading)
        return 0;
    if (!id || !*id) {
        new_thread(ag);
        return 0;
    }
    if (thread_is(req, "create")) {
        ag->thread_made = 1;
    } else {
        ag->replaces_lost = 0;
    }
    free(ag->prev_id);
    if (!(ag->prev_id = strdup(id)))
        return MT_ENOMEM;
    ag->held = json_array_size(ag->messages);
    return 0;
}

/* Tell the user about compaction blocks in a response. */
static void note_compaction(const json_t *content, const mt_agent_ui *ui)
{
    size_t i;
    json_t *block;

    json_array_foreach(content, i, block)
    {
        if (is_type(block, "compaction") && ui->notice)
            ui->notice(ui->payload, "context compacted: the API summarised the conversation "
                                    "so far");
    }
}

int mt_agent_run_turn(mt_agent_turn *turn, mt_agent *ag, const char *prompt, const mt_agent_ui *ui)
{
    static const mt_agent_ui quiet;
    size_t start = json_array_size(ag->messages);
    json_t *saved = NULL, *req = NULL, *msg = NULL, *reply = NULL;
    stream_state st;
    mt_api_hooks hooks;
    mt_buf betas = MT_BUF_INIT;
    int rc, answered = 0;

    memset(turn, 0, sizeof(*turn));
    if (!ui)
        ui = &quiet;
    if (!(turn->applied_edits = json_array())) {
        rc = MT_ENOMEM;
        goto done;
    }
    if ((rc = add_prompt(ag, prompt, &saved)) < 0)
        goto done;
    memset(&st, 0, sizeof(st));
    st.ui = ui;
    memset(&hooks, 0, sizeof(hooks));
    hooks.event = on_stream_event;
    hooks.retry = on_retry;
    hooks.cancel = ui->cancel;
    hooks.payload = &st;
    for (;;) {
        json_t *content;
        const char *stop;

        if (turn->requests >= ag->max_iterations) {
            turn->outcome = MT_AGENT_ITERATIONS;
            break;
        }
        if (ui->cancel && *ui->cancel) {
            rc = mt_error_set(MT_API_ECANCELED, "cancelled");
            goto done;
        }
        turn->requests++;
        for (;;) {
            json_decref(req);
            if (!(req = mt_agent_request(ag)) || request_betas(&betas, req) < 0) {
                rc = MT_ENOMEM;
                goto done;
            }
            st.in_text = 0;
            json_decref(msg);
            msg = NULL;
            if ((rc = mt_api_send(&msg, ag->api, req, betas.ptr, &hooks)) == 0)
                break;
            if (rc == MT_API_ECANCELED) {
                /* The server may have taken the request and continued the
                 * thread: the next request starts a new one rather than
                 * be refused. */
                new_thread(ag);
                goto done;
            }
            if (!recover(ag, req, ui))
                goto done;
        }
        answered = 1;
        content = json_object_get(msg, "content");
        if (!json_is_array(content)) {
            rc = mt_error_set(MT_ERROR, "the API's response has no content");
            goto done;
        }
        if (!json_is_true(json_object_get(req, "stream")))
            show_text(ui, content);
        add_usage(turn, json_object_get(msg, "usage"));
        if ((rc = note_edits(turn, msg, ui)) < 0)
            goto done;
        json_decref(turn->message);
        turn->message = json_incref(msg);
        stop = json_string_value(json_object_get(msg, "stop_reason"));
        if (!stop)
            stop = "";
        note_compaction(content, ui);
        if (strcmp(stop, "max_tokens") == 0) {
            unsigned skipped = turn->skipped_calls;

            if ((rc = add_cut_response(ag, content, turn)) < 0)
                goto done;
            /* The thread holds the whole reply: when the conversation keeps
             * less, the next request starts a new thread. */
            if (turn->skipped_calls == skipped && json_array_size(content) > 0)
                rc = keep_reply(ag, req, msg);
            else
                new_thread(ag);
            if (rc < 0)
                goto done;
            turn->outcome = MT_AGENT_MAX_TOKENS;
            break;
        }
        if (strcmp(stop, "refusal") == 0) {
            /* The server may hold the refused turn; the conversation no
             * longer does. */
            take_back(ag, start, saved);
            new_thread(ag);
            turn->outcome = MT_AGENT_REFUSAL;
            break;
        }
        /* Exactly as received: the same JSON values, unknown blocks and
         * fields included. */
        if ((rc = add_assistant(ag, content)) < 0 || (rc = keep_reply(ag, req, msg)) < 0)
            goto done;
        if (strcmp(stop, "pause_turn") == 0 || strcmp(stop, "compaction") == 0) {
            /* The server goes on from where it stopped: on a thread, from
             * no new message at all. */
            if (ui->notice)
                ui->notice(ui->payload, strcmp(stop, "pause_turn") == 0
                                            ? "paused by the API; continuing"
                                            : "paused after compaction; continuing");
            continue;
        }
        if (strcmp(stop, "tool_use") != 0) {
            turn->outcome = strcmp(stop, "end_turn") == 0 || strcmp(stop, "stop_sequence") == 0
                                ? MT_AGENT_END_TURN
                                : MT_AGENT_OTHER;
            break;
        }
        if (!has_tool_use(content)) {
            turn->outcome = MT_AGENT_OTHER; /* nothing to answer: cannot go on */
            break;
        }
        if ((rc = run_tools(&reply, ag, content, turn, ui)) < 0)
            goto done;
        if (json_array_append_new(ag->messages, reply) < 0) {
            reply = NULL;
            rc = MT_ENOMEM;
            goto done;
        }
        reply = NULL;
    }
    rc = 0;
done:
    if (rc < 0 && !answered)
        take_back(ag, start, saved);
    if (rc == MT_ENOMEM)
        mt_error_set(rc, "out of memory");
    mt_buf_dispose(&betas);
    json_decref(saved);
    json_decref(req);
    json_decref(msg);
    return rc;
}

/* What `memtool chat` and `memtool run` share: options, setup, and showing a turn. */
#include "cli/agent_ui.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/project.h"
#include "util/buf.h"

volatile sig_atomic_t mt_agent_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    mt_agent_interrupted = 1;
}

int mt_agent_catch_interrupt(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: Ctrl-C at the prompt must end the read */
    return sigaction(SIGINT, &sa, NULL);
}

/* A whole number in [min, max], nothing else. */
static int parse_long(long *out, const char *s, long min, long max)
{
    char *end;
    long v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int mt_agent_cli_parse(mt_agent_cli *o, const char *name, int argc, char **argv, int allow_json)
{
    enum {
        OPT_ROOT = 256,
        OPT_MODEL,
        OPT_SYSTEM,
        OPT_MAX_TOKENS,
        OPT_CLEAR_AT,
        OPT_KEEP,
        OPT_EXCLUDE,
        OPT_ITERATIONS,
        OPT_NO_STREAM,
        OPT_NO_SEARCH,
        OPT_NO_THREAD,
        OPT_API_VERSION,
        OPT_AUTH,
        OPT_COMPACT,
        OPT_COMPACT_AT,
        OPT_COMPACT_PAUSE,
        OPT_THINKING,
        OPT_CLEAR_THINKING,
        OPT_PROJECT,
        OPT_PRINT_SYSTEM,
        OPT_JSON,
    };
    static const struct option longopts[] = {
        {"root", required_argument, NULL, OPT_ROOT},
        {"model", required_argument, NULL, OPT_MODEL},
        {"system", required_argument, NULL, OPT_SYSTEM},
        {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
        {"clear-tool-uses-at", required_argument, NULL, OPT_CLEAR_AT},
        {"keep-tool-uses", required_argument, NULL, OPT_KEEP},
        {"exclude-tools", required_argument, NULL, OPT_EXCLUDE},
        {"max-iterations", required_argument, NULL, OPT_ITERATIONS},
        {"no-stream", no_argument, NULL, OPT_NO_STREAM},
        {"no-search", no_argument, NULL, OPT_NO_SEARCH},
        {"no-thread", no_argument, NULL, OPT_NO_THREAD},
        {"api-version", required_argument, NULL, OPT_API_VERSION},
        {"auth", required_argument, NULL, OPT_AUTH},
        {"compact", no_argument, NULL, OPT_COMPACT},
        {"compact-at", required_argument, NULL, OPT_COMPACT_AT},
        {"pause-after-compaction", no_argument, NULL, OPT_COMPACT_PAUSE},
        {"thinking", required_argument, NULL, OPT_THINKING},
        {"clear-thinking", required_argument, NULL, OPT_CLEAR_THINKING},
        {"project", no_argument, NULL, OPT_PROJECT},
        {"print-system-prompt", no_argument, NULL, OPT_PRINT_SYSTEM},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *model = getenv("MEMTOOL_MODEL");
    const char *version = getenv("MEMTOOL_API_VERSION");
    const char *auth = getenv("MEMTOOL_API_AUTH"), *auth_from = "MEMTOOL_API_AUTH";
    long n;
    int c, status = MT_EXIT_USAGE, no_thread = 0;

    memset(o, 0, sizeof(*o));
    o->api.max_retries = -1;
    o->agent.model = model && *model ? model : MT_AGENT_DEFAULT_MODEL;
    o->agent.max_tokens = MT_AGENT_DEFAULT_MAX_TOKENS;
    o->agent.keep = -1;
    o->agent.stream = 1;
    optind = 0; /* this parse starts afresh whatever parsed before it */
    while ((c = mt_cli_getopt(&status, name, argc, argv, "h", longopts, NULL)) > 0) {
        switch (c) {
        case 'h':
            o->help = 1;
            return 0;
        case OPT_ROOT:
            if (!*optarg)
                return mt_cli_usage_error(name, "--root needs a directory");
            o->root = optarg;
            break;
        case OPT_MODEL:
            if (!*optarg)
                return mt_cli_usage_error(name, "--model needs a model name");
            o->agent.model = optarg;
            break;
        case OPT_SYSTEM:
            o->system_file = optarg;
            break;
        case OPT_MAX_TOKENS:
            if (parse_long(&n, optarg, 1, 1L << 30) < 0)
                return mt_cli_usage_error(name, "--max-tokens needs a positive number, not '%s'",
                                          optarg);
            o->agent.max_tokens = n;
            break;
        case OPT_CLEAR_AT:
            if (parse_long(&n, optarg, 0, 1L << 30) < 0)
                return mt_cli_usage_error(name,
                                          "--clear-tool-uses-at needs a number of tokens, "
                                          "not '%s'",
                                          optarg);
            /* 0 turns context editing off; the request then has none. */
            o->agent.clear_at = n ? n : -1;
            break;
        case OPT_KEEP:
            if (parse_long(&n, optarg, 0, 1L << 30) < 0)
                return mt_cli_usage_error(name, "--keep-tool-uses needs a number, not '%s'",
                                          optarg);
            o->agent.keep = n;
            break;
        case OPT_EXCLUDE:
            o->agent.exclude = optarg;
            break;
        case OPT_ITERATIONS:
            if (parse_long(&n, optarg, 1, 100000) < 0)
                return mt_cli_usage_error(name,
                                          "--max-iterations needs a positive number, "
                                          "not '%s'",
                                          optarg);
            o->agent.max_iterations = (unsigned)n;
            break;
        case OPT_NO_STREAM:
            o->agent.stream = 0;
            break;
        case OPT_NO_SEARCH:
            o->agent.no_search = 1;
            break;
        case OPT_NO_THREAD:
            no_thread = 1;
            break;
        case OPT_API_VERSION:
            version = optarg;
            break;
        case OPT_AUTH:
            auth = optarg;
            auth_from = "--auth";
            break;
        case OPT_COMPACT:
            o->agent.compact = 1;
            break;
        case OPT_COMPACT_AT:
            if (parse_long(&n, optarg, 1, 1L << 30) < 0)
                return mt_cli_usage_error(name, "--compact-at needs a number of tokens, not '%s'",
                                          optarg);
            o->agent.compact = 1;
            o->agent.compact_at = n;
            break;
        case OPT_COMPACT_PAUSE:
            o->agent.compact_pause = 1;
            break;
        case OPT_THINKING:
            /* The API's least budget. */
            if (parse_long(&n, optarg, 1024, 1L << 30) < 0)
                return mt_cli_usage_error(name,
                                          "--thinking needs a budget of at least 1024 tokens, "
                                          "not '%s'",
                                          optarg);
            o->agent.thinking = n;
            break;
        case OPT_CLEAR_THINKING:
            if (strcmp(optarg, "all") == 0)
                n = -1;
            else if (parse_long(&n, optarg, 1, 1L << 30) < 0)
                return mt_cli_usage_error(name,
                                          "--clear-thinking needs the thinking turns to keep "
                                          "(a number, or all), not '%s'",
                                          optarg);
            o->agent.clear_thinking = 1;
            o->agent.clear_thinking_keep = n;
            break;
        case OPT_PROJECT:
            o->project = 1;
            break;
        case OPT_PRINT_SYSTEM:
            o->print_system = 1;
            break;
        case OPT_JSON:
            if (!allow_json)
                return mt_cli_usage_error(name, "--json is an option of memtool run");
            o->json = 1;
            break;
        default:
            return mt_cli_usage_error(name, "see memtool %s --help", name);
        }
    }
    if (c == 0)
        return status;
    if (o->agent.clear_thinking && !o->agent.thinking)
        return mt_cli_usage_error(name, "--clear-thinking needs --thinking: without thinking "
                                        "there is none to clear");
    if (o->agent.thinking && o->agent.thinking >= o->agent.max_tokens)
        return mt_cli_usage_error(name, "--thinking %ld must be below --max-tokens %ld",
                                  o->agent.thinking, o->agent.max_tokens);
    if (o->agent.compact_pause && !o->agent.compact)
        return mt_cli_usage_error(name, "--pause-after-compaction needs --compact or --compact-at");
    if (!version || !*version)
        version = MT_API_VERSION;
    if (!mt_api_version_ok(version))
        return mt_cli_usage_error(name, "the API version must be one word such as %s, not '%s'",
                                  MT_API_VERSION, version);
    o->api.version = version;
    if (auth && *auth && strcmp(auth, "x-api-key") == 0)
        o->api.auth = MT_API_AUTH_X_API_KEY;
    else if (auth && *auth && strcmp(auth, "bearer") != 0)
        return mt_cli_usage_error(name, "%s must be x-api-key or bearer, not '%s'", auth_from,
                                  auth);
    /* Versions are dates (YYYY-MM-DD): an earlier one sorts first. */
    o->agent.threads = !no_thread && strcmp(version, MT_API_THREADS_VERSION) >= 0;
    if (o->agent.clear_at < 0 && (o->agent.keep >= 0 || o->agent.exclude))
        return mt_cli_usage_error(name, "--keep-tool-uses and --exclude-tools need context "
                                        "editing, which --clear-tool-uses-at 0 turned off");
    o->first_arg = optind;
    return 0;
}

int mt_agent_cli_system(char **out, const mt_agent_cli *o, const char *name)
{
    char *own = NULL;
    size_t len;
    int fd, rc;

    *out = NULL;
    if (o->system_file) {
        fd = open(o->system_file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return mt_cli_usage_error(name, "--system: cannot read %s: %s", o->system_file,
                                      strerror(errno));
        rc = mt_cli_read_all(&own, &len, fd);
        close(fd);
        if (rc < 0)
            return mt_cli_usage_error(name, "--system: cannot read %s: %s", o->system_file,
                                      strerror(-rc));
        if (strlen(own) != len) {
            free(own);
            return mt_cli_usage_error(name, "--system: %s holds a NUL byte", o->system_file);
        }
    }
    rc = mt_project_system(out, o->project, own);
    free(own);
    if (rc < 0) {
        fprintf(stderr, "memtool %s: %s\n", name, mt_error_last()->message);
        return MT_EXIT_TOOL;
    }
    return 0;
}

int mt_agent_cli_print_system(const mt_agent_cli *o, const char *name)
{
    char *system = NULL;
    int status;

    if ((status = mt_agent_cli_system(&system, o, name)) != 0)
        return status;
    if (system)
        status = mt_cli_put_bytes(name, system, strlen(system));
    free(system);
    return status;
}

int mt_agent_session_open(mt_agent_session *s, const mt_cli *cli, mt_agent_cli *o, const char *name)
{
    mt_cli local = *cli;
    char actor[32];
    int status;

    memset(s, 0, sizeof(*s));
    if ((status = mt_agent_cli_system(&s->system, o, name)) != 0)
        return status;
    o->agent.system = s->system;
    if (mt_api_new(&s->api, &o->api) < 0) {
        fprintf(stderr, "memtool %s: %s\n", name, mt_error_last()->message);
        goto fail;
    }
    if (o->root) {
        local.root = o->root;
        local.store = NULL;
    }
    if (!cli->actor_given) {
        /* Versions name the session that made them: agent:<8 hex digits>,
         * new for every run (the handle copies the name). */
        unsigned char r[4];
        if (getentropy(r, sizeof(r)) < 0)
            memset(r, 0, sizeof(r));
        snprintf(actor, sizeof(actor), "agent:%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
        local.opts.actor = actor;
    }
    if (!(s->mem = mt_cli_open(&local))) {
        mt_agent_session_close(s);
        return MT_EXIT_USAGE;
    }
    if (mt_agent_new(&s->agent, s->api, s->mem, &o->agent) < 0) {
        fprintf(stderr, "memtool %s: %s\n", name, mt_error_last()->message);
        goto fail;
    }
    return 0;
fail:
    mt_agent_session_close(s);
    return MT_EXIT_TOOL;
}

void mt_agent_session_close(mt_agent_session *s)
{
    mt_agent_free(s->agent);
    mt_memory_free(s->mem);
    mt_api_free(s->api);
    free(s->system);
    memset(s, 0, sizeof(*s));
}

void mt_agent_view_break(mt_agent_view *v)
{
    if (v->mid_line) {
        fputc('\n', v->out);
        v->mid_line = 0;
    }
    fflush(v->out);
}

static void show_text(void *payload, const char *text, size_t len)
{
    mt_agent_view *v = payload;

    if (v->quiet_text || len == 0)
        return;
    fwrite(text, 1, len, v->out);
    v->mid_line = text[len - 1] != '\n';
    /* Token by token: the point of streaming is seeing it now. */
    fflush(v->out);
}

static void end_text(void *payload)
{
    mt_agent_view_break(payload);
}

/* A status line on err, never in the middle of Claude's text. */
static void status_line(mt_agent_view *v, const char *prefix, const char *line)
{
    mt_agent_view_break(v);
    fprintf(v->err, "%s%s\n", prefix, line);
    fflush(v->err);
}

static void show_tool(void *payload, const json_t *tool_use, const json_t *tool_result)
{
    mt_buf line = MT_BUF_INIT;

    if (mt_agent_describe_call(&line, tool_use, tool_result) == 0)
        status_line(payload, "memory: ", line.ptr);
    mt_buf_dispose(&line);
}

static void show_notice(void *payload, const char *line)
{
    status_line(payload, "", line);
}

void mt_agent_view_ui(mt_agent_ui *ui, mt_agent_view *v, volatile sig_atomic_t *cancel)
{
    memset(ui, 0, sizeof(*ui));
    ui->text = show_text;
    ui->text_end = end_text;
    ui->tool = show_tool;
    ui->notice = show_notice;
    ui->cancel = cancel;
    ui->payload = v;
}

void mt_agent_view_summary(mt_agent_view *v, const mt_agent_turn *turn, long max_tokens)
{
    mt_agent_view_break(v);
    switch (turn->outcome) {
    case MT_AGENT_END_TURN:
        break;
    case MT_AGENT_MAX_TOKENS:
        fprintf(v->err, "stopped: the response reached max_tokens (%ld)", max_tokens);
        if (turn->skipped_calls)
            fprintf(v->err, "; %u tool call%s in it %s not run", turn->skipped_calls,
                    turn->skipped_calls == 1 ? "" : "s", turn->skipped_calls == 1 ? "was" : "were");
        fputs(". Raise --max-tokens to let it finish.\n", v->err);
        break;
    case MT_AGENT_REFUSAL:
        fputs("stopped: Claude declined to continue (refusal); this turn was taken out of the "
              "conversation.\n",
              v->err);
        break;
    case MT_AGENT_ITERATIONS:
        fprintf(v->err, "stopped: the turn reached the limit of %u requests (--max-iterations).\n",
                turn->requests);
        break;
    case MT_AGENT_OTHER: {
        const char *why = json_string_value(json_object_get(turn->message, "stop_reason"));

        fprintf(v->err, "stopped: stop_reason %s.\n", why ? why : "(none)");
        break;
    }
    }
    fprintf(v->err, "tokens: %" PRId64 " in, %" PRId64 " out", turn->input_tokens,
            turn->output_tokens);
    if (turn->cache_read_tokens || turn->cache_creation_tokens)
        fprintf(v->err, " (cache: %" PRId64 " read, %" PRId64 " written)", turn->cache_read_tokens,
                turn->cache_creation_tokens);
    fprintf(v->err, "; %u request%s, %u memory call%s\n", turn->requests,
            turn->requests == 1 ? "" : "s", turn->tool_calls, turn->tool_calls == 1 ? "" : "s");
    fflush(v->err);
}

void mt_agent_end_reason(char *out, size_t size, int rc, const mt_agent_turn *turn,
                         unsigned max_iterations)
{
    const char *stop;

    if (rc == MT_API_ECANCELED) {
        snprintf(out, size, "interrupted (Ctrl-C)");
        return;
    }
    if (rc < 0) {
        snprintf(out, size, "an error: %s", mt_error_last()->message);
        return;
    }
    switch (turn->outcome) {
    case MT_AGENT_END_TURN:
        snprintf(out, size, "Claude ended its turn");
        break;
    case MT_AGENT_MAX_TOKENS:
        snprintf(out, size, "the response reached max_tokens");
        break;
    case MT_AGENT_REFUSAL:
        snprintf(out, size, "Claude declined to continue (refusal)");
        break;
    case MT_AGENT_ITERATIONS:
        snprintf(out, size, "the iteration limit (--max-iterations %u)",
                 max_iterations ? max_iterations : MT_AGENT_MAX_ITERATIONS);
        break;
    case MT_AGENT_OTHER:
        stop = json_string_value(json_object_get(turn->message, "stop_reason"));
        snprintf(out, size, "stop_reason %s", stop ? stop : "(none)");
        break;
    }
}

static const char *entry_name(mt_project_entry e)
{
    static const char *const names[] = {"none",    "session", "claude",   "earlier",
                                        "memtool", "failed",  "unreached"};

    return names[e];
}

int mt_agent_project_finish(json_t **report, mt_agent_view *v, mt_project_session *p, mt_agent *ag,
                            const char *reason, long max_tokens)
{
    mt_project_end_result r;
    mt_agent_ui ui;
    int rc;

    if (report)
        *report = NULL;
    /* A Ctrl-C that ended the session must not cancel the closing turn too;
     * another one does. */
    mt_agent_interrupted = 0;
    mt_agent_view_ui(&ui, v, &mt_agent_interrupted);
    if (p->turns > 0 && p->reached && !(p->last_changed && !p->last_cut)) {
        mt_agent_view_break(v);
        fprintf(v->err,
                "session ending (%s): asking Claude for its entry in the progress log "
                "(Ctrl-C skips it)\n",
                reason);
        fflush(v->err);
    }
    if ((rc = mt_project_end(&r, p, ag, reason, &ui)) < 0) {
        mt_agent_view_break(v);
        fprintf(v->err, "progress: %s\n", mt_error_last()->message);
        return -1;
    }
    mt_agent_view_break(v);
    if (r.asked && r.turn_rc == 0)
        mt_agent_view_summary(v, &r.turn, max_tokens);
    else if (r.asked)
        fprintf(v->err, "closing turn: %s\n",
                r.turn_rc == MT_API_ECANCELED ? "interrupted"
                : r.error                     ? r.error
                                              : "failed");
    switch (r.entry) {
    case MT_PROJECT_ENTRY_CLAUDE:
        fputs("progress: Claude wrote its entry in " MT_PROJECT_PROGRESS "\n", v->err);
        break;
    case MT_PROJECT_ENTRY_EARLIER:
        fputs("progress: the log already has an entry from this session\n", v->err);
        break;
    case MT_PROJECT_ENTRY_MEMTOOL:
        fputs("progress: Claude wrote no entry; memtool appended one to " MT_PROJECT_PROGRESS "\n",
              v->err);
        break;
    case MT_PROJECT_ENTRY_FAILED:
        fprintf(v->err, "progress: no entry could be written to " MT_PROJECT_PROGRESS ": %s\n",
                r.error ? r.error : "failed");
        break;
    case MT_PROJECT_ENTRY_UNREACHED:
        fputs("progress: no entry written: the API was never reached, so the session did no "
              "work\n",
              v->err);
        break;
    case MT_PROJECT_ENTRY_NONE:
    case MT_PROJECT_ENTRY_SESSION:
        break;
    }
    fflush(v->err);
    if (report)
        *report = json_pack("{s:b,s:s,s:s?}", "closing_turn", r.asked, "entry", entry_name(r.entry),
                            "error", r.error);
    rc = r.entry == MT_PROJECT_ENTRY_FAILED ? -1 : 0;
    mt_project_end_dispose(&r);
    return rc;
}

#include "agent/project.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <memtool/store.h>

#include "util/buf.h"
#include "util/sha256.h"
#include "core/memory.h"
#include "util/lines.h"
#include "util/utf8.h"

/* src/agent/project_prompt.md, embedded when memtool is built. */
extern const char mt_project_prompt_md[];
extern const size_t mt_project_prompt_md_len;

/* The longest task line memtool's own entry quotes, in characters. */
#define TASK_CHARS 200

static const char *const part_names[] = {"system", "first", "wrap-up"};

void mt_project_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%d %H:%M UTC", &tm) == 0)
        snprintf(out, 32, "(unknown time)");
}

/* The bytes between the part's marker line and the next marker (or the end). */
static int find_part(const char **start, size_t *len, mt_project_part part)
{
    const char *text = mt_project_prompt_md, *end = text + mt_project_prompt_md_len;
    char marker[64];
    const char *p, *next;

    snprintf(marker, sizeof(marker), "\n<!-- part: %s -->\n", part_names[part]);
    if (!(p = strstr(text, marker)))
        return mt_error_set(MT_ERROR, "the project prompt has no part '%s'", part_names[part]);
    p += strlen(marker);
    next = strstr(p - 1, "\n<!-- part: ");
    *start = p;
    *len = (size_t)((next ? next + 1 : end) - p);
    return 0;
}

int mt_project_text(char **out, mt_project_part part, const char *reason)
{
    mt_buf b = MT_BUF_INIT;
    const char *p = NULL, *end, *hole;
    char now[32];
    size_t len = 0;
    int rc, bad = 0;

    *out = NULL;
    if ((rc = find_part(&p, &len, part)) < 0)
        return rc;
    mt_project_now(now);
    for (end = p + len; p < end; p = hole) {
        const char *fill = NULL;

        hole = memmem(p, (size_t)(end - p), "{{", 2);
        if (!hole)
            hole = end;
        bad |= mt_buf_put(&b, p, (size_t)(hole - p)) < 0;
        if (hole == end)
            break;
        if ((size_t)(end - hole) >= 7 && memcmp(hole, "{{now}}", 7) == 0)
            fill = now;
        else if ((size_t)(end - hole) >= 10 && memcmp(hole, "{{reason}}", 10) == 0)
            fill = reason ? reason : "";
        if (fill) {
            bad |= mt_buf_puts(&b, fill) < 0;
            hole += fill == now ? 7 : 10;
        } else {
            bad |= mt_buf_put(&b, hole, 2) < 0;
            hole += 2;
        }
    }
    if (bad || (!b.ptr && mt_buf_puts(&b, "") < 0)) {
        mt_buf_dispose(&b);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    if (!(*out = mt_buf_detach(&b, NULL)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

int mt_project_system(char **out, int project, const char *own)
{
    mt_buf b = MT_BUF_INIT;
    const char *p = NULL;
    size_t len = 0;
    int rc, bad = 0;

    *out = NULL;
    if (project) {
        if ((rc = find_part(&p, &len, MT_PROJECT_PART_SYSTEM)) < 0)
            return rc;
        bad |= mt_buf_put(&b, p, len) < 0;
        /* The person's own instructions come last, after a blank line, so
         * they can add to the pattern's or narrow it. */
        if (own)
            bad |= mt_buf_puts(&b, "\n") < 0;
    }
    if (own)
        bad |= mt_buf_puts(&b, own) < 0;
    if (!project && !own)
        return 0;
    if (bad || (!b.ptr && mt_buf_puts(&b, "") < 0)) {
        mt_buf_dispose(&b);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    if (!(*out = mt_buf_detach(&b, NULL)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

/* ---- a session ---- */

/* The log's SHA-256 now, or "" when there is none (or it cannot be read:
 * then a change cannot be seen either, and memtool writes its entry). */
static void log_hash(char out[65], mt_memory *mem)
{
    if (mt_memory_sha256(out, mem, MT_PROJECT_PROGRESS) < 0)
        out[0] = '\0';
}

/* The newest version of the log this handle's actor made: 0 when none, -1
 * when the store keeps no history. Versions name who wrote them, so another
 * session (or a person) changing the log meanwhile is not taken for this
 * session's entry, as a change of the log's hash alone would be. */
static int64_t own_newest(mt_memory *mem)
{
    mt_log_query q = {MT_PROJECT_PROGRESS, NULL, 0, mem->actor, 0, 0, 0, 1};
    mt_version *v = NULL;
    size_t n = 0;
    int64_t id;

    if (!mem->opts.history || !mem->actor[0] || mt_memory_log(&v, &n, mem, &q) < 0)
        return -1;
    id = n > 0 ? v[0].id : 0;
    mt_versions_free(v, n);
    return id;
}

/* Whether the session changed the log since `before` / `own` were taken. */
static int changed_since(mt_memory *mem, const char before[65], int64_t own)
{
    char now[65];
    int64_t newest;

    if (own >= 0 && (newest = own_newest(mem)) >= 0)
        return newest != own;
    log_hash(now, mem);
    return strcmp(now, before) != 0;
}

void mt_project_begin(mt_project_session *p, mt_memory *mem)
{
    memset(p, 0, sizeof(*p));
    p->mem = mem;
}

void mt_project_dispose(mt_project_session *p)
{
    free(p->task);
    memset(p, 0, sizeof(*p));
}

int mt_project_turn_begin(char **out, mt_project_session *p, const char *prompt)
{
    char *first = NULL;
    mt_buf b = MT_BUF_INIT;
    int rc;

    *out = NULL;
    log_hash(p->before, p->mem);
    p->own = own_newest(p->mem);
    p->turns++;
    if (p->reminded) {
        if (!(*out = strdup(prompt)))
            return mt_error_set(MT_ENOMEM, "out of memory");
        return 0;
    }
    if (!p->task) {
        size_t n = strcspn(prompt, "\r\n");

        if (!(p->task = strndup(prompt, mt_utf8_prefix(prompt, n, TASK_CHARS))))
            return mt_error_set(MT_ENOMEM, "out of memory");
    }
    if ((rc = mt_project_text(&first, MT_PROJECT_PART_FIRST, NULL)) < 0)
        return rc;
    rc = mt_buf_puts(&b, first) < 0 || mt_buf_puts(&b, prompt) < 0 ? MT_ENOMEM : 0;
    free(first);
    if (rc < 0 || !(*out = mt_buf_detach(&b, NULL))) {
        mt_buf_dispose(&b);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    p->reminded = 1;
    return 0;
}

void mt_project_turn_reached(mt_project_session *p)
{
    p->reached = 1;
}

void mt_project_turn_end(mt_project_session *p, int cut, int taken_back)
{
    p->last_changed = changed_since(p->mem, p->before, p->own);
    p->changed |= p->last_changed;
    p->last_cut = cut;
    if (taken_back)
        p->reminded = 0;
}

/* The hex SHA-256 of data. */
static void sha256_hex(char out[65], const char *data, size_t len)
{
    mt_sha256_hex(out, data, len);
}

/* One tool input through the library: 0, or the result's text as the error. */
static int call(mt_memory *mem, json_t *input)
{
    mt_result res;
    int rc;

    if (!input)
        return mt_error_set(MT_ENOMEM, "out of memory");
    rc = mt_memory_call_object(&res, mem, input);
    json_decref(input);
    if (rc < 0)
        return rc;
    rc = res.is_error ? mt_error_set(MT_ERROR, "%s", res.text) : 0;
    mt_result_dispose(&res);
    return rc;
}

int mt_project_append_entry(mt_memory *mem, const char *reason, const char *task)
{
    mt_buf entry = MT_BUF_INIT;
    char now[32], sha[65], now_sha[65], *log = NULL;
    size_t len, lines;
    int rc, attempt;

    mt_project_now(now);
    mt_buf_printf(&entry,
                  "## %s\n- session ended: %s; Claude wrote no entry, so memtool wrote this one\n",
                  now, reason);
    if (task && *task)
        mt_buf_printf(&entry, "- task: %s\n", task);
    if (!entry.ptr)
        return mt_error_set(MT_ENOMEM, "out of memory");
    /* Another process may change the log between the read and the insert:
     * the insert names the content it was counted on, and is tried again
     * on a conflict. */
    for (attempt = 0; attempt < 3; attempt++) {
        free(log);
        log = NULL;
        rc = mt_memory_read(&log, &len, mem, MT_PROJECT_PROGRESS);
        if (rc == MT_ENOTFOUND) {
            mt_buf text = MT_BUF_INIT;

            mt_buf_printf(&text, "# Progress\n\n%s", entry.ptr);
            rc = text.ptr ? call(mem, json_pack("{s:s,s:s,s:s}", "command", "create", "path",
                                                MT_PROJECT_PROGRESS, "file_text", text.ptr))
                          : mt_error_set(MT_ENOMEM, "out of memory");
            mt_buf_dispose(&text);
            if (rc == MT_ERROR && mt_memory_sha256(sha, mem, MT_PROJECT_PROGRESS) == 0)
                continue; /* created meanwhile: append to it */
            goto done;
        }
        if (rc < 0)
            goto done;
        lines = mt_text_line_count(log, len);
        sha256_hex(sha, log, len);
        /* A blank line before the entry's heading, as between entries. */
        rc = call(mem,
                  json_pack("{s:s,s:s,s:I,s:s+,s:s}", "command", "insert", "path",
                            MT_PROJECT_PROGRESS, "insert_line", (json_int_t)lines, "insert_text",
                            len > 0 ? "\n" : "", entry.ptr, "expected_sha256", sha));
        /* Tried again only when the log is not what the insert counted on:
         * another writer came between. */
        if (rc == 0 || mt_memory_sha256(now_sha, mem, MT_PROJECT_PROGRESS) < 0 ||
            strcmp(now_sha, sha) == 0)
            goto done;
    }
done:
    free(log);
    mt_buf_dispose(&entry);
    return rc;
}

int mt_project_end(mt_project_end_result *r, mt_project_session *p, mt_agent *ag,
                   const char *reason, const mt_agent_ui *ui)
{
    char *text = NULL, before[65];
    int64_t own;
    int rc = 0;

    memset(r, 0, sizeof(*r));
    if (p->turns == 0)
        return 0; /* nothing happened: nothing to record */
    if (!p->reached) {
        /* Claude never answered, so it did no work; an entry saying the
         * session ended would claim one, and a closing turn could not be
         * answered either. */
        r->entry = MT_PROJECT_ENTRY_UNREACHED;
        return 0;
    }
    if (p->last_changed && !p->last_cut) {
        r->entry = MT_PROJECT_ENTRY_SESSION;
        return 0;
    }
    log_hash(before, p->mem);
    own = own_newest(p->mem);
    if ((rc = mt_project_text(&text, MT_PROJECT_PART_WRAPUP, reason)) < 0)
        goto done;
    /* The closing entry gets its own small budget: it is a note, not more work. */
    mt_agent_set_max_iterations(ag, MT_PROJECT_WRAPUP_ITERATIONS);
    r->asked = 1;
    r->turn_rc = mt_agent_run_turn(&r->turn, ag, text, ui);
    mt_agent_set_max_iterations(ag, 0);
    if (r->turn_rc == MT_ENOMEM) {
        rc = MT_ENOMEM;
        goto done;
    }
    if (r->turn_rc < 0 && !(r->error = strdup(mt_error_last()->message))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if (changed_since(p->mem, before, own)) {
        r->entry = MT_PROJECT_ENTRY_CLAUDE;
        goto done;
    }
    if (p->changed && !p->last_cut) {
        r->entry = MT_PROJECT_ENTRY_EARLIER;
        goto done;
    }
    if (mt_project_append_entry(p->mem, reason, p->task) == 0) {
        r->entry = MT_PROJECT_ENTRY_MEMTOOL;
        goto done;
    }
    if (rc == MT_ENOMEM || mt_error_last()->code == MT_ENOMEM) {
        rc = MT_ENOMEM;
        goto done;
    }
    r->entry = MT_PROJECT_ENTRY_FAILED;
    free(r->error);
    if (!(r->error = strdup(mt_error_last()->message)))
        rc = mt_error_set(MT_ENOMEM, "out of memory");
done:
    free(text);
    return rc;
}

void mt_project_end_dispose(mt_project_end_result *r)
{
    if (r->asked)
        mt_agent_turn_dispose(&r->turn);
    free(r->error);
    memset(r, 0, sizeof(*r));
}

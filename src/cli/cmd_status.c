/* memtool status: where a project of the multi-session pattern stands, for a person. */
#include <ctype.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/project.h"
#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool [options] status [--json]\n\n"
    "Where the project stands (the files memtool init made and sessions of\n"
    "memtool run --project keep): how many features pass, the next one to do, the\n"
    "last entry of the progress log and when that session was.\n\n"
    "Options:\n"
    "  --json  one JSON object\n";

typedef struct {
    json_t *features; /* features.json, parsed */
    const char *project;
    size_t total, passing, unverified;
    json_t *next; /* the first feature that does not pass, or NULL */
    const char *entry;
    size_t entry_len; /* the last entry of the log, without trailing blank lines */
    char session[32]; /* its heading's date ("" when it has none) */
} project_state;

/* Print "memtool status: PATH ..." and return the exit status 1. */
static int bad(const char *path, const char *what)
{
    fprintf(stderr,
            "memtool status: %s %s; fix it, or bring back a good version (memtool log %s, "
            "then memtool restore VERSION)\n",
            path, what, path);
    return MT_EXIT_TOOL;
}

static int read_features(project_state *st, const char *text, size_t len)
{
    json_error_t err;
    json_t *list, *item;
    size_t i;
    char what[300];

    if (!(st->features = json_loadb(text, len, 0, &err))) {
        snprintf(what, sizeof(what), "is not valid JSON (line %d, column %d: %s)", err.line,
                 err.column, err.text);
        return bad(MT_PROJECT_FEATURES, what);
    }
    list = json_object_get(st->features, "features");
    if (!json_is_array(list))
        return bad(MT_PROJECT_FEATURES, "has no \"features\" list");
    st->project = json_string_value(json_object_get(st->features, "project"));
    json_array_foreach(list, i, item)
    {
        json_t *passes = json_object_get(item, "passes");
        const char *how = json_string_value(json_object_get(item, "verified_how"));

        if (!json_is_boolean(passes)) {
            snprintf(what, sizeof(what),
                     "has a feature (number %zu) without \"passes\": true or "
                     "false",
                     i + 1);
            return bad(MT_PROJECT_FEATURES, what);
        }
        st->total++;
        if (json_is_true(passes)) {
            st->passing++;
            /* Marked done without saying how it was verified: the pattern
             * asks for both, so a person should know. */
            if (!how || !*how)
                st->unverified++;
        } else if (!st->next) {
            st->next = item;
        }
    }
    return 0;
}

/* The last "## " heading of the log and what follows it. */
static void read_progress(project_state *st, const char *text, size_t len)
{
    const char *p = text, *end = text + len, *nl, *last = NULL;
    size_t n = 0;

    while (p < end) {
        if ((size_t)(end - p) >= 3 && memcmp(p, "## ", 3) == 0)
            last = p;
        if (!(nl = memchr(p, '\n', (size_t)(end - p))))
            break;
        p = nl + 1;
    }
    st->session[0] = '\0';
    if (!last)
        return;
    n = (size_t)(text + len - last);
    while (n > 0 && (last[n - 1] == '\n' || last[n - 1] == '\r' || last[n - 1] == ' '))
        n--;
    st->entry = last;
    st->entry_len = n;
    if (n < 3)
        return; /* a heading with nothing after its "## " */
    /* "YYYY-MM-DD", with " HH:MM" and " UTC" when they follow. */
    {
        const char *d = last + 3;
        size_t rest = n - 3, k = 0;
        static const char shape[] = "dddd-dd-dd dd:dd UTC";

        while (k < rest && k < sizeof(shape) - 1 &&
               (shape[k] == 'd' ? isdigit((unsigned char)d[k]) != 0 : d[k] == shape[k]))
            k++;
        if (k >= 10) {
            /* Only whole parts: the date, the time, the zone. */
            k = k == 20 ? 20 : k >= 16 ? 16 : 10;
            memcpy(st->session, d, k);
            st->session[k] = '\0';
        }
    }
}

static int print_json(const project_state *st)
{
    json_t *o = json_pack("{s:s?, s:{s:I, s:I, s:I}}", "project", st->project, "features",
                          "passing", (json_int_t)st->passing, "total", (json_int_t)st->total,
                          "unverified", (json_int_t)st->unverified);
    int rc = 0;

    if (!o || json_object_set(o, "next", st->next ? st->next : json_null()) < 0 ||
        json_object_set_new(o, "last_entry",
                            st->entry ? json_stringn(st->entry, st->entry_len) : json_null()) < 0 ||
        json_object_set_new(o, "last_session",
                            st->session[0] ? json_string(st->session) : json_null()) < 0)
        rc = -1;
    if (rc == 0 && (json_dumpf(o, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF))
        rc = -1;
    json_decref(o);
    return rc;
}

static void print_text(const project_state *st)
{
    const char *p, *end;

    if (st->project)
        printf("project       %s\n", st->project);
    printf("features      %zu/%zu passing", st->passing, st->total);
    if (st->unverified) {
        json_t *item;
        size_t i, n = 0;

        /* The field the pattern asks for, and which features lack it. */
        printf(" (%zu marked passing without \"verified_how\", how it was verified:",
               st->unverified);
        json_array_foreach(json_object_get(st->features, "features"), i, item)
        {
            const char *how = json_string_value(json_object_get(item, "verified_how"));
            const char *id = json_string_value(json_object_get(item, "id"));

            if (json_is_true(json_object_get(item, "passes")) && (!how || !*how))
                printf("%s %s", n++ ? "," : "", id ? id : "(a feature without an id)");
        }
        putchar(')');
    }
    fputc('\n', stdout);
    if (st->next) {
        const char *id = json_string_value(json_object_get(st->next, "id"));
        const char *desc = json_string_value(json_object_get(st->next, "description"));

        printf("next          %s%s%s\n", id ? id : "", id && desc ? ": " : "", desc ? desc : "");
    } else if (st->total == 0) {
        printf("next          (no features yet: the first session lists them)\n");
    }
    printf("last session  %s\n", st->session[0] ? st->session
                                 : st->entry    ? "(no date)"
                                                : "none yet");
    if (!st->entry)
        return;
    printf("last entry\n");
    for (p = st->entry, end = p + st->entry_len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

        printf("  %.*s\n", (int)n, p);
        p += n + 1;
    }
}

int mt_cmd_status(const mt_cli *cli, int argc, char **argv)
{
    project_state st;
    mt_memory *mem;
    char *features = NULL, *progress = NULL;
    size_t flen = 0, plen = 0;
    int c, as_json = 0, status = MT_EXIT_OK;

    if ((c = mt_cli_args(&as_json, "status", argc, argv, 0, 0, 0, help)) >= 0)
        return c;
    memset(&st, 0, sizeof(st));
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    /* Through the library: the limits bound what is read, and an
     * encrypted store is read like any other. */
    if (mt_memory_read(&features, &flen, mem, MT_PROJECT_FEATURES) < 0 ||
        mt_memory_read(&progress, &plen, mem, MT_PROJECT_PROGRESS) < 0) {
        if (mt_error_last()->code == MT_ENOTFOUND)
            fprintf(stderr, "memtool status: %s; make the project's files with memtool init\n",
                    mt_error_last()->message);
        else
            fprintf(stderr, "memtool status: %s\n", mt_error_last()->message);
        status = MT_EXIT_TOOL;
        goto done;
    }
    if ((status = read_features(&st, features, flen)) != 0)
        goto done;
    read_progress(&st, progress, plen);
    if (as_json) {
        if (print_json(&st) < 0) {
            fputs("memtool status: cannot write the JSON\n", stderr);
            status = MT_EXIT_TOOL;
        }
    } else {
        print_text(&st);
    }
done:
    json_decref(st.features);
    free(features);
    free(progress);
    mt_memory_free(mem);
    return status;
}

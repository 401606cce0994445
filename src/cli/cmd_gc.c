/* memtool gc --idle DURATION: delete the memories nobody viewed or changed for that long. */
#include <getopt.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memtool/store.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "cli/input.h"
#include "cli/progress.h"
#include "cli/history_ui.h"
#include "util/lines.h"

static const char help[] =
    "usage: memtool [options] gc --idle DURATION [--dry-run] [--path PATH] [--now TIME]\n"
    "                            [--json]\n\n"
    "Delete the memories idle for DURATION or more: not viewed (a view of the file; a\n"
    "directory listing is none) and not changed since. DURATION is numbers with units\n"
    "s, m, h, d, w (30d, 12h, 1d12h), a minute at least: the last access is recorded\n"
    "to within a minute. Each deletion is a change like any other, made only if the\n"
    "memory is still idle at that instant (a memory viewed meanwhile is kept); with\n"
    "history on it is a version, recorded as \"gc\" (or --actor), and `memtool restore`\n"
    "brings the memory back. Empty directories stay. Idlest first.\n\n"
    "Options:\n"
    "  --idle DURATION  how long a memory must have been idle\n"
    "  --dry-run        list what would be deleted, with idle times; delete nothing\n"
    "  --path PATH      only memories at or beneath PATH (/memories/projects/old)\n"
    "  --now TIME       measure idle times as if it were TIME (2030-01-01T00:00:00Z), for\n"
    "                   reproducible runs; the times recorded are not changed. A TIME\n"
    "                   later than the clock makes a memory viewed during the run look\n"
    "                   idle too: use one with --dry-run, or on a store nobody uses\n"
    "  --json           one JSON object: the counts and every memory with its outcome\n\n"
    "Exit status: 0 done; 1 some memory could not be deleted (each named); 2 a usage\n"
    "error or a store that cannot be opened; 130 interrupted.\n";

typedef struct {
    int json, dry_run, tty;
    json_t *list;
    uint64_t done;
} gc_view;

static int on_event(void *payload, const mt_gc_event *e)
{
    gc_view *v = payload;
    const char *what = e->kind == MT_GC_EXPIRED ? (v->dry_run ? "would delete" : "deleted")
                       : e->kind == MT_GC_KEPT  ? "kept"
                                                : "failed";
    char size[32], idle[48], at[40];

    if (e->kind == MT_GC_PLAN)
        return mt_cli_stop_asked();
    v->done++;
    mt_text_format_size(size, e->size);
    mt_cli_format_duration(idle, sizeof(idle), e->idle_ms);
    mt_cli_format_time(at, sizeof(at), e->last_access_ms);
    if (v->json) {
        json_t *o =
            json_pack("{s:s, s:I, s:s, s:I, s:s}", "path", e->path, "size", (json_int_t)e->size,
                      "last_access", at, "idle_seconds", (json_int_t)(e->idle_ms / 1000), "outcome",
                      e->kind == MT_GC_EXPIRED ? (v->dry_run ? "would_delete" : "deleted")
                      : e->kind == MT_GC_KEPT  ? "kept"
                                               : "failed");
        if (o && e->message)
            json_object_set_new(o, "reason", json_string(e->message));
        json_array_append_new(v->list, o);
    } else {
        mt_cli_progress_clear(v->tty);
        if (e->kind == MT_GC_FAILED)
            fprintf(stderr, "gc: failed: %s: %s\n", e->path, e->message);
        else if (e->kind == MT_GC_KEPT)
            printf("kept %s (%s): accessed or changed since it was found idle\n", e->path, size);
        else
            printf("%s %s (%s, idle %s)\n", what, e->path, size, idle);
        fflush(stdout);
        if (v->tty && e->stats->idle)
            fprintf(stderr, "gc %llu/%llu", (unsigned long long)v->done,
                    (unsigned long long)e->stats->idle);
    }
    return mt_cli_stop_asked();
}

/* What the command line of gc says. */
typedef struct {
    mt_cli_duration idle;
    const char *path, *now;
    int dry_run, json;
} gc_args;

static const mt_cli_option gc_options[] = {
    {"idle", MT_CLI_DURATION, offsetof(gc_args, idle), 0, 0, 0},
    {"dry-run", MT_CLI_FLAG, offsetof(gc_args, dry_run), 0, 0, 0},
    {"path", MT_CLI_STRING, offsetof(gc_args, path), 0, 0, 0},
    {"now", MT_CLI_STRING, offsetof(gc_args, now), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(gc_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command gc_command = {"gc", help, gc_options, 0, 0, "give a path with --path",
                                          0};

int mt_cmd_gc(const mt_cli *cli, int argc, char **argv)
{
    mt_gc_options o;
    mt_gc_stats s;
    gc_view v;
    gc_args a;
    mt_memory *mem = NULL;
    mt_cli_stop stop;
    const char *idle_text;
    int rc, status;

    memset(&o, 0, sizeof(o));
    memset(&v, 0, sizeof(v));
    memset(&a, 0, sizeof(a));
    if ((status = mt_cli_parse(&gc_command, &a, argc, argv)) >= 0)
        return status;
    idle_text = a.idle.text;
    o.idle_ms = a.idle.ms;
    o.dry_run = v.dry_run = a.dry_run;
    o.path = a.path;
    v.json = a.json;
    if (a.now && mt_cli_time_parse(&o.now_ms, a.now) < 0)
        return mt_cli_usage_error("gc",
                                  "--now: '%s' is not a time: use RFC 3339, e.g. "
                                  "2030-01-01T00:00:00Z, or an age (30d)",
                                  a.now);
    if (!idle_text)
        return mt_cli_usage_error("gc", "--idle DURATION is needed: how long a memory must have "
                                        "been idle (e.g. 30d)");
    if (o.idle_ms < MT_GC_MIN_IDLE_MS)
        return mt_cli_usage_error("gc",
                                  "--idle: '%s' is under a minute, the grain of recorded access: "
                                  "give 1m or more",
                                  idle_text);
    /* A dry run only reads: a store that is not there is named, not made. */
    if (!(mem = o.dry_run ? mt_cli_open_read(cli) : mt_cli_open(cli)))
        return MT_EXIT_USAGE;
    v.tty = isatty(STDERR_FILENO) && !v.json;
    if (v.json && !(v.list = json_array())) {
        status = mt_cli_usage_error("gc", "out of memory");
        goto done;
    }
    mt_cli_stop_catch(&stop);
    rc = mt_memory_gc(&s, mem, &o, on_event, &v);
    mt_cli_stop_release(&stop);
    mt_cli_progress_clear(v.tty);
    if (rc < 0 && rc != MT_ESTOPPED) {
        status = rc == MT_EINVAL ? mt_cli_usage_error("gc", "%s", mt_error_last()->message)
                                 : mt_cli_fail("gc");
        goto done;
    }
    mt_cli_warn_history("gc", mem);
    if (v.json) {
        json_t *j = json_pack(
            "{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:O}", "dry_run", o.dry_run, "files",
            (json_int_t)s.files, "idle", (json_int_t)s.idle, "idle_bytes", (json_int_t)s.idle_bytes,
            o.dry_run ? "would_delete" : "deleted", (json_int_t)s.expired, "deleted_bytes",
            (json_int_t)s.expired_bytes, "kept", (json_int_t)s.kept, "failed", (json_int_t)s.failed,
            "stopped", rc == MT_ESTOPPED, "memories", v.list);
        if (mt_cli_print_json("gc", j) != MT_EXIT_OK) {
            status = MT_EXIT_TOOL;
            goto done;
        }
    } else {
        char bytes[32];
        mt_text_format_size(bytes, s.expired_bytes);
        printf("%llu of %llu memories idle for %s or more; %s %llu (%s), %llu kept, %llu "
               "failed%s\n",
               (unsigned long long)s.idle, (unsigned long long)s.files, idle_text,
               o.dry_run ? "would delete" : "deleted", (unsigned long long)s.expired, bytes,
               (unsigned long long)s.kept, (unsigned long long)s.failed,
               rc == MT_ESTOPPED ? "; stopped" : "");
    }
    status = rc == MT_ESTOPPED ? 130 : s.failed ? MT_EXIT_TOOL : MT_EXIT_OK;
done:
    json_decref(v.list);
    mt_memory_free(mem);
    return status;
}

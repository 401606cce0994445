/* memtool migrate --to URL [--from URL]: every memory of one store into another. */
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
#include "util/lines.h"

static const char help[] =
    "usage: memtool [options] migrate --to URL [--from URL] [--from-tenant NAME]\n"
    "                                 [--to-tenant NAME] [--no-history]\n"
    "                                 [--from-plain | --to-plain] [--json]\n\n"
    "Copy every memory of one store into another (file:DIR, sqlite:PATH, postgresql://...),\n"
    "each checked by SHA-256 at the destination. Where both keep history, each memory comes\n"
    "with all its versions (operation, paths, actor, time, SHA-256, size, redaction, and their\n"
    "ids where the destination holds none of them) and its id, in one transaction with its\n"
    "file, whose last access and change come too (gc --idle sees it as idle as before), and\n"
    "memories deleted in the source come too (their versions), so they can be restored there. "
    "Nothing there is ever replaced: a memory whose\n"
    "id it holds, or a path it holds with the same content, counts as done; other content is\n"
    "a conflict, listed and left as it is. Interrupted (Ctrl-C), it stops between two\n"
    "memories; run it again to finish. The destination's limits hold. Empty directories are\n"
    "counted, not made. A memory renamed in the source during the run is copied where it\n"
    "is now; one that keeps moving is a failure. With --encrypt both stores are encrypted\n"
    "with its key (versions of the source under --old-key-file arrive under the new key);\n"
    "--from-plain or --to-plain leaves one side plain, every version sealed or opened on\n"
    "its way.\n\n"
    "Options:\n"
    "  --from URL          the store to copy (default: the one --store or --root names)\n"
    "  --to URL            the store to copy into\n"
    "  --from-tenant NAME  the source's tenant (default: --tenant)\n"
    "  --to-tenant NAME    the destination's tenant (default: --tenant)\n"
    "  --no-history        copy each memory's current content only: at the destination each\n"
    "                      is one new version by the actor, made now, with its last access\n"
    "                      and last change kept; deleted memories stay behind\n"
    "  --from-plain        with --encrypt: the source is not encrypted (encrypt a store)\n"
    "  --to-plain          with --encrypt: the destination is not encrypted (decrypt one)\n"
    "  --json              one JSON object at the end: the counts, and every conflict,\n"
    "                      failure and skipped path with why, and version_ids: [source id,\n"
    "                      new id] for each version whose id changed (the destination held\n"
    "                      versions already: all are moved past its newest, in their order)\n\n"
    "Exit status: 0 every memory is at the destination; 1 some conflict or failure (each\n"
    "named); 2 a usage error or a store that cannot be opened; 130 interrupted.\n";

typedef struct {
    int tty, json;
    double start, last_draw;
    json_t *problems; /* --json: conflicts, failures, skips */
    json_t *ids;      /* --json: [source id, destination id] of each version renumbered */
    uint64_t renumbered;
} progress;

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One line of progress: a bar redrawn in place on a terminal, a plain line
 * now and then otherwise (a log should not hold one line per file). */
static void draw(progress *p, const mt_migrate_stats *s, int final)
{
    char done[32], total[32], versions[64] = "", deleted[64] = "";
    double t = now_s(), rate;
    uint64_t all = s->files + s->deleted, handled = s->done_files + s->done_deleted;
    char bar[32];

    if (!final && t - p->last_draw < (p->tty ? 0.1 : 5.0))
        return;
    p->last_draw = t;
    rate = t > p->start ? (double)handled / (t - p->start) : 0;
    mt_text_format_size(done, s->done_bytes);
    mt_text_format_size(total, s->bytes);
    if (s->history) {
        snprintf(versions, sizeof(versions), ", %llu/%llu versions",
                 (unsigned long long)s->done_versions, (unsigned long long)s->versions);
        if (s->deleted)
            snprintf(deleted, sizeof(deleted), ", %llu/%llu deleted",
                     (unsigned long long)s->done_deleted, (unsigned long long)s->deleted);
    }
    if (p->tty) {
        mt_cli_bar(bar, sizeof(bar), 24, handled, all);
        fprintf(stderr, "\rmigrate [%s] %llu/%llu files%s%s, %s/%s, %.0f memories/s\033[K%s", bar,
                (unsigned long long)s->done_files, (unsigned long long)s->files, deleted, versions,
                done, total, rate, final ? "\n" : "");
    } else {
        fprintf(stderr, "migrate: %llu/%llu files%s%s, %s/%s, %.0f memories/s\n",
                (unsigned long long)s->done_files, (unsigned long long)s->files, deleted, versions,
                done, total, rate);
    }
}

static int on_event(void *payload, const mt_migrate_event *e)
{
    progress *p = payload;
    const char *what = NULL;

    switch (e->kind) {
    case MT_MIGRATE_CONFLICT:
        what = "conflict";
        break;
    case MT_MIGRATE_FAILED:
        what = "failed";
        break;
    case MT_MIGRATE_SKIPPED:
        what = "skipped";
        break;
    case MT_MIGRATE_PLAN:
        /* Why the history stays behind, said once (the JSON has "history"). */
        if (e->message && !p->json)
            fprintf(stderr, "migrate: without history: %s\n", e->message);
        break;
    default:
        break;
    }
    if (e->kind == MT_MIGRATE_COPIED) {
        size_t i;
        p->renumbered += e->nids;
        for (i = 0; p->json && i < e->nids; i++)
            json_array_append_new(p->ids, json_pack("[I, I]", (json_int_t)e->ids[2 * i],
                                                    (json_int_t)e->ids[2 * i + 1]));
    }
    if (what && p->json) {
        json_array_append_new(p->problems, json_pack("{s:s, s:s, s:s}", "path", e->path, "outcome",
                                                     what, "reason", e->message));
    } else if (what) {
        mt_cli_progress_clear(p->tty);
        fprintf(stderr, "migrate: %s: %s: %s\n", what, e->path, e->message);
    }
    if (!p->json)
        draw(p, e->stats, 0);
    return mt_cli_stop_asked();
}

static int open_store(mt_memory **out, const mt_cli *cli, const char *url, const char *tenant,
                      int plain, int source)
{
    mt_options o = cli->opts;

    o.tenant = tenant;
    /* The source is only read: one that is not there is named, not made. */
    o.must_exist = source;
    if (plain) {
        /* This side without encryption: the other is sealed with --encrypt's key. */
        if ((url ? mt_memory_open_url(out, url, &o) : mt_memory_open(out, cli->root, &o)) < 0) {
            fprintf(stderr, "memtool migrate: %s\n", mt_error_last()->message);
            return MT_EXIT_USAGE;
        }
        return 0;
    }
    /* With the options' encryption, if any. */
    if (mt_cli_open_store(out, cli, url, &o, "migrate") < 0)
        return MT_EXIT_USAGE;
    return 0;
}

/* Whether the two sides are one store and tenant: every memory would be
 * "already there", and a run with --from-plain would re-seal the store it
 * reads from. A URL that does not parse is not the same: its open says why. */
static int same_store(const mt_cli *cli, const char *from, const char *from_tenant, const char *to,
                      const char *to_tenant)
{
    char *root = NULL;
    int same = 0;

    /* No --from or --to: the store every command opens (--store, else the
     * file store at --root), named as a URL as they name it. */
    if ((!from || !to) && !(root = mt_cli_store_url(cli)))
        return 0;
    if (mt_store_same(&same, from ? from : root, from_tenant, to ? to : root, to_tenant) < 0)
        same = 0;
    free(root);
    return same;
}

/* What the command line of migrate says. */
typedef struct {
    const char *from, *to, *from_tenant, *to_tenant;
    int no_history, from_plain, to_plain, json;
} migrate_args;

static const mt_cli_option migrate_options[] = {
    {"from", MT_CLI_STRING, offsetof(migrate_args, from), 0, 0, 0},
    {"to", MT_CLI_STRING, offsetof(migrate_args, to), 0, 0, 0},
    {"from-tenant", MT_CLI_STRING, offsetof(migrate_args, from_tenant), 0, 0, 0},
    {"to-tenant", MT_CLI_STRING, offsetof(migrate_args, to_tenant), 0, 0, 0},
    {"no-history", MT_CLI_FLAG, offsetof(migrate_args, no_history), 0, 0, 0},
    {"from-plain", MT_CLI_FLAG, offsetof(migrate_args, from_plain), 0, 0, 0},
    {"to-plain", MT_CLI_FLAG, offsetof(migrate_args, to_plain), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(migrate_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command migrate_command = {
    "migrate", help, migrate_options, 0, 0, "name the stores with --from and --to", 0};

/* A --from-tenant or --to-tenant given: a name as --tenant takes ("" would
 * quietly mean the default tenant). Returns -1 to go on, else the status. */
static int check_tenant(const char *option, const char *tenant)
{
    if (!tenant)
        return -1;
    if (!*tenant)
        return mt_cli_usage_error("migrate",
                                  "--%s needs a name (1 to 255 bytes); the store's own memories "
                                  "are default",
                                  option);
    if (mt_store_tenant_check(tenant) < 0)
        return mt_cli_usage_error("migrate", "--%s: %s", option, mt_error_last()->message);
    return -1;
}

int mt_cmd_migrate(const mt_cli *cli, int argc, char **argv)
{
    migrate_args a = {0};
    const char *from, *to, *from_tenant, *to_tenant;
    mt_memory *src = NULL, *dst = NULL;
    mt_migrate_options mo;
    mt_migrate_stats s;
    progress p;
    mt_cli_stop stop;
    int rc, status, from_plain, to_plain;

    memset(&p, 0, sizeof(p));
    memset(&mo, 0, sizeof(mo));
    if ((status = mt_cli_parse(&migrate_command, &a, argc, argv)) >= 0 ||
        (status = check_tenant("from-tenant", a.from_tenant)) >= 0 ||
        (status = check_tenant("to-tenant", a.to_tenant)) >= 0)
        return status;
    from = a.from ? a.from : cli->store;
    to = a.to;
    from_tenant = a.from_tenant ? a.from_tenant : cli->opts.tenant;
    to_tenant = a.to_tenant ? a.to_tenant : cli->opts.tenant;
    mo.no_history = a.no_history;
    from_plain = a.from_plain;
    to_plain = a.to_plain;
    p.json = a.json;
    if (!to)
        return mt_cli_usage_error("migrate", "--to URL is needed: the store to copy into");
    if ((from_plain || to_plain) && !cli->encrypt)
        return mt_cli_usage_error("migrate",
                                  "--%s-plain is for a migration with --encrypt: "
                                  "without it both stores are plain",
                                  from_plain ? "from" : "to");
    if (from_plain && to_plain)
        return mt_cli_usage_error("migrate", "--from-plain and --to-plain together leave "
                                             "--encrypt nothing: give one, or leave --encrypt out");
    if (same_store(cli, from, from_tenant, to, to_tenant))
        return mt_cli_usage_error("migrate",
                                  "--to names the store it copies from (the same store and "
                                  "tenant): give another store, or another --to-tenant");
    /* With --encrypt and no --from-plain, a plain source is refused by its
     * open (the store's record of encryption), once, naming --from-plain. */
    if ((status = open_store(&src, cli, from, from_tenant, from_plain, 1)) != 0)
        return status;
    if ((status = open_store(&dst, cli, to, to_tenant, to_plain, 0)) != 0)
        goto done;
    p.tty = isatty(STDERR_FILENO) && !p.json;
    p.start = now_s();
    if (p.json && (!(p.problems = json_array()) || !(p.ids = json_array()))) {
        status = mt_cli_usage_error("migrate", "out of memory");
        goto done;
    }
    mt_cli_stop_catch(&stop);
    rc = mt_memory_migrate_with(&s, src, dst, &mo, on_event, &p);
    mt_cli_stop_release(&stop);
    if (!p.json)
        draw(&p, &s, 1);
    if (rc < 0 && rc != MT_ESTOPPED) {
        fprintf(stderr, "memtool migrate: %s\n", mt_error_last()->message);
        status = MT_EXIT_TOOL;
        goto done;
    }
    if (p.json) {
        json_t *o =
            json_pack("{s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:O, s:O}",
                      "files", (json_int_t)s.files, "bytes", (json_int_t)s.bytes, "history",
                      s.history, "deleted", (json_int_t)s.deleted, "versions",
                      (json_int_t)s.versions, "copied", (json_int_t)s.copied, "versions_copied",
                      (json_int_t)s.versions_copied, "same", (json_int_t)s.same, "conflicts",
                      (json_int_t)s.conflicts, "failed", (json_int_t)s.failed, "skipped",
                      (json_int_t)s.skipped, "empty_dirs", (json_int_t)s.empty_dirs, "stopped",
                      rc == MT_ESTOPPED, "problems", p.problems, "version_ids", p.ids);
        if (mt_cli_print_json("migrate", o) != MT_EXIT_OK) {
            status = MT_EXIT_TOOL;
            goto done;
        }
    } else {
        char versions[64] = "";
        if (s.history)
            snprintf(versions, sizeof(versions), " (%llu versions)",
                     (unsigned long long)s.versions_copied);
        fprintf(stderr,
                "migrate: %llu copied%s, %llu already there, %llu conflicts, %llu failed, %llu "
                "skipped, %llu empty directories not made%s\n",
                (unsigned long long)s.copied, versions, (unsigned long long)s.same,
                (unsigned long long)s.conflicts, (unsigned long long)s.failed,
                (unsigned long long)s.skipped, (unsigned long long)s.empty_dirs,
                rc == MT_ESTOPPED ? "; stopped: run it again to finish" : "");
        if (p.renumbered)
            fprintf(stderr,
                    "migrate: %llu versions have other ids at the destination (it held versions "
                    "already); --json lists each source id with its new one\n",
                    (unsigned long long)p.renumbered);
    }
    status = rc == MT_ESTOPPED ? 130 : s.conflicts || s.failed ? MT_EXIT_TOOL : MT_EXIT_OK;
done:
    json_decref(p.problems);
    json_decref(p.ids);
    mt_memory_free(src);
    mt_memory_free(dst);
    return status;
}

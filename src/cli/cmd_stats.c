/* memtool stats: the store at a glance. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <memtool/store.h>

#include "cli/cli.h"
#include "cli/input.h"
#include "core/memory.h"
#include "util/lines.h"

static const char help[] =
    "usage: memtool [options] stats [--json]\n\n"
    "The store at a glance: its files, bytes and directories and how much of each limit\n"
    "they use; the largest memories, the oldest (least recently created or edited) and\n"
    "the most idle (least recently viewed or changed); and the versions history keeps.\n\n"
    "Options:\n"
    "  --json  one JSON object (times in RFC 3339, idle times in seconds)\n";

static double percent(uint64_t used, uint64_t limit)
{
    return limit ? 100.0 * (double)used / (double)limit : 0;
}

static json_t *json_files(const mt_stats_file *f, size_t n, int64_t now)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; a && i < n; i++) {
        char at[40], mod[40];
        mt_cli_format_time(at, sizeof(at), f[i].last_access_ms);
        mt_cli_format_time(mod, sizeof(mod), f[i].modified_ms);
        json_array_append_new(
            a, json_pack("{s:s, s:I, s:s, s:s, s:I}", "path", f[i].path, "size",
                         (json_int_t)f[i].size, "last_access", at, "modified", mod, "idle_seconds",
                         (json_int_t)(now > f[i].last_access_ms ? (now - f[i].last_access_ms) / 1000
                                                                : 0)));
    }
    return a;
}

static json_t *json_limit(uint64_t used, uint64_t limit)
{
    return json_pack("{s:I, s:I, s:f}", "used", (json_int_t)used, "limit", (json_int_t)limit,
                     "percent", percent(used, limit));
}

static void print_files(const char *title, const mt_stats_file *f, size_t n, int64_t now)
{
    size_t i;

    printf("%s:\n", title);
    if (n == 0)
        printf("  (none)\n");
    for (i = 0; i < n; i++) {
        char size[32], idle[48];
        mt_text_format_size(size, f[i].size);
        mt_cli_format_duration(idle, sizeof(idle),
                               now > f[i].last_access_ms ? (uint64_t)(now - f[i].last_access_ms)
                                                         : 0);
        printf("  %s\t%s\tidle %s\n", size, f[i].path, idle);
    }
}

int mt_cmd_stats(const mt_cli *cli, int argc, char **argv)
{
    mt_memory *mem;
    mt_stats s;
    int64_t now;
    int c, json = 0, status = MT_EXIT_OK;

    if ((c = mt_cli_args(&json, "stats", argc, argv, 0, 0, 0, help)) >= 0)
        return c;
    if (!(mem = mt_cli_open_read(cli)))
        return MT_EXIT_USAGE;
    if (mt_memory_stats(&s, mem) < 0) {
        status = mt_cli_fail("stats");
        goto done;
    }
    now = mt_memory_now_ms();
    if (json) {
        json_t *o = json_pack(
            "{s:o, s:o, s:o, s:I, s:o, s:o, s:o}", "files", json_limit(s.usage.files, s.max_files),
            "bytes", json_limit(s.usage.bytes, s.max_store_size), "dirs",
            json_limit(s.usage.dirs, s.max_dirs), "max_file_size", (json_int_t)s.max_file_size,
            "largest", json_files(s.largest, s.nlargest, now), "oldest",
            json_files(s.oldest, s.noldest, now), "most_idle",
            json_files(s.idlest, s.nidlest, now));
        if (o && json_object_set_new(o, "versions",
                                     s.has_versions ? json_integer((json_int_t)s.versions)
                                                    : json_null()) < 0) {
            json_decref(o);
            o = NULL;
        }
        status = mt_cli_print_json_with("stats", o, JSON_COMPACT | JSON_REAL_PRECISION(4));
    } else {
        char b[32], lim[32];
        mt_text_format_size(b, s.usage.bytes);
        mt_text_format_size(lim, s.max_store_size);
        printf("files        %llu of %llu (%.1f%%)\n", (unsigned long long)s.usage.files,
               (unsigned long long)s.max_files, percent(s.usage.files, s.max_files));
        printf("bytes        %s of %s (%.1f%%)\n", b, lim,
               percent(s.usage.bytes, s.max_store_size));
        printf("directories  %llu of %llu (%.1f%%)\n", (unsigned long long)s.usage.dirs,
               (unsigned long long)s.max_dirs, percent(s.usage.dirs, s.max_dirs));
        if (s.has_versions)
            printf("versions     %llu kept\n", (unsigned long long)s.versions);
        else
            printf("versions     (history off)\n");
        print_files("largest", s.largest, s.nlargest, now);
        print_files("oldest (least recently created or edited)", s.oldest, s.noldest, now);
        print_files("most idle (least recently viewed or changed)", s.idlest, s.nidlest, now);
    }
    mt_stats_dispose(&s);
done:
    mt_memory_free(mem);
    return status;
}

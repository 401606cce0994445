/*
 * What history costs a write, and how fast a long log reads: the same
 * writes (create, str_replace, delete of a small file) with history off and
 * on, in alternating rounds in fresh stores, at each durability; then
 * mt_memory_log of one memory with VERSIONS versions, in DIR/store, which is
 * left in place for bench/run.sh to time `memtool log` on it.
 *
 *     mt_bench_history DIR [ROUNDS [SCALE [VERSIONS]]]
 *
 * SCALE divides the number of writes per round (the smoke run's few). Prints
 * timing rows as bench/run.sh's timings.csv has them, with rounds for runs:
 * history,write,on|off,DURABILITY,...: microseconds per write, one round's
 * mean each (median, worst, mean and best round); history,log,libmemtool,...:
 * one mt_memory_log of all the versions, five times.
 */
#include <memtool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int call(mt_memory *m, const char *json)
{
    mt_result r;
    int bad;

    if (mt_memory_call(&r, m, json, strlen(json)) < 0)
        return -1;
    bad = r.is_error;
    if (bad)
        fprintf(stderr, "mt_bench_history: %s\n", r.text);
    mt_result_dispose(&r);
    return bad ? -1 : 0;
}

/* Microseconds per write over n create/str_replace/delete cycles. */
static double writes(const char *root, mt_durability d, int history, int n)
{
    char json[256], cmd[4200];
    mt_options o;
    mt_memory *m;
    double t0, t;
    int i;

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        return -1;
    mt_options_init(&o);
    o.durability = d;
    o.history = history;
    if (mt_memory_open(&m, root, &o) < 0)
        return -1;
    t0 = now();
    for (i = 0; i < n; i++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/d/f%d.md\",\"file_text\":\"line "
                 "one %d\\nline two\\n\"}",
                 i, i);
        if (call(m, json) < 0)
            return -1;
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/d/f%d.md\",\"old_str\":\"two\","
                 "\"new_str\":\"2\"}",
                 i);
        if (call(m, json) < 0)
            return -1;
        snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"/memories/d/f%d.md\"}", i);
        if (call(m, json) < 0)
            return -1;
    }
    t = now() - t0;
    mt_memory_free(m);
    return t / (3.0 * n) * 1e6;
}

/* median, p99 (the worst of a few), mean and min, as the timing rows have them */
static void row(const char *what, const char *impl, const char *d, const char *param, double *v,
                int n)
{
    double sum = 0, t;
    int i, j;

    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--)
            t = v[j], v[j] = v[j - 1], v[j - 1] = t;
    for (i = 0; i < n; i++)
        sum += v[i];
    printf("history,%s,%s,%s,%s,%d,%.2f,%.2f,%.2f,%.2f\n", what, impl, d, param, n, v[(n - 1) / 2],
           v[n - 1], sum / n, v[0]);
    fflush(stdout);
}

static int log_us(const char *root, int versions)
{
    char json[256], cmd[4200];
    mt_options o;
    mt_memory *m;
    mt_log_query q;
    double us[5];
    char param[64];
    int i;

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        return -1;
    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.history_keep = 0;
    if (mt_memory_open(&m, root, &o) < 0 ||
        call(m, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"v0\\n\"}") < 0)
        return -1;
    for (i = 1; i < versions; i++) {
        snprintf(json, sizeof(json),
                 "{\"command\":\"str_replace\",\"path\":\"/memories/a.md\",\"old_str\":\"v%d\\n\","
                 "\"new_str\":\"v%d\\n\"}",
                 i - 1, i);
        if (call(m, json) < 0)
            return -1;
    }
    memset(&q, 0, sizeof(q));
    q.path = "/memories/a.md";
    q.limit = (size_t)versions;
    for (i = 0; i < 5; i++) {
        mt_version *v;
        size_t count;
        double t0 = now();

        if (mt_memory_log(&v, &count, m, &q) < 0 || count != (size_t)versions)
            return -1;
        us[i] = (now() - t0) * 1e6;
        mt_versions_free(v, count);
    }
    mt_memory_free(m);
    snprintf(param, sizeof(param), "%d versions", versions);
    row("log", "libmemtool", "-", param, us, 5);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        mt_durability d;
        int n;
    } levels[] = {{"full", MT_DURABILITY_FULL, 100},
                  {"file", MT_DURABILITY_FILE, 300},
                  {"none", MT_DURABILITY_NONE, 1500}};
    char root[4096];
    int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5, r;
    int scale = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 1;
    int versions = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 10000;
    size_t l;

    if (argc < 2 || rounds < 1 || rounds > 100 || scale < 1 || versions < 1) {
        fprintf(stderr, "usage: mt_bench_history DIR [ROUNDS [SCALE [VERSIONS]]]\n");
        return 2;
    }
    snprintf(root, sizeof(root), "%s/store", argv[1]);
    for (l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
        double us[2][100];
        int n = levels[l].n / scale > 0 ? levels[l].n / scale : 1, h;

        /* Off and on take turns, so a burst of load elsewhere hits both. */
        for (r = 0; r < rounds; r++)
            for (h = 0; h < 2; h++)
                if ((us[h][r] = writes(root, levels[l].d, h, n)) < 0)
                    return 1;
        for (h = 0; h < 2; h++)
            row("write", h ? "on" : "off", levels[l].name, "create+str_replace+delete", us[h],
                rounds);
    }
    return log_us(root, versions) < 0 ? 1 : 0;
}

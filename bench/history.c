/*
 * What history costs a write, and how fast a long log reads: the same
 * writes (create, str_replace, delete of a small file) with history off and
 * on, in alternating rounds in fresh stores, at each durability; then
 * mt_memory_log of one memory with 10,000 versions. Run by hand:
 *
 *     build/bench/mt_bench_history DIR [ROUNDS]
 *
 * Prints CSV: suite,durability,history,us_per_write (best round) and
 * suite,versions,ms (best of five logs).
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

static double log_ms(const char *root, int versions)
{
    char json[256], cmd[4200];
    mt_options o;
    mt_memory *m;
    mt_log_query q;
    double best = -1;
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
        double t0 = now(), t;

        if (mt_memory_log(&v, &count, m, &q) < 0 || count != (size_t)versions)
            return -1;
        t = (now() - t0) * 1e3;
        mt_versions_free(v, count);
        if (best < 0 || t < best)
            best = t;
    }
    mt_memory_free(m);
    return best;
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
    size_t l;

    if (argc < 2 || rounds < 1) {
        fprintf(stderr, "usage: mt_bench_history DIR [ROUNDS]\n");
        return 2;
    }
    snprintf(root, sizeof(root), "%s/store", argv[1]);
    puts("suite,durability,history,us_per_write");
    for (l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
        double best[2] = {-1, -1};
        for (r = 0; r < rounds; r++) {
            int h;
            for (h = 0; h < 2; h++) {
                double us = writes(root, levels[l].d, h, levels[l].n);
                if (us < 0)
                    return 1;
                if (best[h] < 0 || us < best[h])
                    best[h] = us;
            }
        }
        printf("history_write,%s,off,%.1f\nhistory_write,%s,on,%.1f\n", levels[l].name, best[0],
               levels[l].name, best[1]);
        fflush(stdout);
    }
    puts("suite,versions,ms");
    printf("history_log,10000,%.2f\n", log_ms(root, 10000));
    return 0;
}

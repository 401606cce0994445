/*
 * mt_bench_spawn: what one command costs as a whole process, the way a shell
 * script or a hook pays for it: spawn, run, exit, reaped.
 *
 *   mt_bench_spawn --op NAME --impl NAME [--durability D] [--iters N]
 *                  [--suite NAME] [--param TEXT]
 *                  --input TEMPLATE [--input TEMPLATE...] -- COMMAND ARGS...
 *
 * Run i gets input template i % (number of templates) on its stdin, with
 * every "%N" replaced by i, so each create names a new file and str_replace
 * can alternate between two inputs. The input is in a pipe before the clock
 * starts. A run that exits non-zero stops the benchmark.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

#define MAX_INPUTS 4

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long n;

    if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
        bench_die("cannot read %s", path);
    if (!(data = malloc((size_t)n + 1)) || fread(data, 1, (size_t)n, f) != (size_t)n)
        bench_die("cannot read %s", path);
    data[n] = '\0';
    fclose(f);
    return data;
}

/* The template with each "%N" replaced by the run number. */
static size_t expand(char *out, size_t size, const char *tpl, size_t run)
{
    size_t len = 0;
    char num[32];
    int nlen = snprintf(num, sizeof(num), "%06zu", run);

    while (*tpl) {
        if (tpl[0] == '%' && tpl[1] == 'N') {
            if (len + (size_t)nlen >= size)
                bench_die("an input is too long");
            memcpy(out + len, num, (size_t)nlen);
            len += (size_t)nlen;
            tpl += 2;
            continue;
        }
        if (len + 1 >= size)
            bench_die("an input is too long");
        out[len++] = *tpl++;
    }
    out[len] = '\0';
    return len;
}

int main(int argc, char **argv)
{
    const char *op = NULL, *impl = NULL, *dur = "-", *suite = "process", *param = "one process";
    char *inputs[MAX_INPUTS];
    size_t ninputs = 0, iters = 100, warm, i;
    char **cmd = NULL, buf[1 << 15];
    posix_spawn_file_actions_t fa;
    int devnull, a;
    bench_samples s;
    bench_stats st;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--") == 0) {
            cmd = argv + a + 1;
            break;
        }
        if (a + 1 >= argc)
            bench_die("%s needs a value", argv[a]);
        if (strcmp(argv[a], "--op") == 0)
            op = argv[++a];
        else if (strcmp(argv[a], "--impl") == 0)
            impl = argv[++a];
        else if (strcmp(argv[a], "--durability") == 0)
            dur = argv[++a];
        else if (strcmp(argv[a], "--suite") == 0)
            suite = argv[++a];
        else if (strcmp(argv[a], "--param") == 0)
            param = argv[++a];
        else if (strcmp(argv[a], "--iters") == 0)
            iters = (size_t)bench_parse_u64(argv[++a], "--iters");
        else if (strcmp(argv[a], "--input") == 0 && ninputs < MAX_INPUTS)
            inputs[ninputs++] = read_file(argv[++a]);
        else
            bench_die("unknown option %s", argv[a]);
    }
    if (!op || !impl || !cmd || !*cmd || ninputs == 0 || iters == 0)
        bench_die("usage: mt_bench_spawn --op NAME --impl NAME --input FILE -- COMMAND...");

    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0)
        bench_die("cannot open /dev/null");
    /* Two untimed runs load the binaries and libraries into the page cache. */
    warm = 2;
    /* Whole rounds of the templates, so alternating edits leave the file as found. */
    if ((warm + iters) % ninputs)
        iters += ninputs - (warm + iters) % ninputs;
    bench_samples_init(&s, iters);
    for (i = 0; i < warm + iters; i++) {
        size_t len = expand(buf, sizeof(buf), inputs[i % ninputs], i);
        int fds[2], status;
        uint64_t t0, t1;
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
            bench_die("pipe: %s", strerror(errno));
        /* Inputs are far below a pipe's capacity: written whole before the spawn. */
        if (write(fds[1], buf, len) != (ssize_t)len)
            bench_die("cannot write the input");
        close(fds[1]);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
        posix_spawn_file_actions_adddup2(&fa, devnull, 1);
        t0 = bench_now_ns();
        if ((errno = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ)) != 0)
            bench_die("cannot run %s: %s", cmd[0], strerror(errno));
        if (waitpid(pid, &status, 0) < 0)
            bench_die("waitpid: %s", strerror(errno));
        t1 = bench_now_ns();
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bench_die("run %zu of %s (%s) failed with status %d; its input was: %s", i, impl, op,
                      status, buf);
        if (i >= warm)
            bench_samples_add(&s, t1 - t0);
    }
    st = bench_stats_of(&s);
    bench_row(stdout, suite, op, impl, dur, param, &st);
    bench_samples_free(&s);
    for (i = 0; i < ninputs; i++)
        free(inputs[i]);
    close(devnull);
    return 0;
}

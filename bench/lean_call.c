/*
 * mt_bench_lean_call --root DIR [--durability D] < INPUT.json: `memtool call`
 * for a bare tool input, built from libmemtool and jansson only. The
 * per-process suite runs it next to `memtool call` to show what the command
 * costs without the libraries the memtool binary loads for its other
 * commands (libcurl and its dependencies, for the agent).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memtool.h>

int main(int argc, char **argv)
{
    mt_options opts;
    mt_memory *mem;
    mt_result res;
    const char *root = NULL;
    char *in = NULL;
    size_t len = 0, cap = 0;
    ssize_t n;
    int i, status;

    mt_options_init(&opts);
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--root") == 0)
            root = argv[i + 1];
        else if (strcmp(argv[i], "--durability") == 0 &&
                 mt_durability_parse(&opts.durability, argv[i + 1]) < 0)
            return 2;
    }
    if (!root)
        return 2;
    do {
        if (len == cap) {
            char *grown = realloc(in, cap = cap * 2 + 4096);
            if (!grown)
                return 2;
            in = grown;
        }
        n = read(0, in + len, cap - len);
        if (n > 0)
            len += (size_t)n;
    } while (n > 0);
    if (n < 0 || mt_memory_open(&mem, root, &opts) < 0)
        return 2;
    if (mt_memory_call(&res, mem, in, len) < 0)
        return 2;
    fwrite(res.text, 1, res.len, stdout);
    status = res.is_error ? 1 : 0;
    mt_result_dispose(&res);
    mt_memory_free(mem);
    free(in);
    return status;
}

/* Embedding libmemtool: answer the memory tool calls of an agent in-process.
 *
 *     cc embed.c $(pkg-config --cflags --libs memtool) -o embed
 *     ./embed /tmp/agent-memories
 */
#include <stdio.h>
#include <string.h>

#include <memtool.h>

int main(int argc, char **argv)
{
    /* What a model sends, one tool input at a time. */
    static const char *calls[] = {
        "{\"command\":\"create\",\"path\":\"/memories/progress.md\","
        "\"file_text\":\"# Progress\\n- [ ] parse input\\n\"}",
        "{\"command\":\"str_replace\",\"path\":\"/memories/progress.md\","
        "\"old_str\":\"- [ ] parse input\",\"new_str\":\"- [x] parse input\"}",
        "{\"command\":\"view\",\"path\":\"/memories\"}",
        "{\"command\":\"view\",\"path\":\"/memories/../etc/passwd\"}",
    };
    mt_options opts;
    mt_memory *mem;
    size_t i;
    int failed = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s STORE-DIR\n", argv[0]);
        return 2;
    }
    mt_options_init(&opts);
    opts.durability = MT_DURABILITY_FILE; /* fsync files, not directories */
    if (mt_memory_open(&mem, argv[1], &opts) < 0) {
        fprintf(stderr, "embed: %s\n", mt_error_last()->message);
        return 1;
    }
    for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        mt_result res;
        if (mt_memory_call(&res, mem, calls[i], strlen(calls[i])) < 0) {
            fprintf(stderr, "embed: %s\n", mt_error_last()->message);
            failed = 1;
            break;
        }
        /* This text goes back to the model as the tool_result content. */
        printf("%s%s\n---\n", res.is_error ? "[error] " : "", res.text);
        mt_result_dispose(&res);
    }
    mt_memory_free(mem);
    return failed;
}

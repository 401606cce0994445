/*
 * `memtool serve` line handling: every line but a blank one is answered with
 * exactly one line, a JSON tool_result block {"type":"tool_result",
 * "content":string,"is_error":bool} (SPEC section 4), valid UTF-8, with no
 * raw newline that would break the framing; nothing outside the store is
 * read or written. An input is up to 8 lines against one fresh store.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "server/server.h"

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    mt_memory *mem = fuzz_open_store(0);
    int lines = 0;

    while (p < end && lines++ < 8) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), out_len = 0;
        char *out = NULL;
        json_t *msg, *content;
        int rc = mt_serve_handle(&out, &out_len, mem, p, n);

        p += n + 1;
        if (rc == MT_ENOMEM)
            continue;
        FUZZ_CHECK(rc == 0, "mt_serve_handle returned %d", rc);
        fuzz_check_outside();
        if (blank(p - n - 1, n)) {
            FUZZ_CHECK(out == NULL, "a blank line was answered: %s", out);
            continue;
        }
        FUZZ_CHECK(out != NULL, "a line got no answer: %.*s", (int)n, p - n - 1);
        fuzz_check_text(out, out_len);
        FUZZ_CHECK(!memchr(out, '\n', out_len) && !memchr(out, '\r', out_len),
                   "an answer spans lines: %s", out);
        msg = json_loadb(out, out_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(json_is_object(msg), "the answer is not a JSON object: %s", out);
        content = json_object_get(msg, "content");
        FUZZ_CHECK(json_is_string(json_object_get(msg, "type")) &&
                       strcmp(json_string_value(json_object_get(msg, "type")), "tool_result") ==
                           0 &&
                       json_is_string(content) && json_is_boolean(json_object_get(msg, "is_error")),
                   "the answer is not a tool_result block: %s", out);
        fuzz_check_text(json_string_value(content), json_string_length(content));
        if (json_is_true(json_object_get(msg, "is_error")))
            FUZZ_CHECK(strncmp(json_string_value(content), "Error: ", 7) == 0 ||
                           strncmp(json_string_value(content), "The path ", 9) == 0 ||
                           strncmp(json_string_value(content), "No replacement", 14) == 0 ||
                           strncmp(json_string_value(content), "File ", 5) == 0,
                       "an error of unknown shape: %s", out);
        json_decref(msg);
        free(out);
    }
    mt_memory_free(mem);
    return 0;
}

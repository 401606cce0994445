/*
 * MCP (JSON-RPC 2.0 over lines) handling, with the connection state carried
 * across the lines of one input so the handshake and the calls after it are
 * reached. Every answer is one line holding one JSON-RPC 2.0 response:
 * "jsonrpc":"2.0", an "id", and exactly one of "result" and an "error" with
 * an integer code and a string message; valid UTF-8; nothing outside the
 * store is read or written.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "server/server.h"

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
    mt_mcp mcp;
    int lines = 0;

    mt_mcp_init(&mcp, mem);
    while (p < end && lines++ < 8) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p;
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), out_len = 0;
        char *out = NULL;
        json_t *msg, *err;
        int rc = mt_mcp_handle(&out, &out_len, &mcp, line, n);

        p += n + 1;
        FUZZ_CHECK(rc == 0, "mt_mcp_handle returned %d for: %.*s", rc, (int)n, line);
        fuzz_check_outside();
        if (!out)
            continue;
        fuzz_check_text(out, out_len);
        FUZZ_CHECK(!memchr(out, '\n', out_len) && !memchr(out, '\r', out_len),
                   "an answer spans lines: %s", out);
        msg = json_loadb(out, out_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(json_is_object(msg), "the answer is not a JSON object: %s", out);
        err = json_object_get(msg, "error");
        FUZZ_CHECK(json_is_string(json_object_get(msg, "jsonrpc")) &&
                       strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") == 0 &&
                       json_object_get(msg, "id") != NULL,
                   "not a JSON-RPC 2.0 response: %s", out);
        FUZZ_CHECK(!err != !json_object_get(msg, "result"),
                   "a response needs exactly one of result and error: %s", out);
        FUZZ_CHECK(!err || (json_is_integer(json_object_get(err, "code")) &&
                            json_is_string(json_object_get(err, "message"))),
                   "a malformed error object: %s", out);
        json_decref(msg);
        free(out);
    }
    mt_memory_free(mem);
    return 0;
}

/*
 * The flat tool-input reader (src/core/tool_input.c) against jansson, the parser
 * it stands in for, run as mt_memory_call runs it (mt_json_loadb: a lone
 * surrogate escape reads as U+FFFD). Whenever the flat reader accepts a
 * text, jansson must accept it too, with the flags mt_memory_call uses, as
 * an object whose parameters read the same: type, kind, string bytes,
 * integers, pairs, and whether a "type" key is there. (When the flat reader
 * declines, jansson decides, so there is nothing to compare.)
 */
#include <jansson.h>
#include <string.h>

#include "fuzz_common.h"
#include "core/tool_input.h"
#include "util/json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void same_arg(const mt_arg *flat, const mt_arg *ref, const char *name)
{
    FUZZ_CHECK(flat->type == ref->type, "%s: type %d, jansson %d", name, flat->type, ref->type);
    if (flat->type == MT_ARG_ABSENT)
        return;
    FUZZ_CHECK(strcmp(flat->kind, ref->kind) == 0, "%s: kind %s, jansson %s", name, flat->kind,
               ref->kind);
    switch (flat->type) {
    case MT_ARG_STRING:
        FUZZ_CHECK(flat->str.len == ref->str.len &&
                       memcmp(flat->str.ptr, ref->str.ptr, flat->str.len) == 0,
                   "%s: string of %zu bytes, jansson %zu", name, flat->str.len, ref->str.len);
        break;
    case MT_ARG_INTEGER:
        FUZZ_CHECK(flat->num == ref->num, "%s: %lld, jansson %lld", name, (long long)flat->num,
                   (long long)ref->num);
        break;
    case MT_ARG_ARRAY:
        FUZZ_CHECK(flat->is_pair && ref->is_pair && flat->pair[0] == ref->pair[0] &&
                       flat->pair[1] == ref->pair[1],
                   "%s: the pair differs from jansson's", name);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    mt_input flat, ref;
    json_error_t err;
    json_t *v;
    int rc, k;

    rc = mt_input_parse_flat(&flat, text, size);
    FUZZ_CHECK(rc == 0 || rc == 1, "mt_input_parse_flat returned %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(flat.scratch == NULL, "a declined text left scratch memory");
        return 0;
    }
    rc = mt_json_loadb(&v, text, size, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err);
    if (rc == MT_ENOMEM) {
        mt_input_dispose(&flat);
        return 0;
    }
    FUZZ_CHECK(v != NULL, "the flat reader accepted what jansson refuses: %s", err.text);
    FUZZ_CHECK(json_is_object(v), "the flat reader accepted a non-object");
    mt_input_from_json(&ref, v);
    FUZZ_CHECK(flat.has_type == ref.has_type, "has_type %d, jansson %d", flat.has_type,
               ref.has_type);
    for (k = 0; k < MT_IN_COUNT; k++)
        same_arg(&flat.arg[k], &ref.arg[k], mt_input_name((mt_input_key)k));
    json_decref(v);
    mt_input_dispose(&flat);
    return 0;
}

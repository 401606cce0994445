/*
 * memory_search: the search as a tool a model calls (the MCP server, serve,
 * the agent), and the text of its hits, which the command prints too. The
 * input is {"query": ..., "path": ..., "limit": ...}; the result is text, an
 * error starting "Error: " as the memory tool's do.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"
#include "core/search_tool.h"

const char mt_search_tool_description[] =
    "Search your persistent memory directory, /memories, for memories that contain every "
    "term of a query, best match first, each with the lines where the terms occur (matches "
    "marked **like this**). A query is words, \"phrases in quotes\" and prefixes (deploy*); "
    "-word or NOT word excludes, a OR b takes either; case and accents do not matter. "
    "Examples: {\"query\": \"deploy "
    "script\"}, {\"query\": \"\\\"release checklist\\\"\", \"path\": \"/memories/project\"}, "
    "{\"query\": \"auth*\", \"limit\": 5}. Use it to find what an earlier session wrote "
    "before viewing files one by one.";

json_t *mt_search_tool_schema(void)
{
    json_t *props =
        json_pack("{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:i, s:i, s:s}}", "query", "type", "string",
                  "description",
                  "Words, \"phrases in quotes\" and prefixes (word*) that must all occur; "
                  "-word excludes, a OR b takes either",
                  "path", "type", "string", "description",
                  "Search at or beneath this directory, e.g. /memories/project (default /memories)",
                  "limit", "type", "integer", "minimum", 1, "maximum", 100, "description",
                  "At most this many memories (default 10)");

    if (!props)
        return NULL;
    return json_pack("{s:s, s:o, s:[s], s:b}", "type", "object", "properties", props, "required",
                     "query", "additionalProperties", 0);
}

static int fail(mt_result *res, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int fail(mt_result *res, const char *fmt, ...)
{
    mt_buf b = MT_BUF_INIT;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = mt_buf_puts(&b, "Error: ") < 0 ? MT_ENOMEM : mt_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc < 0)
        goto oom;
    res->is_error = 1;
    if (!(res->text = mt_buf_detach(&b, &res->len)))
        goto oom;
    return 0;
oom:
    mt_buf_dispose(&b);
    return mt_error_set(MT_ENOMEM, "out of memory");
}

int mt_memory_search_tool(mt_result *res, mt_memory *m, const json_t *input)
{
    mt_search_options so = {NULL, 0};
    mt_search_hit *hits = NULL;
    mt_buf b = MT_BUF_INIT;
    const char *key, *query;
    json_t *v;
    size_t n = 0;
    int rc;

    if (!res)
        return mt_error_set(MT_EINVAL, "mt_memory_search_tool needs a result");
    memset(res, 0, sizeof(*res));
    if (!m || !input)
        return mt_error_set(MT_EINVAL, "mt_memory_search_tool needs a handle and an input");
    if (!json_is_object(input))
        return fail(res, "the input must be an object: {\"query\": \"words to find\"}");
    json_object_foreach((json_t *)input, key, v)
    {
        if (strcmp(key, "query") != 0 && strcmp(key, "path") != 0 && strcmp(key, "limit") != 0)
            return fail(res, "memory_search takes query, path and limit, not %.100s", key);
    }
    if (!(query = json_string_value(json_object_get(input, "query"))))
        return fail(res, "memory_search needs query, a string of words to find");
    if ((v = json_object_get(input, "path")) && !(so.path = json_string_value(v)))
        return fail(res, "path must be a string: the directory to search beneath");
    if ((v = json_object_get(input, "limit"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100)
            return fail(res, "limit must be a whole number from 1 to 100");
        so.limit = (size_t)json_integer_value(v);
    }
    if (mt_memory_search(&hits, &n, m, query, &so) < 0) {
        if (mt_error_last()->code == MT_ENOMEM)
            return MT_ENOMEM;
        return fail(res, "%s", mt_error_last()->message);
    }
    if (n == 0)
        rc = mt_buf_puts(&b, "No memories match.");
    else if ((rc = mt_buf_printf(&b, "%zu %s, best match first:\n", n,
                                 n == 1 ? "memory matches" : "memories match")) == 0)
        rc = mt_search_hits_text(&b, m, query, hits, n, "**", "**");
    mt_search_hits_free(hits, n);
    if (rc < 0 || !(res->text = mt_buf_detach(&b, &res->len))) {
        mt_buf_dispose(&b);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    return 0;
}

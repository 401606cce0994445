/* The text of search hits, shared by the memory_search tool and the command. */
#ifndef MT_SEARCH_TOOL_H
#define MT_SEARCH_TOOL_H

#include <jansson.h>

#include <memtool.h>

#include "buf.h"

/* Each hit as "PATH (lines 1, 2)" and its snippet "  1: before<open>match<close>after",
 * one per line, no newline at the end. */
int mt_search_hits_text(mt_buf *out, const mt_search_hit *hits, size_t n, const char *open,
                        const char *close);

/* The memory_search tool as front ends offer it to a model: what it does,
 * with examples, and the JSON Schema of its input (a new reference). */
extern const char mt_search_tool_description[];
json_t *mt_search_tool_schema(void);

#endif

/* The text of search hits, shared by the memory_search tool and the command. */
#ifndef MT_SEARCH_TOOL_H
#define MT_SEARCH_TOOL_H

#include <jansson.h>

#include <memtool.h>

#include "util/buf.h"

/* Each hit as "PATH (lines 1, 2)" and each of those lines, read from the
 * memory now, "  1: ...<open>match<close>...", with every occurrence of the
 * query's terms on it marked (around the first, CONTEXT_CHARS each side);
 * the header lists exactly the lines shown. No newline at the end. */
int mt_search_hits_text(mt_buf *out, mt_memory *m, const char *query, const mt_search_hit *hits,
                        size_t n, const char *open, const char *close);

/* The memory_search tool as front ends offer it to a model: what it does,
 * with examples, and the JSON Schema of its input (a new reference). */
extern const char mt_search_tool_description[];
json_t *mt_search_tool_schema(void);

#endif

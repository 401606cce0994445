/* The tools the MCP server offers, and the instructions it gives the model. */
#ifndef MT_MCP_TOOLS_H
#define MT_MCP_TOOLS_H

#include <jansson.h>

#include <memtool.h>

extern const char mt_mcp_instructions[];

/* The `tools` array of a tools/list result (a new reference, NULL on ENOMEM). */
json_t *mt_mcp_tools_list(void);

/* Whether `name` is one of the tools. */
int mt_mcp_tool_known(const char *name);

/*
 * Run a tools/call for a known tool. args is the call's arguments object, or
 * NULL when it had none. *out is {"content":[{"type":"text","text":...}],
 * "isError":...}: a tool failure is a result, not an error. Returns 0 or
 * MT_ENOMEM.
 */
int mt_mcp_tool_call(json_t **out, mt_memory *mem, const char *name, const json_t *args);

#endif

/*
 * `memtool mcp`: the Model Context Protocol over newline-delimited
 * JSON-RPC 2.0, one message per line.
 *
 * Two protocol eras are served on one connection, chosen per request as
 * revision 2026-07-28 describes for a dual-era server:
 *
 * - A request whose params._meta names a protocol version with
 *   "io.modelcontextprotocol/protocolVersion" is served statelessly under
 *   that revision (only 2026-07-28 is known; any other version that is not
 *   a handshake-era one gets error -32022 listing what is supported).
 *   Results carry resultType "complete" and the server's identity in
 *   _meta; cacheable results carry ttlMs and cacheScope.
 * - Anything else is the handshake era (2024-11-05 .. 2025-11-25):
 *   initialize, notifications/initialized and ping, and the tools methods
 *   only once initialize has been answered.
 *
 * Protocol faults are JSON-RPC errors; a failing memory command is a tool
 * result with isError set, so the model sees the text and can correct itself.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/json.h"
#include "util/utf8.h"
#include "server/mcp_tools.h"
#include "server/server.h"

#define RPC_PARSE_ERROR         (-32700)
#define RPC_INVALID_REQUEST     (-32600)
#define RPC_METHOD_NOT_FOUND    (-32601)
#define RPC_INVALID_PARAMS      (-32602)
#define RPC_UNSUPPORTED_VERSION (-32022)

#define META_PROTOCOL_VERSION    "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER_INFO         "io.modelcontextprotocol/serverInfo"

/* How long a client may cache the tool list and the discover result: the
 * tools are fixed for the life of the binary. */
#define CACHE_TTL_MS 3600000

/* Handshake-era revisions, newest first: the answer to an unknown one is the first. */
static const char *const legacy_versions[] = {MT_MCP_LATEST_LEGACY, "2025-06-18", "2025-03-26",
                                              "2024-11-05"};
#define N_LEGACY (sizeof(legacy_versions) / sizeof(legacy_versions[0]))

/* One request being answered. */
typedef struct {
    mt_mcp *s;
    const json_t *id; /* string or integer; borrowed */
    const char *method;
    const json_t *params; /* object or NULL; borrowed */
    int modern;           /* served under revision 2026-07-28 */
} request;

void mt_mcp_init(mt_mcp *s, mt_memory *mem)
{
    memset(s, 0, sizeof(*s));
    s->mem = mem;
}

/* A string's text, or NULL for anything else or a string holding NUL: a
 * method "tools/list\u0000x" must not pass for "tools/list". */
static const char *str_of(const json_t *v)
{
    const char *s = json_string_value(v);

    return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* How many bytes of s to quote in a message: its first `chars` code points,
 * never half of one. */
static int clip(const char *s, size_t chars)
{
    return (int)mt_utf8_prefix(s, strlen(s), chars);
}

static int legacy_version_known(const char *v)
{
    size_t i;

    for (i = 0; i < N_LEGACY; i++) {
        if (strcmp(v, legacy_versions[i]) == 0)
            return 1;
    }
    return 0;
}

/* Every revision served, newest first. */
static json_t *supported_versions(void)
{
    json_t *list = json_pack("[s]", MT_MCP_MODERN_VERSION);
    size_t i;

    for (i = 0; list && i < N_LEGACY; i++) {
        if (json_array_append_new(list, json_string(legacy_versions[i])) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "memtool", "title", "memtool", "version",
                     MT_VERSION);
}

static json_t *server_capabilities(void)
{
    return json_pack("{s:{s:b}}", "tools", "listChanged", 0);
}

/* Dump a response as one compact line; takes the reference. */
static int dump_line(char **out, size_t *out_len, json_t *msg)
{
    int rc = MT_ENOMEM;
    char *text;

    if (!msg)
        goto done;
    text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        goto done;
    *out = text;
    *out_len = strlen(text);
    rc = MT_OK;
done:
    json_decref(msg);
    return rc;
}

/* An error response; id NULL means null (the id could not be read). Takes data. */
static int rpc_error(char **out, size_t *out_len, const json_t *id, int code, const char *message,
                     json_t *data)
{
    mt_buf text = MT_BUF_INIT;
    json_t *err = NULL;

    /* Messages quote the input and the JSON parser; whatever they hold,
     * the answer must stay valid UTF-8. */
    if (mt_utf8_sanitize(&text, message, strlen(message)) == 0)
        err = json_pack("{s:i, s:s%}", "code", code, "message", text.ptr ? text.ptr : "", text.len);
    mt_buf_dispose(&text);

    if (err && data && json_object_set_new(err, "data", data) < 0) {
        json_decref(err);
        err = NULL;
    } else if (!err) {
        json_decref(data);
    }
    if (!err)
        return MT_ENOMEM;
    return dump_line(out, out_len,
                     json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                               id ? (json_t *)id : json_null(), "error", err));
}

/* A result response; takes result. Under 2026-07-28 the result leads with
 * resultType and ends with the server's identity in _meta. */
static int rpc_result(char **out, size_t *out_len, const request *r, json_t *result)
{
    json_t *body = result;

    if (!result)
        return MT_ENOMEM;
    if (r->modern) {
        body = json_pack("{s:s}", "resultType", "complete");
        if (!body || json_object_update(body, result) < 0 ||
            json_object_set_new(body, "_meta",
                                json_pack("{s:o}", META_SERVER_INFO, server_info())) < 0) {
            json_decref(body);
            json_decref(result);
            return MT_ENOMEM;
        }
        json_decref(result);
    }
    return dump_line(
        out, out_len,
        json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", (json_t *)r->id, "result", body));
}

static int invalid_params(char **out, size_t *out_len, const request *r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int invalid_params(char **out, size_t *out_len, const request *r, const char *fmt, ...)
{
    char message[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return rpc_error(out, out_len, r->id, RPC_INVALID_PARAMS, message, NULL);
}

static int method_not_found(char **out, size_t *out_len, const request *r, const char *why)
{
    char message[512];

    snprintf(message, sizeof(message), "Method not found: %.*s%s", clip(r->method, 100), r->method,
             why);
    return rpc_error(out, out_len, r->id, RPC_METHOD_NOT_FOUND, message, NULL);
}

static int do_initialize(char **out, size_t *out_len, const request *r)
{
    const json_t *requested = r->params ? json_object_get(r->params, "protocolVersion") : NULL;
    const char *version;

    if (!str_of(requested))
        return invalid_params(out, out_len, r,
                              "Invalid params: initialize needs a string protocolVersion");
    /* Echo a revision we speak; otherwise offer the newest and let the
     * client decide whether it can live with it. */
    version = json_string_value(requested);
    if (!legacy_version_known(version))
        version = MT_MCP_LATEST_LEGACY;
    snprintf(r->s->version, sizeof(r->s->version), "%s", version);
    r->s->initialized = 1;
    if (r->s->name_actor) {
        /* Versions say which client made them; a name that is no valid actor
         * (too long, control characters, a NUL) leaves the plain "mcp" rather
         * than a cut one that could pass for another client's. */
        const json_t *jname = json_object_get(json_object_get(r->params, "clientInfo"), "name");
        const char *name = json_string_value(jname);
        char actor[128];
        int n;
        if (name && strlen(name) == json_string_length(jname)) {
            n = snprintf(actor, sizeof(actor), "mcp:%s", name);
            if (n > 0 && (size_t)n < sizeof(actor))
                mt_memory_set_actor(r->s->mem, actor);
        }
    }
    return rpc_result(out, out_len, r,
                      json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", version, "capabilities",
                                server_capabilities(), "serverInfo", server_info(), "instructions",
                                mt_mcp_instructions));
}

static int do_discover(char **out, size_t *out_len, const request *r)
{
    return rpc_result(out, out_len, r,
                      json_pack("{s:o, s:o, s:s, s:i, s:s}", "supportedVersions",
                                supported_versions(), "capabilities", server_capabilities(),
                                "instructions", mt_mcp_instructions, "ttlMs", CACHE_TTL_MS,
                                "cacheScope", "public"));
}

static int do_tools_list(char **out, size_t *out_len, const request *r)
{
    json_t *result;

    /* There is one page, so no cursor was ever handed out. */
    if (r->params && json_object_get(r->params, "cursor"))
        return invalid_params(out, out_len, r, "Invalid params: unknown cursor");
    result = json_pack("{s:o}", "tools", mt_mcp_tools_list());
    if (result && r->modern &&
        (json_object_set_new(result, "ttlMs", json_integer(CACHE_TTL_MS)) < 0 ||
         json_object_set_new(result, "cacheScope", json_string("public")) < 0)) {
        json_decref(result);
        result = NULL;
    }
    return rpc_result(out, out_len, r, result);
}

static int do_tools_call(char **out, size_t *out_len, const request *r)
{
    const json_t *name = r->params ? json_object_get(r->params, "name") : NULL;
    const json_t *args = r->params ? json_object_get(r->params, "arguments") : NULL;
    json_t *result = NULL;
    int rc;

    if (!str_of(name))
        return invalid_params(out, out_len, r, "Invalid params: tools/call needs a string name");
    if (!mt_mcp_tool_known(json_string_value(name)))
        return invalid_params(out, out_len, r, "Unknown tool: %.*s",
                              clip(json_string_value(name), 100), json_string_value(name));
    if (args && json_is_null(args))
        args = NULL;
    if (args && !json_is_object(args))
        return invalid_params(out, out_len, r, "Invalid params: arguments must be an object");
    rc = mt_mcp_tool_call(&result, r->s->mem, json_string_value(name), args);
    if (rc < 0)
        return rc;
    return rpc_result(out, out_len, r, result);
}

/* A request of the stateless revision: everything it needs is in it. */
static int modern_request(char **out, size_t *out_len, const request *r, const json_t *meta)
{
    if (!json_is_object(json_object_get(meta, META_CLIENT_CAPABILITIES)))
        return invalid_params(out, out_len, r, "Invalid params: _meta must carry the object %s",
                              META_CLIENT_CAPABILITIES);
    if (strcmp(r->method, "server/discover") == 0)
        return do_discover(out, out_len, r);
    if (strcmp(r->method, "tools/list") == 0)
        return do_tools_list(out, out_len, r);
    if (strcmp(r->method, "tools/call") == 0)
        return do_tools_call(out, out_len, r);
    if (strcmp(r->method, "ping") == 0 || strcmp(r->method, "initialize") == 0)
        return method_not_found(out, out_len, r, " (not part of protocol revision 2026-07-28)");
    return method_not_found(out, out_len, r, "");
}

/* A request of the handshake era. */
static int legacy_request(char **out, size_t *out_len, const request *r)
{
    int is_tools = strcmp(r->method, "tools/list") == 0 || strcmp(r->method, "tools/call") == 0;

    if (strcmp(r->method, "initialize") == 0)
        return do_initialize(out, out_len, r);
    if (strcmp(r->method, "ping") == 0)
        return rpc_result(out, out_len, r, json_object());
    if (strcmp(r->method, "server/discover") == 0)
        return invalid_params(out, out_len, r,
                              "Invalid params: server/discover is part of protocol revision %s, "
                              "which params._meta must name in %s",
                              MT_MCP_MODERN_VERSION, META_PROTOCOL_VERSION);
    if (!is_tools)
        return method_not_found(out, out_len, r, "");
    if (!r->s->initialized)
        return rpc_error(out, out_len, r->id, RPC_INVALID_REQUEST,
                         "Invalid Request: the server is not initialized; send initialize first "
                         "(or use protocol revision 2026-07-28, which needs no handshake)",
                         NULL);
    if (strcmp(r->method, "tools/list") == 0)
        return do_tools_list(out, out_len, r);
    return do_tools_call(out, out_len, r);
}

static int handle_request(char **out, size_t *out_len, request *r)
{
    const json_t *meta = r->params ? json_object_get(r->params, "_meta") : NULL;
    const json_t *version;
    const char *v;

    if (meta && !json_is_object(meta))
        return invalid_params(out, out_len, r, "Invalid params: _meta must be an object");
    version = meta ? json_object_get(meta, META_PROTOCOL_VERSION) : NULL;

    /* initialize opens the handshake era whatever else it carries. */
    if (!version || strcmp(r->method, "initialize") == 0)
        return legacy_request(out, out_len, r);
    if (!str_of(version))
        return invalid_params(out, out_len, r, "Invalid params: %s must be a string",
                              META_PROTOCOL_VERSION);
    v = json_string_value(version);
    if (strcmp(v, MT_MCP_MODERN_VERSION) == 0) {
        r->modern = 1;
        return modern_request(out, out_len, r, meta);
    }
    if (legacy_version_known(v))
        return legacy_request(out, out_len, r);
    return rpc_error(out, out_len, r->id, RPC_UNSUPPORTED_VERSION, "Unsupported protocol version",
                     json_pack("{s:o, s:s}", "supported", supported_versions(), "requested", v));
}

int mt_mcp_handle(char **out, size_t *out_len, mt_mcp *s, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *msg = NULL;
    const json_t *id, *jsonrpc, *method, *params;
    request r;
    char message[JSON_ERROR_TEXT_LENGTH + 128];
    int rc = MT_OK;

    *out = NULL;
    *out_len = 0;
    if (mt_server_is_blank(line, len))
        return MT_OK;

    /* A duplicated key ({"id":1,"id":2}) has no one meaning: refuse it. */
    if (mt_json_loadb(&msg, line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY,
                      &jerr) == MT_ENOMEM)
        return MT_ENOMEM;
    if (!msg) {
        /* Answered under the request's id when one can be read, so the
         * client is not left waiting for it. */
        json_t *found = mt_json_find_id(line, len);
        snprintf(message, sizeof(message), "Parse error: %s (column %d)", jerr.text, jerr.column);
        rc = rpc_error(out, out_len, found, RPC_PARSE_ERROR, message, NULL);
        json_decref(found);
        goto done;
    }
    if (!json_is_object(msg)) {
        snprintf(message, sizeof(message),
                 "Invalid Request: a message must be a JSON object, got %s",
                 json_is_array(msg) ? "an array (batches are not supported)" : mt_json_kind(msg));
        rc = rpc_error(out, out_len, NULL, RPC_INVALID_REQUEST, message, NULL);
        goto done;
    }

    id = json_object_get(msg, "id");
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        rc = rpc_error(out, out_len, NULL, RPC_INVALID_REQUEST,
                       "Invalid Request: id must be a string or an integer", NULL);
        goto done;
    }
    jsonrpc = json_object_get(msg, "jsonrpc");
    if (!str_of(jsonrpc) || strcmp(str_of(jsonrpc), "2.0") != 0) {
        rc = rpc_error(out, out_len, id, RPC_INVALID_REQUEST,
                       "Invalid Request: jsonrpc must be \"2.0\"", NULL);
        goto done;
    }
    method = json_object_get(msg, "method");
    if (!method) {
        /* A response: this server sends no requests, so there is nothing
         * waiting for it. */
        if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
            goto done;
        rc = rpc_error(out, out_len, id, RPC_INVALID_REQUEST, "Invalid Request: method is missing",
                       NULL);
        goto done;
    }
    if (!str_of(method)) {
        rc = rpc_error(out, out_len, id, RPC_INVALID_REQUEST,
                       "Invalid Request: method must be a string", NULL);
        goto done;
    }
    /* A notification gets no answer, whatever it says: initialized,
     * cancelled and the rest change nothing here. */
    if (!id)
        goto done;
    params = json_object_get(msg, "params");
    if (params && !json_is_object(params)) {
        rc = rpc_error(out, out_len, id, RPC_INVALID_PARAMS,
                       "Invalid params: params must be an object", NULL);
        goto done;
    }

    r.s = s;
    r.id = id;
    r.method = json_string_value(method);
    r.params = params;
    r.modern = 0;
    rc = handle_request(out, out_len, &r);
done:
    json_decref(msg);
    return rc;
}

int mt_mcp_oversize(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit)
{
    char message[160];
    json_t *id = mt_json_find_id(head, head_len);
    int rc;

    *out = NULL;
    *out_len = 0;
    snprintf(message, sizeof(message),
             "Invalid Request: the message is longer than the %zu-byte limit (--max-line)", limit);
    rc = rpc_error(out, out_len, id, RPC_INVALID_REQUEST, message, NULL);
    json_decref(id);
    return rc;
}

int mt_mcp_handler_fn(char **out, size_t *out_len, void *mcp, const char *line, size_t len)
{
    return mt_mcp_handle(out, out_len, mcp, line, len);
}

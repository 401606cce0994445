/*
 * The two long-running front ends: `memtool serve` (JSON lines of tool
 * inputs in, tool_result blocks out) and `memtool mcp` (a Model Context
 * Protocol server over newline-delimited JSON-RPC 2.0).
 *
 * Everything here is a pure function of one input line and, for MCP, a
 * small per-connection state: a line goes in, at most one line comes out.
 * That keeps the protocol logic testable and fuzzable without processes;
 * mt_server_run() is the only part that touches file descriptors.
 */
#ifndef MT_SERVER_H
#define MT_SERVER_H

#include <stddef.h>

#include <memtool.h>

#include "util/buf.h"

/* The longest input line accepted by default. A longer line is answered
 * with an error and skipped, so one bad client line cannot exhaust memory. */
#define MT_SERVER_MAX_LINE ((size_t)64 << 20)

/* One serve connection: the handle, and a result's text kept from one line
 * to the next so that the usual answer allocates nothing. */
typedef struct {
    mt_memory *mem; /* not owned */
    mt_buf text;
} mt_serve;

void mt_serve_init(mt_serve *s, mt_memory *mem);
void mt_serve_dispose(mt_serve *s);

/*
 * serve: answer one line (without its newline) by appending its compact
 * JSON tool_result block (no newline) to out; nothing for a blank line.
 * Returns 0, or MT_ENOMEM with out as it was.
 */
int mt_serve_append(mt_buf *out, mt_serve *s, const char *line, size_t len);

/*
 * serve: the same as a buffer of its own. On success *out is a
 * malloc'd compact JSON tool_result block (no newline) of *out_len bytes,
 * or NULL when the line is blank and nothing is to be sent. Returns 0, or
 * MT_ENOMEM with *out NULL.
 */
int mt_serve_handle(char **out, size_t *out_len, mt_memory *mem, const char *line, size_t len);

/* serve: the answer to a line longer than `limit` bytes. */
int mt_serve_oversize(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit);

/* The stateless MCP revision, and the newest of the handshake era (which
 * also takes 2024-11-05, 2025-03-26 and 2025-06-18). */
#define MT_MCP_MODERN_VERSION "2026-07-28"
#define MT_MCP_LATEST_LEGACY  "2025-11-25"

/* One MCP connection. Only the handshake era has state; requests of the
 * stateless revision carry everything they need. */
typedef struct {
    mt_memory *mem;   /* not owned */
    int initialized;  /* an initialize request was answered */
    char version[16]; /* the handshake-era revision agreed on */
    int name_actor;   /* record changes as "mcp:<client name>" once initialize gives it */
} mt_mcp;

void mt_mcp_init(mt_mcp *s, mt_memory *mem);

/*
 * mcp: handle one JSON-RPC message (a line without its newline). On success
 * *out is a malloc'd compact JSON-RPC response (no newline), or NULL for a
 * notification, a stray response or a blank line. Returns 0, or MT_ENOMEM
 * with *out NULL.
 */
int mt_mcp_handle(char **out, size_t *out_len, mt_mcp *s, const char *line, size_t len);

/* mcp: the answer to a line longer than `limit` bytes. */
int mt_mcp_oversize(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit);

/* What mt_server_run() calls: one of the two front ends bound to its state. */
typedef struct {
    int (*handle)(char **out, size_t *out_len, void *ctx, const char *line, size_t len);
    /* Given the line's first bytes (at least the limit's worth), to find its id. */
    int (*oversize)(char **out, size_t *out_len, const char *head, size_t head_len, size_t limit);
    void *ctx;
    /* Sent when a handler runs out of memory, so the peer still gets one line. */
    const char *fallback;
    /* Optional (NULL: none): work done only between lines (expiry), called
     * before every wait for input and when its wait runs out; returns the
     * milliseconds until it wants to be called again (< 0: only before the
     * next wait). Never called while a line is being answered. */
    long (*between)(void *ctx);
    void *between_ctx;
    /* Optional (NULL: handle is used for the line): the answer appended to out, which
     * holds the answers not yet written; on MT_ENOMEM out is as it was. */
    int (*append)(mt_buf *out, void *ctx, const char *line, size_t len);
} mt_server_handler;

/* ctx: an mt_serve. */
int mt_serve_handler_fn(char **out, size_t *out_len, void *s, const char *line, size_t len);
int mt_serve_append_fn(mt_buf *out, void *s, const char *line, size_t len);
int mt_mcp_handler_fn(char **out, size_t *out_len, void *mcp, const char *line, size_t len);

#define MT_SERVE_FALLBACK                                                                          \
    "{\"type\":\"tool_result\",\"content\":\"Error: out of memory\",\"is_error\":true}"
#define MT_MCP_FALLBACK                                                                            \
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"Internal error: "   \
    "out of memory\"}}"

/*
 * Read lines from in_fd until end of input, answering each on out_fd with
 * one line. Answers are written in order, together when their lines came in
 * together, and always before the loop waits for more input. Lines longer
 * than max_line bytes (0: MT_SERVER_MAX_LINE) are answered by the handler's
 * oversize function and skipped without being held in memory. Returns 0 at
 * end of input, or a negative code when reading or writing failed (the
 * reason is in mt_error_last(); MT_EIO with EPIPE when the reader went away).
 */
int mt_server_run(int in_fd, int out_fd, const mt_server_handler *h, size_t max_line);

/* Whether a line holds only spaces, tabs and a CR: such lines get no answer. */
int mt_server_is_blank(const char *line, size_t len);

/* Parse a line limit for --max-line: digits with an optional K, M or G
 * (powers of 1024), at least 1. Returns 0, or MT_EINVAL. */
int mt_server_parse_size(size_t *out, const char *s);

#endif

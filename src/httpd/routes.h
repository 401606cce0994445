/* The memory-store API's 14 endpoints, as plain functions of a request. */
#ifndef MT_ROUTES_H
#define MT_ROUTES_H

#include <jansson.h>
#include <stddef.h>

#include "httpd/keys.h"
#include "httpd/registry.h"

typedef struct {
    const char *method;
    const char *path; /* the URL's path, decoded */
    /* A query parameter's value, or NULL when absent. */
    const char *(*query)(void *ctx, const char *name);
    void *query_ctx;
    const char *body;
    size_t body_len;
    const mt_key_info *key; /* who asks (authenticated) */
    const char *request_id;
    const char *actor; /* what changes are recorded as; NULL: "api:" and key->id */
} mt_http_request;

typedef struct {
    int status;
    json_t *body;     /* the JSON answer (owned) */
    int no_retry;     /* send x-should-retry: false */
    const char *name; /* the route, for logs and metrics */
} mt_http_reply;

/* Answer one authenticated API request. */
void mt_routes_dispatch(mt_http_reply *out, mt_registry *reg, const mt_http_request *req);

/* The API's error answer: {"type":"error","error":{"type":...,"message":...},"request_id":...}. */
void mt_routes_error(mt_http_reply *out, int status, const char *type, const char *request_id,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif

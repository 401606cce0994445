/* The remote store's HTTP: one keep-alive connection, bounded waits, retries
 * where a repeat is harmless (remote_http.c). */
#ifndef MT_REMOTE_HTTP_H
#define MT_REMOTE_HTTP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "remote/remote.h"
#include "util/buf.h"
#include "util/curl_load.h"

/* The longest answer read: a full page (20 memories of 100 kB, each byte
 * escaped as \uXXXX at worst) and room. Anything longer is refused. */
#define MT_REMOTE_MAX_BODY (16u * 1024 * 1024)

/* One keep-alive connection to the API, one request at a time. */
typedef struct {
    const mt_curl_fns *curl;
    CURL *h;
    char *base;    /* scheme://host[:port]/v1/memory_stores/memstore_X, no '/' at the end */
    char *shown;   /* the same, as messages print it */
    char *ca_file; /* MEMTOOL_CA_FILE: the CA certificates to trust instead of the system's */
    struct curl_slist *headers;
    unsigned long requests; /* sent, retries included (MEMTOOL_REMOTE_COUNT prints it) */
    unsigned seed;
    pthread_mutex_t lock;
} mt_remote_http;

typedef struct {
    long status;
    mt_buf body;
    long retry_after_ms; /* -1: none given */
    /* retry-after-ms and retry-after as sent (cut), read into retry_after_ms */
    char retry_after_ms_sent[32], retry_after_sent[40];
    int should_retry; /* x-should-retry: -1 none, 0 false, 1 true */
    char request_id[64];
    int too_big;
    unsigned attempts; /* sent this many times (a retry after a connection failure: > 1) */
} mt_remote_resp;

/* What a request may do again on its own. */
typedef enum {
    MT_REMOTE_SAFE = 0, /* a read, or a write whose precondition makes a repeat harmless */
    MT_REMOTE_ONCE = 1  /* a write without one (a create): never repeated once sent */
} mt_remote_repeat;

int mt_remote_http_init(mt_remote_http *c, const char *base, const char *key);
void mt_remote_http_dispose(mt_remote_http *c);

/*
 * Send method target (the part after the store's base: "/memories?..."),
 * with body (JSON, may be NULL), retrying a bounded number of times on a
 * connection failure, 408, 429 and 5xx (honouring retry-after), as `repeat`
 * allows. 0 with out filled (any status: the caller reads it), or MT_EIO
 * with a message: the server could not be reached or kept failing. `what`
 * names the operation for messages ("create /notes/a.md").
 */
int mt_remote_send(mt_remote_http *c, mt_remote_resp *out, const char *method, const char *target,
                   const char *body, mt_remote_repeat repeat, const char *what);
void mt_remote_resp_dispose(mt_remote_resp *r);

/* The response as a JSON object (NULL with an MT_EIO message: not one). */
json_t *mt_remote_json(const mt_remote_resp *r, const char *what);

/* GET target (safe to send again) and its answer as a JSON object in *out
 * (json_decref it). A 404 is MT_ENOTFOUND with no error set when on_404 is
 * NULL (the caller words it), else an error in the server's words named
 * on_404; any other status but 200 is one named what. */
int mt_remote_get_json(mt_remote_http *c, json_t **out, const char *target, const char *what,
                       const char *on_404);

/* An error answer as an mt_error: the API's error type and message (cut,
 * control characters dropped), its status and request id. Returns code. */
int mt_remote_fail(const mt_remote_resp *r, int code, const char *what);
/* The same with the answer's body read already (v: mt_remote_error_body's,
 * may be NULL). */
int mt_remote_fail_with(const mt_remote_resp *r, const json_t *v, int code, const char *what);
/* An error answer's body as JSON (json_decref it), or NULL. */
json_t *mt_remote_error_body(const mt_remote_resp *r);

/* Append s percent-encoded for a query value or a path segment. */
int mt_remote_escape(mt_buf *out, const char *s);

#endif

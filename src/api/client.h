/*
 * A client for the Messages API (POST /v1/messages), over libcurl.
 *
 * It sends a request as given, streamed (SSE) when the request says
 * "stream": true, and retries the way the official SDKs do: 408, 409, 429,
 * 5xx and connection failures, MT_API_MAX_RETRIES times by default, waiting
 * what retry-after-ms / retry-after ask (up to 60 s) or else 0.5 s doubling up
 * to 8 s, less up to a quarter at random. An `x-should-retry` header overrides
 * the status. Once a 2xx response has begun nothing is retried: its events may
 * already be on the user's screen.
 */
#ifndef MT_API_CLIENT_H
#define MT_API_CLIENT_H

#include <signal.h>

#include <jansson.h>

#define MT_API_DEFAULT_BASE_URL "https://api.anthropic.com"
/* The API version sent by default, as the official SDKs since 1.0 send it;
 * message threads need it or a later one. */
#define MT_API_VERSION         "2026-10-21"
#define MT_API_THREADS_VERSION "2026-10-21"
#define MT_API_BETA_CONTEXT    "context-management-2025-06-27"
#define MT_API_BETA_THREADS    "message-threads-2026-08-12"
#define MT_API_BETA_COMPACT    "compact-2026-01-12"
#define MT_API_MAX_RETRIES     2
/* The longest wait a server may ask for; a longer one falls back to backoff. */
#define MT_API_MAX_RETRY_AFTER_MS 60000L

/* mt_api_send was cancelled through hooks->cancel (not an mt_error_code: it
 * never leaves the front ends). */
#define MT_API_ECANCELED (-100)

typedef struct mt_api mt_api;

/* How the key goes to the server. */
typedef enum {
    MT_API_AUTH_BEARER = 0, /* Authorization: Bearer KEY, as the SDKs send it */
    MT_API_AUTH_X_API_KEY   /* x-api-key: KEY, for proxies that want the old header */
} mt_api_auth;

typedef struct {
    const char *base_url; /* NULL: $ANTHROPIC_BASE_URL, else MT_API_DEFAULT_BASE_URL */
    const char *api_key;  /* NULL: $ANTHROPIC_API_KEY */
    int max_retries;      /* < 0: MT_API_MAX_RETRIES */
    const char *version;  /* anthropic-version; NULL: MT_API_VERSION */
    mt_api_auth auth;
} mt_api_options;

/* Why the last mt_api_send failed, beyond its one line: what a caller needs
 * to recover (a message thread the server lost, say). */
typedef struct {
    long status;           /* the HTTP status of the last response; 0: none */
    char error_code[64];   /* the error's details.error_code, or "" */
    char unsupported[128]; /* details.unsupported, comma-separated, or "" */
    int stream_cut;        /* a reply began and ended before it was whole (streamed or not) */
} mt_api_failure;

/* What the caller wants to hear about during one mt_api_send. All optional. */
typedef struct {
    /* Each stream event, once applied to the message being built; type is
     * its name ("content_block_delta"...). Non-zero stops the request. */
    int (*event)(void *payload, const char *type, const json_t *data);
    /* A failed attempt is about to be retried after delay_ms; `why` is one
     * line (the API's error, or the connection failure). */
    void (*retry)(void *payload, unsigned attempt, long delay_ms, const char *why);
    /* Set to non-zero (from a signal handler, say) to abandon the request,
     * or the wait before a retry, within about a second. */
    volatile sig_atomic_t *cancel;
    void *payload;
} mt_api_hooks;

/* Fails with MT_EINVAL and a message saying what to set when there is no key. */
int mt_api_new(mt_api **out, const mt_api_options *opts);
void mt_api_free(mt_api *api);

/* The URL requests go to, for messages. */
const char *mt_api_url(const mt_api *api);

/*
 * Send one request and return the response message (the accumulated one when
 * streaming). `betas` is the anthropic-beta header's value (comma-separated),
 * or NULL for none. On failure returns MT_ERROR with mt_error_last() holding
 * one line: the API's error type and message, the HTTP status and the request
 * id, or MT_API_ECANCELED, MT_ENOMEM; mt_api_last_failure() says more.
 */
int mt_api_send(json_t **out, mt_api *api, const json_t *request, const char *betas,
                const mt_api_hooks *hooks);

/* Whether version can be sent as anthropic-version: one word, nothing that
 * would split or end the header. */
int mt_api_version_ok(const char *version);

/* What the last mt_api_send's failure was (all zero after a success). */
const mt_api_failure *mt_api_last_failure(const mt_api *api);

/*
 * How long to wait before retry number `retry` (0 for the first), given the
 * response's retry-after-ms and retry-after headers (either may be NULL) and a
 * random number in [0, 1). Exposed for the tests.
 */
long mt_api_retry_delay_ms(unsigned retry, const char *retry_after_ms, const char *retry_after,
                           double random01);

/* Whether a response with this status and x-should-retry header (may be NULL)
 * is worth another attempt. */
int mt_api_should_retry(long status, const char *x_should_retry);

#endif

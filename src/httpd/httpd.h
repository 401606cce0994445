/* memtool server: Anthropic's memory-store API over HTTP, on memtool's stores. */
#ifndef MT_HTTPD_H
#define MT_HTTPD_H

#include <stddef.h>

#include <memtool.h>

#include "httpd/keys.h"

#define MT_HTTPD_DEFAULT_LISTEN "127.0.0.1:8177"

/*
 * A front end served beside the API (memtool web's page, src/web): it sees
 * every request before the key check, and either answers it itself (its
 * page, its assets, its sessions), or vouches for it (the request is the
 * API's, from the caller *key names), or leaves it to the key check. httpd
 * knows nothing of the page.
 */
typedef enum {
    MT_HTTPD_VALUE_HEADER = 1,
    MT_HTTPD_VALUE_COOKIE,
    MT_HTTPD_VALUE_QUERY
} mt_httpd_value_kind;

typedef struct {
    const char *method;
    const char *path; /* decoded */
    const char *body;
    size_t body_len;
    /* A header, cookie or query value of the request, or NULL. */
    const char *(*value)(void *conn, mt_httpd_value_kind kind, const char *name);
    void *conn;
    unsigned port; /* the port the server listens on */
    int tls;       /* 1: HTTPS */
} mt_httpd_in;

typedef struct {
    int status;
    const char *type; /* Content-Type */
    const char *data; /* the body: static, or owned (then freed) */
    size_t len;
    char *owned;
    const char *route;    /* for the access log */
    char set_cookie[256]; /* a Set-Cookie header, when not empty */
    const char *cache;    /* Cache-Control (NULL: no-store) */
} mt_httpd_page;

typedef enum {
    MT_HTTPD_PASS = 0, /* not the hook's: the key check (or /healthz) decides */
    MT_HTTPD_ANSWER,   /* *page is the answer */
    MT_HTTPD_VOUCH     /* an API request from *caller (the hook checked who asks) */
} mt_httpd_verdict;

/* Who a vouched request is from. */
typedef struct {
    mt_key_info key; /* its tenant and access; key.id is logged */
    /* The actor its changes are recorded as: the hook's to name, since it
     * knows who asks; "" for the API's own ("api:" and the key's id). */
    char actor[48];
} mt_httpd_caller;

typedef struct {
    void *ctx;
    /* Called first for every request (but one over the body limit), even
     * /healthz: a hook that checks Host may refuse it. */
    mt_httpd_verdict (*request)(void *ctx, const mt_httpd_in *in, mt_httpd_page *page,
                                mt_httpd_caller *caller);
    /* Once listening, instead of the base URL on stdout (NULL: the URL). */
    void (*listening)(void *ctx, const char *base_url, unsigned port);
    /* Headers added to every answer: name, value, ..., NULL. */
    const char *const *headers;
} mt_httpd_hook;

typedef struct {
    const char *listen;      /* ADDR:PORT ("[::1]:PORT"); port 0 picks a free one */
    const char *store_url;   /* the store every memory store is a tenant of */
    mt_crypt_key *key;       /* encryption at rest: every handle opened with it (NULL: none) */
    int64_t expire_after_ms; /* the agents' --expire-after, for the stats' expiry (0: none) */
    mt_options opts;         /* limits, durability, secrets: as every command's */
    const char *keys_path;   /* the keys file (memtool server keys) */
    const char *tls_cert;    /* PEM files: HTTPS; both or neither */
    const char *tls_key;
    int insecure_http;         /* plain HTTP on an address other than loopback, told so */
    size_t max_body;           /* bytes of a request body; 0: 1 MiB */
    unsigned max_conns;        /* connections at once; 0: 256 */
    unsigned timeout_s;        /* idle seconds before a connection is closed; 0: 30 */
    unsigned threads;          /* 0: 4 per core, at least 8 */
    const mt_httpd_hook *hook; /* a front end beside the API, or NULL */
    int no_keys;               /* 1: no keys file; only the hook lets requests in */
    /* 1: each tenant's own memories (the store as the memory tool sees it)
     * are served too, as memory store MT_REGISTRY_PLAIN_ID (memtool web). */
    int plain_store;
} mt_httpd_config;

/* Serve until SIGTERM or SIGINT (requests in flight finish first). Prints
 * one line on stdout once listening: the base URL. Logs go to stderr, one
 * JSON object a line. 0, or an error (mt_error_last says which). */
int mt_httpd_run(const mt_httpd_config *cfg);

#endif

/*
 * memtool server's HTTP side: libmicrohttpd reads requests (bounded: body,
 * headers, connections, idle time), this file checks the key, hands the
 * request to routes.c, answers, and logs one JSON line per request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <memtool/store.h>

#include "httpd/httpd.h"
#include "httpd/keys.h"
#include "httpd/registry.h"
#include "httpd/routes.h"
#include "util/buf.h"

#define DEFAULT_MAX_BODY (1024 * 1024)
/* What a connection's headers may take (libmicrohttpd's per-connection pool). */
#define HEADER_POOL (64 * 1024)
/* The longest a shutdown waits for requests in flight. */
#define DRAIN_MS 10000

/* Statuses counted for /metrics. */
static const int counted[] = {200, 400, 401, 403, 404, 405, 409, 413, 500, 503};
#define NCOUNTED (sizeof(counted) / sizeof(counted[0]))

typedef struct {
    mt_registry *reg;
    mt_keys *keys;
    size_t max_body;
    atomic_uint_fast64_t by_status[NCOUNTED + 1]; /* the last: any other */
    atomic_uint_fast64_t micros_total;
    atomic_uint_fast64_t in_flight;
    const mt_httpd_hook *hook;
    unsigned port;
    int tls;
} server;

typedef struct {
    struct timespec start;
    char request_id[32];
    mt_buf body;
    int too_big;
    int status;
    const char *route;
    char key_id[48]; /* for the log: the key's id, or a vouched caller's actor */
    char method[16];
    char *path;
    size_t sent;
} request;

static int64_t elapsed_us(const struct timespec *start)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(now.tv_sec - start->tv_sec) * 1000000 + (now.tv_nsec - start->tv_nsec) / 1000;
}

static const char *query_value(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

/* The hook's headers, on every answer. */
static void add_hook_headers(const server *s, struct MHD_Response *resp)
{
    const char *const *h;

    if (!s->hook || !s->hook->headers)
        return;
    for (h = s->hook->headers; h[0] && h[1]; h += 2)
        MHD_add_response_header(resp, h[0], h[1]);
}

static enum MHD_Result send_reply(const server *s, struct MHD_Connection *conn, request *rq,
                                  mt_http_reply *reply)
{
    char *text = reply->body ? json_dumps(reply->body, JSON_COMPACT) : NULL;
    struct MHD_Response *resp;
    enum MHD_Result ret;
    size_t len;

    if (!text)
        text = strdup("{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"out of "
                      "memory\"}}");
    len = text ? strlen(text) : 0;
    if (text) {
        char *grown = realloc(text, len + 2);
        if (!grown) {
            free(text);
            json_decref(reply->body);
            reply->body = NULL;
            return MHD_NO;
        }
        text = grown;
        text[len++] = '\n';
        text[len] = '\0';
    }
    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    /* An answer holds memories: no cache (a browser's, a proxy's) keeps it. */
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "request-id", rq->request_id);
    add_hook_headers(s, resp);
    if (reply->no_retry)
        MHD_add_response_header(resp, "x-should-retry", "false");
    if (reply->status == 413)
        MHD_add_response_header(resp, "Connection", "close");
    rq->status = reply->status;
    rq->route = reply->name;
    rq->sent = len;
    ret = MHD_queue_response(conn, (unsigned)reply->status, resp);
    MHD_destroy_response(resp);
    json_decref(reply->body);
    reply->body = NULL;
    return ret;
}

static enum MHD_Result send_text(const server *s, struct MHD_Connection *conn, request *rq,
                                 int status, const char *type, char *text, const char *route)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret;

    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "request-id", rq->request_id);
    add_hook_headers(s, resp);
    rq->status = status;
    rq->route = route;
    rq->sent = strlen(text);
    ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/*
 * libmicrohttpd's unescaping, but %00 is left as it is: decoded, it would
 * end the path or value as a C string, so "/assets/app.js%00.md" would be
 * answered as "/assets/app.js", and a route could be reached by a path other
 * than its own. Left undecoded, it names nothing. Other %XX are decoded, and
 * a % not followed by two hex digits stays, as libmicrohttpd does.
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *val)
{
    char *r = val, *w = val;
    int hi, lo;

    (void)cls;
    (void)conn;
    while (*r) {
        if (r[0] == '%' && (hi = hex_value(r[1])) >= 0 && (lo = hex_value(r[2])) >= 0 &&
            (hi || lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - val);
}

/* The key a request presents: "Authorization: Bearer KEY" (the SDK) or
 * "x-api-key: KEY" (other clients). */
static const char *presented_key(struct MHD_Connection *conn)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "authorization");

    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        return auth + 7;
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-api-key");
}

static const char *hook_value(void *conn, mt_httpd_value_kind kind, const char *name)
{
    enum MHD_ValueKind k = kind == MT_HTTPD_VALUE_HEADER   ? MHD_HEADER_KIND
                           : kind == MT_HTTPD_VALUE_COOKIE ? MHD_COOKIE_KIND
                                                           : MHD_GET_ARGUMENT_KIND;

    return MHD_lookup_connection_value(conn, k, name);
}

/* The hook's own answer (its page, its assets, its refusals). */
static enum MHD_Result send_page(const server *s, struct MHD_Connection *conn, request *rq,
                                 mt_httpd_page *page)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (page->owned)
        resp = MHD_create_response_from_buffer(page->len, page->owned, MHD_RESPMEM_MUST_FREE);
    else
        resp = MHD_create_response_from_buffer(page->len, (void *)(uintptr_t)page->data,
                                               MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(page->owned);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", page->type ? page->type : "text/plain");
    MHD_add_response_header(resp, "Cache-Control", page->cache ? page->cache : "no-store");
    MHD_add_response_header(resp, "request-id", rq->request_id);
    if (page->set_cookie[0])
        MHD_add_response_header(resp, "Set-Cookie", page->set_cookie);
    add_hook_headers(s, resp);
    rq->status = page->status;
    rq->route = page->route;
    rq->sent = page->len;
    ret = MHD_queue_response(conn, (unsigned)page->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static char *metrics_text(server *s)
{
    mt_buf b = {0};
    size_t i;

    mt_buf_puts(&b, "# HELP memtool_http_requests_total Requests answered, by status.\n"
                    "# TYPE memtool_http_requests_total counter\n");
    for (i = 0; i < NCOUNTED; i++)
        mt_buf_printf(&b, "memtool_http_requests_total{code=\"%d\"} %llu\n", counted[i],
                      (unsigned long long)atomic_load(&s->by_status[i]));
    mt_buf_printf(&b, "memtool_http_requests_total{code=\"other\"} %llu\n",
                  (unsigned long long)atomic_load(&s->by_status[NCOUNTED]));
    mt_buf_printf(&b,
                  "# HELP memtool_http_request_seconds_total Time spent answering requests.\n"
                  "# TYPE memtool_http_request_seconds_total counter\n"
                  "memtool_http_request_seconds_total %.6f\n"
                  "# HELP memtool_http_requests_in_flight Requests being answered now.\n"
                  "# TYPE memtool_http_requests_in_flight gauge\n"
                  "memtool_http_requests_in_flight %llu\n",
                  (double)atomic_load(&s->micros_total) / 1e6,
                  (unsigned long long)atomic_load(&s->in_flight));
    return mt_buf_detach(&b, NULL);
}

static enum MHD_Result answer(server *s, struct MHD_Connection *conn, request *rq, const char *url,
                              const char *method)
{
    mt_http_reply reply = {0};
    mt_http_request req = {0};
    mt_httpd_caller caller;
    mt_key_info *key = &caller.key;
    const char *presented;
    enum MHD_Result ret;
    int vouched = 0;

    memset(&caller, 0, sizeof(caller));
    if (rq->too_big) {
        mt_routes_error(&reply, 413, "invalid_request_error", rq->request_id,
                        "the request body is over the server's limit of %zu bytes", s->max_body);
        reply.name = "too_big";
        return send_reply(s, conn, rq, &reply);
    }
    /* The hook first: a front end that answers only its own host names
     * refuses even /healthz for another. */
    if (s->hook) {
        mt_httpd_in in = {method,     url,  rq->body.ptr, rq->body.len,
                          hook_value, conn, s->port,      s->tls};
        mt_httpd_page page;

        memset(&page, 0, sizeof(page));
        switch (s->hook->request(s->hook->ctx, &in, &page, &caller)) {
        case MT_HTTPD_ANSWER:
            return send_page(s, conn, rq, &page);
        case MT_HTTPD_VOUCH:
            vouched = 1;
            break;
        case MT_HTTPD_PASS:
            break;
        }
    }
    if (!vouched && strcmp(url, "/healthz") == 0) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
            mt_routes_error(&reply, 405, "invalid_request_error", rq->request_id,
                            "method %s is not allowed here (allowed: GET)", method);
            return send_reply(s, conn, rq, &reply);
        }
        return send_text(s, conn, rq, 200, "text/plain", strdup("ok\n"), "healthz");
    }
    presented = vouched ? NULL : presented_key(conn);
    if (!vouched &&
        (!presented || !s->keys || mt_keys_check(key, s->keys, presented, strlen(presented)) < 0)) {
        mt_routes_error(&reply, 401, "authentication_error", rq->request_id,
                        presented ? "invalid API key: check the key, or make one with memtool "
                                    "server keys add TENANT"
                                  : "no API key: send it as Authorization: Bearer KEY or "
                                    "x-api-key: KEY");
        reply.name = "unauthorized";
        return send_reply(s, conn, rq, &reply);
    }
    snprintf(rq->key_id, sizeof(rq->key_id), "%s", caller.actor[0] ? caller.actor : key->id);
    if (!vouched && strcmp(url, "/metrics") == 0) {
        if (!key->admin) {
            mt_routes_error(&reply, 403, "permission_error", rq->request_id,
                            "/metrics needs an admin key (memtool server keys add --admin)");
            return send_reply(s, conn, rq, &reply);
        }
        return send_text(s, conn, rq, 200, "text/plain; version=0.0.4", metrics_text(s), "metrics");
    }
    req.method = method;
    req.path = url;
    req.query = query_value;
    req.query_ctx = conn;
    req.body = rq->body.ptr;
    req.body_len = rq->body.len;
    req.key = key;
    req.actor = vouched ? caller.actor : NULL;
    req.request_id = rq->request_id;
    mt_routes_dispatch(&reply, s->reg, &req);
    ret = send_reply(s, conn, rq, &reply);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    server *s = cls;
    request *rq = *con_cls;
    unsigned char raw[12];
    const char *cl;
    int i;

    (void)version;
    if (!rq) {
        if (!(rq = calloc(1, sizeof(*rq))))
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
            memset(raw, 0, sizeof(raw));
        memcpy(rq->request_id, "req_", 4);
        for (i = 0; i < 12; i++)
            snprintf(rq->request_id + 4 + 2 * i, 3, "%02x", raw[i]);
        snprintf(rq->method, sizeof(rq->method), "%s", method);
        rq->path = strdup(url);
        atomic_fetch_add(&s->in_flight, 1);
        *con_cls = rq;
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "content-length");
        if (cl && strtoull(cl, NULL, 10) > s->max_body)
            rq->too_big = 1;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!rq->too_big && rq->body.len + *upload_data_size > s->max_body) {
            rq->too_big = 1;
            mt_buf_dispose(&rq->body);
        }
        if (!rq->too_big && mt_buf_put(&rq->body, upload_data, *upload_data_size) < 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    return answer(s, conn, rq, url, method);
}

/* One access log line per request: never a key, a query (paths may be in
 * it) or content. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    server *s = cls;
    request *rq = *con_cls;
    int64_t us;
    size_t i;
    char line[768], t[32];
    struct timespec now;
    json_t *path;
    char *path_text;

    (void)conn;
    if (!rq)
        return;
    us = elapsed_us(&rq->start);
    for (i = 0; i < NCOUNTED && counted[i] != rq->status; i++)
        ;
    atomic_fetch_add(&s->by_status[i], 1);
    atomic_fetch_add(&s->micros_total, (uint_fast64_t)us);
    atomic_fetch_sub(&s->in_flight, 1);
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(t, sizeof(t), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
    path = json_string(rq->path ? rq->path : "");
    path_text = path ? json_dumps(path, JSON_ENCODE_ANY) : NULL;
    snprintf(
        line, sizeof(line),
        "{\"time\":%s,\"request_id\":\"%s\",\"method\":\"%s\",\"path\":%.400s,\"route\":\"%s\","
        "\"status\":%d,\"ms\":%.3f,\"bytes\":%zu,\"key\":\"%s\"%s}\n",
        t, rq->request_id, rq->method, path_text ? path_text : "\"\"", rq->route ? rq->route : "",
        rq->status, (double)us / 1000.0, rq->sent, rq->key_id,
        toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : ",\"aborted\":true");
    fputs(line, stderr);
    free(path_text);
    json_decref(path);
    free(rq->path);
    mt_buf_dispose(&rq->body);
    free(rq);
    *con_cls = NULL;
}

/* ADDR:PORT or [ADDR]:PORT, as a socket address; *loopback says whether
 * only this machine can reach it. */
static int parse_listen(struct sockaddr_storage *sa, int *loopback, const char *listen)
{
    char host[64];
    const char *colon = strrchr(listen, ':'), *h = listen;
    size_t hlen;
    char *end;
    long port;

    memset(sa, 0, sizeof(*sa));
    if (!colon)
        goto bad;
    port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        goto bad;
    hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host))
        goto bad;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    {
        struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
        if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons((uint16_t)port);
            *loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
            return 0;
        }
        if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons((uint16_t)port);
            *loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
            return 0;
        }
    }
bad:
    return mt_error_set(MT_EINVAL,
                        "--listen '%s' is not ADDR:PORT (an IP address and a port: "
                        "127.0.0.1:8177, [::1]:8177, 0.0.0.0:8443)",
                        listen);
}

static int read_pem(char **out, const char *path)
{
    FILE *f = fopen(path, "re");
    mt_buf b = {0};
    char chunk[4096];
    size_t n;

    *out = NULL;
    if (!f)
        return mt_error_set(MT_EINVAL, "cannot read %s: %s", path, strerror(errno));
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (mt_buf_put(&b, chunk, n) < 0 || b.len > 1024 * 1024) {
            fclose(f);
            mt_buf_dispose(&b);
            return mt_error_set(MT_EINVAL, "%s is not a PEM file (too big)", path);
        }
    fclose(f);
    *out = mt_buf_detach(&b, NULL);
    return *out ? 0 : mt_error_set(MT_EINVAL, "%s is empty", path);
}

/*
 * What libmicrohttpd says. A request it refuses before handing it over
 * (headers over the pool: 431; a request line over it: 414; a malformed
 * request) never reaches on_request or on_completed, and its answer is the
 * library's own, which cannot be changed: only its log message knows, so
 * that message becomes the request's access-log line, counted in /metrics
 * like any answer. Anything else it says is logged as one JSON line too,
 * cut short and escaped (it may quote what a client sent).
 */
static void on_library_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void on_library_log(void *cls, const char *fmt, va_list ap)
{
    server *s = cls;
    char msg[512], t[32], *text = NULL;
    const char *code;
    struct timespec now;
    json_t *j;
    int status = 0;
    size_t i;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(t, sizeof(t), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
    if ((code = strstr(msg, "HTTP response code is "))) {
        char *end;
        long v = strtol(code + 22, &end, 10);
        if (end != code + 22 && v >= 400 && v <= 599)
            status = (int)v;
    }
    if (status) {
        for (i = 0; i < NCOUNTED && counted[i] != status; i++)
            ;
        atomic_fetch_add(&s->by_status[i], 1);
        fprintf(stderr,
                "{\"time\":%s,\"request_id\":null,\"method\":null,\"path\":null,\"route\":null,"
                "\"status\":%d,\"ms\":null,\"bytes\":null,\"key\":null,\"refused_by\":"
                "\"libmicrohttpd\",\"why\":\"%s\"}\n",
                t, status,
                status == 431   ? "the request's headers are over the server's limit"
                : status == 414 ? "the request line is over the server's limit"
                                : "the request is malformed");
        return;
    }
    msg[160] = '\0';
    if ((j = json_string(msg)))
        text = json_dumps(j, JSON_ENCODE_ANY);
    fprintf(stderr, "{\"time\":%s,\"http_library\":%s}\n", t, text ? text : "\"?\"");
    free(text);
    json_decref(j);
}

int mt_httpd_run(const mt_httpd_config *cfg)
{
    struct sockaddr_storage sa;
    struct MHD_Daemon *d = NULL;
    const union MHD_DaemonInfo *info;
    server s;
    sigset_t set;
    char *cert = NULL, *key = NULL, host[64] = "";
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    unsigned threads = cfg->threads;
    int loopback = 0, rc, sig, waited;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    memset(&s, 0, sizeof(s));
    s.max_body = cfg->max_body ? cfg->max_body : DEFAULT_MAX_BODY;
    if ((rc = parse_listen(&sa, &loopback, cfg->listen ? cfg->listen : MT_HTTPD_DEFAULT_LISTEN)) <
        0)
        return rc;
    if (!!cfg->tls_cert != !!cfg->tls_key)
        return mt_error_set(MT_EINVAL, "give both --tls-cert and --tls-key, or neither");
    if (!loopback && !cfg->tls_cert && !cfg->insecure_http)
        return mt_error_set(MT_EINVAL,
                            "--listen %s can be reached from other machines: give --tls-cert and "
                            "--tls-key (HTTPS), or --insecure-http to send keys and memories in "
                            "the clear",
                            cfg->listen);
    if (cfg->tls_cert &&
        ((rc = read_pem(&cert, cfg->tls_cert)) < 0 || (rc = read_pem(&key, cfg->tls_key)) < 0))
        goto done;
    s.hook = cfg->hook;
    if ((!cfg->no_keys && (rc = mt_keys_open(&s.keys, cfg->keys_path)) < 0) ||
        (rc = mt_registry_open(&s.reg, cfg->store_url, &cfg->opts, cfg->key, cfg->plain_store)) < 0)
        goto done;
    mt_registry_set_expiry(s.reg, cfg->expire_after_ms);
    if (!threads)
        threads = cores > 2 ? (unsigned)cores * 4 : 8;
    if (cert)
        flags |= MHD_USE_TLS;
    s.tls = cert != NULL;
    /* The threads libmicrohttpd starts inherit this mask: the signals that
     * stop the server come to sigwait below, never to a request's thread. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &s, MHD_OPTION_EXTERNAL_LOGGER,
                         on_library_log, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
                         cfg->max_conns ? cfg->max_conns : 256u, MHD_OPTION_CONNECTION_TIMEOUT,
                         cfg->timeout_s ? cfg->timeout_s : 30u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                         (size_t)HEADER_POOL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
                         MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                         cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert,
                         MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
    if (!d) {
        rc = mt_error_set(MT_EIO, "cannot listen on %s: %s",
                          cfg->listen ? cfg->listen : MT_HTTPD_DEFAULT_LISTEN,
                          errno ? strerror(errno) : "the address is in use or not this machine's");
        goto done;
    }
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (sa.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof(host));
    } else {
        char v6[INET6_ADDRSTRLEN] = "";
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, v6, sizeof(v6));
        snprintf(host, sizeof(host), "[%s]", v6);
    }
    if (!loopback && !cert)
        fprintf(stderr,
                "memtool server: warning: plain HTTP on %s: keys and memories cross the "
                "network in the clear (--insecure-http)\n",
                host);
    s.port = info ? info->port : 0;
    {
        char base[128];
        snprintf(base, sizeof(base), "%s://%s:%u", cert ? "https" : "http", host, s.port);
        if (s.hook && s.hook->listening)
            s.hook->listening(s.hook->ctx, base, s.port);
        else
            printf("%s\n", base);
        fflush(stdout);
    }
    for (;;) {
        if (sigwait(&set, &sig) == 0 && (sig == SIGTERM || sig == SIGINT))
            break;
    }
    /* Stop taking connections; let the requests in flight finish. */
    MHD_quiesce_daemon(d);
    for (waited = 0; waited < DRAIN_MS; waited += 20) {
        info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!info || info->num_connections == 0 || atomic_load(&s.in_flight) == 0)
            break;
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    rc = 0;
done:
    if (d)
        MHD_stop_daemon(d);
    mt_registry_free(s.reg);
    mt_keys_free(s.keys);
    free(cert);
    free(key);
    return rc;
}

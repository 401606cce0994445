/*
 * The remote store's HTTP: one keep-alive libcurl handle per store, bounded
 * waits on every request, retries where a repeat is harmless. Every byte
 * from the network is taken as hostile: sizes are capped, headers parsed
 * strictly, and the key never appears in a message.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote/remote_http.h"
#include "util/json.h"
#include "util/rfc3339.h"

/* Attempts in all for a request that may be repeated, and the longest wait
 * between two (a retry-after above it is not waited for: the error says so). */
#define ATTEMPTS        5
#define MAX_WAIT_MS     20000L
#define CONNECT_TIMEOUT 10L /* s */
#define REQUEST_TIMEOUT 60L /* s: a whole request, answer included */
#define API_VERSION     "2026-10-21"
#define API_BETA        "agent-memory-2026-07-22"

/* "name: value", or "name:" (a header libcurl would add, left out). */
static int add_header(mt_remote_http *c, const char *name, const char *value)
{
    mt_buf line = MT_BUF_INIT;
    struct curl_slist *next;

    if (mt_buf_printf(&line, "%s:%s%s", name, *value ? " " : "", value) < 0)
        return MT_ENOMEM;
    next = c->curl->slist_append(c->headers, line.ptr);
    /* The key's copy goes; libcurl keeps its own. */
    if (line.ptr)
        memset(line.ptr, 0, line.len);
    mt_buf_dispose(&line);
    if (!next)
        return mt_error_set(MT_ENOMEM, "out of memory");
    c->headers = next;
    return 0;
}

int mt_remote_http_init(mt_remote_http *c, const char *base, const char *key)
{
    mt_buf bearer = MT_BUF_INIT;
    int rc;

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)c;
    if ((rc = mt_curl_load(&c->curl)) < 0)
        return rc;
    if (!(c->base = strdup(base)) || !(c->shown = strdup(base)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    if (getenv("MEMTOOL_CA_FILE") && *getenv("MEMTOOL_CA_FILE") &&
        !(c->ca_file = strdup(getenv("MEMTOOL_CA_FILE"))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    if (!(c->h = c->curl->easy_init()))
        return mt_error_set(MT_ERROR, "libcurl could not make a handle");
    if (mt_buf_printf(&bearer, "Bearer %s", key) < 0)
        return MT_ENOMEM;
    rc = add_header(c, "Authorization", bearer.ptr);
    memset(bearer.ptr, 0, bearer.len);
    mt_buf_dispose(&bearer);
    if (rc < 0 || (rc = add_header(c, "x-api-key", key)) < 0 ||
        (rc = add_header(c, "anthropic-version", API_VERSION)) < 0 ||
        (rc = add_header(c, "anthropic-beta", API_BETA)) < 0 ||
        (rc = add_header(c, "accept", "application/json")) < 0 ||
        (rc = add_header(c, "content-type", "application/json")) < 0 ||
        (rc = add_header(c, "Expect", "")) < 0)
        return rc;
    return 0;
}

void mt_remote_http_dispose(mt_remote_http *c)
{
    if (c->curl) {
        if (c->h)
            c->curl->easy_cleanup(c->h);
        if (c->headers)
            c->curl->slist_free_all(c->headers);
    }
    if (getenv("MEMTOOL_REMOTE_COUNT") && c->base)
        fprintf(stderr, "memtool remote: %lu requests\n", c->requests);
    free(c->base);
    free(c->shown);
    free(c->ca_file);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}

void mt_remote_resp_dispose(mt_remote_resp *r)
{
    mt_buf_dispose(&r->body);
    memset(r, 0, sizeof(*r));
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    mt_remote_resp *r = userdata;
    size_t len = size * n;

    if (r->body.len + len > MT_REMOTE_MAX_BODY) {
        r->too_big = 1;
        return 0; /* libcurl stops: CURLE_WRITE_ERROR */
    }
    return mt_buf_put(&r->body, data, len) < 0 ? 0 : len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
    mt_remote_resp *r = userdata;
    size_t len = size * n, name_len, vlen;
    const char *colon = memchr(data, ':', len), *v;

    if (!colon)
        return len;
    name_len = (size_t)(colon - data);
    v = colon + 1;
    vlen = len - name_len - 1;
    while (vlen && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    if (name_len == 14 && strncasecmp(data, "retry-after-ms", 14) == 0) {
        snprintf(r->retry_after_ms_sent, sizeof(r->retry_after_ms_sent), "%.*s", (int)vlen, v);
    } else if (name_len == 11 && strncasecmp(data, "retry-after", 11) == 0) {
        snprintf(r->retry_after_sent, sizeof(r->retry_after_sent), "%.*s", (int)vlen, v);
    } else if (name_len == 14 && strncasecmp(data, "x-should-retry", 14) == 0) {
        if (vlen == 4 && strncmp(v, "true", 4) == 0)
            r->should_retry = 1;
        else if (vlen == 5 && strncmp(v, "false", 5) == 0)
            r->should_retry = 0;
    } else if (name_len == 10 && strncasecmp(data, "request-id", 10) == 0) {
        size_t i, k = 0;
        for (i = 0; i < vlen && k + 1 < sizeof(r->request_id); i++)
            if (isalnum((unsigned char)v[i]) || v[i] == '_' || v[i] == '-')
                r->request_id[k++] = v[i];
        r->request_id[k] = '\0';
    }
    return len;
}

static void sleep_ms(long ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int perform(mt_remote_http *c, mt_remote_resp *r, const char *method, const char *url,
                   const char *body, CURLcode *cc)
{
    CURL *h = c->h;
    CURLcode e = CURLE_OK;
    double wait;

    mt_buf_truncate(&r->body, 0);
    r->status = 0;
    r->retry_after_ms = -1;
    r->retry_after_ms_sent[0] = r->retry_after_sent[0] = '\0';
    r->should_retry = -1;
    r->request_id[0] = '\0';
    r->too_big = 0;
    c->curl->easy_reset(h);
#define SET(opt, val)                                                                              \
    if (e == CURLE_OK)                                                                             \
    e = c->curl->easy_setopt(h, opt, val)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_HTTPHEADER, c->headers);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_USERAGENT, "memtool/" MT_VERSION);
    SET(CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
    SET(CURLOPT_TIMEOUT, REQUEST_TIMEOUT);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    /* http:// is taken for this machine only, on the word that the key
     * stays on it: an http_proxy in the environment must not carry it off. */
    SET(CURLOPT_NOPROXY, "127.0.0.1,::1,localhost");
    SET(CURLOPT_ACCEPT_ENCODING, "");
    if (c->ca_file)
        SET(CURLOPT_CAINFO, c->ca_file);
    if (strcmp(method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "POST") == 0) {
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDS, body ? body : "");
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    } else {
        SET(CURLOPT_CUSTOMREQUEST, method);
    }
#undef SET
    if (e != CURLE_OK)
        return mt_error_set(MT_ERROR, "libcurl: %s", c->curl->easy_strerror(e));
    c->requests++;
    *cc = c->curl->easy_perform(h);
    if (*cc == CURLE_OK)
        c->curl->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    /* The wait asked for, in ms (util/rfc3339.h), held to what a long keeps:
     * anything over MAX_WAIT_MS is refused as too long anyway. */
    wait = mt_retry_after_ms(r->retry_after_ms_sent[0] ? r->retry_after_ms_sent : NULL,
                             r->retry_after_sent[0] ? r->retry_after_sent : NULL);
    if (wait >= 0)
        r->retry_after_ms = wait > 1e8 ? 100000000L : (long)wait;
    return 0;
}

/* A failure that trying again cannot mend: a certificate not trusted, a
 * URL or protocol libcurl refuses. */
static int final_error(CURLcode cc)
{
    return cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
           cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_URL_MALFORMAT ||
           cc == CURLE_UNSUPPORTED_PROTOCOL;
}

/* Whether a failed attempt may be repeated, and after how long (ms). */
static long backoff(mt_remote_http *c, unsigned attempt, long retry_after_ms)
{
    long base = 250L << (attempt < 6 ? attempt : 6);
    long jitter = (long)(rand_r(&c->seed) % (unsigned)(base / 2 + 1));

    if (retry_after_ms >= 0)
        return retry_after_ms;
    return base + jitter > 8000 ? 8000 : base + jitter;
}

int mt_remote_send(mt_remote_http *c, mt_remote_resp *out, const char *method, const char *target,
                   const char *body, mt_remote_repeat repeat, const char *what)
{
    mt_buf url = MT_BUF_INIT;
    unsigned attempt;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (mt_buf_printf(&url, "%s%s", c->base, target) < 0)
        return MT_ENOMEM;
    pthread_mutex_lock(&c->lock);
    for (attempt = 0;; attempt++) {
        CURLcode cc = CURLE_OK;
        int sent_maybe, again;
        long wait;

        if ((rc = perform(c, out, method, url.ptr, body, &cc)) < 0)
            break;
        out->attempts = attempt + 1;
        if (out->too_big) {
            rc = mt_error_set(MT_EIO, "%s: the server's answer is over %u bytes: refused", what,
                              MT_REMOTE_MAX_BODY);
            break;
        }
        /* x-should-retry: true asks for a repeat of what the server refused;
         * only a request that may be repeated takes it. */
        if (cc == CURLE_OK && !(out->status == 408 || out->status == 429 || out->status >= 500) &&
            (out->should_retry != 1 || repeat != MT_REMOTE_SAFE))
            break; /* an answer: the caller reads it */
        if (cc == CURLE_OK && out->should_retry == 0)
            break;
        /* A write without a precondition is repeated only when the server
         * cannot have acted on it: no connection made, or a 429 (refused
         * before any work, by the API's word). */
        sent_maybe = cc != CURLE_OK
                         ? cc != CURLE_COULDNT_CONNECT && cc != CURLE_COULDNT_RESOLVE_HOST
                         : out->status != 429;
        again =
            attempt + 1 < ATTEMPTS && (repeat == MT_REMOTE_SAFE || !sent_maybe) && !final_error(cc);
        wait = backoff(c, attempt, cc == CURLE_OK ? out->retry_after_ms : -1);
        if (!again || wait > MAX_WAIT_MS) {
            mt_buf why = MT_BUF_INIT;
            if (cc != CURLE_OK) {
                mt_buf_printf(&why, "cannot reach %s: %s", c->shown, c->curl->easy_strerror(cc));
            } else {
                mt_remote_fail(out, MT_EIO, "");
                mt_buf_puts(&why, mt_error_last()->message);
            }
            if (repeat == MT_REMOTE_ONCE && sent_maybe)
                rc = mt_error_set(MT_EIO,
                                  "%s may or may not have happened (%s); it is not sent again "
                                  "blindly: view the path to see whether it is there",
                                  what, why.ptr ? why.ptr : "no answer");
            else if (wait > MAX_WAIT_MS && again)
                rc = mt_error_set(MT_EIO,
                                  "%s: %s; the server asks to wait %ld s before trying again", what,
                                  why.ptr ? why.ptr : "refused", wait / 1000);
            else
                rc = mt_error_set(MT_EIO, "%s: %s (%u attempts)", what,
                                  why.ptr ? why.ptr : "failed", attempt + 1);
            mt_buf_dispose(&why);
            break;
        }
        sleep_ms(wait);
    }
    pthread_mutex_unlock(&c->lock);
    mt_buf_dispose(&url);
    if (rc < 0)
        mt_remote_resp_dispose(out);
    return rc;
}

json_t *mt_remote_json(const mt_remote_resp *r, const char *what)
{
    json_error_t jerr;
    json_t *v = NULL;

    /* A memory's content may hold NUL; its length is json_string_length. */
    if (mt_json_loadb(&v, r->body.ptr ? r->body.ptr : "", r->body.len, JSON_ALLOW_NUL, &jerr) < 0 ||
        !json_is_object(v)) {
        json_decref(v);
        mt_error_set(MT_EIO, "%s: the server's answer (HTTP %ld) is not a JSON object", what,
                     r->status);
        return NULL;
    }
    return v;
}

int mt_remote_get_json(mt_remote_http *c, json_t **out, const char *target, const char *what,
                       const char *on_404)
{
    mt_remote_resp r;
    int rc;

    *out = NULL;
    if ((rc = mt_remote_send(c, &r, "GET", target, NULL, MT_REMOTE_SAFE, what)) < 0)
        return rc;
    if (r.status == 404 && !on_404)
        rc = MT_ENOTFOUND;
    else if (r.status != 200)
        rc = mt_remote_fail(&r, MT_EIO, r.status == 404 ? on_404 : what);
    else if (!(*out = mt_remote_json(&r, what)))
        rc = MT_EIO;
    mt_remote_resp_dispose(&r);
    return rc;
}

/* Printable ASCII only, at most max bytes: what a server says goes into
 * messages a model reads. */
static void clean(mt_buf *out, const char *s, size_t max)
{
    size_t i;

    for (i = 0; i < max && s[i]; i++)
        mt_buf_putc(out, s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
    if (s[i])
        mt_buf_puts(out, "...");
}

json_t *mt_remote_error_body(const mt_remote_resp *r)
{
    json_error_t jerr;
    json_t *v = NULL;

    /* As an answer (mt_remote_json): a NUL anywhere must not hide the error's type. */
    if (mt_json_loadb(&v, r->body.ptr ? r->body.ptr : "", r->body.len, JSON_ALLOW_NUL, &jerr) < 0)
        return NULL;
    return v;
}

int mt_remote_fail(const mt_remote_resp *r, int code, const char *what)
{
    json_t *v = mt_remote_error_body(r);
    int rc = mt_remote_fail_with(r, v, code, what);

    json_decref(v);
    return rc;
}

int mt_remote_fail_with(const mt_remote_resp *r, const json_t *v, int code, const char *what)
{
    const json_t *e = json_object_get(v, "error");
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    mt_buf m = MT_BUF_INIT;

    mt_buf_printf(&m, "%s%sHTTP %ld", what, *what ? ": " : "", r->status);
    if (type) {
        mt_buf_puts(&m, " ");
        clean(&m, type, 64);
    }
    if (msg) {
        mt_buf_puts(&m, ": ");
        clean(&m, msg, 300);
    }
    if (r->request_id[0])
        mt_buf_printf(&m, " (request %s)", r->request_id);
    mt_error_set(code, "%s", m.ptr ? m.ptr : "out of memory");
    mt_buf_dispose(&m);
    return code;
}

int mt_remote_escape(mt_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int rc;
        if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~')
            rc = mt_buf_putc(out, (char)ch);
        else
            rc = mt_buf_printf(out, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

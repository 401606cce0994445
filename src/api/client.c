#include "api/client.h"
#include "util/curl_load.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <memtool/store.h>

#include "util/buf.h"
#include "util/rfc3339.h"
#include "api/sse.h"

/* A response body that is not a stream is read whole; more than this is no
 * Messages API answer. */
#define MAX_BODY (64u * 1024u * 1024u)

struct mt_api {
    CURL *curl; /* kept across requests so the connection is reused */
    char *url;
    char *key_header;
    char *version_header;
    int max_retries;
    mt_api_failure failure;
    unsigned int seed; /* for the jitter */
};

/* What one attempt saw. */
typedef struct {
    const mt_api_hooks *hooks;
    long status;
    char request_id[128];
    char retry_after_ms[64];
    char retry_after[64];
    char should_retry[16];
    int is_stream; /* a 2xx response of type text/event-stream */
    int stopped;   /* a callback stopped the transfer; rc says why */
    int rc;
    mt_buf body;
    mt_sse_parser sse;
    mt_sse_message msg;
} attempt;

/* libcurl's functions, loaded by the first mt_api_new (curl_load.h says why). */
static const mt_curl_fns *curl;

int mt_api_new(mt_api **out, const mt_api_options *opts)
{
    const char *base = opts && opts->base_url ? opts->base_url : getenv("ANTHROPIC_BASE_URL");
    const char *key = opts && opts->api_key ? opts->api_key : getenv("ANTHROPIC_API_KEY");
    const char *version = opts && opts->version ? opts->version : MT_API_VERSION;
    mt_api *api = NULL;
    mt_buf b = MT_BUF_INIT;
    size_t blen;
    int rc = 0;

    *out = NULL;
    if (!key || !*key) {
        rc = mt_error_set(MT_EINVAL, "ANTHROPIC_API_KEY is not set: export your Anthropic API "
                                     "key in it (see https://console.anthropic.com)");
        goto done;
    }
    if (strpbrk(key, "\r\n")) {
        rc = mt_error_set(MT_EINVAL, "ANTHROPIC_API_KEY holds a line break");
        goto done;
    }
    if (!mt_api_version_ok(version)) {
        rc = mt_error_set(MT_EINVAL, "the API version must be one word such as %s", MT_API_VERSION);
        goto done;
    }
    if (!base || !*base)
        base = MT_API_DEFAULT_BASE_URL;
    if ((rc = mt_curl_load(&curl)) < 0)
        goto done;
    if (!(api = calloc(1, sizeof(*api)))) {
        rc = MT_ENOMEM;
        goto done;
    }
    /* "https://host/" and "https://host" name the same API. */
    blen = strlen(base);
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    if (mt_buf_put(&b, base, blen) < 0 || mt_buf_puts(&b, "/v1/messages") < 0 ||
        !(api->url = mt_buf_detach(&b, NULL)) ||
        mt_buf_printf(&b,
                      opts && opts->auth == MT_API_AUTH_X_API_KEY ? "x-api-key: %s"
                                                                  : "Authorization: Bearer %s",
                      key) < 0 ||
        !(api->key_header = mt_buf_detach(&b, NULL)) ||
        mt_buf_printf(&b, "anthropic-version: %s", version) < 0 ||
        !(api->version_header = mt_buf_detach(&b, NULL))) {
        rc = MT_ENOMEM;
        goto done;
    }
    if (!(api->curl = curl->easy_init())) {
        rc = mt_error_set(MT_ERROR, "libcurl could not make a handle");
        goto done;
    }
    api->max_retries = opts && opts->max_retries >= 0 ? opts->max_retries : MT_API_MAX_RETRIES;
    api->seed = (unsigned int)time(NULL) ^ ((unsigned int)getpid() << 16);
    *out = api;
    api = NULL;
done:
    mt_buf_dispose(&b);
    mt_api_free(api);
    if (rc == MT_ENOMEM)
        mt_error_set(rc, "out of memory");
    return rc;
}

void mt_api_free(mt_api *api)
{
    if (!api)
        return;
    if (api->curl)
        curl->easy_cleanup(api->curl);
    free(api->url);
    if (api->key_header) /* the key should not linger in freed memory */
        explicit_bzero(api->key_header, strlen(api->key_header));
    free(api->key_header);
    free(api->version_header);
    free(api);
}

const char *mt_api_url(const mt_api *api)
{
    return api->url;
}

int mt_api_version_ok(const char *version)
{
    const char *p;

    /* One header value: no space, control character or list separator. */
    for (p = version; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == ',')
            return 0;
    return *version != '\0';
}

const mt_api_failure *mt_api_last_failure(const mt_api *api)
{
    return &api->failure;
}

int mt_api_should_retry(long status, const char *x_should_retry)
{
    /* The server knows best: it says so when a status alone would mislead. */
    if (x_should_retry && strcmp(x_should_retry, "true") == 0)
        return 1;
    if (x_should_retry && strcmp(x_should_retry, "false") == 0)
        return 0;
    return status == 408 || status == 409 || status == 429 || status >= 500;
}

long mt_api_retry_delay_ms(unsigned retry, const char *retry_after_ms, const char *retry_after,
                           double random01)
{
    double ms = mt_retry_after_ms(retry_after_ms, retry_after), backoff;

    if (ms >= 0 && ms <= MT_API_MAX_RETRY_AFTER_MS)
        return (long)ms;
    backoff = 500.0 * (double)(1u << (retry < 4 ? retry : 4)); /* 0.5 s, 1, 2, 4, 8 */
    if (backoff > 8000)
        backoff = 8000;
    return (long)(backoff * (1 - random01 * 0.25));
}

/* ---- one attempt ---- */

static void copy_value(char *dst, size_t cap, const char *v, size_t len)
{
    if (len >= cap)
        len = cap - 1;
    memcpy(dst, v, len);
    dst[len] = '\0';
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    attempt *at = userdata;
    size_t len = size * n, nlen;
    const char *colon, *v;
    size_t vlen;

    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* A new status line (after a 100 Continue, a redirect): start over. */
        const char *sp = memchr(line, ' ', len);

        at->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        at->request_id[0] = at->retry_after_ms[0] = at->retry_after[0] = '\0';
        at->should_retry[0] = '\0';
        at->is_stream = 0;
        return len;
    }
    if (!(colon = memchr(line, ':', len)))
        return len;
    nlen = (size_t)(colon - line);
    v = colon + 1;
    vlen = len - nlen - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && isspace((unsigned char)v[vlen - 1]))
        vlen--;
#define IS(name) (nlen == sizeof(name) - 1 && strncasecmp(line, name, nlen) == 0)
    if (IS("request-id"))
        copy_value(at->request_id, sizeof(at->request_id), v, vlen);
    else if (IS("retry-after-ms"))
        copy_value(at->retry_after_ms, sizeof(at->retry_after_ms), v, vlen);
    else if (IS("retry-after"))
        copy_value(at->retry_after, sizeof(at->retry_after), v, vlen);
    else if (IS("x-should-retry"))
        copy_value(at->should_retry, sizeof(at->should_retry), v, vlen);
    else if (IS("content-type"))
        at->is_stream = vlen >= 17 && strncasecmp(v, "text/event-stream", 17) == 0;
#undef IS
    return len;
}

static int on_sse_event(const mt_sse_event *ev, void *payload)
{
    attempt *at = payload;
    json_error_t jerr;
    json_t *data = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
    const char *type;
    int rc = 0;

    if (!data) /* mt_sse_message_apply_event tells a bad known event from an unknown one */
        return mt_sse_message_apply_event(&at->msg, ev);
    type = mt_sse_event_type(ev, data);
    if ((rc = mt_sse_message_apply(&at->msg, type, data)) < 0)
        goto done;
    if (at->msg.error) {
        rc = MT_ERROR; /* reported from msg.error once the transfer has stopped */
        goto done;
    }
    if (at->hooks && at->hooks->event && at->hooks->event(at->hooks->payload, type, data) != 0)
        rc = MT_API_ECANCELED;
done:
    json_decref(data);
    return rc;
}

static size_t on_body(char *bytes, size_t size, size_t n, void *userdata)
{
    attempt *at = userdata;
    size_t len = size * n;
    int rc;

    if (at->hooks && at->hooks->cancel && *at->hooks->cancel) {
        at->rc = MT_API_ECANCELED;
        at->stopped = 1;
        return 0; /* anything but len stops the transfer */
    }
    if (at->is_stream && at->status >= 200 && at->status < 300) {
        if ((rc = mt_sse_feed(&at->sse, bytes, len, on_sse_event, at)) != 0) {
            at->rc = rc;
            at->stopped = 1;
            return 0; /* anything but len stops the transfer */
        }
        return len;
    }
    if (at->body.len + len > MAX_BODY || mt_buf_put(&at->body, bytes, len) < 0) {
        at->rc = mt_error_set(MT_ELIMIT, "the API's response is larger than %u bytes", MAX_BODY);
        at->stopped = 1;
        return 0; /* anything but len stops the transfer */
    }
    return len;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    attempt *at = userdata;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    if (at->hooks && at->hooks->cancel && *at->hooks->cancel) {
        at->rc = MT_API_ECANCELED;
        at->stopped = 1;
        return 1;
    }
    return 0;
}

static void attempt_reset(attempt *at, const mt_api_hooks *hooks)
{
    mt_buf_dispose(&at->body);
    mt_sse_parser_dispose(&at->sse);
    mt_sse_message_dispose(&at->msg);
    memset(at, 0, sizeof(*at));
    at->hooks = hooks;
    mt_sse_parser_init(&at->sse);
    mt_sse_message_init(&at->msg);
}

static void attempt_dispose(attempt *at)
{
    mt_buf_dispose(&at->body);
    mt_sse_parser_dispose(&at->sse);
    mt_sse_message_dispose(&at->msg);
}

/* " (HTTP 529, request req_...)" */
static void describe_origin(mt_buf *b, const attempt *at, const char *body_request_id)
{
    const char *rid = at->request_id[0] ? at->request_id : body_request_id;

    mt_buf_printf(b, " (HTTP %ld", at->status);
    if (rid && *rid)
        mt_buf_printf(b, ", request %s", rid);
    mt_buf_puts(b, ")");
}

/* Put "type: message" for an API error object into b, all on one line. */
static void describe_error_object(mt_buf *b, const json_t *err)
{
    const char *type = json_string_value(json_object_get(err, "type"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    size_t start = b->len, i;

    mt_buf_printf(b, "%s: %s", type ? type : "error", msg ? msg : "(no message)");
    for (i = start; b->ptr && i < b->len; i++)
        if (b->ptr[i] == '\n' || b->ptr[i] == '\r')
            b->ptr[i] = ' ';
}

/* Keep what a caller needs from error.details: the code, and what a thread
 * could not take. */
static void note_details(mt_api_failure *f, const json_t *err)
{
    const json_t *details = json_object_get(err, "details");
    const char *code = json_string_value(json_object_get(details, "error_code"));
    const json_t *item;
    size_t i, len;

    if (code)
        copy_value(f->error_code, sizeof(f->error_code), code, strlen(code));
    json_array_foreach(json_object_get(details, "unsupported"), i, item)
    {
        const char *name = json_string_value(item);

        len = strlen(f->unsupported);
        if (name && len + strlen(name) + 2 < sizeof(f->unsupported))
            snprintf(f->unsupported + len, sizeof(f->unsupported) - len, "%s%s", len ? "," : "",
                     name);
    }
}

/* The one line that says why a non-2xx response failed. */
static void describe_status(mt_buf *b, const attempt *at, mt_api_failure *f)
{
    json_error_t jerr;
    json_t *body = at->body.len ? json_loadb(at->body.ptr, at->body.len, 0, &jerr) : NULL;
    json_t *err = json_object_get(body, "error");
    size_t i, start;

    f->status = at->status;
    f->error_code[0] = f->unsupported[0] = '\0';
    if (json_is_object(err))
        note_details(f, err);

    mt_buf_puts(b, "API error ");
    if (json_is_object(err)) {
        describe_error_object(b, err);
    } else {
        /* Not the API's JSON (a proxy's page, say): show its start. */
        start = b->len;
        mt_buf_printf(b, "%.*s", (int)(at->body.len < 200 ? at->body.len : 200),
                      at->body.len ? at->body.ptr : "");
        if (b->len == start)
            mt_buf_puts(b, "(empty response)");
        for (i = start; b->ptr && i < b->len; i++)
            if (b->ptr[i] == '\n' || b->ptr[i] == '\r')
                b->ptr[i] = ' ';
    }
    describe_origin(b, at, json_string_value(json_object_get(body, "request_id")));
    json_decref(body);
}

static int sleep_ms(long ms, const mt_api_hooks *hooks)
{
    struct timespec ts;

    /* In slices, so a cancel is seen soon. */
    while (ms > 0) {
        long slice = ms < 50 ? ms : 50;

        if (hooks && hooks->cancel && *hooks->cancel)
            return MT_API_ECANCELED;
        ts.tv_sec = 0;
        ts.tv_nsec = slice * 1000000L;
        nanosleep(&ts, NULL);
        ms -= slice;
    }
    return hooks && hooks->cancel && *hooks->cancel ? MT_API_ECANCELED : 0;
}

static int set_options(mt_api *api, attempt *at, struct curl_slist *headers, const char *body,
                       size_t len, int stream)
{
    CURL *c = api->curl;
    CURLcode e = CURLE_OK;

    curl->easy_reset(c);
#define SET(opt, val)                                                                              \
    if (e == CURLE_OK)                                                                             \
    e = curl->easy_setopt(c, opt, val)
    SET(CURLOPT_URL, api->url);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDS, body);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, at);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, at);
    SET(CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(CURLOPT_XFERINFODATA, at);
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_USERAGENT, "memtool/" MT_VERSION);
    SET(CURLOPT_CONNECTTIMEOUT, 30L);
    SET(CURLOPT_ACCEPT_ENCODING, "");
    if (stream) {
        /* A stream may run for many minutes; a silent one (no event, no
         * ping) for five is dead. */
        SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
        SET(CURLOPT_LOW_SPEED_TIME, 300L);
    } else {
        SET(CURLOPT_TIMEOUT, 600L);
    }
#undef SET
    if (e != CURLE_OK)
        return mt_error_set(MT_ERROR, "libcurl: %s", curl->easy_strerror(e));
    return 0;
}

static struct curl_slist *make_headers(const mt_api *api, const char *betas)
{
    static const char *const fixed[] = {
        "content-type: application/json", "accept: application/json",
        "Expect:", /* no 100-continue round trip before large bodies */
    };
    struct curl_slist *list = NULL, *next;
    mt_buf beta = MT_BUF_INIT;
    size_t i;

    if (!(list = curl->slist_append(NULL, api->key_header)))
        return NULL;
    if (!(next = curl->slist_append(list, api->version_header)))
        goto fail;
    list = next;
    if (betas && *betas) {
        if (mt_buf_printf(&beta, "anthropic-beta: %s", betas) < 0 ||
            !(next = curl->slist_append(list, beta.ptr)))
            goto fail;
        list = next;
    }
    for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        if (!(next = curl->slist_append(list, fixed[i])))
            goto fail;
        list = next;
    }
    mt_buf_dispose(&beta);
    return list;
fail:
    mt_buf_dispose(&beta);
    curl->slist_free_all(list);
    return NULL;
}

/* The result of a finished 2xx attempt. */
static int take_message(json_t **out, attempt *at)
{
    json_error_t jerr;
    json_t *msg;

    if (at->is_stream) {
        if (!at->msg.stopped)
            return mt_error_set(MT_ERROR, "the API's stream ended before message_stop%s%s%s",
                                at->request_id[0] ? " (request " : "", at->request_id,
                                at->request_id[0] ? ")" : "");
        if (!(msg = mt_sse_message_finish(&at->msg)))
            return mt_error_last()->code < 0 ? mt_error_last()->code : MT_ENOMEM;
    } else {
        msg = json_loadb(at->body.ptr ? at->body.ptr : "", at->body.len, JSON_ALLOW_NUL, &jerr);
        if (!json_is_object(msg)) {
            json_decref(msg);
            return mt_error_set(MT_ERROR, "the API's response is not a JSON object: %s", jerr.text);
        }
    }
    *out = msg;
    return 0;
}

int mt_api_send(json_t **out, mt_api *api, const json_t *request, const char *betas,
                const mt_api_hooks *hooks)
{
    struct curl_slist *headers = NULL;
    char *body = NULL;
    attempt at;
    mt_buf why = MT_BUF_INIT;
    unsigned retry;
    int rc = 0, stream = json_is_true(json_object_get(request, "stream"));
    CURLcode cc;

    *out = NULL;
    memset(&at, 0, sizeof(at));
    memset(&api->failure, 0, sizeof(api->failure));
    if (!(body = json_dumps(request, JSON_COMPACT)) || !(headers = make_headers(api, betas))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    for (retry = 0;; retry++) {
        int retryable;
        long delay;

        attempt_reset(&at, hooks);
        mt_buf_truncate(&why, 0);
        if ((rc = set_options(api, &at, headers, body, strlen(body), stream)) < 0)
            goto done;
        cc = curl->easy_perform(api->curl);
        /* A reply that began and did not arrive whole (a stream without its
         * message_stop, a body cut short): the server may hold the whole
         * reply though the caller has only part. */
        api->failure.stream_cut = at.status >= 200 && at.status < 300 &&
                                  (at.is_stream ? !at.msg.stopped : cc != CURLE_OK);
        if (at.stopped && at.rc == MT_API_ECANCELED) {
            rc = mt_error_set(MT_API_ECANCELED, "cancelled");
            goto done;
        }
        if (at.msg.error) {
            /* An error event: the stream had begun, so it stands. */
            mt_buf_puts(&why, "API error ");
            describe_error_object(&why, at.msg.error);
            mt_buf_puts(&why, " in the middle of the stream");
            describe_origin(&why, &at, NULL);
            rc = mt_error_set(MT_ERROR, "%s", why.ptr ? why.ptr : "API error");
            goto done;
        }
        if (at.is_stream && at.msg.stopped && at.status >= 200 && at.status < 300) {
            /* The whole message arrived; how the connection ended after
             * message_stop does not matter. */
            rc = take_message(out, &at);
            goto done;
        }
        if (at.stopped) {
            /* The stream itself was bad (or too big); the message says how. */
            rc = at.rc < 0 ? at.rc : MT_ERROR;
            goto done;
        }
        if (cc != CURLE_OK) {
            mt_buf_printf(&why, "cannot reach %s: %s", api->url, curl->easy_strerror(cc));
            if (at.status >= 200 && at.status < 300) {
                api->failure.status = at.status;
                mt_buf_puts(&why, " (the response had begun, so it is not retried");
                if (at.request_id[0])
                    mt_buf_printf(&why, "; request %s", at.request_id);
                mt_buf_puts(&why, ")");
                rc = mt_error_set(MT_ERROR, "%s", why.ptr ? why.ptr : "connection failed");
                goto done;
            }
            retryable = 1;
        } else if (at.status >= 200 && at.status < 300) {
            rc = take_message(out, &at);
            goto done;
        } else {
            describe_status(&why, &at, &api->failure);
            retryable = mt_api_should_retry(at.status, at.should_retry[0] ? at.should_retry : NULL);
        }
        if (!why.ptr) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        if (!retryable || retry >= (unsigned)api->max_retries) {
            if (retryable)
                rc = mt_error_set(MT_ERROR, "%s; gave up after %u attempts", why.ptr, retry + 1);
            else
                rc = mt_error_set(MT_ERROR, "%s", why.ptr);
            goto done;
        }
        delay = mt_api_retry_delay_ms(retry, at.retry_after_ms[0] ? at.retry_after_ms : NULL,
                                      at.retry_after[0] ? at.retry_after : NULL,
                                      rand_r(&api->seed) / ((double)RAND_MAX + 1));
        if (hooks && hooks->retry)
            hooks->retry(hooks->payload, retry + 1, delay, why.ptr);
        if (sleep_ms(delay, hooks) < 0) {
            rc = mt_error_set(MT_API_ECANCELED, "cancelled");
            goto done;
        }
    }
done:
    attempt_dispose(&at);
    mt_buf_dispose(&why);
    curl->slist_free_all(headers);
    free(body);
    return rc;
}

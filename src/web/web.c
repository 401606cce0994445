/*
 * memtool web's side of the server: the page's assets, the login token, the
 * session cookie and the CSRF token (web.h). Nothing here reads the store:
 * an API request with a good session is vouched for, as the session's
 * caller, and answered by httpd's routes like any other.
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <memtool.h>
#include <memtool/store.h>
#include <sodium.h>

#include "web/web.h"

extern char **environ;

/* The page's assets (cmake/embed.cmake, from src/web/assets). */
extern const char mt_web_index_html[];
extern const size_t mt_web_index_html_len;
extern const char mt_web_app_js[];
extern const size_t mt_web_app_js_len;
extern const char mt_web_style_css[];
extern const size_t mt_web_style_css_len;

/* 32 random bytes, as base64url without padding. */
#define SECRET_LEN 43
#define SESSIONS   8
#define COOKIE     "mt_session"

typedef struct {
    char id[SECRET_LEN + 1];   /* the cookie's value; "" when unused */
    char csrf[SECRET_LEN + 1]; /* what every change must send as x-csrf-token */
    char actor[32];            /* "web:" and 12 hex digits, from the session's hash */
} session;

struct mt_web {
    mt_httpd_hook hook;
    char tenant[256];
    int open_browser;
    pthread_mutex_t lock;
    char token[SECRET_LEN + 1]; /* the login token; "" once used */
    session sessions[SESSIONS];
    unsigned next; /* the slot the next session takes (the oldest goes) */
};

/*
 * On every answer: no script or style but the page's own files (no inline
 * code, no eval), no request to anywhere but this server, never framed, the
 * address (and its token) never sent on as a referrer.
 */
static const char *const headers[] = {
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options",
    "nosniff",
    "Referrer-Policy",
    "no-referrer",
    "X-Frame-Options",
    "DENY",
    "Cross-Origin-Opener-Policy",
    "same-origin",
    "Cross-Origin-Resource-Policy",
    "same-origin",
    NULL,
    NULL};

static void secret(char out[SECRET_LEN + 1])
{
    unsigned char raw[32];

    randombytes_buf(raw, sizeof(raw));
    sodium_bin2base64(out, SECRET_LEN + 1, raw, sizeof(raw),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof(raw));
}

/* a and b equal, in time that does not depend on where they differ. */
static int same_secret(const char *a, const char *b)
{
    return a && b && strlen(a) == SECRET_LEN && strlen(b) == SECRET_LEN &&
           sodium_memcmp(a, b, SECRET_LEN) == 0;
}

static mt_httpd_verdict answer(mt_httpd_page *page, int status, const char *type, const char *data,
                               size_t len, const char *route)
{
    page->status = status;
    page->type = type;
    page->data = data;
    page->len = len;
    page->route = route;
    return MT_HTTPD_ANSWER;
}

/* An error as the API words them; it names nothing of the store. */
static mt_httpd_verdict refuse(mt_httpd_page *page, int status, const char *type,
                               const char *message, const char *route)
{
    json_t *j = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type, "message",
                          message);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    if (!text)
        return answer(page, status, "text/plain", "error\n", 6, route);
    page->owned = text;
    return answer(page, status, "application/json", text, strlen(text), route);
}

static mt_httpd_verdict json_answer(mt_httpd_page *page, json_t *j, const char *route)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    if (!text)
        return refuse(page, 503, "overloaded_error", "out of memory", route);
    page->owned = text;
    return answer(page, 200, "application/json", text, strlen(text), route);
}

/* The session the request's cookie names, copied into *out; 0 when none. */
static int find_session(session *out, mt_web *w, const mt_httpd_in *in)
{
    const char *c = in->value(in->conn, MT_HTTPD_VALUE_COOKIE, COOKIE);
    int found = 0;
    size_t i;

    if (!c)
        return 0;
    pthread_mutex_lock(&w->lock);
    for (i = 0; i < SESSIONS; i++)
        if (w->sessions[i].id[0] && same_secret(c, w->sessions[i].id)) {
            *out = w->sessions[i];
            found = 1;
        }
    pthread_mutex_unlock(&w->lock);
    return found;
}

/* The login: the one-time token for a session cookie and its CSRF token. */
static mt_httpd_verdict login(mt_web *w, const mt_httpd_in *in, mt_httpd_page *page)
{
    json_t *body = json_loadb(in->body ? in->body : "", in->body_len, 0, NULL);
    const char *token = json_string_value(json_object_get(body, "token"));
    session s;
    unsigned char hash[32];
    int ok = 0, i;

    pthread_mutex_lock(&w->lock);
    if (w->token[0] && same_secret(token, w->token)) {
        /* Used once: from now on it opens nothing. */
        sodium_memzero(w->token, sizeof(w->token));
        secret(s.id);
        secret(s.csrf);
        crypto_generichash(hash, sizeof(hash), (const unsigned char *)s.id, SECRET_LEN, NULL, 0);
        memcpy(s.actor, "web:", 4);
        for (i = 0; i < 6; i++)
            snprintf(s.actor + 4 + 2 * i, 3, "%02x", hash[i]);
        w->sessions[w->next] = s;
        w->next = (w->next + 1) % SESSIONS;
        ok = 1;
    }
    pthread_mutex_unlock(&w->lock);
    json_decref(body);
    if (!ok)
        return refuse(page, 401, "authentication_error",
                      "this login token is unknown or was used already: start memtool web again",
                      "web_login");
    snprintf(page->set_cookie, sizeof(page->set_cookie),
             COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/", s.id);
    return json_answer(page, json_pack("{s:s, s:s}", "csrf_token", s.csrf, "actor", s.actor),
                       "web_login");
}

/* The Host a request names is this server's (no other name resolving to
 * 127.0.0.1 reaches it: DNS rebinding), and an Origin, when sent, too. */
static int own_host(const mt_httpd_in *in, const char *value)
{
    char a[64], b[64];

    if (!value)
        return 0;
    snprintf(a, sizeof(a), "127.0.0.1:%u", in->port);
    snprintf(b, sizeof(b), "localhost:%u", in->port);
    return strcmp(value, a) == 0 || strcmp(value, b) == 0;
}

static int own_origin(const mt_httpd_in *in)
{
    const char *o = in->value(in->conn, MT_HTTPD_VALUE_HEADER, "origin");

    if (!o)
        return 1;
    if (strncmp(o, "http://", 7) != 0)
        return 0;
    return own_host(in, o + 7);
}

static int is_api(const char *path)
{
    return strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/memtool/v1/", 12) == 0;
}

static mt_httpd_verdict on_request(void *ctx, const mt_httpd_in *in, mt_httpd_page *page,
                                   mt_key_info *key)
{
    mt_web *w = ctx;
    int get = strcmp(in->method, "GET") == 0 || strcmp(in->method, "HEAD") == 0;
    const char *path = in->path;
    session s;

    if (!own_host(in, in->value(in->conn, MT_HTTPD_VALUE_HEADER, "host")))
        return refuse(page, 403, "permission_error", "this server answers 127.0.0.1 only",
                      "web_host");
    if (!get && !own_origin(in))
        return refuse(page, 403, "permission_error", "a request from another origin", "web_origin");
    /* The page's own files: they hold nothing of the store. */
    if (get && (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0))
        return answer(page, 200, "text/html; charset=utf-8", mt_web_index_html,
                      mt_web_index_html_len, "web_page");
    if (get && strcmp(path, "/assets/app.js") == 0)
        return answer(page, 200, "text/javascript; charset=utf-8", mt_web_app_js, mt_web_app_js_len,
                      "web_asset");
    if (get && strcmp(path, "/assets/style.css") == 0)
        return answer(page, 200, "text/css; charset=utf-8", mt_web_style_css, mt_web_style_css_len,
                      "web_asset");
    if (strcmp(path, "/session") == 0 && strcmp(in->method, "POST") == 0)
        return login(w, in, page);
    if (!find_session(&s, w, in))
        return refuse(page, 401, "authentication_error",
                      "no session: open the address memtool web printed", "web_unauthorized");
    if (strcmp(path, "/session") == 0 && get)
        return json_answer(page, json_pack("{s:s, s:s}", "csrf_token", s.csrf, "actor", s.actor),
                           "web_session");
    if (!is_api(path))
        return refuse(page, 404, "not_found_error", "no such page", "web_not_found");
    if (!get && !same_secret(in->value(in->conn, MT_HTTPD_VALUE_HEADER, "x-csrf-token"), s.csrf))
        return refuse(page, 403, "permission_error",
                      "a change needs the session's CSRF token (x-csrf-token)", "web_csrf");
    memset(key, 0, sizeof(*key));
    snprintf(key->id, sizeof(key->id), "%s", s.actor);
    snprintf(key->tenant, sizeof(key->tenant), "%s", w->tenant);
    return MT_HTTPD_VOUCH;
}

static void open_browser(const char *url)
{
    char *argv[] = {"xdg-open", (char *)url, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;

    if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) {
        fprintf(stderr, "memtool web: no desktop here (DISPLAY and WAYLAND_DISPLAY are unset): "
                        "open the address yourself\n");
        return;
    }
    /* The browser's own output is not ours: the one line on stdout stays one. */
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
    if (posix_spawnp(&pid, "xdg-open", &fa, NULL, argv, environ) != 0)
        fprintf(stderr, "memtool web: cannot run xdg-open: open the address yourself\n");
    posix_spawn_file_actions_destroy(&fa);
    /* Not waited for: SIGCHLD is ignored, so it leaves no zombie. */
}

static void on_listening(void *ctx, const char *base_url, unsigned port)
{
    mt_web *w = ctx;
    char url[256];

    (void)port;
    snprintf(url, sizeof(url), "%s/?token=%s", base_url, w->token);
    printf("%s\n", url);
    fflush(stdout);
    fprintf(stderr,
            "memtool web: the address above opens the page once; SIGINT (Ctrl-C) stops it\n");
    if (w->open_browser)
        open_browser(url);
}

int mt_web_new(mt_web **out, const char *tenant, int open)
{
    mt_web *w;

    *out = NULL;
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium could not start");
    if (!(w = calloc(1, sizeof(*w))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    snprintf(w->tenant, sizeof(w->tenant), "%s", tenant && *tenant ? tenant : "default");
    w->open_browser = open;
    pthread_mutex_init(&w->lock, NULL);
    secret(w->token);
    w->hook.ctx = w;
    w->hook.request = on_request;
    w->hook.listening = on_listening;
    w->hook.headers = headers;
    if (open)
        signal(SIGCHLD, SIG_IGN);
    *out = w;
    return 0;
}

void mt_web_free(mt_web *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->lock);
    sodium_memzero(w, sizeof(*w));
    free(w);
}

const mt_httpd_hook *mt_web_hook(mt_web *w)
{
    return &w->hook;
}

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

#include "httpd/keys.h"
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
/* Sessions at once; past this, the oldest ends. */
#define SESSIONS 64
/* The cookie's name ends with the server's port: a browser sends a host's
 * cookies to every port of it, and two servers on one machine (memtool web
 * twice, or beside memtool server) must not end each other's sessions. */
#define COOKIE "mt_session_"

typedef struct {
    char id[SECRET_LEN + 1];   /* the cookie's value; "" when unused */
    char csrf[SECRET_LEN + 1]; /* what every change must send as x-csrf-token */
    /* memtool web: "web:" and 12 hex digits, from the session's hash;
     * memtool server: "web:" and the key's id */
    char actor[32];
    char key[MT_KEYS_KEY_LEN + 1]; /* memtool server: the key it was opened with */
} session;

struct mt_web {
    mt_httpd_hook hook;
    char tenant[256];
    int open_browser;
    mt_keys *keys;      /* memtool server's: the page logs in with a key */
    const char *prefix; /* where the page is: "" (memtool web) or "/ui" */
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
static const char csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const char *const headers[] = {"Content-Security-Policy",
                                      csp,
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

static mt_httpd_verdict json_answer(mt_httpd_page *page, json_t *j, const char *route, int status)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

    json_decref(j);
    if (!text)
        return refuse(page, 503, "overloaded_error", "out of memory", route);
    page->owned = text;
    return answer(page, status, "application/json", text, strlen(text), route);
}

static const char *cookie_name(char out[32], const mt_httpd_in *in)
{
    snprintf(out, 32, COOKIE "%u", in->port);
    return out;
}

/* The session the request's cookie names, copied into *out; 0 when none. */
static int find_session(session *out, mt_web *w, const mt_httpd_in *in)
{
    char name[32];
    const char *c = in->value(in->conn, MT_HTTPD_VALUE_COOKIE, cookie_name(name, in));
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

/* The login: the one-time token (memtool web) or a key (memtool server)
 * for a session cookie and its CSRF token. */
static mt_httpd_verdict login(mt_web *w, const mt_httpd_in *in, mt_httpd_page *page)
{
    json_t *body = json_loadb(in->body ? in->body : "", in->body_len, 0, NULL);
    const char *token = json_string_value(json_object_get(body, "token"));
    const char *key = json_string_value(json_object_get(body, "key"));
    mt_key_info info;
    session s;
    unsigned char hash[32];
    int ok = 0, i;

    memset(&s, 0, sizeof(s));
    secret(s.id);
    secret(s.csrf);
    if (w->keys) {
        if (key && strlen(key) == MT_KEYS_KEY_LEN &&
            mt_keys_check(&info, w->keys, key, strlen(key)) == 0) {
            snprintf(s.key, sizeof(s.key), "%s", key);
            snprintf(s.actor, sizeof(s.actor), "web:%.27s", info.id);
            ok = 1;
        }
    } else {
        crypto_generichash(hash, sizeof(hash), (const unsigned char *)s.id, SECRET_LEN, NULL, 0);
        memcpy(s.actor, "web:", 4);
        for (i = 0; i < 6; i++)
            snprintf(s.actor + 4 + 2 * i, 3, "%02x", hash[i]);
    }
    pthread_mutex_lock(&w->lock);
    if (!w->keys && w->token[0] && same_secret(token, w->token)) {
        /* Used once: from now on it opens nothing. */
        sodium_memzero(w->token, sizeof(w->token));
        ok = 1;
    }
    if (ok) {
        w->sessions[w->next] = s;
        w->next = (w->next + 1) % SESSIONS;
    }
    pthread_mutex_unlock(&w->lock);
    json_decref(body);
    if (!ok) {
        sodium_memzero(&s, sizeof(s));
        return refuse(page, 401, "authentication_error",
                      w->keys ? "invalid API key: check the key, or make one with memtool server "
                                "keys add TENANT"
                              : "this login token is unknown or was used already: start "
                                "memtool web again",
                      "web_login");
    }
    snprintf(page->set_cookie, sizeof(page->set_cookie),
             COOKIE "%u=%s; HttpOnly; SameSite=Strict; Path=/%s", in->port, s.id,
             in->tls ? "; Secure" : "");
    return json_answer(page, json_pack("{s:s, s:s}", "csrf_token", s.csrf, "actor", s.actor),
                       "web_login", 200);
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

/* An Origin, when sent, is the page's own: this server's (memtool web), or
 * the Host the request names, under the server's scheme (memtool server,
 * which may listen under any name). */
static int own_origin(const mt_web *w, const mt_httpd_in *in)
{
    const char *o = in->value(in->conn, MT_HTTPD_VALUE_HEADER, "origin");
    const char *host = in->value(in->conn, MT_HTTPD_VALUE_HEADER, "host");
    const char *scheme = in->tls ? "https://" : "http://";

    if (!o)
        return 1;
    if (strncmp(o, scheme, strlen(scheme)) != 0)
        return 0;
    o += strlen(scheme);
    return w->keys ? host && strcmp(o, host) == 0 : own_host(in, o);
}

static int is_api(const char *path)
{
    return strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/memtool/v1/", 12) == 0;
}

/* path is the page's name under w's prefix ("/ui/assets/app.js" is
 * "/assets/app.js" for memtool server's page). */
static int at(const mt_web *w, const char *path, const char *name)
{
    size_t n = strlen(w->prefix);

    return strncmp(path, w->prefix, n) == 0 && strcmp(path + n, name) == 0;
}

static mt_httpd_verdict on_request(void *ctx, const mt_httpd_in *in, mt_httpd_page *page,
                                   mt_key_info *key)
{
    mt_web *w = ctx;
    int get = strcmp(in->method, "GET") == 0 || strcmp(in->method, "HEAD") == 0;
    int server = w->keys != NULL;
    int page_path = server && strncmp(in->path, "/ui/", 4) == 0;
    const char *path = in->path;
    char name[32];
    session s;

    /* memtool server: the API's requests without the page's cookie (the
     * SDK's, curl's), and whatever is neither the page nor the API, are the
     * server's to check and answer, as before. */
    if (server && !page_path &&
        (!is_api(path) || !in->value(in->conn, MT_HTTPD_VALUE_COOKIE, cookie_name(name, in))))
        return MT_HTTPD_PASS;
    if (!server && !own_host(in, in->value(in->conn, MT_HTTPD_VALUE_HEADER, "host")))
        return refuse(page, 403, "permission_error", "this server answers 127.0.0.1 only",
                      "web_host");
    if (!get && !own_origin(w, in))
        return refuse(page, 403, "permission_error", "a request from another origin", "web_origin");
    /* The page's own files: they hold nothing of the store. */
    if (get && (at(w, path, "/") || at(w, path, "/index.html")))
        return answer(page, 200, "text/html; charset=utf-8", mt_web_index_html,
                      mt_web_index_html_len, "web_page");
    if (get && at(w, path, "/assets/app.js"))
        return answer(page, 200, "text/javascript; charset=utf-8", mt_web_app_js, mt_web_app_js_len,
                      "web_asset");
    if (get && at(w, path, "/assets/style.css"))
        return answer(page, 200, "text/css; charset=utf-8", mt_web_style_css, mt_web_style_css_len,
                      "web_asset");
    if (at(w, path, "/session") && strcmp(in->method, "POST") == 0)
        return login(w, in, page);
    /* A session opened with a key lasts as long as the key (its tenant and
     * access are the key's as it is now): a revoked key ends it. */
    if (!find_session(&s, w, in) ||
        (server && mt_keys_check(key, w->keys, s.key, strlen(s.key)) < 0)) {
        /* The page asks how to log in: with a key (memtool server) or the token. */
        if (get && at(w, path, "/session"))
            return json_answer(page, json_pack("{s:s}", "login", server ? "key" : "token"),
                               "web_unauthorized", 401);
        return refuse(page, 401, "authentication_error",
                      server ? "no session, or its key is no longer valid: log in with a key"
                             : "no session: open the address memtool web printed",
                      "web_unauthorized");
    }
    if (at(w, path, "/session") && get)
        return json_answer(page, json_pack("{s:s, s:s}", "csrf_token", s.csrf, "actor", s.actor),
                           "web_session", 200);
    if (!is_api(path))
        return refuse(page, 404, "not_found_error", "no such page", "web_not_found");
    if (!get && !same_secret(in->value(in->conn, MT_HTTPD_VALUE_HEADER, "x-csrf-token"), s.csrf))
        return refuse(page, 403, "permission_error",
                      "a change needs the session's CSRF token (x-csrf-token)", "web_csrf");
    if (!server) {
        memset(key, 0, sizeof(*key));
        snprintf(key->tenant, sizeof(key->tenant), "%s", w->tenant);
    }
    /* Changes from the page are the page's: web:... */
    snprintf(key->id, sizeof(key->id), "%s", s.actor);
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
    w->prefix = "";
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

int mt_web_new_server(mt_web **out, const char *keys_path)
{
    mt_web *w;
    int rc;

    if ((rc = mt_web_new(&w, NULL, 0)) < 0)
        return rc;
    if ((rc = mt_keys_open(&w->keys, keys_path)) < 0) {
        mt_web_free(w);
        return rc;
    }
    w->prefix = "/ui";
    /* memtool server prints its base URL itself; no token opens its page. */
    w->hook.listening = NULL;
    sodium_memzero(w->token, sizeof(w->token));
    *out = w;
    return 0;
}

void mt_web_free(mt_web *w)
{
    if (!w)
        return;
    mt_keys_free(w->keys);
    pthread_mutex_destroy(&w->lock);
    sodium_memzero(w, sizeof(*w));
    free(w);
}

const mt_httpd_hook *mt_web_hook(mt_web *w)
{
    return &w->hook;
}

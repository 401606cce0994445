/*
 * memtool web's side of the server: the page's assets, the login token, the
 * session cookie and the CSRF token (web.h). Nothing here reads the store:
 * an API request with a good session is vouched for, as the session's
 * caller, and answered by httpd's routes like any other.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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
/* Sessions at once, every key's together: past it, a login is refused
 * (503) until one ends; never is another key's session ended for it. */
#define SESSIONS_MAX 256
/* One key's sessions at once: its next login ends its own oldest. */
#define SESSIONS_PER_KEY 8
/* A session ends after this long unused, and this long after its login
 * however much it is used (MEMTOOL_WEB_SESSION_IDLE_S and _MAX_S, seconds,
 * shorten them for tests). */
#define IDLE_S (12 * 3600)
#define MAX_S  (24 * 3600)
/* Host names memtool server's page answers to, beside the listen address. */
#define PUBLIC_HOSTS 8
/* The cookie's name ends with the server's port: a browser sends a host's
 * cookies to every port of it, and two servers on one machine (memtool web
 * twice, or beside memtool server) must not end each other's sessions. */
#define COOKIE "mt_session_"

typedef struct {
    char id[SECRET_LEN + 1];   /* the cookie's value; "" when unused */
    char csrf[SECRET_LEN + 1]; /* what every change must send as x-csrf-token */
    /* What its changes are recorded as. memtool web: "web:" and 12 hex
     * digits, from the session's hash; memtool server: "web:" and the
     * key's id. */
    char actor[48];
    /* memtool server: the id of the key it was opened with, looked up again
     * on every request (the key itself is not kept) */
    char key_id[32];
    int64_t created_ns, used_ns; /* CLOCK_BOOTTIME */
} session;

struct mt_web {
    mt_httpd_hook hook;
    char tenant[256];
    int open_browser;
    mt_keys *keys;      /* memtool server's: the page logs in with a key */
    const char *prefix; /* where the page is: "" (memtool web) or "/ui" */
    /* memtool server: the listen address's host ("127.0.0.1", "[::1]"),
     * whether it is a loopback one (then localhost is it too), and the
     * names (NAME or NAME:PORT) given by --public-host. */
    char listen_host[64];
    int loopback;
    char public_hosts[PUBLIC_HOSTS][256];
    size_t npublic;
    int64_t idle_ns, max_ns;
    pthread_mutex_t lock;
    char token[SECRET_LEN + 1]; /* the login token; "" once used */
    session sessions[SESSIONS_MAX];
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

static int64_t now_ns(void)
{
    struct timespec t;

    /* Suspended time counts: a laptop closed overnight ends idle sessions. */
    clock_gettime(CLOCK_BOOTTIME, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int expired(const mt_web *w, const session *s, int64_t now)
{
    return now - s->used_ns >= w->idle_ns || now - s->created_ns >= w->max_ns;
}

static void end_session(session *s)
{
    sodium_memzero(s, sizeof(*s));
}

/* The session the request's cookie names, copied into *out, its use noted;
 * 0 when none (or it expired, and is ended). */
static int find_session(session *out, mt_web *w, const mt_httpd_in *in)
{
    char name[32];
    const char *c = in->value(in->conn, MT_HTTPD_VALUE_COOKIE, cookie_name(name, in));
    int64_t now = now_ns();
    int found = 0;
    size_t i;

    if (!c)
        return 0;
    pthread_mutex_lock(&w->lock);
    for (i = 0; i < SESSIONS_MAX; i++)
        if (w->sessions[i].id[0] && same_secret(c, w->sessions[i].id)) {
            if (expired(w, &w->sessions[i], now)) {
                end_session(&w->sessions[i]);
                continue;
            }
            w->sessions[i].used_ns = now;
            *out = w->sessions[i];
            found = 1;
        }
    pthread_mutex_unlock(&w->lock);
    return found;
}

/* A slot for a new session of key_id ("" for memtool web's), under w->lock:
 * expired ones end first; a key at its bound ends its own oldest. NULL when
 * every slot holds another key's live session. */
static session *slot_for(mt_web *w, const char *key_id)
{
    int64_t now = now_ns();
    session *free_slot = NULL, *oldest = NULL;
    size_t i, mine = 0;

    for (i = 0; i < SESSIONS_MAX; i++) {
        session *s = &w->sessions[i];
        if (s->id[0] && expired(w, s, now))
            end_session(s);
        if (!s->id[0]) {
            free_slot = free_slot ? free_slot : s;
            continue;
        }
        if (strcmp(s->key_id, key_id) == 0) {
            mine++;
            if (!oldest || s->created_ns < oldest->created_ns)
                oldest = s;
        }
    }
    if (mine >= SESSIONS_PER_KEY) {
        end_session(oldest);
        return oldest;
    }
    return free_slot;
}

/* The login: the one-time token (memtool web) or a key (memtool server)
 * for a session cookie and its CSRF token. */
static mt_httpd_verdict login(mt_web *w, const mt_httpd_in *in, mt_httpd_page *page)
{
    json_t *body = json_loadb(in->body ? in->body : "", in->body_len, 0, NULL);
    const char *token = json_string_value(json_object_get(body, "token"));
    const char *key = json_string_value(json_object_get(body, "key"));
    mt_key_info info;
    session s, *slot = NULL;
    mt_httpd_verdict verdict;
    unsigned char hash[32];
    int ok = 0, i;

    memset(&s, 0, sizeof(s));
    secret(s.id);
    secret(s.csrf);
    s.created_ns = s.used_ns = now_ns();
    if (w->keys) {
        if (key && strlen(key) == MT_KEYS_KEY_LEN &&
            mt_keys_check(&info, w->keys, key, strlen(key)) == 0) {
            snprintf(s.key_id, sizeof(s.key_id), "%s", info.id);
            snprintf(s.actor, sizeof(s.actor), "web:%s", info.id);
            ok = 1;
        }
    } else {
        crypto_generichash(hash, sizeof(hash), (const unsigned char *)s.id, SECRET_LEN, NULL, 0);
        memcpy(s.actor, "web:", 4);
        for (i = 0; i < 6; i++)
            snprintf(s.actor + 4 + 2 * i, 3, "%02x", hash[i]);
    }
    pthread_mutex_lock(&w->lock);
    if (!w->keys && w->token[0] && same_secret(token, w->token))
        ok = 1;
    if (ok && (slot = slot_for(w, s.key_id))) {
        *slot = s;
        /* Used once: from now on it opens nothing. */
        sodium_memzero(w->token, sizeof(w->token));
    }
    pthread_mutex_unlock(&w->lock);
    json_decref(body);
    if (ok && !slot) {
        end_session(&s);
        return refuse(page, 503, "overloaded_error",
                      "too many sessions at once: try again once some have ended", "web_login");
    }
    if (!ok) {
        end_session(&s);
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
    verdict = json_answer(page, json_pack("{s:s, s:s}", "csrf_token", s.csrf, "actor", s.actor),
                          "web_login", 200);
    /* The stack keeps no copy of the session's secrets. */
    end_session(&s);
    return verdict;
}

/* host is NAME:PORT with this server's port. */
static int is_host_port(const char *host, const char *name, unsigned port)
{
    char want[300];

    snprintf(want, sizeof(want), "%s:%u", name, port);
    return strcasecmp(host, want) == 0;
}

/* 1: a name this server answers the page under (anything else naming
 * 127.0.0.1 reaches nothing: DNS rebinding); 2: one of --public-host's, which a
 * proxy may serve over HTTPS in front of plain HTTP. */
static int own_host(const mt_web *w, const mt_httpd_in *in, const char *host)
{
    size_t i;

    if (!host)
        return 0;
    if (!w->keys)
        return is_host_port(host, "127.0.0.1", in->port) ||
               is_host_port(host, "localhost", in->port);
    if (is_host_port(host, w->listen_host, in->port) ||
        (w->loopback && is_host_port(host, "localhost", in->port)))
        return 1;
    for (i = 0; i < w->npublic; i++)
        if (strcasecmp(host, w->public_hosts[i]) == 0)
            return 2;
    return 0;
}

/* The Origin a change sends is the page's own: present (browsers send it on
 * every request that is not a GET), the request's Host under the server's
 * scheme (or https, for a public host behind a proxy). */
static int own_origin(const mt_httpd_in *in, const char *host, int kind)
{
    const char *o = in->value(in->conn, MT_HTTPD_VALUE_HEADER, "origin");
    const char *rest = NULL;

    if (!o || !host)
        return 0;
    if (strncmp(o, "https://", 8) == 0 && (in->tls || kind == 2))
        rest = o + 8;
    else if (strncmp(o, "http://", 7) == 0 && !in->tls)
        rest = o + 7;
    return rest && strcasecmp(rest, host) == 0;
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
                                   mt_httpd_caller *caller)
{
    mt_web *w = ctx;
    int get = strcmp(in->method, "GET") == 0 || strcmp(in->method, "HEAD") == 0;
    int server = w->keys != NULL;
    int page_path = server && strncmp(in->path, "/ui/", 4) == 0;
    const char *path = in->path;
    const char *host = in->value(in->conn, MT_HTTPD_VALUE_HEADER, "host");
    char name[32];
    session s;
    int kind;

    /* memtool server: the API's requests without the page's cookie (the
     * SDK's, curl's), and whatever is neither the page nor the API (its
     * /healthz, /metrics), are the server's to check and answer, as before. */
    if (server && !page_path &&
        (!is_api(path) || !in->value(in->conn, MT_HTTPD_VALUE_COOKIE, cookie_name(name, in))))
        return MT_HTTPD_PASS;
    /* The page's requests, and all of memtool web's, name this server. */
    if (!(kind = own_host(w, in, host)))
        return refuse(page, 403, "permission_error",
                      server ? "this Host is not the server's: see memtool server --public-host"
                             : "this server answers 127.0.0.1 only",
                      "web_host");
    if (!get && !own_origin(in, host, kind))
        return refuse(page, 403, "permission_error",
                      "a change needs the page's own Origin: this one is missing or another's",
                      "web_origin");
    /* memtool web's /healthz is httpd's, once the Host is known good. */
    if (!server && strcmp(path, "/healthz") == 0)
        return MT_HTTPD_PASS;
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
    /* A session opened with a key lasts no longer than the key (its tenant
     * and access are the key's as the keys file says now): a revoked key ends
     * it. */
    memset(caller, 0, sizeof(*caller));
    if (!find_session(&s, w, in) || (server && mt_keys_find(&caller->key, w->keys, s.key_id) < 0)) {
        /* The page asks how to log in: with a key (memtool server) or the token. */
        if (get && at(w, path, "/session"))
            return json_answer(page, json_pack("{s:s}", "login", server ? "key" : "token"),
                               "web_unauthorized", 401);
        return refuse(page, 401, "authentication_error",
                      server ? "no session, or it expired, or its key is no longer valid: log in "
                               "with a key"
                             : "no session, or it expired: open the address memtool web printed",
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
    if (!server)
        snprintf(caller->key.tenant, sizeof(caller->key.tenant), "%s", w->tenant);
    /* Changes from the page are the page's: web:... */
    snprintf(caller->actor, sizeof(caller->actor), "%s", s.actor);
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
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
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

/* A lifetime in seconds from the environment (for tests), else dflt; as ns. */
static int64_t lifetime_ns(const char *var, int64_t dflt)
{
    const char *v = getenv(var);
    char *end = NULL;
    long long n;

    if (!v || !*v)
        return dflt * 1000000000LL;
    n = strtoll(v, &end, 10);
    return *end || n <= 0 || n > dflt ? dflt * 1000000000LL : (int64_t)n * 1000000000LL;
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
    w->idle_ns = lifetime_ns("MEMTOOL_WEB_SESSION_IDLE_S", IDLE_S);
    w->max_ns = lifetime_ns("MEMTOOL_WEB_SESSION_MAX_S", MAX_S);
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

/* listen's host part ("127.0.0.1" of "127.0.0.1:8177", "[::1]" of
 * "[::1]:0"), and --public-host's names, into w. */
static int set_hosts(mt_web *w, const char *listen, const char *public_hosts)
{
    const char *colon = strrchr(listen, ':'), *p, *comma;
    size_t n;

    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(w->listen_host))
        return mt_error_set(MT_EINVAL, "--listen %s: ADDR:PORT", listen);
    memcpy(w->listen_host, listen, (size_t)(colon - listen));
    w->listen_host[colon - listen] = '\0';
    w->loopback = strncmp(w->listen_host, "127.", 4) == 0 || strcmp(w->listen_host, "[::1]") == 0 ||
                  strcasecmp(w->listen_host, "localhost") == 0;
    for (p = public_hosts; p && *p; p = comma ? comma + 1 : p + n) {
        comma = strchr(p, ',');
        n = comma ? (size_t)(comma - p) : strlen(p);
        if (!n || n >= sizeof(w->public_hosts[0]) || memchr(p, '/', n) || memchr(p, ' ', n))
            return mt_error_set(MT_EINVAL,
                                "--public-host: NAME or NAME:PORT, comma-separated, as a "
                                "browser's Host header names this server");
        if (w->npublic == PUBLIC_HOSTS)
            return mt_error_set(MT_EINVAL, "--public-host: at most %d names", PUBLIC_HOSTS);
        memcpy(w->public_hosts[w->npublic], p, n);
        w->public_hosts[w->npublic++][n] = '\0';
    }
    return 0;
}

int mt_web_new_server(mt_web **out, const char *keys_path, const char *listen,
                      const char *public_hosts)
{
    mt_web *w;
    int rc;

    *out = NULL;
    if ((rc = mt_web_new(&w, NULL, 0)) < 0)
        return rc;
    if ((rc = set_hosts(w, listen, public_hosts)) < 0 ||
        (rc = mt_keys_open(&w->keys, keys_path)) < 0) {
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

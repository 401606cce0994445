/*
 * memtool web: the memory browser. A page (HTML, CSS and JS compiled into
 * the binary) that is one more client of memtool server's API, served by
 * the same server (src/httpd) through its front-end hook: this file adds the
 * page's assets, a one-time login token exchanged for a session cookie, the
 * CSRF token every change needs, and the security headers of every answer.
 * The page's data all comes from the API (/v1/...) and from memtool's own
 * calls beside it (/memtool/v1/...), as the session's caller.
 */
#ifndef MT_WEB_H
#define MT_WEB_H

#include "httpd/httpd.h"

typedef struct mt_web mt_web;

/* memtool web: a browser front end for tenant's memories (NULL:
 * "default"), on 127.0.0.1, opened by a one-time login token. With
 * open_browser, the desktop's browser is started on the URL once the server
 * listens (xdg-open, when DISPLAY or WAYLAND_DISPLAY is set). */
int mt_web_new(mt_web **out, const char *tenant, int open_browser);

/* memtool server's page at /ui/: a person logs in with a key of keys_path
 * (the server's keys file); the session keeps the key's id, and looks it up
 * again on every request (a revoked key ends its sessions). The page, and
 * API requests with its cookie, answer only a Host naming listen's address
 * (ADDR:PORT, as the server's --listen) or one of public_hosts (NULL, or
 * NAME[:PORT] names, comma-separated). Requests without the session cookie
 * are left to the server's key check, as before. */
int mt_web_new_server(mt_web **out, const char *keys_path, const char *listen,
                      const char *public_hosts);
void mt_web_free(mt_web *w);

/* The hook to give mt_httpd_run (valid while w is). */
const mt_httpd_hook *mt_web_hook(mt_web *w);

#endif

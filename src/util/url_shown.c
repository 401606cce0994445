/* A URL as an error message may show it (url_shown.h). */
#include "util/url_shown.h"

#include <stdio.h>
#include <string.h>

void mt_url_shown(char *out, size_t size, const char *url)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : NULL;
    const char *end = host ? host + strcspn(host, "/?#") : NULL;
    const char *at = NULL, *p;

    /* The last '@' before the path ends the credentials. */
    for (p = host; p && p < end; p++)
        if (*p == '@')
            at = p;
    if (!at) {
        snprintf(out, size, "%s", url);
        return;
    }
    snprintf(out, size, "%.*s***%s", (int)(host - url), url, at);
}

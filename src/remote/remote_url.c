/* A remote store's URL: https://HOST[:PORT]/v1/memory_stores/memstore_ID, and
 * http:// only on a loopback host (it would send the key in the clear). */
#include <stdlib.h>
#include <string.h>

#include "remote/remote_store.h"
#include "util/url_shown.h"

/* "https://HOST[:PORT]/v1/memory_stores/memstore_ID": the base, the id. */
int mt_remote_url_parse(char **base, char **id, const char *url)
{
    char shown[240];
    const char *host, *end, *p, *sid;
    size_t hn, i;
    int https = strncmp(url, "https://", 8) == 0, loopback;

    *base = *id = NULL;
    if (!https && strncmp(url, "http://", 7) != 0)
        return mt_error_set(MT_EINVAL, "not a remote store's URL");
    host = url + (https ? 8 : 7);
    end = strchr(host, '/');
    if (!end)
        goto form;
    hn = (size_t)(end - host);
    for (i = 0; i < hn; i++)
        if (!((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
              (host[i] >= '0' && host[i] <= '9') || strchr(".-:[]", host[i])))
            goto form;
    if (hn == 0 || hn > 255)
        goto form;
    p = end;
    if (strncmp(p, "/v1/memory_stores/", 18) != 0)
        goto form;
    sid = p + 18;
    if (strncmp(sid, "memstore_", 9) != 0 || !sid[9])
        goto form;
    for (i = 9; sid[i]; i++)
        if (!((sid[i] >= 'a' && sid[i] <= 'z') || (sid[i] >= 'A' && sid[i] <= 'Z') ||
              (sid[i] >= '0' && sid[i] <= '9') || sid[i] == '_' || sid[i] == '-'))
            break;
    if (i > 128 || (sid[i] && strcmp(sid + i, "/") != 0))
        goto form;
    {
        /* The host without its port. */
        size_t h = hn;
        if (host[0] == '[') {
            const char *close = memchr(host, ']', hn);
            h = close ? (size_t)(close - host) + 1 : hn;
        } else if (memchr(host, ':', hn)) {
            h = (size_t)((const char *)memchr(host, ':', hn) - host);
        }
        loopback = (h == 9 && strncmp(host, "localhost", 9) == 0) ||
                   (h == 9 && strncmp(host, "127.0.0.1", 9) == 0) ||
                   (h == 5 && strncmp(host, "[::1]", 5) == 0);
    }
    if (!https && !loopback)
        return mt_error_set(MT_EINVAL,
                            "http:// sends the API key in the clear: a remote store takes "
                            "https://, and http:// only on this machine (127.0.0.1, [::1], "
                            "localhost)");
    if (!(*base = strndup(url, (size_t)(sid - url) + i)) || !(*id = strndup(sid, i))) {
        free(*base);
        *base = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    return 0;
form:
    mt_url_shown(shown, sizeof(shown), url);
    return mt_error_set(MT_EINVAL,
                        "'%s' is not a remote store's URL: write "
                        "https://HOST[:PORT]/v1/memory_stores/memstore_ID",
                        shown);
}

int mt_remote_url_check(const char *url)
{
    char *base, *id;
    int rc = mt_remote_url_parse(&base, &id, url);

    free(base);
    free(id);
    return rc;
}

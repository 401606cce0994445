/*
 * libcurl, loaded when first needed: by the agent (src/api) and by the remote
 * store (src/remote). Linking it would make every `memtool call`, `serve` and
 * `mcp` start map some thirty libraries (TLS, Kerberos, LDAP...) that only
 * these use: most of a short process's time. It lives in util, beneath both.
 */
#ifndef MT_UTIL_CURL_LOAD_H
#define MT_UTIL_CURL_LOAD_H

#include <curl/curl.h>

typedef struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *curl);
    void (*easy_reset)(CURL *curl);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
} mt_curl_fns;

/* Load and initialise libcurl once per process; *out is valid from then on. */
int mt_curl_load(const mt_curl_fns **out);

#endif

/* memtool server: Anthropic's memory-store API over HTTP, on memtool's stores. */
#ifndef MT_HTTPD_H
#define MT_HTTPD_H

#include <stddef.h>

#include <memtool.h>

#define MT_HTTPD_DEFAULT_LISTEN "127.0.0.1:8177"

typedef struct {
    const char *listen;    /* ADDR:PORT ("[::1]:PORT"); port 0 picks a free one */
    const char *store_url; /* the store every memory store is a tenant of */
    mt_options opts;       /* limits, durability, secrets: as every command's */
    const char *keys_path; /* the keys file (memtool server keys) */
    const char *tls_cert;  /* PEM files: HTTPS; both or neither */
    const char *tls_key;
    int insecure_http;  /* plain HTTP on an address other than loopback, told so */
    size_t max_body;    /* bytes of a request body; 0: 1 MiB */
    unsigned max_conns; /* connections at once; 0: 256 */
    unsigned timeout_s; /* idle seconds before a connection is closed; 0: 30 */
    unsigned threads;   /* 0: 4 per core, at least 8 */
} mt_httpd_config;

/* Serve until SIGTERM or SIGINT (requests in flight finish first). Prints
 * one line on stdout once listening: the base URL. Logs go to stderr, one
 * JSON object a line. 0, or an error (mt_error_last says which). */
int mt_httpd_run(const mt_httpd_config *cfg);

#endif

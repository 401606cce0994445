/* memtool server: the memory-store API over HTTP; memtool server keys. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "httpd/httpd.h"
#include "httpd/keys.h"
#include "web/web.h"

static const char help[] =
    "usage: memtool [options] server [--listen ADDR:PORT] [--keys FILE]\n"
    "                                [--tls-cert PEM --tls-key PEM] [--insecure-http]\n"
    "                                [--public-host NAME[:PORT],...]\n"
    "       memtool server keys add|list|revoke ...\n\n"
    "Serve Anthropic's memory-store API (the SDKs' client.beta.memoryStores, memories and\n"
    "memoryVersions) over HTTP, on the store that --store or --root names: code written\n"
    "against the SDK works unchanged with its base URL set to this server. Each memory\n"
    "store is a tenant of that store, so the memory tool sees the same memories and\n"
    "history (memtool --tenant T --memory-store ID call ...). Requests need a key of\n"
    "the keys file (memtool server keys add TENANT), sent as Authorization: Bearer KEY\n"
    "or x-api-key: KEY; a key sees only its tenant's stores. Once listening, prints\n"
    "one line on stdout, the base URL; logs go to stderr, one JSON object a line.\n"
    "SIGTERM or SIGINT stop it after the requests in flight. docs/server.md has more.\n\n"
    "Options:\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:8177; port 0: any free one)\n"
    "  --keys FILE         the keys file (default: $XDG_CONFIG_HOME/memtool/keys, else\n"
    "                      ~/.config/memtool/keys)\n"
    "  --tls-cert PEM      HTTPS with this certificate (and --tls-key)\n"
    "  --tls-key PEM       the certificate's private key\n"
    "  --insecure-http     plain HTTP on an address other machines reach (keys and\n"
    "                      memories cross the network in the clear)\n"
    "  --public-host NAMES the Host names (NAME or NAME:PORT, comma-separated) the page\n"
    "                      at /ui/ answers besides the --listen address: a proxy's or\n"
    "                      DNS name; any other Host is refused there (DNS rebinding)\n"
    "  --max-body BYTES    longest request body (default 1M; K, M suffixes); longer: 413\n"
    "  --max-connections N connections at once (default 256)\n"
    "  --threads N         threads answering requests (default 4 per core, at least 8)\n";

typedef struct {
    const char *listen, *keys, *tls_cert, *tls_key, *public_host;
    int insecure_http;
    uint64_t max_body, max_conns, threads;
} server_opts;

static const mt_cli_option options[] = {
    {"listen", MT_CLI_STRING, offsetof(server_opts, listen), 0, 0, 0},
    {"keys", MT_CLI_STRING, offsetof(server_opts, keys), 0, 0, 0},
    {"tls-cert", MT_CLI_STRING, offsetof(server_opts, tls_cert), 0, 0, 0},
    {"tls-key", MT_CLI_STRING, offsetof(server_opts, tls_key), 0, 0, 0},
    {"public-host", MT_CLI_STRING, offsetof(server_opts, public_host), 0, 0, 0},
    {"insecure-http", MT_CLI_FLAG, offsetof(server_opts, insecure_http), 0, 0, 0},
    {"max-body", MT_CLI_NUMBER, offsetof(server_opts, max_body), 0, 1024, 64u << 20},
    {"max-connections", MT_CLI_NUMBER, offsetof(server_opts, max_conns), 0, 1, 100000},
    {"threads", MT_CLI_NUMBER, offsetof(server_opts, threads), 0, 1, 1024},
    {NULL, 0, 0, 0, 0, 0}};

static const mt_cli_command command = {"server", help, options, 0, 0, NULL, 0};

int mt_cmd_server(const mt_cli *cli, int argc, char **argv)
{
    server_opts o = {0};
    mt_httpd_config cfg = {0};
    mt_web *web = NULL;
    char *url = NULL, *keys = NULL;
    int status, failed;

    if (argc > 1 && strcmp(argv[1], "keys") == 0)
        return mt_cmd_server_keys(cli, argc - 1, argv + 1);
    if ((status = mt_cli_parse(&command, &o, argc, argv)) >= 0)
        return status;
    /* With --encrypt, every memory store is sealed with the key, as the
     * command's own store would be (one key for the process). */
    cfg.key = mt_cli_key(cli, &failed);
    if (failed)
        return MT_EXIT_USAGE;
    if (!o.keys && !(o.keys = keys = mt_keys_default_path())) {
        fprintf(stderr, "memtool server: %s (or give --keys FILE)\n", mt_error_last()->message);
        return MT_EXIT_USAGE;
    }
    if (!(url = mt_cli_store_url(cli))) {
        free(keys);
        fprintf(stderr, "memtool server: out of memory\n");
        return MT_EXIT_TOOL;
    }
    cfg.listen = o.listen;
    cfg.store_url = url;
    cfg.opts = cli->opts;
    cfg.opts.tenant = NULL;
    cfg.keys_path = o.keys;
    cfg.tls_cert = o.tls_cert;
    cfg.tls_key = o.tls_key;
    cfg.insecure_http = o.insecure_http;
    cfg.max_body = (size_t)o.max_body;
    cfg.max_conns = (unsigned)o.max_conns;
    cfg.threads = (unsigned)o.threads;
    /* The memory browser at /ui/, for a person with a key (docs/web.md). */
    if (mt_web_new_server(&web, o.keys, o.listen ? o.listen : MT_HTTPD_DEFAULT_LISTEN,
                          o.public_host) < 0) {
        status = MT_EXIT_TOOL;
        fprintf(stderr, "memtool server: %s\n", mt_error_last()->message);
        goto done;
    }
    cfg.hook = mt_web_hook(web);
    status = mt_httpd_run(&cfg) < 0 ? MT_EXIT_TOOL : MT_EXIT_OK;
    if (status)
        fprintf(stderr, "memtool server: %s\n", mt_error_last()->message);
done:
    mt_web_free(web);
    free(url);
    free(keys);
    return status;
}

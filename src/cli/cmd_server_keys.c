/* memtool server keys add|list|revoke: the API keys that open memtool server. */
#include <getopt.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "cli/cli.h"
#include "cli/input.h"
#include "cli/spec.h"
#include "httpd/keys.h"

#define NAME "server keys"

static const char help[] =
    "usage: memtool server keys add TENANT [--read-only] [--admin] [--keys FILE]\n"
    "       memtool server keys list [--json] [--keys FILE]\n"
    "       memtool server keys revoke ID [--keys FILE]\n\n"
    "The API keys of memtool server: each opens one tenant of the store, to read and\n"
    "write or only to read. The keys file holds each key's id, tenant, access, creation\n"
    "time and SHA-256, never the key itself: a key is shown once, by add. A running\n"
    "server rereads the file when it changes, so an added or revoked key takes effect\n"
    "within a second, without a restart.\n\n"
    "  add TENANT    make a key for TENANT; the key alone goes to stdout\n"
    "  list          the keys' ids, tenants, access and creation times\n"
    "  revoke ID     remove the key with that id (as list shows it)\n\n"
    "Options:\n"
    "  --keys FILE   the keys file (default: $XDG_CONFIG_HOME/memtool/keys, else\n"
    "                ~/.config/memtool/keys); it must be private (chmod 600)\n"
    "See memtool server keys add --help (list, revoke) for each one's options.\n";

static const char help_add[] =
    "usage: memtool server keys add TENANT [--read-only] [--admin] [--keys FILE]\n\n"
    "Make an API key for TENANT (named like a file: 1 to 255 bytes, no '/', '~' or\n"
    "control characters) and add its SHA-256 to the keys file, created (mode 0600,\n"
    "its directory 0700) when missing. The key, mtk_ and 43 characters, is printed on\n"
    "stdout and nothing else is: it is shown this once, so keep it (a secret store,\n"
    "the client's environment). What was added is told on stderr.\n\n"
    "Options:\n"
    "  --read-only   the key may only read the tenant's memories\n"
    "  --admin       the key may also read the server's /metrics\n"
    "  --keys FILE   the keys file (default: $XDG_CONFIG_HOME/memtool/keys, else\n"
    "                ~/.config/memtool/keys)\n";

static const char help_list[] =
    "usage: memtool server keys list [--json] [--keys FILE]\n\n"
    "List the keys of the keys file: id, tenant, access (read-write or read-only, and\n"
    "admin) and creation time, one a line. Never a key nor its hash.\n\n"
    "Options:\n"
    "  --json        a JSON array of {\"id\", \"tenant\", \"read_only\", \"admin\",\n"
    "                \"created_at\"}\n"
    "  --keys FILE   the keys file (default: $XDG_CONFIG_HOME/memtool/keys, else\n"
    "                ~/.config/memtool/keys)\n";

static const char help_revoke[] =
    "usage: memtool server keys revoke ID [--keys FILE]\n\n"
    "Remove the key with id ID (apikey_..., as list shows it) from the keys file. A\n"
    "running server refuses it within a second.\n\n"
    "Options:\n"
    "  --keys FILE   the keys file (default: $XDG_CONFIG_HOME/memtool/keys, else\n"
    "                ~/.config/memtool/keys)\n";

typedef struct {
    const char *keys;
    int read_only, admin, json;
} keys_opts;

static const mt_cli_option add_options[] = {
    {"read-only", MT_CLI_FLAG, offsetof(keys_opts, read_only), 0, 0, 0},
    {"admin", MT_CLI_FLAG, offsetof(keys_opts, admin), 0, 0, 0},
    {"keys", MT_CLI_STRING, offsetof(keys_opts, keys), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_option list_options[] = {
    {"json", MT_CLI_FLAG, offsetof(keys_opts, json), 0, 0, 0},
    {"keys", MT_CLI_STRING, offsetof(keys_opts, keys), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_option revoke_options[] = {
    {"keys", MT_CLI_STRING, offsetof(keys_opts, keys), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

/* A failure of the keys file: a bad tenant is the command line's to fix
 * (exit 2); anything else, the file or the disk (exit 1). */
static int fail(void)
{
    const mt_error *e = mt_error_last();

    fprintf(stderr, "memtool %s: %s\n", NAME, e->message);
    return e->code == MT_EINVAL ? MT_EXIT_USAGE : MT_EXIT_TOOL;
}

/* --keys, else the default file (malloc'd); NULL after printing why. */
static char *keys_path(const keys_opts *o)
{
    char *path = o->keys ? strdup(o->keys) : mt_keys_default_path();

    if (!path)
        mt_cli_usage_error(NAME, "%s", o->keys ? "out of memory" : mt_error_last()->message);
    return path;
}

/* RFC 3339 to the second: a key's creation needs no finer. */
static void format_created(char out[32], int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, 32, "?");
}

static int keys_add(const char *path, const keys_opts *o, const char *tenant)
{
    mt_key_info info;
    char *key = NULL, *line = NULL;
    int status;

    if (mt_keys_add(&key, &info, path, tenant, o->read_only, o->admin) < 0)
        return fail();
    /* stdout is the key alone, so `KEY=$(memtool server keys add t)` works. */
    if (asprintf(&line, "%s\n", key) < 0) {
        line = NULL;
        status = mt_cli_usage_error(NAME, "out of memory: revoke %s", info.id);
        goto done;
    }
    if ((status = mt_cli_put_bytes(NAME, line, strlen(line))) != MT_EXIT_OK) {
        fprintf(stderr, "memtool %s: the key %s was added but could not be shown: revoke it\n",
                NAME, info.id);
        goto done;
    }
    fprintf(stderr,
            "memtool %s: %s for tenant %s (%s%s) added to %s; the key is shown once: keep it\n",
            NAME, info.id, info.tenant, info.read_only ? "read-only" : "read-write",
            info.admin ? ", admin" : "", path);
done:
    free(line);
    free(key);
    return status;
}

static int keys_list(const char *path, const keys_opts *o)
{
    mt_key_info *list = NULL;
    size_t n = 0, i, width = 6;
    char created[32], access[32];
    json_t *arr;
    int status = MT_EXIT_OK;

    if (mt_keys_list(&list, &n, path) < 0)
        return fail();
    if (o->json) {
        if ((arr = json_array()))
            for (i = 0; i < n; i++) {
                format_created(created, list[i].created_ms);
                if (json_array_append_new(
                        arr, json_pack("{s:s, s:s, s:b, s:b, s:s}", "id", list[i].id, "tenant",
                                       list[i].tenant, "read_only", list[i].read_only, "admin",
                                       list[i].admin, "created_at", created)) < 0) {
                    json_decref(arr);
                    arr = NULL;
                    break;
                }
            }
        status = mt_cli_print_json(NAME, arr);
        goto done;
    }
    if (n == 0)
        fprintf(stderr, "memtool %s: no keys in %s\n", NAME, path);
    for (i = 0; i < n; i++)
        if (strlen(list[i].tenant) > width)
            width = strlen(list[i].tenant);
    for (i = 0; i < n; i++) {
        format_created(created, list[i].created_ms);
        snprintf(access, sizeof(access), "%s%s", list[i].read_only ? "read-only" : "read-write",
                 list[i].admin ? ", admin" : "");
        printf("%s  %-*s  %-17s  %s\n", list[i].id, (int)width, list[i].tenant, access, created);
    }
    if (fflush(stdout) != 0)
        status = mt_cli_usage_error(NAME, "cannot write the list to stdout");
done:
    free(list);
    return status;
}

static int keys_revoke(const char *path, const char *id)
{
    if (mt_keys_revoke(path, id) < 0)
        return fail();
    fprintf(stderr,
            "memtool %s: %s revoked in %s; a server using the file refuses it within a second\n",
            NAME, id, path);
    return MT_EXIT_OK;
}

int mt_cmd_server_keys(const mt_cli *cli, int argc, char **argv)
{
    /* add and revoke take one word; none is told below, not by a page of help. */
    mt_cli_command cmd = {NULL, NULL, NULL, 0, 1, NULL, 0};
    keys_opts o = {NULL, 0, 0, 0};
    const char *sub = argc > 1 ? argv[1] : NULL;
    char *path;
    int status;

    (void)cli;
    if (!sub) {
        fputs(help, stderr);
        return MT_EXIT_USAGE;
    }
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    if (strcmp(sub, "add") == 0) {
        cmd.name = NAME " add";
        cmd.help = help_add;
        cmd.options = add_options;
    } else if (strcmp(sub, "list") == 0) {
        cmd.name = NAME " list";
        cmd.help = help_list;
        cmd.options = list_options;
        cmd.min_words = cmd.max_words = 0;
    } else if (strcmp(sub, "revoke") == 0) {
        cmd.name = NAME " revoke";
        cmd.help = help_revoke;
        cmd.options = revoke_options;
    } else {
        return mt_cli_usage_error(NAME,
                                  "'%s' is not a keys command: add, list or revoke (see "
                                  "memtool server keys --help)",
                                  sub);
    }
    optind = 0; /* the subcommand's options, from its own start */
    if ((status = mt_cli_parse(&cmd, &o, argc - 1, argv + 1)) >= 0)
        return status;
    if (cmd.max_words == 1 && argc - 1 - optind == 0)
        return mt_cli_usage_error(cmd.name, "%s",
                                  cmd.help == help_add
                                      ? "name the tenant the key opens: memtool server keys add "
                                        "TENANT"
                                      : "name the key to revoke: memtool server keys revoke ID "
                                        "(list shows the ids)");
    if (!(path = keys_path(&o)))
        return MT_EXIT_USAGE;
    status = strcmp(sub, "add") == 0    ? keys_add(path, &o, argv[optind + 1])
             : strcmp(sub, "list") == 0 ? keys_list(path, &o)
                                        : keys_revoke(path, argv[optind + 1]);
    free(path);
    return status;
}

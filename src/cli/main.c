/* memtool: the memory tool from the command line. Global options come before
 * the subcommand, as in git; each subcommand lives in its own cmd_<name>.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memtool/store.h>

#include "cli/cli.h"
#include "core/memstore.h"
#include "guard/secrets.h"
#include "core/memory.h"
#include "util/lines.h"

typedef struct {
    const char *name;
    mt_cli_fn run;
    const char *summary;
} mt_cli_command;

static const mt_cli_command commands[] = {
    {"call", mt_cmd_call, "run one JSON tool input (or tool_use block) from stdin"},
    {"view", mt_cmd_view, "show a file with line numbers, or a directory"},
    {"create", mt_cmd_create, "create a file from FILE or stdin"},
    {"str-replace", mt_cmd_str_replace, "replace a unique string in a file"},
    {"insert", mt_cmd_insert, "insert text after a line of a file"},
    {"delete", mt_cmd_delete, "delete a file or directory"},
    {"rename", mt_cmd_rename, "rename or move a file or directory"},
    {"cat", mt_cmd_cat, "print a file's exact content"},
    {"search", mt_cmd_search, "find memories by words, best match first"},
    {"serve", mt_cmd_serve, "answer JSON tool inputs line by line (for programs)"},
    {"server", mt_cmd_server,
     "serve the memory-store API over HTTP (memtool server keys: its keys)"},
    {"web", mt_cmd_web, "browse, search and correct the memories in a web page (127.0.0.1)"},
    {"mcp", mt_cmd_mcp, "run a Model Context Protocol server on stdio"},
    {"init", mt_cmd_init, "seed the store with the project pattern's files"},
    {"status", mt_cmd_status, "where the project stands: features passing, the last entry"},
    {"chat", mt_cmd_chat, "talk with Claude, which keeps its memory in the store"},
    {"run", mt_cmd_run, "give Claude one task with memory, then exit"},
    {"log", mt_cmd_log, "list the versions of memories, newest first"},
    {"show", mt_cmd_show, "print a version's content"},
    {"diff", mt_cmd_diff, "show how a version differs from the one before (or another)"},
    {"restore", mt_cmd_restore, "make a version's content current again"},
    {"undo", mt_cmd_undo, "go back to the version before a memory's newest"},
    {"redact", mt_cmd_redact, "erase a version's content, path and indexed words"},
    {"secrets", mt_cmd_secrets, "secrets scan: find (and --redact) secrets already stored"},
    {"key", mt_cmd_key, "key new PATH: make a key file for --encrypt"},
    {"rekey", mt_cmd_rekey, "re-encrypt every memory with a new key; --status: keys in use"},
    {"migrate", mt_cmd_migrate, "copy every memory of one store into another"},
    {"gc", mt_cmd_gc, "delete the memories nobody viewed or changed for a while"},
    {"stats", mt_cmd_stats, "the store at a glance: usage, limits, largest and idlest"},
    {"store", mt_cmd_store,
     "store upgrade [URL]: bring a schema to this memtool's; store vacuum (PostgreSQL)"},
};

static void usage(FILE *out)
{
    size_t i;

    fprintf(out, "usage: memtool [options] <command> [<args>]\n\n"
                 "The memory tool for AI agents: the view, create, str_replace, insert, delete\n"
                 "and rename commands of memory_20250818 on a store of files.\n\n"
                 "Commands:\n");
    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nOptions (each also read from the environment variable shown):\n"
            "  --store URL             the store: file:DIR, sqlite:PATH,\n"
            "                          postgresql://USER@HOST/DB or a memory store's\n"
            "                          https://HOST/v1/memory_stores/memstore_ID\n"
            "                          (MEMTOOL_STORE; its key in MEMTOOL_API_KEY)\n"
            "  --root DIR              the same as --store file:DIR (MEMTOOL_ROOT; default\n"
            "                          $XDG_DATA_HOME/memtool/memories)\n"
            "  --tenant NAME           whose memories, in a store shared by many\n"
            "                          (MEMTOOL_TENANT; default)\n"
            "  --memory-store ID       a memory store of memtool server, the tenant's: the\n"
            "                          memories the API serves (MEMTOOL_MEMORY_STORE)\n"
            "  --max-file-size BYTES   largest file (MEMTOOL_MAX_FILE_SIZE; 1M)\n"
            "  --max-store-size BYTES  all files together (MEMTOOL_MAX_STORE_SIZE; 100M)\n"
            "  --max-files N           number of files (MEMTOOL_MAX_FILES; 10000)\n"
            "  --max-dirs N            number of directories (MEMTOOL_MAX_DIRS; 1000)\n"
            "  --lock-timeout SECONDS  longest wait for the store's lock\n"
            "                          (MEMTOOL_LOCK_TIMEOUT; 5)\n"
            "  --view-limit CHARS      longest view result (MEMTOOL_VIEW_LIMIT; 16000)\n"
            "  --durability MODE       full, file or none (MEMTOOL_DURABILITY; full)\n"
            "  --actor NAME            who the changes are recorded as (MEMTOOL_ACTOR;\n"
            "                          cli, serve, mcp:<client>, agent:<session>)\n"
            "  --history on|off        keep a version of every change (MEMTOOL_HISTORY; on)\n"
            "  --history-keep N        versions kept per memory, 0 no cap\n"
            "                          (MEMTOOL_HISTORY_KEEP; 100)\n"
            "  --history-days N        days a version is kept, 0 forever\n"
            "                          (MEMTOOL_HISTORY_DAYS; 90)\n"
            "  --audit FILE            append a JSON line per tool call to FILE (MEMTOOL_AUDIT)\n"
            "  --expire-after DURATION serve, mcp, chat and run delete memories idle that long\n"
            "                          (30d, 12h; at start, then between commands)\n"
            "                          (MEMTOOL_EXPIRE_AFTER; off)\n"
            "  --encrypt               encrypt every memory and version (MEMTOOL_ENCRYPT=on);\n"
            "                          the key: --key-file, or MEMTOOL_PASSPHRASE\n"
            "  --key-file PATH         the key (MEMTOOL_KEY_FILE; implies --encrypt); a\n"
            "                          passphrase in MEMTOOL_PASSPHRASE implies it too. An\n"
            "                          encrypted store records it: opened without its key,\n"
            "                          or with another, every command refuses\n"
            "  --old-key-file PATH     also read what another key encrypted: during a rekey,\n"
            "                          or after one that left something (MEMTOOL_OLD_KEY_FILE)\n"
            "  --secrets POLICY        what a write holding a secret does: reject, redact or\n"
            "                          off (MEMTOOL_SECRETS; reject)\n"
            "  --secrets-allow REGEX   a secret REGEX matches is allowed; repeatable\n"
            "                          (MEMTOOL_SECRETS_ALLOW: one REGEX per line)\n"
            "  -h, --help              this help; `memtool <command> --help` for a command\n"
            "  --version               the version\n"
            "Sizes take a K, M or G suffix (powers of 1024). Options go before the\n"
            "command (memtool --store URL view PATH); one after it is refused, named.\n");
}

/* The allow-list: the environment's regexes, then the command line's. The
 * strings live as long as the process (argv, or a copy of the variable). */
#define ALLOW_MAX 256
static const char *allow_list[ALLOW_MAX];

static int allow_add(mt_cli *cli, const char *regex)
{
    mt_secrets_allow *compiled;

    if (cli->opts.secrets_allow_count == ALLOW_MAX)
        return mt_cli_usage_error(NULL, "--secrets-allow: at most %d regexes", ALLOW_MAX);
    /* Compiled now, so a bad one is named before anything runs. */
    if (mt_secrets_allow_compile(&compiled, &regex, 1) < 0)
        return mt_cli_usage_error(NULL, "--secrets-allow: %s", mt_error_last()->message);
    mt_secrets_allow_free(compiled);
    allow_list[cli->opts.secrets_allow_count++] = regex;
    cli->opts.secrets_allow = allow_list;
    return 0;
}

/* MEMTOOL_SECRETS_ALLOW: one regex per line; empty lines are skipped. */
static int allow_from_env(mt_cli *cli, const char *value)
{
    static char *copy;
    char *line, *next;

    if (!(copy = strdup(value)))
        return mt_cli_usage_error(NULL, "out of memory");
    for (line = copy; line; line = next) {
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        if (*line && allow_add(cli, line) != 0)
            return MT_EXIT_USAGE;
    }
    return 0;
}

/* from: 1 the environment, 2 the command line. */
static int set_option(mt_cli *cli, int from, const char *name, const char *value)
{
    uint64_t *target = NULL;

    if (strcmp(name, "secrets") == 0) {
        if (mt_secrets_policy_parse(&cli->opts.secrets, value) < 0)
            return mt_cli_usage_error(NULL, "--secrets: %s", mt_error_last()->message);
        return 0;
    }
    if (strcmp(name, "secrets-allow") == 0)
        return from == 1 ? allow_from_env(cli, value) : allow_add(cli, value);

    if (strcmp(name, "root") == 0 || strcmp(name, "store") == 0) {
        int is_store = name[0] == 's';
        if (!*value)
            return mt_cli_usage_error(NULL, is_store ? "--store needs a URL (file:DIR, "
                                                       "sqlite:PATH or postgresql://...)"
                                                     : "--root needs a directory");
        /* One store: --root is the short form of --store file:DIR, so a
         * command line naming both is ambiguous, and so is an environment
         * setting both; the command line overrides the environment. */
        if (cli->where_from == from && (is_store ? cli->root != NULL : cli->store != NULL))
            return mt_cli_usage_error(NULL, "%s",
                                      from == 1 ? "MEMTOOL_STORE and MEMTOOL_ROOT are both set: "
                                                  "unset one (--root DIR is --store file:DIR)"
                                                : "give --store or --root, not both (--root DIR "
                                                  "is --store file:DIR)");
        cli->where_from = from;
        cli->store = is_store ? value : NULL;
        cli->root = is_store ? NULL : value;
        return 0;
    }
    if (strcmp(name, "tenant") == 0) {
        /* The library reads "" as the default tenant; on the command line it
         * is a mistake (an unset variable in a script), not a choice. */
        if (!*value)
            return mt_cli_usage_error(NULL, "--tenant needs a name (1 to 255 bytes); the "
                                            "store's own memories are --tenant default");
        if (mt_store_tenant_check(value) < 0)
            return mt_cli_usage_error(NULL, "--tenant: %s", mt_error_last()->message);
        cli->opts.tenant = value;
        return 0;
    }
    if (strcmp(name, "memory-store") == 0) {
        size_t i, n = strlen(value);
        int ok = n == 25 && strncmp(value, "memstore_", 9) == 0;
        for (i = 9; ok && i < n; i++)
            ok = (value[i] >= '0' && value[i] <= '9') || (value[i] >= 'a' && value[i] <= 'f');
        if (!ok)
            return mt_cli_usage_error(NULL,
                                      "--memory-store needs a memory store's id "
                                      "(memstore_ and 16 hex digits, as memtool server "
                                      "gives it), not '%s'",
                                      value);
        cli->memory_store = value;
        return 0;
    }
    if (strcmp(name, "actor") == 0) {
        if (mt_actor_check(value) < 0)
            return mt_cli_usage_error(NULL, "--actor: %s", mt_error_last()->message);
        cli->opts.actor = value;
        cli->actor_given = 1;
        return 0;
    }
    if (strcmp(name, "encrypt") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return mt_cli_usage_error(NULL, "MEMTOOL_ENCRYPT is on or off, not '%s'", value);
        cli->encrypt = strcmp(value, "on") == 0;
        return 0;
    }
    if (strcmp(name, "key-file") == 0) {
        if (!*value)
            return mt_cli_usage_error(NULL, "--key-file needs a file");
        cli->key_file = value;
        cli->encrypt = 1;
        return 0;
    }
    if (strcmp(name, "old-key-file") == 0) {
        if (!*value)
            return mt_cli_usage_error(NULL, "--old-key-file needs a file");
        cli->old_key_file = value;
        return 0;
    }
    if (strcmp(name, "audit") == 0) {
        if (!*value)
            return mt_cli_usage_error(NULL, "--audit needs a file");
        cli->opts.audit = value;
        return 0;
    }
    if (strcmp(name, "history") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return mt_cli_usage_error(NULL, "--history needs on or off, not '%s'", value);
        cli->opts.history = strcmp(value, "on") == 0;
        return 0;
    }
    if (strcmp(name, "history-keep") == 0 || strcmp(name, "history-days") == 0) {
        uint64_t n;
        if (mt_text_parse_size(&n, value) < 0 || n > 1000000000 || strpbrk(value, "KMGkmg"))
            return mt_cli_usage_error(
                NULL, "--%s needs a whole number from 0 to 1000000000, not '%s'", name, value);
        if (name[8] == 'k')
            cli->opts.history_keep = (unsigned)n;
        else
            cli->opts.history_days = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "expire-after") == 0) {
        if (strcmp(value, "off") == 0) {
            cli->expire_after_ms = 0;
            return 0;
        }
        if (mt_cli_parse_duration(&cli->expire_after_ms, value) < 0)
            return mt_cli_usage_error(NULL, "--expire-after: %s", mt_error_last()->message);
        if (cli->expire_after_ms < MT_GC_MIN_IDLE_MS)
            return mt_cli_usage_error(NULL,
                                      "--expire-after: '%s' is under a minute, the grain of "
                                      "recorded access: give 1m or more",
                                      value);
        cli->expire_after = value;
        return 0;
    }
    if (strcmp(name, "durability") == 0) {
        if (mt_durability_parse(&cli->opts.durability, value) < 0)
            return mt_cli_usage_error(NULL, "--durability: %s", mt_error_last()->message);
        return 0;
    }
    if (strcmp(name, "lock-timeout") == 0) {
        uint64_t ms;
        /* Seconds, with up to three decimals: 0.5 is half a second. */
        if (mt_cli_parse_seconds(&ms, value) < 0 || ms > 3600 * 1000)
            return mt_cli_usage_error(NULL,
                                      "--lock-timeout needs seconds from 0 to 3600 (e.g. 5 or "
                                      "0.5), not '%s'",
                                      value);
        cli->opts.lock_timeout_ms = (unsigned)ms;
        return 0;
    }
    if (strcmp(name, "max-file-size") == 0)
        target = &cli->opts.max_file_size;
    else if (strcmp(name, "max-store-size") == 0)
        target = &cli->opts.max_store_size;
    else if (strcmp(name, "max-files") == 0)
        target = &cli->opts.max_files;
    else if (strcmp(name, "max-dirs") == 0)
        target = &cli->opts.max_dirs;
    else
        target = &cli->opts.view_limit;
    if (mt_text_parse_size(target, value) < 0)
        return mt_cli_usage_error(NULL,
                                  "--%s needs a whole number (with an optional K, M or G), "
                                  "not '%s'",
                                  name, value);
    return 0;
}

/*
 * --memory-store ID: the tenant memtool server keeps that store in, with the
 * API's limits, once its record says the tenant has it (a mistyped id is an
 * error, not a new empty store).
 */
static int memory_store_select(mt_cli *cli)
{
    static char tenant[600];
    char record[64], *url = NULL;
    mt_options o = cli->opts;
    mt_memory *reg = NULL;
    char *data = NULL;
    size_t len;
    const char *t = cli->opts.tenant && *cli->opts.tenant ? cli->opts.tenant : "default";
    char *name = NULL;
    int rc;

    /* The names memtool server gives them (core/memstore.h). */
    if (mt_memstore_tenant(&name, t, "registry") < 0)
        return -1;
    snprintf(tenant, sizeof(tenant), "%s", name);
    free(name);
    /* The store as every command names it: a fixed buffer cut a long --store
     * or --root short, and a shorter path is another store. */
    if (!(url = mt_cli_store_url(cli))) {
        fprintf(stderr, "memtool: out of memory\n");
        return -1;
    }
    o.tenant = tenant;
    o.must_exist = 1;
    snprintf(record, sizeof(record), "/memories/%s.json", cli->memory_store);
    rc = mt_memory_open_url(&reg, url, &o);
    if (rc == 0)
        rc = mt_memory_read(&data, &len, reg, record);
    free(data);
    free(url);
    mt_memory_free(reg);
    if (rc < 0) {
        fprintf(stderr,
                "memtool: no memory store %s for tenant '%s' in this store (memtool server "
                "makes them: check --memory-store, --tenant and --store)\n",
                cli->memory_store, t);
        return -1;
    }
    if (mt_memstore_tenant(&name, t, cli->memory_store) < 0)
        return -1;
    snprintf(tenant, sizeof(tenant), "%s", name);
    free(name);
    cli->opts.tenant = tenant;
    /* The API's limits hold whichever side writes. */
    cli->opts.memory_store = 1;
    if (cli->opts.max_file_size > MT_MEMSTORE_MAX_CONTENT)
        cli->opts.max_file_size = MT_MEMSTORE_MAX_CONTENT;
    if (cli->opts.max_files > MT_MEMSTORE_MAX_MEMORIES)
        cli->opts.max_files = MT_MEMSTORE_MAX_MEMORIES;
    return 0;
}

static const struct {
    const char *option, *env;
} env_names[] = {
    {"store", "MEMTOOL_STORE"},
    {"root", "MEMTOOL_ROOT"},
    {"tenant", "MEMTOOL_TENANT"},
    {"memory-store", "MEMTOOL_MEMORY_STORE"},
    {"max-file-size", "MEMTOOL_MAX_FILE_SIZE"},
    {"max-store-size", "MEMTOOL_MAX_STORE_SIZE"},
    {"max-files", "MEMTOOL_MAX_FILES"},
    {"max-dirs", "MEMTOOL_MAX_DIRS"},
    {"lock-timeout", "MEMTOOL_LOCK_TIMEOUT"},
    {"view-limit", "MEMTOOL_VIEW_LIMIT"},
    {"durability", "MEMTOOL_DURABILITY"},
    {"actor", "MEMTOOL_ACTOR"},
    {"history", "MEMTOOL_HISTORY"},
    {"history-keep", "MEMTOOL_HISTORY_KEEP"},
    {"history-days", "MEMTOOL_HISTORY_DAYS"},
    {"audit", "MEMTOOL_AUDIT"},
    {"expire-after", "MEMTOOL_EXPIRE_AFTER"},
    {"encrypt", "MEMTOOL_ENCRYPT"},
    {"key-file", "MEMTOOL_KEY_FILE"},
    {"old-key-file", "MEMTOOL_OLD_KEY_FILE"},
    {"secrets", "MEMTOOL_SECRETS"},
    {"secrets-allow", "MEMTOOL_SECRETS_ALLOW"},
};

int main(int argc, char **argv)
{
    static char default_root[4096];
    mt_cli cli;
    size_t i;
    int c, idx;

    memset(&cli, 0, sizeof(cli));
    mt_options_init(&cli.opts);
    opterr = 0; /* the errors below name the option */
    /* The environment first, so the command line wins. */
    for (i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++) {
        const char *v = getenv(env_names[i].env);
        if (v && *v && set_option(&cli, 1, env_names[i].option, v) != 0) {
            fprintf(stderr, "memtool: (from %s)\n", env_names[i].env);
            return MT_EXIT_USAGE;
        }
    }
    /* A passphrase is a key, as a key file is: given, it turns encryption on
     * (a store's record refuses it when it is not the store's). */
    {
        const char *pass = getenv("MEMTOOL_PASSPHRASE");
        if (pass && *pass)
            cli.encrypt = 1;
    }
    while ((c = getopt_long(argc, argv, "+:h", mt_cli_global_options, &idx)) != -1) {
        if (c == 0) {
            if (set_option(&cli, 2, mt_cli_global_options[idx].name, optarg) != 0)
                return MT_EXIT_USAGE;
        } else if (c == 'h') {
            usage(stdout);
            return MT_EXIT_OK;
        } else if (c == 'E') {
            cli.encrypt = 1;
        } else if (c == 'V') {
            printf("memtool %s\n", MT_VERSION);
            return MT_EXIT_OK;
        } else {
            return mt_cli_option_error(NULL, c, argc, argv, NULL);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return MT_EXIT_USAGE;
    }
    if (!cli.root && !cli.store) {
        const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
        int n;
        if (xdg && *xdg == '/')
            n = snprintf(default_root, sizeof(default_root), "%s/memtool/memories", xdg);
        else if (home && *home)
            n = snprintf(default_root, sizeof(default_root), "%s/.local/share/memtool/memories",
                         home);
        else
            return mt_cli_usage_error(NULL, "no store: give --store URL or --root DIR, or set "
                                            "MEMTOOL_STORE or MEMTOOL_ROOT");
        if (n < 0 || (size_t)n >= sizeof(default_root))
            return mt_cli_usage_error(NULL, "the default store path is too long; give --root");
        cli.root = default_root;
    }
    if (cli.memory_store && memory_store_select(&cli) < 0)
        return MT_EXIT_USAGE;
    if (!cli.actor_given) {
        /* Who makes the changes, by front end; an MCP server names its
         * client and an agent its session once it knows them. */
        const char *sub = argv[optind];
        cli.opts.actor = strcmp(sub, "serve") == 0     ? "serve"
                         : strcmp(sub, "server") == 0  ? "server"
                         : strcmp(sub, "web") == 0     ? "web"
                         : strcmp(sub, "mcp") == 0     ? "mcp"
                         : strcmp(sub, "migrate") == 0 ? "migrate"
                         : strcmp(sub, "gc") == 0      ? "gc"
                         : strcmp(sub, "rekey") == 0   ? "rekey"
                                                       : "cli";
    }
    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[optind], commands[i].name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* the subcommand parses its own options from the start */
            return commands[i].run(&cli, sub_argc, sub_argv);
        }
    }
    return mt_cli_usage_error(NULL, "'%s' is not a memtool command; see memtool --help",
                              argv[optind]);
}

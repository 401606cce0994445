/* What every subcommand of the `memtool` command shares. */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <getopt.h>

#include <memtool.h>

/* The options that go before the subcommand, as in git. */
typedef struct {
    const char *store; /* --store URL or MEMTOOL_STORE; NULL: the file store at root */
    const char *root;  /* --root, MEMTOOL_ROOT, or the XDG default */
    mt_options opts;
    int actor_given; /* --actor or MEMTOOL_ACTOR: front ends keep it as is */
    int where_from;  /* whence store or root: 1 the environment, 2 the command line */
    /* --expire-after or MEMTOOL_EXPIRE_AFTER: what the long-running front ends
     * (serve, mcp, chat, run) delete when idle that long; 0: nothing */
    uint64_t expire_after_ms;
    const char *expire_after; /* as given, for messages */
    /* Encryption at rest: --encrypt, with --key-file or MEMTOOL_PASSPHRASE. */
    int encrypt;
    const char *key_file;
    const char *old_key_file; /* read with it too (what a rekey has not yet re-encrypted) */
    /* --memory-store ID: a memory store of memtool server, the tenant's */
    const char *memory_store;
} mt_cli;

/* The key the options name (loaded once), or NULL without --encrypt; on a
 * failure print why and set *failed. */
mt_crypt_key *mt_cli_key(const mt_cli *cli, int *failed);

/* Open a store the way mt_cli_open does, another URL or tenant allowed;
 * errors are printed as "memtool NAME: ..." (name NULL: "memtool: ..."). */
int mt_cli_open_store(mt_memory **out, const mt_cli *cli, const char *url, const mt_options *o,
                      const char *name);

/* Exit statuses: the tool reported an error, or the command line/input was unusable. */
#define MT_EXIT_OK    0
#define MT_EXIT_TOOL  1
#define MT_EXIT_USAGE 2

/* A subcommand: argv[0] is its name; returns the exit status. */
typedef int (*mt_cli_fn)(const mt_cli *cli, int argc, char **argv);

/* Open the store the options name (a file store's root is created); on
 * failure print why and return NULL: the caller exits MT_EXIT_USAGE, since a
 * store that cannot be opened (a bad URL, a server out of reach, a wrong
 * password, a schema from a newer memtool) is the configuration's to fix. */
mt_memory *mt_cli_open(const mt_cli *cli);

/* mt_cli_open for a command that only reads: a store (or tenant) that does
 * not exist is an error naming it, and nothing is created. */
mt_memory *mt_cli_open_read(const mt_cli *cli);

/* The store as it may be printed (no password), for banners and messages. */
void mt_cli_store_name(char *out, size_t size, const mt_cli *cli);

/* After a change: warn on stderr when its version could not be recorded. */
void mt_cli_warn_history(const char *name, mt_memory *mem);

/* Print "memtool <name>: msg" and a hint to stderr; returns MT_EXIT_USAGE. */
int mt_cli_usage_error(const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Read all of a stream (stdin, a file) into a malloc'd, NUL-terminated buffer. */
int mt_cli_read_all(char **out, size_t *out_len, int fd);
/* The same, refusing (-EFBIG) input of more than max bytes after reading at
 * most max + 1 of them. */
int mt_cli_read_max(char **out, size_t *out_len, int fd, size_t max);

/* The global options (main.c), for naming one given after the command. */
extern const struct option mt_cli_global_options[];

/* getopt_long for a command, shortopts with "h" (and "+" first: options only
 * before the first word). Returns the next option's value, -1 at the end of
 * the options, or 0 when the command is to exit with *status: --help printed
 * (0), or a usage error printed (2) naming the option: unknown, missing its
 * value, or a global option put after the command. help NULL: 'h' is
 * returned as an option, and an error points to NAME --help. */
int mt_cli_getopt(int *status, const char *name, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, const char *help);

/* After getopt_long returned c, '?' or ':': print what is wrong with the
 * option (unknown, missing its value, taking none, or a global option put
 * after command NAME) and the usage lines of help (NULL: a pointer to
 * NAME --help; NAME NULL: the options before a command). Returns
 * MT_EXIT_USAGE. */
int mt_cli_option_error(const char *name, int c, int argc, char **argv, const char *help);

/* When arg (next: the word after it, or NULL) is a global option, print that
 * it goes before the command and return MT_EXIT_USAGE; else -1. */
int mt_cli_refuse_global(const char *name, const char *arg, const char *next);

/* Whether --help/-h was asked for, for subcommands without options of their own. */
int mt_cli_wants_help(int argc, char **argv);

/* Seconds with up to three decimals ("5", "0.25") as milliseconds. */
int mt_cli_parse_seconds(uint64_t *ms, const char *s);

/* A duration: numbers with units s, m, h, d, w ("30d", "1d12h"); zero,
 * junk and more than 100 years are MT_EINVAL with the reason. */
int mt_cli_parse_duration(uint64_t *ms, const char *s);
/* "3d 4h", "2h 5m", "40s": an idle time, coarsely. */
void mt_cli_format_duration(char *out, size_t size, uint64_t ms);
/* RFC 3339 UTC with milliseconds. */
void mt_cli_format_time(char *out, size_t size, int64_t ms);

/* The expiry policy of a long-running front end: gc at start and then every
 * tenth of the idle time (at most an hour), only between commands. */
typedef struct {
    mt_memory *mem;
    uint64_t after_ms;
    const char *after_text;
    const char *actor; /* "gc", or NULL for the --actor given */
    const char *name;  /* the front end, for messages */
    int64_t next_ms;   /* when the next run is due (0: now) */
} mt_cli_expiry;

/* Run it now (a failure is reported on stderr and returned). */
int mt_cli_expire(mt_cli_expiry *x);
/* Run it when due; returns the milliseconds until the next run. */
long mt_cli_expiry_tick(void *ctx);

int mt_cmd_call(const mt_cli *cli, int argc, char **argv);
int mt_cmd_view(const mt_cli *cli, int argc, char **argv);
int mt_cmd_create(const mt_cli *cli, int argc, char **argv);
int mt_cmd_str_replace(const mt_cli *cli, int argc, char **argv);
int mt_cmd_insert(const mt_cli *cli, int argc, char **argv);
int mt_cmd_delete(const mt_cli *cli, int argc, char **argv);
int mt_cmd_rename(const mt_cli *cli, int argc, char **argv);
int mt_cmd_serve(const mt_cli *cli, int argc, char **argv);
int mt_cmd_mcp(const mt_cli *cli, int argc, char **argv);
int mt_cmd_chat(const mt_cli *cli, int argc, char **argv);
int mt_cmd_run(const mt_cli *cli, int argc, char **argv);
int mt_cmd_log(const mt_cli *cli, int argc, char **argv);
int mt_cmd_show(const mt_cli *cli, int argc, char **argv);
int mt_cmd_cat(const mt_cli *cli, int argc, char **argv);
int mt_cmd_search(const mt_cli *cli, int argc, char **argv);
int mt_cmd_migrate(const mt_cli *cli, int argc, char **argv);
int mt_cmd_store(const mt_cli *cli, int argc, char **argv);
int mt_cmd_diff(const mt_cli *cli, int argc, char **argv);
int mt_cmd_restore(const mt_cli *cli, int argc, char **argv);
int mt_cmd_undo(const mt_cli *cli, int argc, char **argv);
int mt_cmd_redact(const mt_cli *cli, int argc, char **argv);
int mt_cmd_secrets(const mt_cli *cli, int argc, char **argv);
int mt_cmd_gc(const mt_cli *cli, int argc, char **argv);
int mt_cmd_stats(const mt_cli *cli, int argc, char **argv);
int mt_cmd_rekey(const mt_cli *cli, int argc, char **argv);
int mt_cmd_key(const mt_cli *cli, int argc, char **argv);
int mt_cmd_init(const mt_cli *cli, int argc, char **argv);
int mt_cmd_status(const mt_cli *cli, int argc, char **argv);
/* memtool server keys: argv[0] is "keys" (memtool server hands its words over). */
int mt_cmd_server(const mt_cli *cli, int argc, char **argv);
int mt_cmd_server_keys(const mt_cli *cli, int argc, char **argv);
/* memtool web: the memory browser, on 127.0.0.1. */
int mt_cmd_web(const mt_cli *cli, int argc, char **argv);

/* A version id from the command line ("42"): 0, or a usage error printed. */
int mt_cli_parse_version(int64_t *out, const char *name, const char *s);

/* A library failure of a history command: the message, and exit 1 (the
 * command line was fine; what it asked for could not be done). */
int mt_cli_fail(const char *name);

/* The store the global options name, as a URL: --store's, else the file
 * store at --root ("file:ROOT"). malloc'd; NULL when out of memory. */
char *mt_cli_store_url(const mt_cli *cli);

/* Write bytes to stdout exactly; on a write error say so and return
 * MT_EXIT_TOOL, else MT_EXIT_OK. */
int mt_cli_put_bytes(const char *name, const char *data, size_t len);

#endif

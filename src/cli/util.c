/* What the subcommands share: opening the store, running an input, errors. */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memtool/store.h>
#include <sodium.h>

#include "cli/cli.h"
#include "core/memory.h"
#include "cli/input.h"
#include "factory/store_url.h"

mt_crypt_key *mt_cli_key(const mt_cli *cli, int *failed)
{
    /* One key for the process: a passphrase is derived once per salt. */
    static mt_crypt_key *key;
    const char *pass = getenv("MEMTOOL_PASSPHRASE");

    *failed = 0;
    if (!cli->encrypt || key)
        return key;
    if (cli->key_file && pass && *pass) {
        fprintf(stderr, "memtool: give a key file or MEMTOOL_PASSPHRASE, not both\n");
        *failed = 1;
        return NULL;
    }
    if ((cli->key_file ? mt_crypt_key_load_file(&key, cli->key_file)
         : pass && *pass
             ? mt_crypt_key_from_passphrase(&key, pass, strlen(pass))
             : mt_error_set(MT_EINVAL, "--encrypt needs a key: --key-file PATH (or "
                                       "MEMTOOL_KEY_FILE), or MEMTOOL_PASSPHRASE")) < 0) {
        fprintf(stderr, "memtool: %s\n", mt_error_last()->message);
        *failed = 1;
        return NULL;
    }
    if (cli->old_key_file) {
        mt_crypt_key *old = NULL;
        if (mt_crypt_key_load_file(&old, cli->old_key_file) < 0 ||
            mt_crypt_key_accept(key, old) < 0) {
            fprintf(stderr, "memtool: --old-key-file: %s\n", mt_error_last()->message);
            *failed = 1;
        }
        mt_crypt_key_free(old);
    }
    return key;
}

int mt_cli_open_store(mt_memory **out, const mt_cli *cli, const char *url, const mt_options *o,
                      const char *name)
{
    int failed;
    mt_crypt_key *key = mt_cli_key(cli, &failed);

    *out = NULL;
    if (failed)
        return MT_EINVAL;
    if ((url ? mt_memory_open_url_encrypted(out, url, o, key)
             : mt_memory_open_encrypted(out, cli->root, o, key)) < 0) {
        fprintf(stderr, "memtool%s%s: %s\n", name ? " " : "", name ? name : "",
                mt_error_last()->message);
        return mt_error_last()->code;
    }
    return 0;
}

mt_memory *mt_cli_open(const mt_cli *cli)
{
    mt_memory *mem = NULL;

    mt_cli_open_store(&mem, cli, cli->store, &cli->opts, NULL);
    return mem;
}

mt_memory *mt_cli_open_read(const mt_cli *cli)
{
    mt_memory *mem = NULL;
    mt_options o = cli->opts;

    /* A memory store's record was found (--memory-store): one nobody has
     * written to yet is there, and empty, not a mistyped tenant. */
    o.must_exist = !cli->memory_store;
    mt_cli_open_store(&mem, cli, cli->store, &o, NULL);
    return mem;
}

void mt_cli_store_name(char *out, size_t size, const mt_cli *cli)
{
    if (cli->store)
        mt_store_url_display(out, size, cli->store);
    else
        snprintf(out, size, "%s", cli->root);
}

void mt_cli_warn_history(const char *name, mt_memory *mem)
{
    const char *why = mt_memory_history_warning(mem);

    /* The change stands (the result said so); only its version is missing. */
    if (why)
        fprintf(stderr, "memtool %s: warning: no version was recorded: %s\n", name, why);
}

int mt_cli_usage_error(const char *name, const char *fmt, ...)
{
    va_list ap;

    if (name)
        fprintf(stderr, "memtool %s: ", name);
    else
        fputs("memtool: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return MT_EXIT_USAGE;
}

int mt_cli_read_all(char **out, size_t *out_len, int fd)
{
    return mt_cli_read_max(out, out_len, fd, SIZE_MAX - 1);
}

int mt_cli_read_max(char **out, size_t *out_len, int fd, size_t max)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap), *grown;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t n;
        if (cap - len < 2) {
            if (cap > SIZE_MAX / 2 || !(grown = realloc(buf, cap * 2))) {
                free(buf);
                return -ENOMEM;
            }
            buf = grown;
            cap *= 2;
        }
        /* One byte past the bound tells that there is more, without reading it. */
        n = read(fd, buf + len, cap - len - 1 < max + 1 - len ? cap - len - 1 : max + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            return -err;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max) {
            free(buf);
            return -EFBIG;
        }
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

int mt_cli_run_input(const mt_cli *cli, const char *name, json_t *input, int json)
{
    return mt_cli_run_input_with(cli, name, input, json, 0);
}

int mt_cli_run_input_with(const mt_cli *cli, const char *name, json_t *input, int json, int reads)
{
    mt_memory *mem;
    mt_result res;
    int status;

    if (!input)
        return mt_cli_usage_error(name, "the arguments must be valid UTF-8 text");
    if (!(mem = reads ? mt_cli_open_read(cli) : mt_cli_open(cli))) {
        json_decref(input);
        return MT_EXIT_USAGE;
    }
    if (mt_memory_call_object(&res, mem, input) < 0) {
        fprintf(stderr, "memtool %s: %s\n", name, mt_error_last()->message);
        status = MT_EXIT_TOOL;
        goto done;
    }
    if (json) {
        /* For programs: the result as the tool gives it, on stdout either way. */
        status = mt_cli_print_json(
            name, json_pack("{s:s%, s:b}", "content", res.text, res.len, "is_error", res.is_error));
    } else {
        /* For people: a newline after the text, and errors on stderr. */
        fwrite(res.text, 1, res.len, res.is_error ? stderr : stdout);
        fputc('\n', res.is_error ? stderr : stdout);
        status = MT_EXIT_OK;
    }
    if (res.is_error)
        status = MT_EXIT_TOOL;
    mt_result_dispose(&res);
    mt_cli_warn_history(name, mem);
done:
    json_decref(input);
    mt_memory_free(mem);
    return status;
}

/* The options before the command (main.c reads them; a command names one
 * given after it). */
const struct option mt_cli_global_options[] = {
    {"store", required_argument, NULL, 0},
    {"root", required_argument, NULL, 0},
    {"tenant", required_argument, NULL, 0},
    {"memory-store", required_argument, NULL, 0},
    {"max-file-size", required_argument, NULL, 0},
    {"max-store-size", required_argument, NULL, 0},
    {"max-files", required_argument, NULL, 0},
    {"max-dirs", required_argument, NULL, 0},
    {"lock-timeout", required_argument, NULL, 0},
    {"view-limit", required_argument, NULL, 0},
    {"durability", required_argument, NULL, 0},
    {"actor", required_argument, NULL, 0},
    {"history", required_argument, NULL, 0},
    {"history-keep", required_argument, NULL, 0},
    {"history-days", required_argument, NULL, 0},
    {"audit", required_argument, NULL, 0},
    {"expire-after", required_argument, NULL, 0},
    {"key-file", required_argument, NULL, 0},
    {"old-key-file", required_argument, NULL, 0},
    {"encrypt", no_argument, NULL, 'E'},
    {"secrets", required_argument, NULL, 0},
    {"secrets-allow", required_argument, NULL, 0},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

int mt_cli_wants_help(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    }
    return 0;
}

/* The usage lines of a command's help (up to its first blank line), so an
 * error comes with the shape of a right command line, not a page of text. */
static void put_usage(const char *help)
{
    const char *end = strstr(help, "\n\n");

    fprintf(stderr, "%.*s\n", end ? (int)(end - help) : (int)strlen(help), help);
}

/* The global option ARG ("--store", "--store=URL") names, or NULL. */
static const struct option *global_option(const char *arg)
{
    const struct option *o;
    size_t n;

    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    arg += 2;
    n = strcspn(arg, "=");
    for (o = mt_cli_global_options; o->name; o++)
        if (strlen(o->name) == n && strncmp(o->name, arg, n) == 0)
            return o;
    return NULL;
}

/* A global option after the command: refused rather than guessed at, since a
 * command's words may be text, and shown where it belongs. */
static int global_misplaced(const char *name, const struct option *o, const char *arg,
                            const char *next)
{
    const char *eq = strchr(arg, '=');
    const char *value = o->has_arg == no_argument ? NULL : eq ? eq + 1 : next ? next : "VALUE";
    char shown[512];

    if (value && strcmp(o->name, "store") == 0) {
        mt_store_url_display(shown, sizeof(shown), value); /* never a password */
        value = shown;
    }
    return mt_cli_usage_error(name,
                              "--%s is a global option: put global options before the "
                              "command: memtool --%s%s%s %s ...",
                              o->name, o->name, value ? " " : "", value ? value : "", name);
}

int mt_cli_option_error(const char *name, int c, int argc, char **argv, const char *help)
{
    char shown[8];
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    const struct option *g;

    if (strncmp(arg, "--", 2) != 0) {
        snprintf(shown, sizeof(shown), "-%c", optopt ? optopt : '?');
        arg = shown;
    }
    if (name && c == '?' && !optopt && (g = global_option(arg)))
        return global_misplaced(name, g, arg, optind < argc ? argv[optind] : NULL);
    mt_cli_usage_error(name,
                       c == ':'                 ? "option '%.*s' needs a value"
                       : optopt && arg != shown ? "option '%.*s' takes no value"
                                                : "unknown option '%.*s'",
                       (int)strcspn(arg, "="), arg);
    if (help)
        put_usage(help);
    else
        fprintf(stderr, "see memtool%s%s --help\n", name ? " " : "", name ? name : "");
    return MT_EXIT_USAGE;
}

int mt_cli_getopt(int *status, const char *name, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, const char *help)
{
    char spec[80];
    int c, text = shortopts[0] == '+';

    /* ':' first: a missing value is told apart from an unknown option. */
    snprintf(spec, sizeof(spec), "%s:%s", text ? "+" : "", shortopts + text);
    opterr = 0;
    c = getopt_long(argc, argv, spec, longopts, NULL);
    if (c == 'h' && help) {
        fputs(help, stdout);
        *status = MT_EXIT_OK;
        return 0;
    }
    if (c != '?' && c != ':')
        return c;
    *status = mt_cli_option_error(name, c, argc, argv, help);
    return 0;
}

int mt_cli_refuse_global(const char *name, const char *arg, const char *next)
{
    const struct option *g = global_option(arg);

    return g ? global_misplaced(name, g, arg, next) : -1;
}

int mt_cli_print_json(const char *name, json_t *o)
{
    return mt_cli_print_json_with(name, o, JSON_COMPACT);
}

int mt_cli_print_json_with(const char *name, json_t *o, size_t flags)
{
    int err = 0;

    if (!o) {
        fprintf(stderr, "memtool %s: out of memory building the JSON\n", name);
        return MT_EXIT_TOOL;
    }
    /* Flushed here: a full disk or a closed pipe is told now, by the exit
     * status, not lost in the exit's own flush. */
    errno = 0;
    if (json_dumpf(o, stdout, flags) != 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        err = errno ? errno : EIO;
    json_decref(o);
    if (!err)
        return MT_EXIT_OK;
    fprintf(stderr, "memtool %s: cannot write the JSON to stdout: %s\n", name, strerror(err));
    return MT_EXIT_TOOL;
}

int mt_cli_json_set_bytes(json_t *o, const char *data, size_t len)
{
    json_t *s = json_stringn(data, len);
    size_t size = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    char *b64;
    int rc;

    /* Text as a JSON string; other bytes (not UTF-8, which JSON cannot
     * carry) in base64, so what is printed is exactly what is stored. */
    if (s)
        return json_object_set_new(o, "content", s);
    if (!(b64 = malloc(size)))
        return -1;
    sodium_bin2base64(b64, size, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
    rc = json_object_set_new(o, "content", json_null()) < 0 ||
                 json_object_set_new(o, "content_base64", json_string(b64)) < 0
             ? -1
             : 0;
    free(b64);
    return rc;
}

int mt_cli_parse_seconds(uint64_t *ms, const char *s)
{
    uint64_t whole = 0, frac = 0, scale = 1000;
    const char *p = s;

    if (!*p)
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > UINT64_MAX / 10000)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (scale == 1)
                return -1; /* finer than a millisecond */
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;
        }
    }
    if (*p || p == s)
        return -1;
    *ms = whole * 1000 + frac;
    return 0;
}

int mt_cli_parse_duration(uint64_t *ms, const char *s)
{
    static const struct {
        char unit;
        uint64_t ms;
    } units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}, {'w', 604800000}};
    /* A hundred years: longer is a typo, and sums stay far from overflow. */
    const uint64_t most = (uint64_t)36525 * 86400000;
    uint64_t total = 0;
    const char *p = s;

    if (!s || !*s)
        return mt_error_set(MT_EINVAL, "no duration given: use a number and a unit, e.g. 30d");
    while (*p) {
        uint64_t n = 0;
        const char *start = p;
        size_t i;

        for (; *p >= '0' && *p <= '9'; p++)
            n = n > most ? n : n * 10 + (uint64_t)(*p - '0');
        if (p == start)
            return mt_error_set(MT_EINVAL,
                                "'%s' is not a duration: use numbers with units s, m, h, d or w "
                                "(e.g. 30d, 12h, 1d12h)",
                                s);
        for (i = 0; i < sizeof(units) / sizeof(units[0]) && units[i].unit != *p; i++)
            ;
        if (i == sizeof(units) / sizeof(units[0]))
            return mt_error_set(MT_EINVAL,
                                "'%s' is not a duration: each number needs a unit, s, m, h, d or "
                                "w (e.g. 30d, 12h, 1d12h)",
                                s);
        if (n > most / units[i].ms || total + n * units[i].ms > most)
            return mt_error_set(MT_EINVAL, "'%s' is too long a duration: at most 100 years", s);
        total += n * units[i].ms;
        p++;
    }
    if (total == 0)
        return mt_error_set(MT_EINVAL, "'%s' is no time at all: give a duration above zero", s);
    *ms = total;
    return 0;
}

void mt_cli_format_duration(char *out, size_t size, uint64_t ms)
{
    uint64_t s = ms / 1000;

    if (s >= 86400)
        snprintf(out, size, "%llud %lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(out, size, "%lluh %llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(out, size, "%llum %llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
    else
        snprintf(out, size, "%llus", (unsigned long long)s);
}

void mt_cli_format_time(char *out, size_t size, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int mt_cli_expire(mt_cli_expiry *x)
{
    mt_gc_options o;
    mt_gc_stats st;
    int rc;

    memset(&o, 0, sizeof(o));
    o.idle_ms = x->after_ms;
    o.actor = x->actor;
    rc = mt_memory_gc(&st, x->mem, &o, NULL, NULL);
    if (rc < 0)
        fprintf(stderr, "memtool %s: expiry: %s\n", x->name, mt_error_last()->message);
    else if (st.expired)
        fprintf(stderr, "memtool %s: expired %llu memories idle for %s or more\n", x->name,
                (unsigned long long)st.expired, x->after_text);
    return rc;
}

long mt_cli_expiry_tick(void *ctx)
{
    mt_cli_expiry *x = ctx;
    uint64_t period = x->after_ms / 10 < 3600000 ? x->after_ms / 10 : 3600000;
    int64_t now = mt_memory_now_ms();

    if (now >= x->next_ms) {
        mt_cli_expire(x);
        now = mt_memory_now_ms();
        x->next_ms = now + (int64_t)period;
    }
    return (long)(x->next_ms - now);
}

char *mt_cli_store_url(const mt_cli *cli)
{
    size_t n;
    char *url;

    if (cli->store)
        return strdup(cli->store);
    n = strlen(cli->root) + sizeof("file:");
    if ((url = malloc(n)))
        snprintf(url, n, "file:%s", cli->root);
    return url;
}

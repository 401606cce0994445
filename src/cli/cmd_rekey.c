/* memtool rekey: re-encrypt every memory with a new key, or say which keys are in use. */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: memtool --encrypt --key-file OLD [options] rekey --new-key-file PATH [--json]\n"
    "       memtool --encrypt --key-file KEY [options] rekey --status [--json]\n\n"
    "Re-encrypt every memory of an encrypted store with the key in PATH (memtool key new\n"
    "makes one); the key of --key-file (or MEMTOOL_PASSPHRASE) must read them. Each file\n"
    "is one atomic change, recorded as a version by actor rekey; files already encrypted\n"
    "with the new key are left as they are, so an interrupted rekey (Ctrl-C, a crash) is\n"
    "finished by running it again. Versions in the history keep the key they were written\n"
    "with: read them with the global option --old-key-file (MEMTOOL_OLD_KEY_FILE).\n\n"
    "Options:\n"
    "  --new-key-file PATH  the key to re-encrypt with\n"
    "  --status             list the key ids in use, with their files and bytes\n"
    "  --json               one JSON object at the end\n\n"
    "Exit status: 0 done; 1 a memory could not be re-encrypted (named); 2 a usage error,\n"
    "a key or store that cannot be opened; 130 interrupted.\n";

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct {
    int tty;
} progress;

static int on_file(void *payload, const char *path, uint64_t done, uint64_t total, int changed)
{
    progress *p = payload;
    unsigned width = 24, filled = total ? (unsigned)(width * done / total) : width;
    char bar[32];

    (void)path;
    (void)changed;
    if (p->tty) {
        memset(bar, '#', filled);
        memset(bar + filled, '.', width - filled);
        bar[width] = '\0';
        fprintf(stderr, "\rrekey [%s] %llu/%llu files\033[K", bar, (unsigned long long)done,
                (unsigned long long)total);
    }
    return interrupted;
}

static int status_out(mt_memory *mem, int json)
{
    mt_crypt_status s;
    size_t i;

    if (mt_memory_crypt_status(&s, mem) < 0)
        return mt_cli_fail("rekey");
    if (json) {
        json_t *keys = json_array(), *o;
        for (i = 0; keys && i < s.count; i++)
            json_array_append_new(
                keys, json_pack("{s:s, s:b, s:I, s:I}", "key_id", s.keys[i].key_id, "passphrase",
                                s.keys[i].passphrase, "files", (json_int_t)s.keys[i].files, "bytes",
                                (json_int_t)s.keys[i].bytes));
        o = json_pack("{s:I, s:I, s:o}", "files", (json_int_t)s.files, "unencrypted",
                      (json_int_t)s.plain, "keys", keys);
        if (o) {
            json_dumpf(o, stdout, JSON_COMPACT);
            fputc('\n', stdout);
            json_decref(o);
        }
    } else {
        for (i = 0; i < s.count; i++)
            printf("%s  %llu files  %lluB%s\n", s.keys[i].key_id,
                   (unsigned long long)s.keys[i].files, (unsigned long long)s.keys[i].bytes,
                   s.keys[i].passphrase ? "  (passphrase)" : "");
        if (s.plain)
            printf("unencrypted  %llu files\n", (unsigned long long)s.plain);
        if (!s.files)
            printf("no memories\n");
    }
    mt_crypt_status_dispose(&s);
    return s.plain ? MT_EXIT_TOOL : MT_EXIT_OK;
}

int mt_cmd_rekey(const mt_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"new-key-file", required_argument, NULL, 'n'},
        {"status", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *new_file = NULL;
    mt_crypt_key *new_key = NULL, *key;
    mt_memory *mem = NULL;
    struct sigaction sa, old;
    progress p = {0};
    uint64_t changed = 0;
    int c, rc, json = 0, status_only = 0, failed, status;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            new_file = optarg;
            break;
        case 's':
            status_only = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            fputs(help, stdout);
            return MT_EXIT_OK;
        default:
            fputs(help, stderr);
            return MT_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return mt_cli_usage_error("rekey", "takes no arguments; see memtool rekey --help");
    if (!status_only && !new_file)
        return mt_cli_usage_error("rekey", "--new-key-file PATH (or --status) is needed");
    if (!cli->encrypt)
        return mt_cli_usage_error("rekey", "the store's key is needed: --key-file PATH (or "
                                           "MEMTOOL_KEY_FILE, MEMTOOL_PASSPHRASE)");
    if (!(key = mt_cli_key(cli, &failed)) || failed) {
        /* A key file that could not be read (the old one too) is said, and stops it. */
        mt_crypt_key_free(key);
        return MT_EXIT_USAGE;
    }
    if (new_file && mt_crypt_key_load_file(&new_key, new_file) < 0) {
        status = mt_cli_usage_error("rekey", "%s", mt_error_last()->message);
        goto done;
    }
    /* A rekey run again after the first finished part: the new key reads too. */
    if (new_key && mt_crypt_key_accept(key, new_key) < 0) {
        status = mt_cli_usage_error("rekey", "%s", mt_error_last()->message);
        goto done;
    }
    if (!(mem = mt_cli_open(cli))) {
        status = MT_EXIT_USAGE;
        goto done;
    }
    if (status_only) {
        status = status_out(mem, json);
        goto done;
    }
    p.tty = isatty(STDERR_FILENO) && !json;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    rc = mt_memory_rekey(&changed, mem, new_key, on_file, &p);
    sigaction(SIGINT, &old, NULL);
    if (p.tty)
        fputs("\r\033[K", stderr);
    if (rc < 0 && rc != MT_ESTOPPED) {
        fprintf(stderr, "memtool rekey: %s\n", mt_error_last()->message);
        status = MT_EXIT_TOOL;
        goto done;
    }
    if (json) {
        char id[17];
        json_t *o;
        mt_crypt_key_id(id, new_key);
        o = json_pack("{s:s, s:I, s:b}", "key_id", id, "reencrypted", (json_int_t)changed,
                      "stopped", rc == MT_ESTOPPED);
        if (o) {
            json_dumpf(o, stdout, JSON_COMPACT);
            fputc('\n', stdout);
            json_decref(o);
        }
    } else {
        char id[17];
        mt_crypt_key_id(id, new_key);
        printf("%llu memories re-encrypted with key %s%s\n", (unsigned long long)changed, id,
               rc == MT_ESTOPPED ? "; stopped: run it again to finish" : "");
    }
    mt_cli_warn_history("rekey", mem);
    status = rc == MT_ESTOPPED ? 130 : MT_EXIT_OK;
done:
    mt_memory_free(mem);
    mt_crypt_key_free(new_key);
    return status;
}

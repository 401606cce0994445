/* memtool rekey: re-encrypt every memory with a new key, or say which keys are in use. */
#include <getopt.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "cli/input.h"
#include "cli/progress.h"

static const char help[] =
    "usage: memtool --encrypt --key-file OLD [options] rekey --new-key-file PATH [--json]\n"
    "       memtool --encrypt --key-file KEY [options] rekey --status [--memories] [--json]\n\n"
    "Re-encrypt every memory of an encrypted store, and every version its history\n"
    "keeps, with the key in PATH (memtool key new makes one); the key of --key-file\n"
    "(or MEMTOOL_PASSPHRASE, and --old-key-file) must read them. Each file is one\n"
    "atomic change that records no version (a re-encryption is no change of content:\n"
    "the memory's newest version takes the new ciphertext with it), and each older\n"
    "version one atomic replacement of its content; neither counts as a use of the\n"
    "memory (expiry sees it as idle as before). What is already under the new key is\n"
    "left as it is, so an interrupted rekey (Ctrl-C, a crash) is finished by running\n"
    "it again. What cannot be read (another key, damaged, not encrypted) is named on\n"
    "stderr and left, the rest goes on. Once all is done, the old key is needed for\n"
    "nothing.\n\n"
    "Options:\n"
    "  --new-key-file PATH  the key to re-encrypt with\n"
    "  --status             list the key ids in use, with their files, bytes and versions\n"
    "  --memories           with --status: each memory and the key id it is encrypted\n"
    "                       with, a line each (with --json, a JSON object each)\n"
    "  --json               one JSON object at the end\n\n"
    "Exit status: 0 done; 1 something could not be re-encrypted (each named, with why)\n"
    "or --status found content without encryption; 2 a usage error, a key or store\n"
    "that cannot be opened; 130 interrupted.\n";

typedef struct {
    int tty;
} progress;

static int on_event(void *payload, const mt_rekey_event *e)
{
    progress *p = payload;
    const char *what = e->kind == MT_REKEY_FILE ? "files" : "versions";
    char bar[32];

    if (e->outcome < 0) {
        mt_cli_progress_clear(p->tty);
        /* The message names the file or the version. */
        fprintf(stderr, "memtool rekey: %s\n", e->message);
    }
    if (p->tty) {
        mt_cli_bar(bar, sizeof(bar), 24, e->done, e->total);
        fprintf(stderr, "\rrekey [%s] %llu/%llu %s\033[K", bar, (unsigned long long)e->done,
                (unsigned long long)e->total, what);
    }
    return mt_cli_stop_asked();
}

static int status_out(mt_memory *mem, int json)
{
    mt_crypt_status s;
    size_t i;
    int rc, wrote = MT_EXIT_OK;

    if (mt_memory_crypt_status(&s, mem) < 0)
        return mt_cli_fail("rekey");
    if (json) {
        json_t *keys = json_array(), *o;
        for (i = 0; keys && i < s.count; i++)
            json_array_append_new(
                keys,
                json_pack("{s:s, s:b, s:I, s:I, s:I}", "key_id", s.keys[i].key_id, "passphrase",
                          s.keys[i].passphrase, "files", (json_int_t)s.keys[i].files, "bytes",
                          (json_int_t)s.keys[i].bytes, "versions", (json_int_t)s.keys[i].versions));
        o = json_pack("{s:I, s:I, s:I, s:I, s:o}", "files", (json_int_t)s.files, "unencrypted",
                      (json_int_t)s.plain, "versions", (json_int_t)s.versions,
                      "versions_unencrypted", (json_int_t)s.versions_plain, "keys", keys);
        wrote = mt_cli_print_json("rekey", o);
    } else {
        for (i = 0; i < s.count; i++)
            printf("%s  %llu files  %lluB  %llu versions%s\n", s.keys[i].key_id,
                   (unsigned long long)s.keys[i].files, (unsigned long long)s.keys[i].bytes,
                   (unsigned long long)s.keys[i].versions,
                   s.keys[i].passphrase ? "  (passphrase)" : "");
        if (s.plain || s.versions_plain)
            printf("unencrypted  %llu files  %llu versions\n", (unsigned long long)s.plain,
                   (unsigned long long)s.versions_plain);
        if (!s.files && !s.versions)
            printf("no memories\n");
    }
    rc = wrote != MT_EXIT_OK || s.plain || s.versions_plain ? MT_EXIT_TOOL : MT_EXIT_OK;
    mt_crypt_status_dispose(&s);
    return rc;
}

/* One line (or JSON object) per memory: the key its file is encrypted with. */
static int memory_line(void *payload, const char *path, const char *key_id, int passphrase)
{
    const int *json = payload;

    if (*json) {
        json_t *o = json_pack("{s:s, s:s?, s:b}", "path", path, "key_id", key_id[0] ? key_id : NULL,
                              "passphrase", passphrase);
        /* The printer says why it stopped; the walk stops with it. */
        if (mt_cli_print_json("rekey", o) != MT_EXIT_OK)
            return MT_ENOMEM;
    } else {
        printf("%s  %s%s\n", key_id[0] ? key_id : "unencrypted     ", path,
               passphrase ? "  (passphrase)" : "");
    }
    return 0;
}

static int memories_out(mt_memory *mem, int json)
{
    int rc = mt_memory_crypt_each(mem, memory_line, &json);

    if (rc == MT_ENOMEM)
        return MT_EXIT_TOOL; /* said where it happened */
    return rc < 0 ? mt_cli_fail("rekey") : MT_EXIT_OK;
}

/* The outcome, as one JSON object; returns the exit status of its printing. */
static int result_json(const mt_rekey_result *r, const char *id, int stopped)
{
    json_t *failures = json_array(), *o;
    size_t i;

    for (i = 0; failures && i < r->nfailures; i++) {
        const mt_rekey_failure *f = &r->failures[i];
        json_t *one =
            f->kind == MT_REKEY_FILE
                ? json_pack("{s:s, s:s}", "path", f->path ? f->path : "", "message", f->message)
                : json_pack("{s:I, s:s?, s:s}", "version", (json_int_t)f->version, "path", f->path,
                            "message", f->message);
        json_array_append_new(failures, one);
    }
    o = json_pack("{s:s, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I}, s:o, s:b}", "key_id", id, "files",
                  "reencrypted", (json_int_t)r->files, "already", (json_int_t)r->files_kept,
                  "failed", (json_int_t)r->files_failed, "versions", "reencrypted",
                  (json_int_t)r->versions, "already", (json_int_t)r->versions_kept, "failed",
                  (json_int_t)r->versions_failed, "failures", failures, "stopped", stopped);
    return mt_cli_print_json("rekey", o);
}

/* What the command line of rekey says. */
typedef struct {
    const char *new_file;
    int status_only, memories, json;
} rekey_args;

static const mt_cli_option rekey_options[] = {
    {"new-key-file", MT_CLI_STRING, offsetof(rekey_args, new_file), 0, 0, 0},
    {"status", MT_CLI_FLAG, offsetof(rekey_args, status_only), 0, 0, 0},
    {"memories", MT_CLI_FLAG, offsetof(rekey_args, memories), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(rekey_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command rekey_command = {
    "rekey", help, rekey_options, 0, 0, "see memtool rekey --help", 0};

int mt_cmd_rekey(const mt_cli *cli, int argc, char **argv)
{
    const char *new_file;
    mt_crypt_key *new_key = NULL, *key;
    mt_memory *mem = NULL;
    mt_cli_stop stop;
    progress p = {0};
    mt_rekey_result result;
    rekey_args a = {0};
    char id[17];
    int rc, json, status_only, memories, failed, unwritten = 0, status;

    memset(&result, 0, sizeof(result));
    if ((status = mt_cli_parse(&rekey_command, &a, argc, argv)) >= 0)
        return status;
    new_file = a.new_file;
    status_only = a.status_only;
    memories = a.memories;
    json = a.json;
    if (memories && !status_only)
        return mt_cli_usage_error("rekey", "--memories goes with --status");
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
    /* --status only reads: a missing store is named, not made (nor sealed). */
    if (!(mem = status_only ? mt_cli_open_read(cli) : mt_cli_open(cli))) {
        status = MT_EXIT_USAGE;
        goto done;
    }
    if (status_only) {
        status = memories ? memories_out(mem, json) : status_out(mem, json);
        goto done;
    }
    p.tty = isatty(STDERR_FILENO) && !json;
    mt_cli_stop_catch(&stop);
    rc = mt_memory_rekey(&result, mem, new_key, on_event, &p);
    mt_cli_stop_release(&stop);
    mt_cli_progress_clear(p.tty);
    failed = result.files_failed || result.versions_failed;
    if (rc < 0 && rc != MT_ESTOPPED && !failed) {
        fprintf(stderr, "memtool rekey: %s\n", mt_error_last()->message);
        status = MT_EXIT_TOOL;
        goto done;
    }
    mt_crypt_key_id(id, new_key);
    if (json)
        unwritten = result_json(&result, id, rc == MT_ESTOPPED) != MT_EXIT_OK;
    else
        printf("re-encrypted with key %s: %llu memories (%llu were already), %llu versions "
               "(%llu were already)%s\n",
               id, (unsigned long long)result.files, (unsigned long long)result.files_kept,
               (unsigned long long)result.versions, (unsigned long long)result.versions_kept,
               rc == MT_ESTOPPED ? "; stopped: run it again to finish" : "");
    if (failed && rc != MT_ESTOPPED)
        fprintf(stderr, "memtool rekey: %s\n", mt_error_last()->message);
    mt_cli_warn_history("rekey", mem);
    status = rc == MT_ESTOPPED ? 130 : failed || unwritten ? MT_EXIT_TOOL : MT_EXIT_OK;
done:
    mt_rekey_result_dispose(&result);
    mt_memory_free(mem);
    mt_crypt_key_free(new_key);
    return status;
}

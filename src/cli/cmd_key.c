/* memtool key new PATH: a key file for --encrypt. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "input.h"

static const char help[] =
    "usage: memtool key new PATH [--json]\n\n"
    "Make a new key for --encrypt: 32 random bytes, written as 64 hex digits to PATH\n"
    "with mode 0600. An existing file is never replaced. Keep a copy where the store's\n"
    "backups are not: without the key, an encrypted store cannot be read.\n\n"
    "Options:\n"
    "  --json   print {\"path\":...,\"key_id\":...} instead of a sentence\n";

int mt_cmd_key(const mt_cli *cli, int argc, char **argv)
{
    const char *path = NULL;
    int i, json = 0, words = 0;
    mt_crypt_key *key = NULL;
    char id[17];

    (void)cli;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(help, stdout);
            return MT_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        if (mt_cli_refuse_global("key", argv[i], i + 1 < argc ? argv[i + 1] : NULL) >= 0)
            return MT_EXIT_USAGE;
        if (argv[i][0] == '-' && argv[i][1])
            return mt_cli_usage_error("key", "unknown option '%s'; see memtool key --help",
                                      argv[i]);
        if (words == 0 && strcmp(argv[i], "new") != 0)
            return mt_cli_usage_error("key", "'%s' is not a key command: memtool key new PATH",
                                      argv[i]);
        if (words == 1)
            path = argv[i];
        if (++words > 2)
            return mt_cli_usage_error("key", "memtool key new takes one PATH");
    }
    if (!path)
        return mt_cli_usage_error("key", "memtool key new PATH: where to write the key");
    if (mt_crypt_key_generate_file(path) < 0 || mt_crypt_key_load_file(&key, path) < 0) {
        fprintf(stderr, "memtool key: %s\n", mt_error_last()->message);
        return MT_EXIT_TOOL;
    }
    mt_crypt_key_id(id, key);
    mt_crypt_key_free(key);
    if (json)
        return mt_cli_print_json("key", json_pack("{s:s, s:s}", "path", path, "key_id", id));
    printf("Key %s written to %s (mode 0600)\n", id, path);
    return MT_EXIT_OK;
}

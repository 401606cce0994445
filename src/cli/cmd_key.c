/* memtool key new PATH: a key file for --encrypt. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/input.h"

static const char help[] =
    "usage: memtool key new PATH [--json]\n\n"
    "Make a new key for --encrypt: 32 random bytes, written as 64 hex digits to PATH\n"
    "with mode 0600. An existing file is never replaced. Keep a copy where the store's\n"
    "backups are not: without the key, an encrypted store cannot be read.\n\n"
    "Options:\n"
    "  --json   print {\"path\":...,\"key_id\":...} instead of a sentence\n";

int mt_cmd_key(const mt_cli *cli, int argc, char **argv)
{
    const char *path;
    int json, words, status = mt_cli_args(&json, "key", argc, argv, 0, argc, 0, help);
    mt_crypt_key *key = NULL;
    char id[17];

    (void)cli;
    if (status >= 0)
        return status;
    words = argc - optind;
    if (words > 0 && strcmp(argv[optind], "new") != 0)
        return mt_cli_usage_error("key", "'%s' is not a key command: memtool key new PATH",
                                  argv[optind]);
    if (words > 2)
        return mt_cli_usage_error("key", "memtool key new takes one PATH");
    if (words < 2)
        return mt_cli_usage_error("key", "memtool key new PATH: where to write the key");
    path = argv[optind + 1];
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

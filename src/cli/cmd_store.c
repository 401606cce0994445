/* memtool store upgrade URL: a store's schema brought to this memtool's. */
#include <stdio.h>
#include <string.h>

#include <memtool/store.h>

#include "cli.h"
#include "input.h"
#include "store/url.h"

static const char help[] =
    "usage: memtool [options] store upgrade [--json] [URL]\n\n"
    "Bring the schema of the store at URL (default: the one --store or --root names) to\n"
    "this memtool's version, creating it where there is none. memtool creates a missing\n"
    "schema itself on first use when its role may, and never changes an older PostgreSQL\n"
    "one on its own: an upgrade is an operator's decision, made once, here (an SQLite\n"
    "store, one user's file, is brought up to date when opened). For PostgreSQL, run it\n"
    "as a role that may create in the database (its owner); memtool's own role then\n"
    "needs only:\n"
    "  GRANT USAGE ON SCHEMA memtool TO ROLE;\n"
    "  GRANT SELECT ON memtool.meta TO ROLE;\n"
    "  GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes,\n"
    "        memtool.contents, memtool.content_refs, memtool.versions,\n"
    "        memtool.search_docs TO ROLE;\n"
    "(again after an upgrade that adds a table: schema 4 adds memtool.content_refs).\n"
    "A file: store keeps no schema; a sqlite: store is created and checked.\n"
    "  --json  print {\"store\": URL, \"schema\": \"current\"} on one line (no password)\n";

int mt_cmd_store(const mt_cli *cli, int argc, char **argv)
{
    mt_store_url u;
    mt_store *st = NULL;
    const char *url;
    char shown[512];
    int rc, json, status = mt_cli_args(&json, "store", argc, argv, 1, 2, 0, help);

    if (status >= 0)
        return status;
    if (strcmp(argv[optind], "upgrade") != 0)
        return mt_cli_usage_error("store", "'%s' is not a store command: memtool store upgrade",
                                  argv[optind]);
    /* The store the global options name, as every other command takes it. */
    url = argc - optind == 2 ? argv[optind + 1] : cli->store;
    if (!url) {
        snprintf(shown, sizeof(shown), "%s", cli->root);
        rc = 0; /* a file store keeps no schema */
        goto report;
    }
    if (mt_store_url_parse(&u, url) < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    switch (u.kind) {
    case MT_STORE_PG:
        rc = mt_store_pg_upgrade(u.target);
        break;
    case MT_STORE_SQLITE:
        /* Opening makes the schema where there is none and checks it. */
        if ((rc = mt_store_sqlite_open(&st, u.target, NULL, MT_DURABILITY_FULL)) == 0)
            st->free(st);
        break;
    default:
        rc = 0;
        break;
    }
    mt_store_url_dispose(&u);
    mt_store_url_display(shown, sizeof(shown), url);
report:
    if (rc < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    if (json)
        return mt_cli_print_json("store",
                                 json_pack("{s:s, s:s}", "store", shown, "schema", "current"));
    printf("%s: the schema is this memtool's\n", shown);
    return MT_EXIT_OK;
}

/* memtool store upgrade URL: a store's schema brought to this memtool's;
 * memtool store vacuum URL: a PostgreSQL store's redacted rows gone from its files. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/input.h"
#include "factory/store_factory.h"

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
    "  --json  print {\"store\": URL, \"schema\": \"current\"} on one line (no password)\n\n"
    "usage: memtool [options] store vacuum [--json] [URL]\n\n"
    "Rewrite the tables of the PostgreSQL store at URL that hold content, paths and words\n"
    "(VACUUM FULL of memtool.versions, memtool.contents, memtool.content_refs,\n"
    "memtool.nodes and memtool.search_docs), so that what `memtool redact` erased is gone from the "
    "server's\n"
    "table files too: until a vacuum, PostgreSQL keeps deleted and replaced rows in them as\n"
    "dead tuples. Run it as the tables' owner (the role of `store upgrade`) or a superuser;\n"
    "it locks the tables while it runs. It does not reach the server's WAL (pg_wal, until\n"
    "its segments are reused), WAL archives, replicas or backups. A file: or sqlite: store\n"
    "needs no vacuum: its redaction erases at once.\n"
    "  --json  print {\"store\": URL, \"vacuumed\": true|false} on one line (no password)\n";

/* What store vacuum says: shown is the store's name without a password; pg
 * whether it was a PostgreSQL store, vacuumed (rc its outcome). */
static int vacuum_report(const char *shown, int pg, int rc, int json)
{
    if (rc < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    if (json)
        return mt_cli_print_json("store", json_pack("{s:s, s:b}", "store", shown, "vacuumed", pg));
    if (pg)
        printf("%s: vacuumed; redacted rows are gone from the tables' files\n", shown);
    else
        printf("%s: nothing to vacuum (redaction erases at once in this store)\n", shown);
    return MT_EXIT_OK;
}

int mt_cmd_store(const mt_cli *cli, int argc, char **argv)
{
    const char *url;
    char shown[512];
    int rc, vacuum, vacuumed = 0, json,
                    status = mt_cli_args(&json, "store", argc, argv, 1, 2, 0, help);

    if (status >= 0)
        return status;
    if (strcmp(argv[optind], "upgrade") != 0 && strcmp(argv[optind], "vacuum") != 0)
        return mt_cli_usage_error("store",
                                  "'%s' is not a store command: memtool store upgrade, or "
                                  "memtool store vacuum",
                                  argv[optind]);
    vacuum = strcmp(argv[optind], "vacuum") == 0;
    /* The store the global options name, as every other command takes it. */
    url = argc - optind == 2 ? argv[optind + 1] : cli->store;
    if (!url) {
        snprintf(shown, sizeof(shown), "%s", cli->root);
        if (vacuum)
            return vacuum_report(shown, 0, 0, json);
        rc = 0; /* a file store keeps no schema */
        goto report;
    }
    mt_store_url_display(shown, sizeof(shown), url);
    if (vacuum) {
        rc = mt_store_vacuum_url(&vacuumed, url);
        return vacuum_report(shown, vacuumed, rc, json);
    }
    rc = mt_store_upgrade_url(url);
report:
    if (rc < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    if (json)
        return mt_cli_print_json("store",
                                 json_pack("{s:s, s:s}", "store", shown, "schema", "current"));
    printf("%s: the schema is this memtool's\n", shown);
    return MT_EXIT_OK;
}

/* memtool store upgrade URL: a store's schema brought to this memtool's;
 * memtool store vacuum URL: a PostgreSQL store's redacted rows gone from its files. */
#include <stdio.h>
#include <string.h>

#include <memtool/store.h>

#include "cli.h"
#include "store/url.h"

static const char help[] =
    "usage: memtool [options] store upgrade URL\n\n"
    "Bring the schema of the store at URL to this memtool's version, creating it where\n"
    "there is none. memtool creates a missing schema itself on first use when its role\n"
    "may, and never changes an older PostgreSQL one on its own: an upgrade is an\n"
    "operator's decision, made once, here (an SQLite store, one user's file, is brought\n"
    "up to date when opened). For PostgreSQL, run it as a role that may create in the\n"
    "database (its owner); memtool's own role then needs only:\n"
    "  GRANT USAGE ON SCHEMA memtool TO ROLE;\n"
    "  GRANT SELECT ON memtool.meta TO ROLE;\n"
    "  GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes,\n"
    "        memtool.contents, memtool.content_refs, memtool.versions,\n"
    "        memtool.search_docs TO ROLE;\n"
    "(again after an upgrade that adds a table: schema 4 adds memtool.content_refs).\n"
    "A file: store keeps no schema; a sqlite: store is created and checked.\n\n"
    "usage: memtool [options] store vacuum URL\n\n"
    "Rewrite the tables of the PostgreSQL store at URL that hold content, paths and words\n"
    "(VACUUM FULL of memtool.versions, memtool.contents, memtool.content_refs,\n"
    "memtool.nodes and memtool.search_docs), so that what `memtool redact` erased is gone from the "
    "server's\n"
    "table files too: until a vacuum, PostgreSQL keeps deleted and replaced rows in them as\n"
    "dead tuples. Run it as the tables' owner (the role of `store upgrade`) or a superuser;\n"
    "it locks the tables while it runs. It does not reach the server's WAL (pg_wal, until\n"
    "its segments are reused), WAL archives, replicas or backups. A file: or sqlite: store\n"
    "needs no vacuum: its redaction erases at once.\n";

static int vacuum(mt_store_url *u, const char *url)
{
    char shown[512];
    int rc = u->kind == MT_STORE_PG ? mt_store_pg_vacuum(u->target) : 0;
    int pg = u->kind == MT_STORE_PG;

    mt_store_url_dispose(u);
    mt_store_url_display(shown, sizeof(shown), url);
    if (rc < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    if (pg)
        printf("%s: vacuumed; redacted rows are gone from the tables' files\n", shown);
    else
        printf("%s: nothing to vacuum (redaction erases at once in this store)\n", shown);
    return MT_EXIT_OK;
}

int mt_cmd_store(const mt_cli *cli, int argc, char **argv)
{
    mt_store_url u;
    mt_store *st = NULL;
    char shown[512];
    int rc;

    (void)cli;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(help, stdout);
        return MT_EXIT_OK;
    }
    if (argc != 3 || (strcmp(argv[1], "upgrade") != 0 && strcmp(argv[1], "vacuum") != 0)) {
        fputs(help, stderr);
        return MT_EXIT_USAGE;
    }
    if (mt_store_url_parse(&u, argv[2]) < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    if (strcmp(argv[1], "vacuum") == 0)
        return vacuum(&u, argv[2]);
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
    mt_store_url_display(shown, sizeof(shown), argv[2]);
    if (rc < 0)
        return mt_cli_usage_error("store", "%s", mt_error_last()->message);
    printf("%s: the schema is this memtool's\n", shown);
    return MT_EXIT_OK;
}

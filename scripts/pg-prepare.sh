#!/bin/sh
# Make memtool's schema in the test cluster as an operator would, then run CMD:
#
#   sh scripts/pg-prepare.sh MEMTOOL [CMD [ARGS...]]
#
# Inside scripts/with-pg.sh: the database's owner (MEMTOOL_TEST_PG_OWNER) runs
# `memtool store upgrade`, then grants memtool's role (the user of
# MEMTOOL_TEST_PG) what `memtool store --help` lists, and no more.
set -eu
[ $# -ge 1 ] || {
    echo "usage: pg-prepare.sh MEMTOOL [CMD [ARGS...]]" >&2
    exit 2
}
memtool=$1
shift
: "${MEMTOOL_TEST_PG_OWNER:?run inside scripts/with-pg.sh}"
"$memtool" store upgrade "$MEMTOOL_TEST_PG_OWNER" >/dev/null
psql -q -v ON_ERROR_STOP=1 "$MEMTOOL_TEST_PG_OWNER" -c "
    GRANT USAGE ON SCHEMA memtool TO memtool;
    GRANT SELECT ON memtool.meta TO memtool;
    GRANT SELECT, INSERT, UPDATE, DELETE
        ON memtool.usage, memtool.nodes, memtool.contents, memtool.content_refs, memtool.versions,
           memtool.search_docs TO memtool;"
[ $# -eq 0 ] || exec "$@"

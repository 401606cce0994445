#!/bin/sh
# One throwaway PostgreSQL cluster shared by many tests of one ctest run, where
# scripts/with-pg.sh makes one per test (about 4 s each: initdb, start, stop):
#
#   sh scripts/pg-shared.sh start DIR MEMTOOL   (a ctest fixture's setup)
#   sh scripts/pg-shared.sh run DIR CMD [ARGS...]
#   sh scripts/pg-shared.sh stop DIR            (the fixture's cleanup)
#
# start makes the cluster in DIR (one a previous run left there is stopped and
# removed first) and the schema as an operator would (scripts/pg-prepare.sh).
# run gives CMD the variables with-pg.sh gives, for a new database copied from
# the prepared one, and MEMTOOL_TEST_PG_PREPARED=1. Only for tests that never
# touch the server or its roles (the golden cases): the others keep a cluster
# of their own. A watchdog stops the cluster when the process that
# ran `start` (ctest) ends, so that a killed run leaves no server behind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
die() {
    echo "pg-shared: $*" >&2
    exit 1
}
[ $# -ge 2 ] || die "usage: pg-shared.sh start DIR MEMTOOL | run DIR CMD... | stop DIR"
what=$1
dir=$2
shift 2
# DIR only names the cluster: the file DIR/cluster holds where it is, a new
# directory under $TMPDIR each time (one the database's user can reach), so
# that the watchdog of a run before never stops this run's cluster.
cluster() {
    [ -f "$dir/cluster" ] && cat "$dir/cluster"
}
case $what in
start)
    [ $# -eq 1 ] || die "usage: pg-shared.sh start DIR MEMTOOL"
    old=$(cluster || true)
    [ -z "$old" ] || sh "$here/pg-cluster.sh" stop "$old"
    mkdir -p "$dir"
    c=$(mktemp -d "${TMPDIR:-/tmp}/memtool-pg-shared.XXXXXX")
    echo "$c" >"$dir/cluster"
    sh "$here/pg-cluster.sh" start "$c" || {
        cat "$c/server.log" "$c/initdb.log" >&2 2>/dev/null || true
        die "the shared PostgreSQL test cluster could not start"
    }
    # shellcheck disable=SC2016 # expanded by the watchdog's shell
    (setsid sh -c 'while kill -0 "$1" 2>/dev/null && [ -d "$3" ]; do sleep 1; done; sh "$2" stop "$3"' \
        sh "$PPID" "$here/pg-cluster.sh" "$c" </dev/null >/dev/null 2>&1 &)
    # shellcheck disable=SC1091
    . "$c/env"
    sh "$here/pg-prepare.sh" "$1"
    ;;
run)
    [ $# -ge 1 ] || die "usage: pg-shared.sh run DIR CMD [ARGS...]"
    c=$(cluster || true)
    [ -n "$c" ] && [ -f "$c/env" ] && [ -f "$c/data/postmaster.pid" ] ||
        die "no shared cluster for $dir: its ctest fixture (the setup test) did not run or failed"
    # shellcheck disable=SC1091
    . "$c/env"
    # A database of its own, a copy of the prepared one: cases name tenants
    # of their own choosing (t1, t2...), which would meet in one database.
    db=case_$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
    psql -X -q -v ON_ERROR_STOP=1 "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" \
        -c "CREATE DATABASE $db TEMPLATE memtool OWNER memtool_owner" >/dev/null ||
        die "could not make a database for the test in the shared cluster"
    MEMTOOL_TEST_PG=${MEMTOOL_TEST_PG%/memtool}/$db
    MEMTOOL_TEST_PG_OWNER=${MEMTOOL_TEST_PG_OWNER%/memtool}/$db
    MEMTOOL_TEST_PG_ADMIN="${MEMTOOL_TEST_PG_ADMIN% dbname=memtool} dbname=$db"
    export MEMTOOL_TEST_PG MEMTOOL_TEST_PG_OWNER MEMTOOL_TEST_PG_ADMIN MEMTOOL_TEST_PG_PREPARED=1
    exec "$@"
    ;;
stop)
    c=$(cluster || true)
    [ -z "$c" ] || sh "$here/pg-cluster.sh" stop "$c"
    rm -f "$dir/cluster"
    ;;
*)
    die "usage: pg-shared.sh start DIR MEMTOOL | run DIR CMD... | stop DIR"
    ;;
esac

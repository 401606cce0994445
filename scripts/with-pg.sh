#!/bin/sh
# Run a command with a throwaway PostgreSQL cluster (scripts/pg-cluster.sh) around it:
#
#   sh scripts/with-pg.sh CMD [ARGS...]
#
# CMD gets PGHOST (the socket directory), PGPORT, PGPASSFILE and MEMTOOL_TEST_PG (the
# URL memtool's role connects with; MEMTOOL_TEST_PG_OWNER and _ADMIN are the owner's
# and the superuser's). The cluster is stopped and removed whatever way CMD ends: its
# exit status, an interrupt or a termination; the exit status is CMD's.
# shellcheck disable=SC2317 # the functions are called by the traps
set -eu
[ $# -ge 1 ] || {
    echo "usage: with-pg.sh CMD [ARGS...]" >&2
    exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/memtool-pg.XXXXXX")
stopped=0

cleanup() {
    [ "$stopped" -eq 1 ] && return 0
    stopped=1
    sh "$here/pg-cluster.sh" stop "$dir"
}
trap cleanup EXIT
# A signal to this script goes on to the command, then the cluster is stopped; the
# status then says which signal it was.
child=
on_signal() {
    [ -z "$child" ] || kill "-$1" "$child" 2>/dev/null || true
    [ -z "$child" ] || wait "$child" 2>/dev/null || true
    cleanup
    trap - "$1"
    kill "-$1" $$
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

# A watchdog outside this script's process tree stops the cluster if this script
# is killed outright (SIGKILL, as ctest does at a timeout), when no trap can run:
# the server, started by pg_ctl, is no child of ours and would outlive us.
# shellcheck disable=SC2016 # expanded by the watchdog's shell
(setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; sh "$2" stop "$3"' \
    sh $$ "$here/pg-cluster.sh" "$dir" </dev/null >/dev/null 2>&1 &)

sh "$here/pg-cluster.sh" start "$dir" || {
    echo "with-pg: the PostgreSQL test cluster could not start (server log above, if any):" >&2
    cat "$dir/server.log" "$dir/initdb.log" >&2 2>/dev/null || true
    exit 1
}
# shellcheck disable=SC1091
. "$dir/env"
# In the background, so that a signal reaches the traps at once (the shell runs
# them only between commands); stdin passed on explicitly (a background command
# would get /dev/null).
exec 3<&0
"$@" <&3 3<&- &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"

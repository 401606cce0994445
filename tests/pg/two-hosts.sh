#!/bin/sh
# Two "hosts" sharing one PostgreSQL server, on one machine: run TEST with
#   MEMTOOL_TEST_HOSTS="PID_A URL_A PID_B URL_B"
# where each PID is a process in a network namespace of its own (a host) that
# reaches the server only over a veth pair, at URL (the server's address on
# that pair), and MEMTOOL_TEST_PG etc. as scripts/with-pg.sh sets them.
#
# Everything happens inside a new network namespace (unshare -n) of this
# script: the server's, with the two hosts' namespaces inside it; the
# addresses (10.213.1.0/24, 10.213.2.0/24) exist only there, so nothing of
# the machine's own network is touched, and it all goes when the processes do.
#
#   sh tests/pg/two-hosts.sh TEST [ARGS...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "${MT_TWO_HOSTS_INSIDE:-}" != 1 ]; then
    unshare -n true 2>/dev/null || {
        echo "two-hosts: cannot make a network namespace (unshare -n): this test needs root" \
            "or CAP_SYS_ADMIN and CAP_NET_ADMIN" >&2
        exit 1
    }
    MT_TWO_HOSTS_INSIDE=1 exec unshare -n sh "$0" "$@"
fi
ip link set lo up
pids=
cleanup() {
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    [ -z "$pids" ] || wait $pids 2>/dev/null || true
}
trap cleanup EXIT INT TERM
n=1
for h in A B; do
    # A process in a namespace of its own stands for the host; the test's
    # processes join its namespace (setns) to be on that host.
    unshare -n sleep 3600 &
    pid=$!
    pids="$pids $pid"
    # Wait until it is in its own namespace.
    i=0
    while [ "$(readlink /proc/$pid/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do
        i=$((i + 1))
        [ "$i" -lt 100 ] || {
            echo "two-hosts: the host namespace did not appear" >&2
            exit 1
        }
        sleep 0.05
    done
    ip link add "mtsrv$h" type veth peer name eth0 netns "$pid"
    ip addr add "10.213.$n.1/24" dev "mtsrv$h"
    ip link set "mtsrv$h" up
    nsenter -t "$pid" -n ip link set lo up
    nsenter -t "$pid" -n ip addr add "10.213.$n.2/24" dev eth0
    nsenter -t "$pid" -n ip link set eth0 up
    eval "MT_HOST_${h}_PID=$pid MT_HOST_${h}_ADDR=10.213.$n.1"
    n=$((n + 1))
done
# shellcheck disable=SC2154 # set by the eval above
export MT_HOST_A_PID MT_HOST_A_ADDR MT_HOST_B_PID MT_HOST_B_ADDR
# shellcheck disable=SC2016 # expanded by the inner shell, once PGPORT is known
MEMTOOL_PG_LISTEN=10.213.1.1,10.213.2.1 sh "$here/../../scripts/with-pg.sh" sh -c '
    u="memtool@%s:$PGPORT/memtool"
    MEMTOOL_TEST_HOSTS="$MT_HOST_A_PID postgresql://$(printf "$u" "$MT_HOST_A_ADDR")"
    MEMTOOL_TEST_HOSTS="$MEMTOOL_TEST_HOSTS $MT_HOST_B_PID postgresql://$(printf "$u" "$MT_HOST_B_ADDR")"
    export MEMTOOL_TEST_HOSTS
    exec "$@"' sh "$@"

#!/bin/sh
# A throwaway PostgreSQL cluster for the tests, from Debian's own server package.
#
#   sh scripts/pg-cluster.sh start DIR    make a cluster in DIR (new or empty) and start it;
#                                         DIR/env then holds the exports for a client
#   sh scripts/pg-cluster.sh stop DIR     stop it, make sure no process of it is left, remove DIR
#
# scripts/with-pg.sh runs a command with a cluster around it; that is what the tests use.
#
# The cluster:
#   - listens on a Unix socket in DIR/run and on 127.0.0.1 at a free port (plus the
#     addresses in MEMTOOL_PG_LISTEN, comma separated, for tests that reach it from
#     other network namespaces);
#   - fsync, synchronous_commit and full_page_writes are off: the cluster lives for one
#     test run and is thrown away, so surviving a power cut buys nothing and costs time;
#   - the socket trusts every local user (only the user running the tests can reach
#     DIR/run); TCP asks for a password (scram-sha-256), so a wrong one can be tested;
#   - roles: `postgres`, the superuser, only on the socket (setting up, and the tests'
#     look behind memtool's back); `memtool_owner`, who owns the database `memtool` and
#     so may create memtool's schema in it; `memtool`, what memtool connects as: not a
#     superuser, not the owner, no CREATEROLE/CREATEDB, no CREATE on the database: it
#     gets only the grants an administrator gives it after the schema is made.
#     Passwords are random, kept in DIR/pgpass (mode 0600, PGPASSFILE), never printed.
#
# PostgreSQL refuses to run as root, and the tests run as root here: as root the
# server runs as the `postgres` system user, which Debian's postgresql package makes
# (so nothing is added to the system); as anyone else it runs as that user.
set -eu

die() {
    echo "pg-cluster: $*" >&2
    exit 1
}

# Debian installs the server in /usr/lib/postgresql/<version>/bin: take the newest.
pg_bin() {
    best=
    bestv=0
    for d in /usr/lib/postgresql/*/bin; do
        v=$(basename "$(dirname "$d")")
        case $v in '' | *[!0-9]*) continue ;; esac
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] && [ "$v" -gt "$bestv" ]; then
            best=$d
            bestv=$v
        fi
    done
    [ -n "$best" ] ||
        die "no PostgreSQL server in /usr/lib/postgresql/*/bin: install it with sh scripts/install-deps.sh"
    echo "$best"
}

# Run a command as the cluster's user.
as_db() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A TCP port nothing listens on now (the server's start is retried if one is taken meanwhile).
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

secret() {
    head -c 18 /dev/urandom | base64 | tr '+/' 'AB'
}

start() {
    dir=$1
    mkdir -p "$dir"
    [ -z "$(ls -A "$dir")" ] || die "$dir is not empty: give a new or empty directory"
    dir=$(cd "$dir" && pwd)
    bin=$(pg_bin)
    if [ "$(id -u)" -eq 0 ]; then
        getent passwd postgres >/dev/null ||
            die "no system user postgres: install Debian's postgresql package (sh scripts/install-deps.sh)"
        chown postgres "$dir"
    fi
    mkdir "$dir/run"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir/run"

    # --no-sync: see fsync above.
    as_db "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 ||
        die "initdb failed: see $dir/initdb.log"

    listen="127.0.0.1${MEMTOOL_PG_LISTEN:+,$MEMTOOL_PG_LISTEN}"
    tries=0
    while :; do
        port=$(free_port)
        if as_db "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -s \
            -o "-p $port -k $dir/run -c listen_addresses=$listen -c fsync=off \
                -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB \
                -c max_connections=60" start >/dev/null; then
            break
        fi
        tries=$((tries + 1))
        [ "$tries" -lt 5 ] || die "the server did not start: see $dir/server.log"
    done
    # Other addresses than loopback (MEMTOOL_PG_LISTEN) are for test namespaces, whose
    # clients are on the server's own subnets: password authentication there too.
    if [ -n "${MEMTOOL_PG_LISTEN:-}" ]; then
        echo "host all all samenet scram-sha-256" >>"$dir/data/pg_hba.conf"
        as_db "$bin/pg_ctl" -D "$dir/data" -s reload
    fi

    owner_pw=$(secret)
    memtool_pw=$(secret)
    # The passwords go to psql on stdin, never on a command line (ps would show them).
    as_db "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/run" -p "$port" -U postgres \
        -d postgres >/dev/null <<EOF || die "setting up the roles failed: see $dir/server.log"
CREATE ROLE memtool_owner LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB PASSWORD '$owner_pw';
CREATE ROLE memtool LOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOINHERIT PASSWORD '$memtool_pw';
CREATE DATABASE memtool OWNER memtool_owner;
EOF
    umask 077
    cat >"$dir/pgpass" <<EOF
*:$port:*:memtool_owner:$owner_pw
*:$port:*:memtool:$memtool_pw
EOF
    cat >"$dir/env" <<EOF
export PGHOST='$dir/run'
export PGPORT='$port'
export PGPASSFILE='$dir/pgpass'
export MEMTOOL_TEST_PG='postgresql://memtool@127.0.0.1:$port/memtool'
export MEMTOOL_TEST_PG_OWNER='postgresql://memtool_owner@127.0.0.1:$port/memtool'
export MEMTOOL_TEST_PG_ADMIN='host=$dir/run port=$port user=postgres dbname=memtool'
export MEMTOOL_TEST_PG_BIN='$bin'
export MEMTOOL_TEST_PG_DIR='$dir'
EOF
}

stop() {
    dir=$1
    [ -d "$dir" ] || return 0
    bin=$(pg_bin)
    if [ -f "$dir/data/postmaster.pid" ]; then
        pid=$(head -n 1 "$dir/data/postmaster.pid")
        kids=$(pgrep -P "$pid" 2>/dev/null || true)
        # fast: the clients are cut off, nothing waits for them to go.
        as_db "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 -s stop >/dev/null 2>&1 || true
        # If it would not stop, end the postmaster we started (by its pid): it ends its children.
        if kill -0 "$pid" 2>/dev/null; then
            kill -QUIT "$pid" 2>/dev/null || true
            sleep 1
            kill -KILL "$pid" 2>/dev/null || true
        fi
        # Wait until no process of the cluster is left.
        n=0
        for p in $pid $kids; do
            while kill -0 "$p" 2>/dev/null && [ "$(ps -o comm= -p "$p")" = postgres ]; do
                n=$((n + 1))
                [ "$n" -lt 100 ] || die "process $p of the cluster in $dir is still running"
                sleep 0.1
            done
        done
    fi
    rm -rf "$dir"
}

[ $# -eq 2 ] || die "usage: pg-cluster.sh start|stop DIR"
case $1 in
start) start "$2" ;;
stop) stop "$2" ;;
*) die "usage: pg-cluster.sh start|stop DIR" ;;
esac

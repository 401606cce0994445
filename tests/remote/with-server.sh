#!/bin/sh
# Run a program with a memtool server on loopback beside it (a SQLite store in a
# scratch directory, a key of its own): MEMTOOL_TEST_REMOTE is its base URL and
# MEMTOOL_API_KEY its key; the server is stopped however the program ends.
# usage: with-server.sh MEMTOOL PROGRAM [ARGS...]
set -eu
memtool=$1
shift
dir=$(mktemp -d "${TMPDIR:-/tmp}/memtool-remote-XXXXXX")
pid=
stop() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 1' INT TERM
MEMTOOL_API_KEY=$("$memtool" server keys add conformance --keys "$dir/keys")
mkfifo "$dir/url"
"$memtool" --store "sqlite:$dir/s.db" server --listen 127.0.0.1:0 --keys "$dir/keys" \
    >"$dir/url" 2>"$dir/log" &
pid=$!
MEMTOOL_TEST_REMOTE=
read -r MEMTOOL_TEST_REMOTE <"$dir/url" || true
case $MEMTOOL_TEST_REMOTE in
http://127.0.0.1:*) ;;
*) echo "with-server.sh: memtool server did not start:" >&2; cat "$dir/log" >&2; exit 1 ;;
esac
export MEMTOOL_API_KEY MEMTOOL_TEST_REMOTE
"$@"

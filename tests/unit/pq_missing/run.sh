#!/bin/sh
# libpq is loaded only when a PostgreSQL store is opened (src/db/pq_load.h):
# a file store works without it, and a postgresql:// store says what to
# install, exit 2, when libpq is missing or is not libpq.
#
#   sh run.sh MEMTOOL FAKE_LIB_DIR
set -eu
memtool=$1
fake=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(echo '{"command":"view","path":"/memories"}' |
    LD_LIBRARY_PATH="$fake" "$memtool" --store "postgresql:///nodb?host=$work" call 2>&1) &&
    fail "a store without libpq worked: $out"
status=$?
[ "$status" = 2 ] || fail "exit $status, want 2: $out"
case $out in
*"libpq.so.5 lacks PQ"*"install Debian's libpq5 package"*) ;;
*) fail "no clear error: $out" ;;
esac

# The file store needs no libpq, and never loads it.
printf '%s\n' '{"command":"create","path":"/memories/a.md","file_text":"x\n"}' |
    LD_LIBRARY_PATH="$fake" "$memtool" --root "$work/s" call >/dev/null ||
    fail "the file store failed beside a broken libpq"
# LeakSanitizer cannot run under ptrace: a sanitizer build's leak check is off here only.
echo '{"command":"view","path":"/memories/a.md"}' |
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -e trace=openat -o "$work/trace" "$memtool" --root "$work/s" call >/dev/null ||
    fail "the view under strace failed"
grep -q 'libsqlite3' "$work/trace" || fail "strace saw no library open: $(head -3 "$work/trace")"
! grep -q 'libpq' "$work/trace" || fail "a file-store view loaded libpq"
echo "pq_missing: ok"

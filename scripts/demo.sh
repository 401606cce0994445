#!/bin/sh
# `make run`: memtool at work on a scratch store, as an agent would use it.
set -eu
memtool=${1:-build/memtool}
store=$(mktemp -d)/memories
trap 'rm -rf "$(dirname "$store")"' EXIT
run() {
    printf '\n$ %s\n' "$*"
    "$@" || true
}
run "$memtool" --version
run "$memtool" --root "$store" create /memories/progress.md <<'TXT'
# Progress
- [ ] read the spec
- [ ] write the parser
TXT
run "$memtool" --root "$store" str-replace /memories/progress.md "- [ ] read the spec" "- [x] read the spec"
run "$memtool" --root "$store" insert /memories/progress.md 3 "- [ ] benchmarks"
run "$memtool" --root "$store" view /memories/progress.md
run "$memtool" --root "$store" view /memories
printf '\n$ echo %s | memtool call\n' "'{\"command\":\"view\",\"path\":\"/memories/../etc/passwd\"}'"
echo '{"command":"view","path":"/memories/../etc/passwd"}' | "$memtool" --root "$store" call || true
echo

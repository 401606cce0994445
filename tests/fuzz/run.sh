#!/bin/sh
# Run one libFuzzer target for a fixed time on its seed corpora.
#   run.sh TARGET SECONDS ARTIFACT_DIR CORPUS_DIR...
# New inputs go to a scratch directory, never into the repository's corpus;
# a crash is saved in ARTIFACT_DIR and fails the run. The store the target
# works on lives under a private TMPDIR that is removed afterwards.
set -eu
target=$1
seconds=$2
artifacts=$3
shift 3
name=$(basename "$target")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mt-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/new" "$work/tmp" "$artifacts"
dict=
if [ -f "$here/${name#fuzz_}.dict" ]; then
    dict="-dict=$here/${name#fuzz_}.dict"
fi
seeds=
for d in "$@"; do
    [ -d "$d" ] && seeds="$seeds $d"
done
# -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a leak or a
# runaway allocation fails instead of eating the machine.
# shellcheck disable=SC2086
TMPDIR="$work/tmp" "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" $dict \
    "$work/new" $seeds

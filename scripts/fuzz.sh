#!/bin/sh
# `make fuzz`: each libFuzzer target for FUZZ_SECONDS (default 600) on its seed
# corpus, one after another, in a clang ASan + UBSan build (build-fuzz/).
# New inputs stay in build-fuzz/corpus-new/; crashes go to build-fuzz/artifacts/
# and fail the run. A crash found becomes a regression: minimise it
# (TARGET -minimize_crash=1 CRASH), add it to tests/fuzz/regressions/NAME/,
# and every ctest run replays it from then on.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-${FUZZ_SECONDS:-600}}
if ! command -v clang >/dev/null 2>&1; then
    echo "make fuzz needs clang (libFuzzer)" >&2
    exit 2
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMEMTOOL_SANITIZE=address,undefined >/dev/null
targets=$(cd build-fuzz && ctest -N -L fuzz | sed -n 's/^ *Test *#[0-9]*: fuzz_//p')
# shellcheck disable=SC2086
cmake --build build-fuzz --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
status=0
for t in $targets; do
    echo "== fuzz_$t for $seconds s"
    mkdir -p "build-fuzz/corpus-new/$t"
    seeds=tests/fuzz/corpus/$t
    [ -d "tests/fuzz/regressions/$t" ] && seeds="$seeds tests/fuzz/regressions/$t"
    dict=
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # shellcheck disable=SC2086
    ASAN_OPTIONS=detect_leaks=1 "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="build-fuzz/artifacts-$t-" $dict "build-fuzz/corpus-new/$t" $seeds ||
        status=1
done
exit $status

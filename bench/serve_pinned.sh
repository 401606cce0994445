#!/bin/sh
# serve's CPU per small view against memtool built from an earlier commit,
# and against the floor of the calls each of them makes.
#
#   sh bench/serve_pinned.sh [--build DIR] [--pinned REV | --pinned-bin PATH] [--rounds N]
#                            [--views N] [--csv FILE] [--smoke]
#
# 200,000 views of 100 small files are read by each server from a file (no
# client, so what is timed is the server's own user+system CPU), in
# interleaved rounds, best kept:
# - memtool (--build DIR/memtool) and memtool at REV (default fac79cf), built
#   here from this repository's history (or the binary --pinned-bin names);
# - the floor server (bench/floor_serve.c) three ways: openat and fstat; the
#   confined openat2 and fstat the earlier build made; and --look, which adds
#   the look before the open that memtool's guarantees now require.
# The look's price (look - confined) added to the earlier build's CPU is the
# least this build can spend per view while keeping the guarantee; a ratio
# to the earlier build under that bound is memtool's own code at its floor.
# --smoke: a few views and rounds, the pinned build replaced by this one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build="$top/build"
pinned=fac79cf
pinned_bin=""
rounds=7
views=200000
csv=""
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --pinned) pinned=$2; shift 2 ;;
    --pinned-bin) pinned_bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --views) views=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --smoke) rounds=2; views=2000; pinned_bin=SELF; shift ;;
    *) echo "usage: sh bench/serve_pinned.sh [--build DIR] [--pinned REV | --pinned-bin PATH]" \
        "[--rounds N] [--views N] [--csv FILE] [--smoke]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
memtool="$build/memtool"
floor="$build/bench/mt_bench_floor_serve"
for p in "$memtool" "$floor"; do
    [ -x "$p" ] || { echo "serve_pinned: $p is missing: build first" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "serve_pinned: /usr/bin/time is needed (Debian package time)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-serve-pinned.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

if [ "$pinned_bin" = SELF ]; then
    pinned_bin=$memtool
    pinned="(this build)"
elif [ -z "$pinned_bin" ]; then
    echo "serve_pinned: building memtool at $pinned" >&2
    mkdir -p "$work/src"
    git -C "$top" archive "$pinned" | tar -x -C "$work/src"
    cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DMEMTOOL_TESTS=OFF >/dev/null
    cmake --build "$work/build" --target memtool_cli >/dev/null
    pinned_bin="$work/build/memtool"
fi

# The store: 100 files of two short lines; the views, round robin.
mkdir -p "$work/memories"
i=1
while [ $i -le 100 ]; do
    printf 'line one\nline two\n' >"$work/memories/f$i.md"
    i=$((i + 1))
done
awk -v n="$views" 'BEGIN { for (k = 0; k < n; k++)
    printf "{\"command\":\"view\",\"path\":\"/memories/f%d.md\"}\n", k % 100 + 1 }' >"$work/views"

# One server over the views: its user+system seconds, appended to its file.
run() { # name command...
    name=$1
    shift
    /usr/bin/time -f "%U %S" -o "$work/t" "$@" <"$work/views" >"$work/out"
    # Every view answered, and none with an error.
    n=$(grep -c '"is_error":false' "$work/out" || true)
    [ "$n" = "$views" ] || { echo "serve_pinned: $name answered $n of $views views" >&2; exit 1; }
    awk '{ print $1 + $2 }' "$work/t" >>"$work/$name"
}
r=1
while [ $r -le "$rounds" ]; do
    run pinned "$pinned_bin" --root "$work/memories" --durability none serve
    run memtool "$memtool" --root "$work/memories" --durability none serve
    run floor "$floor" --root "$work/memories"
    run confined "$floor" --root "$work/memories" --confined
    run look "$floor" --root "$work/memories" --look
    r=$((r + 1))
done

best() { sort -n "$work/$1" | head -n 1; }
{
    echo "server,rounds,views,best_cpu_s,cpu_us_per_view"
    for s in floor confined look pinned memtool; do
        b=$(best $s)
        echo "$s,$rounds,$views,$b,$(awk -v b="$b" -v n="$views" 'BEGIN { printf "%.3f", b * 1e6 / n }')"
    done
} >"$work/csv"
[ -n "$csv" ] && cp "$work/csv" "$csv"
cat "$work/csv"
awk -F, -v rev="$pinned" 'NR > 1 { us[$1] = $5 }
END {
    r = us["memtool"] / us["pinned"]
    look = us["look"] - us["confined"]
    bound = (us["pinned"] + look) / us["pinned"]
    printf "memtool uses %.3fx the CPU per view of memtool at %s; the look before the open costs %.3f us " \
           "a view (look %.3f - confined %.3f), so the least with the guarantee is %.3fx: %s\n",
           r, rev, look, us["look"], us["confined"], bound,
           r <= 1.05 ? "within 1.05x" : r <= bound ? "at the floor (1.05x is below it)" : "over the floor"
}' "$work/csv"

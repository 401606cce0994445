#!/bin/sh
# The whole benchmark in one go: memtool (libmemtool in process, `memtool call`,
# `memtool serve`) against the official TypeScript SDK's memory tool and the
# syscall floor, on this machine. Writes CSV, PNG plots and BENCHMARKS.md.
#
#   sh bench/run.sh [--build DIR] [--out DIR] [--markdown FILE] [--smoke]
#
# --build  the CMake build tree with memtool and bench/mt_bench* (default: build)
# --out    where the CSV and plots go (default: bench/results; BENCHMARKS.md goes
#          to the repository root). With --smoke: a few iterations of every suite
#          on small fixtures, BENCHMARKS.md inside --out, then a check that every
#          row a run should produce is there. The smoke run times nothing that
#          matters; it keeps the harness from rotting.
# --markdown  where the report goes instead
# BENCH_WORKDIR  where the stores are made (default: a new directory in $TMPDIR);
#          it must be on a real disk filesystem for the fsync numbers to mean anything.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build="$top/build"
out=""
md=""
smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --markdown) md=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    *) echo "usage: sh bench/run.sh [--build DIR] [--out DIR] [--markdown FILE] [--smoke]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
if [ -z "$out" ]; then
    [ $smoke = 1 ] && out="$build/bench-smoke" || out="$here/results"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "$md" ]; then
    [ $smoke = 1 ] && md="$out/BENCHMARKS.md" || md="$top/BENCHMARKS.md"
fi

memtool="$build/memtool"
bin="$build/bench"
for p in "$memtool" "$bin/mt_bench" "$bin/mt_bench_spawn" "$bin/mt_bench_once" \
    "$bin/mt_bench_serve" "$bin/mt_bench_floor_serve" "$bin/mt_bench_lean_call" \
    "$bin/mt_bench_str_replace_worst" "$bin/mt_bench_history"; do
    [ -x "$p" ] || { echo "bench: $p is missing: build first (make build)" >&2; exit 1; }
done
command -v node >/dev/null 2>&1 || { echo "bench: node is needed (scripts/install-deps.sh)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "bench: python3 is needed" >&2; exit 1; }

# The SDK, exactly as pinned in package-lock.json. npm ci is skipped when the
# installed tree already matches the lock file.
stamp="$here/node_modules/.memtool-bench-lock"
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
    echo "bench: installing the SDK (npm ci)" >&2
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$here/package-lock.json" "$stamp"
fi

# Sizes and iteration counts. A full run takes a few minutes on 2 cores.
if [ $smoke = 1 ]; then
    OPS_ITERS=4; VIEW_ITERS=40; SDK_ITERS=4; SDK_VIEW_ITERS=20
    PROC_ITERS=3; NODE_ITERS=2
    SERVE_VIEW_OPS=300; SERVE_READ_OPS=200; SERVE_WRITE_OPS=24; SERVE_WRITE_NONE_OPS=48
    TREES="100 300"; TREE_ITERS=2; SDK_TREE_ITERS=1
    BIGS="65536 262144"; BIG_ITERS=2; SDK_BIG_ITERS=2
    SCAN_OPS=100; WORST_SECONDS=0.01
    HIST_ROUNDS=1; HIST_SCALE=50; HIST_VERSIONS=200; HIST_LOG_ITERS=2
else
    OPS_ITERS=1000; VIEW_ITERS=20000; SDK_ITERS=1000; SDK_VIEW_ITERS=5000
    PROC_ITERS=300; NODE_ITERS=40
    SERVE_VIEW_OPS=200000; SERVE_READ_OPS=100000; SERVE_WRITE_OPS=1200; SERVE_WRITE_NONE_OPS=12000
    TREES="1000 10000 100000"; TREE_ITERS=""; SDK_TREE_ITERS=""
    BIGS="1048576 10485760 104857600"; BIG_ITERS=""; SDK_BIG_ITERS=""
    SCAN_OPS=1000; WORST_SECONDS=1
    HIST_ROUNDS=5; HIST_SCALE=1; HIST_VERSIONS=10000; HIST_LOG_ITERS=20
fi
# Bigger inputs, fewer runs: each row still has several samples.
iters_for() { # $1 size, $2 small-count, $3 mid, $4 large, $5 override
    if [ -n "$5" ]; then echo "$5"; return; fi
    case $1 in
    1000 | 1048576) echo "$2" ;;
    10000 | 10485760) echo "$3" ;;
    *) echo "$4" ;;
    esac
}

work=${BENCH_WORKDIR:-}
if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-bench.XXXXXX")
    trap 'rm -rf "$work"' EXIT INT TERM
fi
mkdir -p "$work"

timings="$out/timings.csv"
serve="$out/serve.csv"
memory="$out/memory.csv"
meta="$out/meta.txt"
echo "suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us" >"$timings"
echo "suite,mix,impl,clients,durability,ops,wall_s,ops_per_s,server_cpu_s,ops_per_cpu_s,max_rss_kb" >"$serve"
echo "suite,op,impl,param,peak_rss_kb" >"$memory"

step() { echo "bench: $*" >&2; }
fresh() { rm -rf "$1"; mkdir -p "$1/memories"; }

{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "smoke=$smoke"
    echo "nproc=$(nproc)"
    echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
    echo "kernel=$(uname -sr)"
    echo "memory=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "filesystem=$(df -PT "$work" | awk 'NR == 2 {print $2}')"
    echo "node=$(node --version)"
    echo "sdk=$(cd "$here" && node -p "require('./node_modules/@anthropic-ai/sdk/package.json').version")"
    echo "memtool=$("$memtool" --version)"
    echo "commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")"
    echo "cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" | xargs -I{} sh -c '{} --version | head -n 1')"
    echo "load_start=$(cut -d ' ' -f 1-3 /proc/loadavg)"
    echo "trees=$TREES"
    echo "bigs=$BIGS"
    echo "history_versions=$HIST_VERSIONS"
} >"$meta"
started=$(date +%s)
# CPU time the hypervisor gave to others while this VM wanted it, if any.
cpu_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $9}' /proc/stat; }
ticks_start=$(cpu_ticks)

# 1 and 2 compare C with Node, which cannot run interleaved; they run in two
# rounds, C and Node taking turns, and each row keeps its faster round (by
# median), so a passing burst of load elsewhere on the machine does not decide
# a ratio. Both rounds are in rounds.csv.

# Inputs of the per-process suite: each run of a create names a new file.
inputs="$work/proc-inputs"
mkdir -p "$inputs"
"$bin/mt_bench" fixture-small "$inputs/small.md"
printf '{"command":"view","path":"/memories/small.md"}' >"$inputs/view.json"
smalljson=$(node -e 'process.stdout.write(JSON.stringify(require("fs").readFileSync(process.argv[1], "utf8")))' \
    "$inputs/small.md")
for d in memtool full sdk; do
    printf '{"command":"create","path":"/memories/c-%s/f%%N.md","file_text":%s}' "$d" "$smalljson" \
        >"$inputs/create-$d.json"
done
printf '{"command":"str_replace","path":"/memories/edit.md","old_str":"TOKEN_AAAA","new_str":"TOKEN_BBBB"}' >"$inputs/sr1.json"
printf '{"command":"str_replace","path":"/memories/edit.md","old_str":"TOKEN_BBBB","new_str":"TOKEN_AAAA"}' >"$inputs/sr2.json"
spawn="$bin/mt_bench_spawn"

# 1. Per operation, in process. memtool and the floor run interleaved (see bench.c).
inproc_round() { # round, output file
    step "in-process suite, round $1: memtool and the floor"
    fresh "$work/ops"
    "$bin/mt_bench" ops --impl memtool,floor --root "$work/ops/memories" --iters $OPS_ITERS \
        --view-iters $VIEW_ITERS >>"$2"
    step "in-process suite, round $1: sdk"
    fresh "$work/ops-sdk"
    node "$here/sdk_bench.mjs" ops --base "$work/ops-sdk" --iters $SDK_ITERS \
        --view-iters $SDK_VIEW_ITERS >>"$2"
}

# 2. Per process: `memtool call` and `node` with the SDK, one command each.
proc_round() { # round, output file
    step "per-process suite, round $1"
    fresh "$work/proc"
    cp "$inputs/small.md" "$work/proc/memories/small.md"
    cp "$inputs/small.md" "$work/proc/memories/edit.md"
    call="$memtool --root $work/proc/memories"
    $spawn --op view --impl floor --iters $PROC_ITERS --input "$inputs/view.json" \
        -- "$bin/mt_bench_once" "$work/proc/memories/small.md" >>"$2"
    $spawn --op view --impl memtool --iters $PROC_ITERS --input "$inputs/view.json" \
        -- $call --durability file call >>"$2"
    # The same call from a program that links libmemtool and jansson and nothing else.
    $spawn --op view --impl lean --iters $PROC_ITERS --input "$inputs/view.json" \
        -- "$bin/mt_bench_lean_call" --root "$work/proc/memories" --durability file >>"$2"
    $spawn --op create --impl memtool --durability file --iters $PROC_ITERS \
        --input "$inputs/create-memtool.json" -- $call --durability file call >>"$2"
    $spawn --op create --impl memtool --durability full --iters $PROC_ITERS \
        --input "$inputs/create-full.json" -- $call --durability full call >>"$2"
    # Whole rounds of the two inputs leave edit.md as it was.
    $spawn --op str_replace --impl memtool --durability file --iters $PROC_ITERS \
        --input "$inputs/sr1.json" --input "$inputs/sr2.json" -- $call --durability file call >>"$2"
    node_call="node $here/sdk_call.mjs $work/proc"
    $spawn --op view --impl sdk --iters $NODE_ITERS --input "$inputs/view.json" -- $node_call >>"$2"
    $spawn --op create --impl sdk --durability file --iters $NODE_ITERS \
        --input "$inputs/create-sdk.json" -- $node_call >>"$2"
    $spawn --op str_replace --impl sdk --durability file --iters $NODE_ITERS \
        --input "$inputs/sr1.json" --input "$inputs/sr2.json" -- $node_call >>"$2"
}

for round in 1 2; do
    : >"$work/round$round.csv"
    inproc_round $round "$work/round$round.csv"
    proc_round $round "$work/round$round.csv"
done
python3 "$here/report.py" --best-of "$out/rounds.csv" "$work/round1.csv" "$work/round2.csv" >>"$timings"

# 3. Throughput of `memtool serve` with pipelining clients.
tput() { # impl server mix clients durability ops [server-arg]
    step "serve: $3 mix, $4 client(s), $5 ($1)"
    fresh "$work/serve"
    "$bin/mt_bench_serve" --impl "$1" --memtool "$2" --root "$work/serve/memories" --mix "$3" \
        --clients "$4" --durability "$5" --ops "$6" ${7:+--server-arg "$7"} >>"$serve"
}
# The view mix, three rounds of each server in turn (the report keeps each
# one's best), since a second's noise moves a single run by 10%:
# - the floor, and the floor with the calls memtool's guarantees require of a
#   view (--look: a look before the open, a confined open, the identity check),
#   and without the look (--confined: the calls memtool made before it looked);
# - memtool built from $PINNED_SERVE (fac79cf, before those calls and access
#   recording), from this repository's history, in full runs only: a
#   regression of memtool's own code shows against it, the price of a promise
#   against floor-look/floor.
PINNED_SERVE=${PINNED_SERVE:-fac79cf}
pinned=""
if [ $smoke = 0 ] && git -C "$top" cat-file -e "$PINNED_SERVE^{commit}" 2>/dev/null; then
    step "building memtool at $PINNED_SERVE"
    mkdir -p "$work/pinned-src"
    git -C "$top" archive "$PINNED_SERVE" | tar -x -C "$work/pinned-src"
    if cmake -S "$work/pinned-src" -B "$work/pinned-build" -G Ninja \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null 2>&1 &&
        cmake --build "$work/pinned-build" --target memtool_cli >/dev/null 2>&1; then
        pinned="$work/pinned-build/memtool"
    else
        echo "bench: could not build $PINNED_SERVE; no pinned serve row" >&2
    fi
fi
echo "pinned_serve=${pinned:+$PINNED_SERVE}" >>"$out/meta.txt"
view_rounds=3
[ $smoke = 1 ] && view_rounds=1
round=1
while [ $round -le $view_rounds ]; do
    tput floor "$bin/mt_bench_floor_serve" view 1 none $SERVE_VIEW_OPS
    tput floor-confined "$bin/mt_bench_floor_serve" view 1 none $SERVE_VIEW_OPS --confined
    tput floor-look "$bin/mt_bench_floor_serve" view 1 none $SERVE_VIEW_OPS --look
    [ -n "$pinned" ] && tput pinned "$pinned" view 1 none $SERVE_VIEW_OPS
    tput memtool "$memtool" view 1 none $SERVE_VIEW_OPS
    round=$((round + 1))
done
tput memtool "$memtool" view 4 none $((SERVE_VIEW_OPS / 4))
tput memtool "$memtool" read 1 none $SERVE_READ_OPS
tput memtool "$memtool" read 4 none $((SERVE_READ_OPS / 4))
tput memtool "$memtool" write 1 file $SERVE_WRITE_OPS
tput memtool "$memtool" write 4 file $SERVE_WRITE_OPS
tput memtool "$memtool" write 1 none $SERVE_WRITE_NONE_OPS
tput memtool "$memtool" write 4 none $((SERVE_WRITE_NONE_OPS / 4))

# 4. Scale: a listing of big stores; view_range and str_replace on big files.
largest=""
for files in $TREES; do
    step "scale: view /memories over $files files"
    fresh "$work/tree$files"
    "$bin/mt_bench" fixture-tree "$work/tree$files/memories" "$files"
    n=$(iters_for "$files" 20 10 5 "$TREE_ITERS")
    "$bin/mt_bench" listing --impl memtool,floor,floor-cores --root "$work/tree$files/memories" --param "$files" \
        --iters "$n" >>"$timings"
    n=$(iters_for "$files" 10 5 2 "$SDK_TREE_ITERS")
    node "$here/sdk_bench.mjs" listing --base "$work/tree$files" --param "$files" --iters "$n" \
        --rss-out "$memory" >>"$timings"
    # One create per process in the big store: what a hook pays to write there
    # (the limits raised, as the default max_files is 10,000).
    n=$(iters_for "$files" 10 10 5 "$TREE_ITERS")
    $spawn --suite scale --op create_call --impl memtool --durability file --param "$files" \
        --iters "$n" --input "$inputs/create-memtool.json" \
        -- "$memtool" --root "$work/tree$files/memories" --durability file \
        --max-files 1000000000 --max-dirs 1000000000 --max-store-size 1024G call >>"$timings"
    n=$(iters_for "$files" 5 5 3 "$SDK_TREE_ITERS")
    $spawn --suite scale --op create_call --impl sdk --durability file --param "$files" \
        --iters "$n" --input "$inputs/create-sdk.json" -- node "$here/sdk_call.mjs" "$work/tree$files" \
        >>"$timings"
    [ -n "$largest" ] && rm -rf "$work/tree$largest"
    largest=$files
done

# 5. Memory: peak RSS of one serve process working on the largest store.
step "memory: serve over $largest files"
"$bin/mt_bench_serve" --memtool "$memtool" --root "$work/tree$largest/memories" --mix scan \
    --files "$largest" --durability none --ops $SCAN_OPS >>"$serve"
rm -rf "$work/tree$largest"

for bytes in $BIGS; do
    step "scale: a $bytes-byte file"
    # One file for all: every run of edits leaves it as it found it.
    fresh "$work/big"
    "$bin/mt_bench" fixture-bigfile "$work/big/memories/big.txt" "$bytes"
    n=$(iters_for "$bytes" 20 10 5 "$BIG_ITERS")
    "$bin/mt_bench" bigfile --impl memtool,floor --root "$work/big/memories" --param "$bytes" \
        --iters "$n" --durability file >>"$timings"
    "$bin/mt_bench" bigfile --impl memtool,floor --root "$work/big/memories" --param "$bytes" \
        --iters "$n" --durability none --ops str_replace >>"$timings"
    n=$(iters_for "$bytes" 10 5 3 "$SDK_BIG_ITERS")
    node "$here/sdk_bench.mjs" bigfile --base "$work/big" --param "$bytes" --iters "$n" >>"$timings"
done
rm -rf "$work/big"

# str_replace on the inputs that made match finding quadratic, next to a memchr
# pass over the same bytes and the same call with an old_str that matches nowhere.
step "worst cases of str_replace"
"$bin/mt_bench_str_replace_worst" --csv "$WORST_SECONDS" >>"$timings"

# 6. History: the same writes with history off and on, in alternating rounds
# of fresh stores at each durability; then a log of one memory with many
# versions, in process and as one `memtool log` process (which catches up
# first, as every log does).
step "history: what a version costs a write, and a log of $HIST_VERSIONS versions"
rm -rf "$work/history"
mkdir -p "$work/history"
"$bin/mt_bench_history" "$work/history" $HIST_ROUNDS $HIST_SCALE $HIST_VERSIONS >>"$timings"
: >"$inputs/empty"
$spawn --suite history --op log --impl memtool --param "$HIST_VERSIONS versions" \
    --iters $HIST_LOG_ITERS --input "$inputs/empty" \
    -- "$memtool" --root "$work/history/store" log /memories/a.md --limit 0 >>"$timings"
rm -rf "$work/history"

echo "load_end=$(cut -d ' ' -f 1-3 /proc/loadavg)" >>"$meta"
echo "$ticks_start $(cpu_ticks)" | awk '{ d = $3 - $1; s = 0; if (d > 0) s = 100 * ($4 - $2) / d
    printf "steal=%.1f%%\n", s }' >>"$meta"
echo "duration_s=$(($(date +%s) - started))" >>"$meta"

step "report: $md"
python3 "$here/report.py" --results "$out" --markdown "$md"
if [ $smoke = 1 ]; then
    python3 "$here/report.py" --results "$out" --check
fi

#!/bin/sh
# The SQL stores next to their floors (bench/store.c): SQLite in a scratch
# directory, then PostgreSQL over its Unix socket in a throwaway cluster
# (scripts/with-pg.sh). Writes CSV rows, and the round trips per command to
# stderr.
#
#   sh bench/store.sh [--build DIR] [--out FILE] [--smoke]
#
# --out    the CSV (default: bench/results/store.csv); serve's throughput goes
#          next to it, in store-serve.csv
# --smoke  a few iterations on a small store: a check that the suite runs.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build="$top/build"
out="$here/results/store.csv"
smoke=0
inner=0
part=all
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --pg-inner) inner=1; part=$2; shift 2 ;; # run by with-pg.sh: a PostgreSQL part
    *) echo "usage: sh bench/store.sh [--build DIR] [--out FILE] [--smoke]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
bin="$build/bench/mt_bench_store"
[ -x "$bin" ] || { echo "bench: $bin is missing: build first" >&2; exit 1; }

if [ $smoke = 1 ]; then
    VIEW_ITERS=100; WRITE_ITERS=20; FILES=300; LIST_ITERS=2
    SERVE_VIEW_OPS=300; SERVE_READ_OPS=200; SERVE_WRITE_OPS=24
else
    VIEW_ITERS=20000; WRITE_ITERS=1000; FILES=100000; LIST_ITERS=10
    SERVE_VIEW_OPS=200000; SERVE_READ_OPS=100000; SERVE_WRITE_OPS=12000
fi
serve_out="$(dirname "$out")/store-serve.csv"
step() { echo "bench: $*" >&2; }

# Every kind on one store URL; tenants keep each run's rows apart.
# The durability is SQLite's synchronous setting; PostgreSQL's commits are the
# server's to make durable (memtool sets nothing there), so it runs once.
# part: floors (against the floors), serve (serve's mixes), all.
suite() { # url, name, durabilities, part
    [ "$4" = serve ] || floors "$@"
    [ "$4" = floors ] || serves "$@"
}

floors() {
    for d in $3; do
        for h in on off; do
            step "$2: str_replace, durability $d, history $h"
            "$bin" --store "$1" --tenant "w-$d-$h" --kind write --durability "$d" --history "$h" \
                --iters $WRITE_ITERS >>"$out"
        done
    done
    step "$2: view"
    "$bin" --store "$1" --tenant view --kind view --iters $VIEW_ITERS >>"$out"
    step "$2: view /memories of $FILES memories"
    "$bin" --store "$1" --tenant list --kind listing --files $FILES --iters $LIST_ITERS >>"$out"
}

serves() {
    # serve's mixes as section 3 of BENCHMARKS.md runs them on the file store.
    for run in "view 1 none $SERVE_VIEW_OPS" "view 4 none $((SERVE_VIEW_OPS / 4))" \
        "read 1 none $SERVE_READ_OPS" "write 1 none $SERVE_WRITE_OPS" \
        "write 4 none $((SERVE_WRITE_OPS / 4))"; do
        # shellcheck disable=SC2086 # the run's words, split on purpose
        set -- "$1" "$2" $run
        step "$2: serve, $3 mix, $4 client(s)"
        "$build/bench/mt_bench_serve" --memtool "$build/memtool" --store "$1" \
            --tenant "serve-$3-$4" --impl "memtool-$2" --mix "$3" --clients "$4" \
            --durability "$5" --ops "$6" >>"$serve_out"
    done
}

if [ $inner = 1 ]; then
    # The schema made by its owner and memtool's role granted what it needs,
    # as an operator would (memtool store --help), then memtool's role over
    # the socket.
    "$build/memtool" store upgrade "$MEMTOOL_TEST_PG_OWNER" >/dev/null
    psql -q -v ON_ERROR_STOP=1 "$MEMTOOL_TEST_PG_OWNER" -c "GRANT USAGE ON SCHEMA memtool TO memtool;
        GRANT SELECT ON memtool.meta TO memtool; GRANT SELECT, INSERT, UPDATE, DELETE ON
        memtool.usage, memtool.nodes, memtool.contents, memtool.content_refs, memtool.versions,
        memtool.search_docs TO memtool;"
    suite "postgresql://memtool@/memtool?host=$PGHOST&port=$PGPORT" postgresql full "$part"
    exit 0
fi

mkdir -p "$(dirname "$out")"
echo "suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us" >"$out"
echo "suite,mix,impl,clients,durability,ops,wall_s,ops_per_s,server_cpu_s,ops_per_cpu_s,max_rss_kb" \
    >"$serve_out"
work=$(mktemp -d "${TMPDIR:-/tmp}/memtool-store-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
suite "sqlite:$work/memories.db" sqlite "full file none" all
# Against its floor, PostgreSQL runs on one CPU, server and client: a round
# trip over the socket wakes the other side, and on this kind of virtual
# machine a wake-up on the other CPU costs 50-80 us more than one on the same
# CPU, which the scheduler picks anew for each connection's backend. memtool's
# connection and the floor's would each pay it or not by chance (one run saw
# memtool at 96 us a view and the floor at 24 us; pinned, 25-30 us and
# 19-20 us). Pinned, the ratio is the cost of the work itself. serve's mixes
# run unpinned, as a server would.
pin=
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -gt 1 ]; then
    pin="taskset -c 0"
fi
# shellcheck disable=SC2046 # --smoke, or nothing
$pin sh "$top/scripts/with-pg.sh" sh "$here/store.sh" --pg-inner floors --build "$build" \
    --out "$out" $([ $smoke = 1 ] && echo --smoke)
# shellcheck disable=SC2046
sh "$top/scripts/with-pg.sh" sh "$here/store.sh" --pg-inner serve --build "$build" --out "$out" \
    $([ $smoke = 1 ] && echo --smoke)

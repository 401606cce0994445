#!/bin/sh
# The secrets check's cost (bench/secrets.c): a 1 MiB scan against a plain
# pass over the same bytes, and creates with --secrets reject against creates
# with the check off, in one run. Writes the CSV and prints the ratios.
#
#   sh bench/secrets.sh [--build DIR] [--out FILE] [--smoke]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build="$top/build"
out="$here/results/secrets.csv"
iters=400
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --smoke) iters=8; shift ;;
    *) echo "usage: sh bench/secrets.sh [--build DIR] [--out FILE] [--smoke]" >&2; exit 2 ;;
    esac
done
bin="$build/bench/mt_bench_secrets"
[ -x "$bin" ] || { echo "bench: $bin is missing: build first" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "${BENCH_WORKDIR:-${TMPDIR:-/tmp}}/mt-secrets.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
echo "suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us" >"$out"
"$bin" --corpus "$top/tests/unit/data/secrets/corpus.txt" --dir "$work/store" --iters $iters >>"$out"
python3 - "$out" <<'PY'
import csv, sys
rows = {(r["op"], r["impl"]): r for r in csv.DictReader(open(sys.argv[1]))}
def med(op, impl): return float(rows[(op, impl)]["median_us"])
need = [("scan_1mib", "memtool"), ("scan_1mib", "floor"), ("create_small", "reject"),
        ("create_small", "off"), ("create_1mib", "reject"), ("create_1mib", "off")]
missing = [k for k in need if k not in rows]
if missing:
    sys.exit("bench: rows missing: %s" % missing)
print("scan of 1 MiB: %.0f us median (floor %.0f us, %.1fx)" %
      (med("scan_1mib", "memtool"), med("scan_1mib", "floor"),
       med("scan_1mib", "memtool") / med("scan_1mib", "floor")))
for op in ("create_small", "create_1mib"):
    print("%s: reject %.1f us, off %.1f us median: %.3fx" %
          (op, med(op, "reject"), med(op, "off"), med(op, "reject") / med(op, "off")))
PY

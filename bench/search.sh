#!/bin/sh
# Search on 10,000 memories (100 MB): one search in process on the file and
# SQLite stores (bench/search.c), against `grep -rF` over the same files, the
# floor a user would otherwise use, timed in the same run. Writes the CSV and
# prints the figures.
#
#   sh bench/search.sh [--build DIR] [--out FILE] [--smoke]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build="$top/build"
out="$here/results/search.csv"
files=10000
size=10240
rounds=21
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --smoke) files=200; rounds=3; shift ;;
    *) echo "usage: sh bench/search.sh [--build DIR] [--out FILE] [--smoke]" >&2; exit 2 ;;
    esac
done
bin="$build/bench/mt_bench_search"
memtool="$build/memtool"
[ -x "$bin" ] && [ -x "$memtool" ] || { echo "bench: build first ($bin, $memtool)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
work=$(mktemp -d "${BENCH_WORKDIR:-${TMPDIR:-/tmp}}/mt-search.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# The corpus: words drawn from a vocabulary with a Zipf-like spread, as prose
# is; a few rare words planted in few files; 100 directories.
python3 - "$work/files" "$files" "$size" "$work/queries" <<'PY'
import os, random, sys
root, n, size, queries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rnd = random.Random(42)
syll = ["ka", "lo", "mi", "re", "tu", "sa", "ne", "po", "di", "ver", "stan", "gro", "lin", "mar"]
vocab = sorted({"".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))) for _ in range(30000)})
weights = [1.0 / (i + 1) for i in range(len(vocab))]
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    words, length = [], 0
    while length < size:
        line = " ".join(rnd.choices(vocab, weights, k=12))
        words.append(line)
        length += len(line) + 1
    if i % 2000 == 7:
        words.insert(3, "the rarely seen needleword sits here")
    with open(os.path.join(d, "m%05d.md" % i), "w") as f:
        f.write("\n".join(words)[:size] + "\n")
common, mid = vocab[0], vocab[200]
with open(queries, "w") as f:
    f.write("\n".join([common, mid, "needleword", '"%s %s"' % (common, vocab[1]),
                       vocab[300][:4] + "*"]) + "\n")
PY

echo "op,store,query,n,median_us,min_us,hits" >"$out"
big="--max-store-size 1000G --max-files 1000000 --max-dirs 100000 --max-file-size 64M --durability none"
mkdir -p "$work/store"
cp -r "$work/files/." "$work/store/"
# (through a file: a pipe would hide the bench's own failure from set -e)
"$bin" "file:$work/store" "$work/queries" $rounds >"$work/rows"
sed 's/^\([a-z_]*\),/\1,file,/' "$work/rows" >>"$out"
# shellcheck disable=SC2086
"$memtool" $big migrate --from "file:$work/files" --to "sqlite:$work/db.sqlite" >/dev/null 2>&1
"$bin" "sqlite:$work/db.sqlite" "$work/queries" $rounds >"$work/rows"
sed 's/^\([a-z_]*\),/\1,sqlite,/' "$work/rows" >>"$out"

# The floor: grep -rF over the same files, one process per search, as a user runs it.
python3 - "$work/files" "$work/queries" $rounds "$out" <<'PY'
import subprocess, sys, time
root, queries, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = []
for q in open(queries).read().split("\n"):
    if not q or q.startswith('"') or q.endswith("*"):
        continue
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        r = subprocess.run(["grep", "-rF", q, root], stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1e6)
    times.sort()
    rows.append('search,grep,"%s",%d,%.1f,%.1f,0' % (q.replace('"', '""'), rounds, times[rounds // 2], times[0]))
with open(out, "a") as f:
    f.write("\n".join(rows) + "\n")
PY

python3 - "$out" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
grep = {r["query"]: float(r["median_us"]) for r in rows if r["store"] == "grep"}
for r in rows:
    if r["store"] == "grep":
        continue
    if r["op"] == "first_search":
        print("%-6s first search (indexes every memory): %.0f ms" % (r["store"], float(r["median_us"]) / 1000))
        continue
    g = grep.get(r["query"])
    print("%-6s %-28s %8.2f ms  %5s hits%s" % (r["store"], r["query"], float(r["median_us"]) / 1000,
          r["hits"], "  (grep -rF %.1f ms: %.1fx faster)" % (g / 1000, g / float(r["median_us"])) if g else ""))
PY

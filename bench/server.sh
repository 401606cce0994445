#!/bin/sh
# memtool server against its floor, on this machine (BENCHMARKS.md, "memtool server").
#
#   sh bench/server.sh [--build DIR] [--seconds N] [--smoke]
#
# Retrieve of a small memory over keep-alive loopback HTTP (mt_bench_http_load:
# 8 clients, one connection each) from memtool server on file: and sqlite:,
# next to the floor: the same HTTP library, set up the same way, answering a
# fixed body of the same size (mt_bench_http_floor). Then an update under a
# content_sha256 precondition through the API, next to the same update (a
# str_replace with expected_sha256) through `memtool serve`, both from one
# Python client, one at a time. Prints a Markdown table. --smoke: short runs,
# and a check that every row is there (it times nothing that matters).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
seconds=5
updates=300
smoke=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --smoke) smoke=1; seconds=1; updates=20; shift ;;
    *) echo "usage: sh bench/server.sh [--build DIR] [--seconds N] [--smoke]" >&2; exit 2 ;;
    esac
done
memtool="$build/memtool"
work=$(mktemp -d)
# The servers' pids, in a file: start runs in $(...), a subshell, whose
# variables never reach this shell (the servers were left running).
cleanup() {
    if [ -f "$work/pids" ]; then
        for p in $(cat "$work/pids"); do kill "$p" 2>/dev/null || true; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
threads=8

start() { # start URL_FILE CMD...: runs CMD, waits for the URL it prints
    out=$1
    shift
    "$@" >"$out" 2>/dev/null &
    echo $! >>"$work/pids"
    i=0
    while [ ! -s "$out" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    head -n 1 "$out"
}

key=$("$memtool" server keys add bench --keys "$work/keys" 2>/dev/null)
rows="$work/rows"
: >"$rows"
for kind in file sqlite; do
    [ $kind = file ] && store="file:$work/fs" || store="sqlite:$work/db.sqlite"
    url=$(start "$work/url-$kind" "$memtool" --store "$store" server --listen 127.0.0.1:0 \
        --keys "$work/keys" --threads $threads)
    s=$(curl -s -H "Authorization: Bearer $key" -X POST "$url/v1/memory_stores" -d '{"name":"bench"}' |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    m=$(curl -s -H "Authorization: Bearer $key" -X POST "$url/v1/memory_stores/$s/memories" \
        -d '{"path":"/notes/small.md","content":"# Notes\n- the build uses ninja\n- tests run under ctest\n"}' |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    get="$url/v1/memory_stores/$s/memories/$m"
    size=$(curl -s -H "Authorization: Bearer $key" "$get" | wc -c)
    res=$("$build/bench/mt_bench_http_load" "$get" "$seconds" $threads "Authorization: Bearer $key")
    echo "retrieve $kind $res" >>"$rows"
    # The same retrieve's work without HTTP, in process, on the same store (the server idle).
    res=$("$build/bench/mt_bench_server_work" "$store" "$work/keys" "$key" "$s" "$m" "$seconds" $threads)
    echo "work $kind $res" >>"$rows"
    python3 - "$url" "$key" "$s" "$updates" "$kind" "$memtool" "$store" >>"$rows" <<'PY'
import hashlib, http.client, json, subprocess, sys, time
url, key, store_id, n, kind, memtool, store = sys.argv[1:8]
n = int(n)
host, port = url.split("//")[1].split(":")
c = http.client.HTTPConnection(host, int(port))
h = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
def req(method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    d = r.read()
    assert r.status == 200, (r.status, d)
    return json.loads(d)
m = req("POST", "/v1/memory_stores/%s/memories" % store_id, {"path": "/counter.md", "content": "count 0\n"})
sha = m["content_sha256"]
t0 = time.perf_counter()
for i in range(n):
    m = req("POST", "/v1/memory_stores/%s/memories/%s" % (store_id, m["id"]),
            {"content": "count %d\n" % (i + 1), "precondition": {"type": "content_sha256", "content_sha256": sha}})
    sha = m["content_sha256"]
api = (time.perf_counter() - t0) / n * 1000
# The same change through memtool serve, on a store of its own of the same kind.
serve_store = store + ("-serve" if kind == "file" else ".serve")
p = subprocess.Popen([memtool, "--store", serve_store, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(inp):
    p.stdin.write(json.dumps(inp) + "\n"); p.stdin.flush()
    r = json.loads(p.stdout.readline())
    assert not r["is_error"], r
call({"command": "create", "path": "/memories/counter.md", "file_text": "count 0\n"})
text = "count 0\n"
t0 = time.perf_counter()
for i in range(n):
    new = "count %d\n" % (i + 1)
    call({"command": "str_replace", "path": "/memories/counter.md", "old_str": text, "new_str": new,
          "expected_sha256": hashlib.sha256(text.encode()).hexdigest()})
    text = new
serve = (time.perf_counter() - t0) / n * 1000
p.stdin.close(); p.wait()
print("update %s {\"api_ms\":%.3f,\"serve_ms\":%.3f}" % (kind, api, serve))
PY
done
floor_url=$(start "$work/url-floor" "$build/bench/mt_bench_http_floor" "$size" $threads)
res=$("$build/bench/mt_bench_http_load" "$floor_url/" "$seconds" $threads)
echo "retrieve floor $res" >>"$rows"
python3 - "$rows" "$smoke" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    what, kind, j = line.split(" ", 2)
    rows[(what, kind)] = json.loads(j)
need = [("retrieve", "file"), ("retrieve", "sqlite"), ("retrieve", "floor"), ("work", "file"),
        ("work", "sqlite"), ("update", "file"), ("update", "sqlite")]
missing = [n for n in need if n not in rows]
if missing:
    sys.exit("bench/server.sh: rows missing: %s" % missing)
floor = rows[("retrieve", "floor")]["rps"]
print("| retrieve of a small memory, 8 keep-alive clients | requests/s | p50 ms | p99 ms | × HTTP floor |")
print("|---|---:|---:|---:|---:|")
for kind in ("floor", "file", "sqlite"):
    r = rows[("retrieve", kind)]
    name = "floor: libmicrohttpd, fixed body" if kind == "floor" else "memtool server, %s:" % kind
    print("| %s | %d | %.3f | %.3f | %.2f |" % (name, r["rps"], r["p50_ms"], r["p99_ms"], r["rps"] / floor if floor else 0))
print()
# The floor of a retrieve: the HTTP floor's work and the retrieve's own work
# (in process, no HTTP) on the same cores; per request their CPU times add.
print("| retrieve, against the work it needs | work alone, requests/s | floor: HTTP + work, requests/s | floor × HTTP floor | server × floor |")
print("|---|---:|---:|---:|---:|")
for kind in ("file", "sqlite"):
    work = rows[("work", kind)]["rps"]
    both = 1 / (1 / floor + 1 / work) if floor and work else 0
    srv = rows[("retrieve", kind)]["rps"]
    print("| %s: | %d | %d | %.2f | %.2f |" % (kind, work, both, both / floor if floor else 0, srv / both if both else 0))
print()
print("| update under a content_sha256 precondition, one client | API ms | `memtool serve` ms | ratio |")
print("|---|---:|---:|---:|")
for kind in ("file", "sqlite"):
    r = rows[("update", kind)]
    print("| %s: | %.3f | %.3f | %.2f |" % (kind, r["api_ms"], r["serve_ms"], r["api_ms"] / r["serve_ms"]))
PY

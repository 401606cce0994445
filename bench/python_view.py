#!/usr/bin/env python3
"""A `view` of a small file through the Python binding, in process, next to
libmemtool called from C (mt_bench ops) and a `memtool call` process.

    python3 bench/python_view.py [--build DIR] [--iters N] [--out FILE]

The file is mt_bench's small file (20 lines, 1,262 bytes), in a file store at
`file` durability; the page cache is warm. Times are per call, wall clock
(time.perf_counter_ns), median and p99 (nearest rank) after a warm-up. Writes
CSV rows in mt_bench's format (suite,op,impl,durability,param,n,median_us,
p99_us,mean_us,min_us) to --out (default: stdout). The SDK's own Python
filesystem helper (BetaLocalFilesystemMemoryTool) is not measured: the
`anthropic` package is not installed on the machines this runs on.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

TOP = pathlib.Path(__file__).resolve().parent.parent
VIEW = {"command": "view", "path": "/memories/small.md"}


def stats(samples_ns):
    s = sorted(samples_ns)
    n = len(s)

    def rank(q):
        return s[min(n - 1, max(0, int(q * n + 0.999999) - 1))] / 1000

    return n, rank(0.5), rank(0.99), sum(s) / n / 1000, s[0] / 1000


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(iters):
        t = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t)
    return out


def row(impl, samples):
    n, med, p99, mean, lo = stats(samples)
    return "inproc,view,%s,file,small file,%d,%.3f,%.3f,%.3f,%.3f" % (impl, n, med, p99, mean, lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(TOP / "build"))
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--out")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    os.environ.setdefault("MEMTOOL_LIBRARY", str(build / "libmemtool.so"))
    sys.path.insert(0, str(TOP / "bindings" / "python" / "src"))
    import memtool

    rows = []
    with tempfile.TemporaryDirectory(prefix="memtool-pybench-") as tmp:
        root = pathlib.Path(tmp) / "store"
        # C: mt_bench's in-process view (it writes small.md into the store).
        r = subprocess.run([str(build / "bench" / "mt_bench"), "ops", "--impl", "memtool",
                            "--root", str(root), "--durabilities", "",
                            "--view-iters", str(a.iters)],
                           capture_output=True, text=True, check=True)
        rows += [line.replace(",memtool,-,", ",c-library,file,") for line in r.stdout.splitlines()
                 if line.startswith("inproc,view,memtool")]
        mem = memtool.Memory(root, durability="file")
        tool = memtool.MemtoolMemoryTool(store=mem)
        want = tool.call(VIEW)
        assert want.startswith("Here's the content of /memories/small.md"), want[:80]
        data = json.dumps(VIEW).encode()
        rows.append(row("python-tool-call", timed(lambda: tool.call(VIEW), a.iters, 1000)))
        rows.append(row("python-call-json", timed(lambda: mem.call_json(data), a.iters, 1000)))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_")}
        cli = [str(build / "memtool"), "--root", str(root), "--durability", "file", "call"]

        def one_process():
            subprocess.run(cli, input=data, stdout=subprocess.DEVNULL, env=env, check=True)

        rows.append(row("memtool-call-process", timed(one_process, max(50, a.iters // 100), 10)))
        mem.close()
    text = "".join(r + "\n" for r in rows)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

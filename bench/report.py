#!/usr/bin/env python3
"""Turn the CSV a bench/run.sh run wrote into BENCHMARKS.md and gnuplot PNGs.

    report.py --results DIR --markdown FILE   write the report (and DIR/*.png)
    report.py --results DIR --check           exit 1 unless every row a run
                                              should produce is in DIR's CSV
    report.py --best-of ALL ROUND1 ROUND2...  print, of the timing rows of several
                                              rounds, each one's fastest (by median);
                                              write them all to ALL with their round
"""
import argparse
import csv
import math
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

VIEW_OPS = ["view", "view_dir"]
WRITE_OPS = ["create", "str_replace", "insert", "delete", "rename"]
DURABILITIES = ["full", "file", "none"]
PROCESS_ROWS = [  # (op, impl, durability)
    ("view", "floor", "-"),
    ("view", "memtool", "-"),
    ("view", "lean", "-"),
    ("create", "memtool", "file"),
    ("create", "memtool", "full"),
    ("str_replace", "memtool", "file"),
    ("view", "sdk", "-"),
    ("create", "sdk", "file"),
    ("str_replace", "sdk", "file"),
]
SERVE_ROWS = [  # (mix, impl, clients, durability)
    ("view", "floor", 1, "none"),
    ("view", "floor-confined", 1, "none"),
    ("view", "floor-look", 1, "none"),
    ("view", "memtool", 1, "none"),
    ("view", "memtool", 4, "none"),
    ("read", "memtool", 1, "none"),
    ("read", "memtool", 4, "none"),
    ("write", "memtool", 1, "file"),
    ("write", "memtool", 4, "file"),
    ("write", "memtool", 1, "none"),
    ("write", "memtool", 4, "none"),
    ("scan", "memtool", 1, "none"),
]
# memtool built from an earlier commit (bench/run.sh, PINNED_SERVE), in full runs.
PINNED_ROW = ("view", "pinned", 1, "none")
PINNED_RATIO = 1.05  # serve's CPU per small view against the pinned build's
HISTORY_WRITES = "create+str_replace+delete"

# The targets that were absolute times on the machine they were set on (an
# Intel Xeon @ 2.50GHz, 2 cores), restated as ratios to a floor measured in
# the same run: each is the strictest the original target was in any run
# there whose floor was the one measured now (BENCHMARKS.md, "How the
# ratios were chosen", has the numbers).
SPAWN_RATIO = 2.9      # 2 ms against floor processes of 444-681 µs
SERVE_RATIO = 0.80     # 100,000 views per CPU-second against a floor server's 125,494
LISTING_RATIO = 0.50   # 100 ms against floor walks of 108.8-196.8 ms (retired, below)
# The listing's target since the 0.50× was retired: the floor's walk on every
# core is itself 0.52-0.53× of the one-thread walk on this 2-core machine, so
# 0.50× was below what the kernel allows; memtool is held to the walk on all cores.
LISTING_CORES_RATIO = 1.1
HISTORY_RATIO = 1.3
HISTORY_LOG_MS = 20

PLOTS = ["inproc.png", "durability.png", "process.png", "serve.png", "listing.png", "bigfile.png"]


def load(results):
    def rows(name):
        with open(os.path.join(results, name), newline="") as f:
            return list(csv.DictReader(f))

    meta = {}
    with open(os.path.join(results, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    timings = {}
    for r in rows("timings.csv"):
        key = (r["suite"], r["op"], r["impl"], r["durability"], r["param"])
        timings[key] = {k: float(r[k]) for k in ("n", "median_us", "p99_us", "mean_us", "min_us")}
    serve = {}
    for r in rows("serve.csv"):
        key = (r["mix"], r["impl"], int(r["clients"]), r["durability"])
        row = {k: float(r[k]) for k in ("ops", "wall_s", "ops_per_s", "server_cpu_s",
                                        "ops_per_cpu_s", "max_rss_kb")}
        # Rounds of the same server: the best of them, as for the timings.
        if key not in serve or row["ops_per_cpu_s"] > serve[key]["ops_per_cpu_s"]:
            serve[key] = row
    memory = {(r["op"], r["impl"], r["param"]): float(r["peak_rss_kb"]) for r in rows("memory.csv")}
    return meta, timings, serve, memory


# The cases of bench/str_replace_worst.c, in its order.
WORST_CASES = (
    "a*512K / a*256K, 256K+1 overlapping matches",
    "a*512K / a*256K with its last byte b, none",
    "ab*256K / ab*64K, a match at every even offset",
    "ab*256K / ab*64K with its last byte a, none",
    "a*512K / a*255 then b (memmem's short-needle path), none",
    "a\\n*512K / a, one match on each of 512K lines",
    "1 MiB of text / a unique line (the common case)",
)


def expected(meta):
    """Every timing row a run makes, from the sizes the run recorded."""
    want = []
    for impl in ("memtool", "floor", "sdk"):
        for op in VIEW_OPS:
            want.append(("inproc", op, impl, "-", "100 entries" if op == "view_dir" else "small file"))
    for op in WRITE_OPS:
        for d in DURABILITIES:
            for impl in ("memtool", "floor"):
                want.append(("inproc", op, impl, d, "small file"))
        want.append(("inproc", op, "sdk", "file", "small file"))
    for op, impl, d in PROCESS_ROWS:
        want.append(("process", op, impl, d, "one process"))
    for files in meta["trees"].split():
        for impl in ("memtool", "floor", "floor-cores", "sdk"):
            want.append(("scale", "view_root", impl, "-", files))
        for impl in ("memtool", "sdk"):
            want.append(("scale", "create_call", impl, "file", files))
    for i, name in enumerate(WORST_CASES, 1):
        for impl in ("memtool", "floor", "nomatch"):
            want.append(("worst", "case%d" % i, impl, "none", name))
    for d in DURABILITIES:
        for h in ("off", "on"):
            want.append(("history", "write", h, d, HISTORY_WRITES))
    for impl in ("libmemtool", "memtool"):
        want.append(("history", "log", impl, "-", "%s versions" % meta.get("history_versions", "10000")))
    for size in meta["bigs"].split():
        for impl in ("memtool", "floor", "sdk"):
            want.append(("scale", "view_range", impl, "-", size))
            want.append(("scale", "str_replace", impl, "file", size))
        for impl in ("memtool", "floor"):
            want.append(("scale", "str_replace", impl, "none", size))
    return want


def check(results):
    meta, timings, serve, memory = load(results)
    problems = []
    for key in expected(meta):
        row = timings.get(key)
        if row is None:
            problems.append("no timing row %s" % ",".join(key))
        elif row["n"] < 1 or row["median_us"] <= 0:
            problems.append("an empty timing row %s" % ",".join(key))
    for key in SERVE_ROWS:
        row = serve.get(key)
        if row is None:
            problems.append("no serve row %s" % ",".join(map(str, key)))
        elif row["ops"] < 1 or row["ops_per_s"] <= 0:
            problems.append("an empty serve row %s" % ",".join(map(str, key)))
    largest = meta["trees"].split()[-1]
    if serve.get(("scan", "memtool", 1, "none"), {}).get("max_rss_kb", 0) <= 0:
        problems.append("no peak RSS for serve")
    for files in meta["trees"].split():
        if memory.get(("view_root", "sdk", files), 0) <= 0:
            problems.append("no peak RSS for the SDK over %s files" % files)
    if shutil.which("gnuplot"):
        for p in PLOTS:
            path = os.path.join(results, p)
            if not os.path.exists(path) or os.path.getsize(path) == 0:
                problems.append("no plot %s" % p)
    for p in problems:
        print("bench check: " + p, file=sys.stderr)
    expected_count = len(expected(meta)) + len(SERVE_ROWS)
    print("bench check: %d of %d result rows present, largest store %s files" %
          (expected_count - len([p for p in problems if p.startswith(("no timing", "no serve"))]),
           expected_count, largest))
    return 1 if problems else 0


# ---- formatting ---------------------------------------------------------------

def fmt_us(us):
    if us is None:
        return "–"
    if us < 10:
        return "%.2f µs" % us
    if us < 1000:
        return "%.1f µs" % us
    if us < 10000:
        return "%.2f ms" % (us / 1000)
    if us < 1e6:
        return "%.1f ms" % (us / 1000)
    return "%.2f s" % (us / 1e6)


def fmt_ratio(x):
    if x is None:
        return "–"
    if x >= 100:
        return "%.0f×" % x
    if x >= 10:
        return "%.1f×" % x
    return "%.2f×" % x


def fmt_bytes(n):
    n = int(n)
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            v = n / div
            return ("%.0f %s" if v == int(v) else "%.1f %s") % (v, unit)
    return "%d B" % n


def fmt_count(n):
    return "{:,}".format(int(n))


def med(t, *key):
    row = t.get(key)
    return row["median_us"] if row else None


def p99(t, *key):
    row = t.get(key)
    return row["p99_us"] if row else None


def hist_best(t, h, d):
    """The best round's microseconds per write (the min_us of the history rows)."""
    row = t.get(("history", "write", h, d, HISTORY_WRITES))
    return row["min_us"] if row else None


def ratio(a, b):
    return a / b if a is not None and b else None


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def growth(points):
    """Exponents k of time ~ size^k between successive sizes."""
    ks = []
    for (s1, t1), (s2, t2) in zip(points, points[1:]):
        if t1 and t2 and s2 > s1:
            ks.append(math.log(t2 / t1) / math.log(s2 / s1))
    return ks


# ---- plots ---------------------------------------------------------------------

def gnuplot(results, name, script):
    exe = shutil.which("gnuplot")
    if not exe:
        return False
    head = ('set terminal pngcairo size 960,540 font "DejaVu Sans,10" noenhanced\n'
            'set output "%s"\nset grid ytics mytics\nset key top left\n' %
            os.path.join(results, name))
    subprocess.run([exe], input=head + script, text=True, check=True)
    return True


def datablock(name, rows):
    return "$%s << EOD\n%s\nEOD\n" % (name, "\n".join(" ".join(str(c) for c in r) for r in rows))


COLORS = {"memtool": "#9400d3", "sdk": "#009e73", "floor": "#56b4e9"}


def bars(results, name, title, ylabel, labels, series, log=True, colors=None):
    """Clustered bars: one cluster per label, one bar per series (name, values)."""
    colors = colors or [COLORS.get(s[0]) for s in series]
    rows = []
    for i, label in enumerate(labels):
        rows.append(['"%s"' % label] + [("%.6g" % s[1][i]) if s[1][i] else "NaN" for s in series])
    cols = " , ".join('$D using %d:xtic(1) title "%s"%s' %
                      (j + 2, s[0], ' lc rgb "%s"' % colors[j] if colors[j] else "")
                      for j, s in enumerate(series))
    script = datablock("D", rows)
    script += ('set title "%s"\nset ylabel "%s"\nset style data histograms\n'
               'set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n'
               'set boxwidth 0.9\nset xtics rotate by -25 nomirror\nset bmargin 7\nset rmargin 10\n'
               'set key outside top center horizontal\n' % (title, ylabel))
    if log:
        script += "set logscale y\n"
    else:
        script += "set yrange [0:*]\n"
    script += "plot " + cols + "\n"
    return gnuplot(results, name, script)


def lines(results, name, title, xlabel, ylabel, series):
    """Log-log lines: series is (title, [(x, y)...]); the title's first word names the
    implementation (its colour), a second word the operation (solid, then dashed)."""
    script = ""
    plots = []
    ops = []
    for j, (t, pts) in enumerate(series):
        pts = [(x, y) for x, y in pts if y]
        if not pts:
            continue
        words = t.split()
        op = words[1] if len(words) > 1 else ""
        if op not in ops:
            ops.append(op)
        dash = ops.index(op) + 1
        color = COLORS.get(words[0], "black")
        script += datablock("S%d" % j, [("%.6g" % x, "%.6g" % y) for x, y in pts])
        plots.append('$S%d using 1:2 with linespoints lw 2 dt %d pt %d lc rgb "%s" title "%s"' %
                     (j, dash, 5 + 2 * dash, color, t))
    script += ('set title "%s"\nset xlabel "%s"\nset ylabel "%s"\nset logscale xy\n'
               'set format x "%%.0s%%c"\n' % (title, xlabel, ylabel))
    script += "plot " + " , ".join(plots) + "\n"
    return gnuplot(results, name, script)


# ---- the hand-written analysis ---------------------------------------------------

def facts(t, serve, trees, bigs, meta):
    """The measured numbers bench/analysis.md quotes, as {{name}} placeholders."""
    f = {}
    v_mt, v_fl, v_sdk = (med(t, "inproc", "view", i, "-", "small file") for i in ("memtool", "floor", "sdk"))
    f["view_ratio_floor"] = fmt_ratio(ratio(v_mt, v_fl))
    f["view_ratio_sdk"] = fmt_ratio(ratio(v_sdk, v_mt))
    for impl, key in (("memtool", "call_view"), ("lean", "lean_view"), ("floor", "floor_process_view")):
        f[key] = fmt_us(med(t, "process", "view", impl, "-", "one process"))
    for impl, key in (("memtool", "serve_view_cpu"), ("floor", "serve_floor_cpu")):
        s = serve.get(("view", impl, 1, "none"))
        f[key] = fmt_count(s["ops_per_cpu_s"]) if s else "–"
    n = str(trees[-1])
    m, fl = med(t, "scale", "view_root", "memtool", "-", n), med(t, "scale", "view_root", "floor", "-", n)
    f["listing_memtool_max"] = fmt_us(m)
    f["listing_floor_max"] = fmt_us(fl)
    f["listing_floor_per_file"] = fmt_us(fl / trees[-1]) if fl else "–"
    rs = [ratio(med(t, "scale", "view_root", "memtool", "-", str(x)),
                med(t, "scale", "view_root", "floor", "-", str(x))) for x in trees]
    rs = [r for r in rs if r]
    f["listing_ratio_range"] = ("%.2f–%.2f×" % (min(rs), max(rs))) if rs else "–"
    for impl in ("memtool", "floor"):
        ks = growth([(x, med(t, "scale", "view_root", impl, "-", str(x))) for x in trees])
        f["listing_k_" + impl] = ", ".join("%.2f" % k for k in ks) or "–"
    f["create_call_100k"] = fmt_us(med(t, "scale", "create_call", "memtool", "file", n))
    f["create_call_sdk_100k"] = fmt_us(med(t, "scale", "create_call", "sdk", "file", n))
    b = str(bigs[-1])
    f["sr100_ratio"] = fmt_ratio(ratio(med(t, "scale", "str_replace", "memtool", "file", b),
                                       med(t, "scale", "str_replace", "floor", "file", b)))
    rs = [ratio(med(t, "scale", "view_range", "memtool", "-", str(x)),
                med(t, "scale", "view_range", "floor", "-", str(x))) for x in bigs]
    rs = [r for r in rs if r]
    f["view_range_ratio_range"] = ("%.2f–%.2f×" % (min(rs), max(rs))) if rs else "–"
    f["sr1_memtool"] = fmt_us(med(t, "scale", "str_replace", "memtool", "file", str(bigs[0])))
    f["sr1_floor"] = fmt_us(med(t, "scale", "str_replace", "floor", "file", str(bigs[0])))
    f["sr100_memtool"] = fmt_us(med(t, "scale", "str_replace", "memtool", "file", b))
    f["sr100_floor"] = fmt_us(med(t, "scale", "str_replace", "floor", "file", b))
    r = ratio(m, fl)
    f["listing_ratio_max"] = "%.3f×" % r if r else "–"
    c = med(t, "scale", "view_root", "floor-cores", "-", n)
    f["listing_cores_max"] = fmt_us(c)
    r = ratio(c, fl)
    f["listing_cores_ratio"] = "%.3f×" % r if r else "–"
    r = ratio(m, c)
    f["listing_memtool_cores"] = "%.2f×" % r if r else "–"
    sv, sf = serve.get(("view", "memtool", 1, "none")), serve.get(("view", "floor", 1, "none"))
    f["serve_ratio"] = ("%.3f×" % (sv["ops_per_cpu_s"] / sf["ops_per_cpu_s"])) if sv and sf else "–"
    r = ratio(med(t, "process", "view", "memtool", "-", "one process"),
              med(t, "process", "view", "floor", "-", "one process"))
    f["call_ratio"] = fmt_ratio(r)
    for op in ("create", "str_replace", "insert"):
        f[op.replace("str_replace", "sr") + "_file_ratio"] = fmt_ratio(ratio(
            med(t, "inproc", op, "memtool", "file", "small file"),
            med(t, "inproc", op, "floor", "file", "small file")))
    f["hist_log_ms"] = fmt_us(med(t, "history", "log", "memtool", "-",
                                  "%s versions" % meta.get("history_versions", "10000")))
    for d in DURABILITIES:
        on, off = hist_best(t, "on", d), hist_best(t, "off", d)
        f["hist_on_" + d] = fmt_us(on)
        f["hist_off_" + d] = fmt_us(off)
        f["hist_ratio_" + d] = ("%.3f×" % ratio(on, off)) if on and off else "–"
    return f


def fill(text, values):
    out = text
    for k, v in values.items():
        out = out.replace("{{%s}}" % k, v)
    if "{{" in out:
        raise SystemExit("report: bench/analysis.md has a placeholder report.py does not fill")
    return out


# ---- the report ----------------------------------------------------------------

def report(results, markdown):
    meta, t, serve, memory = load(results)
    trees = [int(x) for x in meta["trees"].split()]
    bigs = [int(x) for x in meta["bigs"].split()]
    rel = os.path.relpath(results, os.path.dirname(os.path.abspath(markdown)))
    img = lambda name: "![%s](%s)" % (name, os.path.join(rel, name))
    out = []
    w = out.append

    def inproc(op, impl, d):
        return ("inproc", op, impl, "-" if op in VIEW_OPS else d,
                "100 entries" if op == "view_dir" else "small file")

    # Plots first, so the text can say when one could not be drawn.
    all_ops = VIEW_OPS + WRITE_OPS
    plotted = bars(results, "inproc.png", "One operation in process (median; writes at file durability)",
                   "microseconds (log)", all_ops,
                   [(impl, [med(t, *inproc(op, impl, "file")) for op in all_ops])
                    for impl in ("memtool", "sdk", "floor")])
    bars(results, "durability.png", "Writes at each durability: memtool and the floor (median)",
         "microseconds (log)", WRITE_OPS,
         [("%s %s" % (impl, d), [med(t, *inproc(op, impl, d)) for op in WRITE_OPS])
          for d in DURABILITIES for impl in ("memtool", "floor")],
         colors=["#4b0082", "#9e9ac8", "#9400d3", "#56b4e9", "#d55e00", "#f0c987"])
    proc_ops = [("view", "-"), ("create", "file"), ("str_replace", "file")]
    bars(results, "process.png", "One command as one process (median wall time)", "milliseconds (log)",
         ["view", "create", "str_replace"],
         [("memtool call", [ratio(med(t, "process", op, "memtool", d, "one process"), 1000)
                            for op, d in proc_ops]),
          ("node + SDK", [ratio(med(t, "process", op, "sdk", d, "one process"), 1000)
                          for op, d in proc_ops]),
          ("libmemtool + jansson only", [ratio(med(t, "process", "view", "lean", "-", "one process"), 1000),
                                         None, None]),
          ("floor (C, libc only)", [ratio(med(t, "process", "view", "floor", "-", "one process"), 1000),
                                    None, None])])
    serve_keys = [k for k in SERVE_ROWS if k in serve and k[0] != "scan"]
    bars(results, "serve.png", "memtool serve throughput (pipelined)", "requests per second (log)",
         ["%s %s x%d %s" % (m, i, c, d) for m, i, c, d in serve_keys],
         [("per second of wall time", [serve[k]["ops_per_s"] for k in serve_keys]),
          ("per second of server CPU", [serve[k]["ops_per_cpu_s"] for k in serve_keys])])
    lines(results, "listing.png", "view /memories against the number of files (median)", "files",
          "milliseconds",
          [(impl, [(n, ratio(med(t, "scale", "view_root", impl, "-", str(n)), 1000)) for n in trees])
           for impl in ("memtool", "sdk", "floor")])
    lines(results, "bigfile.png", "One big file: view_range and str_replace (median, file durability)",
          "file size (bytes)", "milliseconds",
          [("%s %s" % (impl, op), [(b, ratio(med(t, "scale", op, impl, "-" if op == "view_range" else "file",
                                                   str(b)), 1000)) for b in bigs])
           for op in ("view_range", "str_replace") for impl in ("memtool", "sdk", "floor")])

    # ---- targets
    v_mt = med(t, *inproc("view", "memtool", "-"))
    v_fl = med(t, *inproc("view", "floor", "-"))
    v_sdk = med(t, *inproc("view", "sdk", "-"))
    targets = []

    def target(name, measured, ok):
        # ok: True, False, None (not measured), or a verdict in words.
        targets.append((name, measured, ok if isinstance(ok, str) else
                        "not measured in this run" if ok is None else "met" if ok else "**missed**"))

    r = ratio(v_mt, v_fl)
    target("in-process `view` of a small file within 2× of the floor",
           "%s vs %s: %s" % (fmt_us(v_mt), fmt_us(v_fl), fmt_ratio(r)), r is not None and r <= 2)
    r = ratio(v_sdk, v_mt)
    target("in-process `view` at least 40× faster than the SDK",
           "%s vs %s: %s faster" % (fmt_us(v_mt), fmt_us(v_sdk), fmt_ratio(r)), r is not None and r >= 40)
    for op in ("create", "str_replace", "insert"):
        a, b = med(t, *inproc(op, "memtool", "file")), med(t, *inproc(op, "floor", "file"))
        r = ratio(a, b)
        target("`%s` at `file` durability within 1.3× of the floor" % op,
               "%s vs %s: %s" % (fmt_us(a), fmt_us(b), fmt_ratio(r)), r is not None and r <= 1.3)
    a = med(t, "process", "view", "memtool", "-", "one process")
    b = med(t, "process", "view", "floor", "-", "one process")
    r = ratio(a, b)
    target("one `memtool call` process (view) within %s× of the floor process (was: under 2 ms)"
           % SPAWN_RATIO, "%s vs %s: %s" % (fmt_us(a), fmt_us(b), fmt_ratio(r)),
           r is not None and r <= SPAWN_RATIO)
    s, f = serve.get(("view", "memtool", 1, "none")), serve.get(("view", "floor", 1, "none"))
    r = ratio(s["ops_per_cpu_s"], f["ops_per_cpu_s"]) if s and f else None
    target("`serve` at least %.2f× the floor server's small views per second of server CPU "
           "(was: 100,000 per second on one core)" % SERVE_RATIO,
           "%s vs %s per CPU-second: %s (%s per second of wall time, client on the other core)" %
           (fmt_count(s["ops_per_cpu_s"]) if s else "–", fmt_count(f["ops_per_cpu_s"]) if f else "–",
            "%.3f×" % r if r else "–", fmt_count(s["ops_per_s"]) if s else "–"),
           r is not None and r >= SERVE_RATIO)
    s, p = serve.get(("view", "memtool", 1, "none")), serve.get(PINNED_ROW)
    fc, fk = serve.get(("view", "floor-confined", 1, "none")), serve.get(("view", "floor-look", 1, "none"))
    r = ratio(p["ops_per_cpu_s"], s["ops_per_cpu_s"]) if s and p else None
    # The least this build can spend a view with the look before the open,
    # which the pinned build did not make: the pinned build's CPU per view
    # plus the look's (floor-look's less floor-confined's), as a ratio.
    bound = None
    if p and fc and fk:
        look = 1 / fk["ops_per_cpu_s"] - 1 / fc["ops_per_cpu_s"]
        bound = (1 / p["ops_per_cpu_s"] + look) * p["ops_per_cpu_s"]
    target("`serve`'s CPU per small view within %.2f× of memtool at %s (the floor under it: "
           "that build plus the look before the open the guarantees now require, floor-look "
           "against floor-confined)"
           % (PINNED_RATIO, meta.get("pinned_serve") or "an earlier commit"),
           "%s: %s; with the look, the least is %s" %
           ("%s vs %s views per CPU-second" % (fmt_count(s["ops_per_cpu_s"]), fmt_count(p["ops_per_cpu_s"]))
            if s and p else "not built in this run",
            "%.3f×" % r if r else "–", "%.3f×" % bound if bound else "–"),
           None if r is None else True if r <= PINNED_RATIO else
           "missed: below the floor (the look before the open alone costs more than the gap)"
           if bound is not None and r <= bound else False)
    big_n = str(trees[-1])
    a = med(t, "scale", "view_root", "memtool", "-", big_n)
    b = med(t, "scale", "view_root", "floor", "-", big_n)
    c = med(t, "scale", "view_root", "floor-cores", "-", big_n)
    r, rc = ratio(a, b), ratio(c, b)
    rm = ratio(a, c)
    target("`view /memories` over %s files within %.1f× of the floor's walk on all cores (was: "
           "0.50× of the one-thread walk, retired: below the floor; and before that under 100 ms)"
           % (fmt_count(big_n), LISTING_CORES_RATIO),
           "%s vs %s on all %s cores: %s (the one-thread walk: %s; memtool %s of it, the walk on "
           "all cores %s)" %
           (fmt_us(a), fmt_us(c), meta.get("nproc", "?"), "%.2f×" % rm if rm else "–", fmt_us(b),
            "%.3f×" % r if r else "–", "%.3f×" % rc if rc else "–"),
           rm is not None and rm <= LISTING_CORES_RATIO)
    big_b = str(bigs[-1])
    a, b = med(t, "scale", "str_replace", "memtool", "file", big_b), med(t, "scale", "str_replace", "floor", "file", big_b)
    r = ratio(a, b)
    target("`str_replace` on a %s file within 2× of reading and writing it once" % fmt_bytes(big_b),
           "%s vs %s: %s" % (fmt_us(a), fmt_us(b), fmt_ratio(r)), r is not None and r <= 2)
    # The adversarial inputs (files of 512 KiB to 1 MiB) against the last case, an ordinary
    # str_replace on a 1 MiB file, in the same run: linear search keeps them within a small
    # factor; the quadratic one was thousands of times slower. Not against each case's no-match
    # call: a search for bytes the file lacks is the cheapest a search can be, so that ratio is
    # large for a short old_str even in the ordinary case (section 4b shows it). The row is
    # written even when the suite left no rows, missed, as the other targets are.
    worst_of = lambda i: med(t, "worst", "case%d" % i, "memtool", "none", WORST_CASES[i - 1])
    common = worst_of(len(WORST_CASES))
    i = max(range(1, len(WORST_CASES)), key=lambda i: worst_of(i) or 0)
    a = worst_of(i)
    r = ratio(a, common)
    target("the worst adversarial `str_replace` within 10× of an ordinary one on a 1 MiB file",
           "%s%s vs %s: %s" % (fmt_us(a), " (case %d)" % i if a else "", fmt_us(common), fmt_ratio(r)),
           r is not None and r <= 10)
    for d in DURABILITIES:
        a = hist_best(t, "on", d)
        b = hist_best(t, "off", d)
        r = ratio(a, b)
        target("a write with history at `%s` within %s× of the same write without" % (d, HISTORY_RATIO),
               "%s vs %s: %s" % (fmt_us(a), fmt_us(b), "%.3f×" % r if r else "–"),
               r is not None and r <= HISTORY_RATIO)
    hv = meta.get("history_versions", "10000")
    a = med(t, "history", "log", "memtool", "-", "%s versions" % hv)
    target("`memtool log` of a memory with %s versions under %d ms (one process)" %
           (fmt_count(hv), HISTORY_LOG_MS), fmt_us(a), a is not None and a < HISTORY_LOG_MS * 1000)

    # ---- the document
    smoke = meta.get("smoke") == "1"
    w("# Benchmarks\n")
    if smoke:
        w("**This is a smoke run** (a few iterations on small fixtures, to test the harness): "
          "its numbers mean nothing.\n")
    w("memtool against the memory tool of Anthropic's official TypeScript SDK "
      "(`BetaLocalFilesystemMemoryTool` from `@anthropic-ai/sdk/tools/memory/node`, version %s) "
      "and against a *floor*: C code that makes only the system calls an operation needs and formats "
      "nothing. Everything below comes from one run of `make bench` (`sh bench/run.sh`) on one machine; "
      "the raw numbers are in [`%s`](%s) (`timings.csv`, `serve.csv`, `memory.csv`, `meta.txt`, "
      "and `rounds.csv` for sections 1 and 2).\n"
      % (meta.get("sdk", "?"), rel + "/", rel + "/"))
    w("## The machine and the run\n")
    w(table(["", ""], [
        ("when", meta.get("date", "?")),
        ("CPU", "%s, %s cores (`nproc`)" % (meta.get("cpu", "?"), meta.get("nproc", "?"))),
        ("memory", meta.get("memory", "?")),
        ("kernel", meta.get("kernel", "?")),
        ("filesystem of the stores", meta.get("filesystem", "?")),
        ("memtool", "%s, commit %s, %s build, %s" % (meta.get("memtool", "?"), meta.get("commit", "?"),
                                                    meta.get("build_type", "?"), meta.get("cc", "?"))),
        ("Node.js / SDK", "%s / @anthropic-ai/sdk %s" % (meta.get("node", "?"), meta.get("sdk", "?"))),
        ("load average (1, 5, 15 min) at start / end", "%s / %s" % (meta.get("load_start", "?"),
                                                                   meta.get("load_end", "?"))),
        ("CPU time stolen by the hypervisor during the run", meta.get("steal", "?")),
        ("duration of the whole run", "%s s" % meta.get("duration_s", "?")),
    ]))
    w("")
    try:
        loads = [float(meta.get(k, "0").split()[0]) for k in ("load_start", "load_end")]
        busy = max(loads) >= float(meta.get("nproc", "1"))
    except (ValueError, IndexError):
        busy = False
    if busy:
        w("**The machine was busy with other work during this run** (the load average reached the "
          "number of cores): absolute times are higher and noisier than on an idle machine. memtool "
          "and the floor run interleaved, slice by slice (see `bench/bench.c`), so their ratios suffer "
          "least from it; the SDK runs after them.\n")
    w("Times are wall-clock, per operation, measured around each single call "
      "(`clock_gettime(CLOCK_MONOTONIC)` in C, `process.hrtime.bigint()` in Node); *median* and *p99* "
      "are nearest-rank over all runs after a warm-up. The page cache is warm: these are the costs of "
      "the code and the system calls, plus the disk where a durability level asks for `fsync`. "
      "Sections 1 and 2 compare C with Node, which cannot run interleaved, so they run in two rounds, "
      "C and Node taking turns, and each row is the round with the lower median: a burst of load "
      "elsewhere on the machine during one round does not decide a ratio.\n")

    w("## Targets\n")
    w(table(["target", "measured", ""], targets))
    w("")
    w("### How the ratios were chosen\n")
    w("Three targets were absolute times: one `memtool call` under 2 ms, `serve` at 100,000 small views "
      "per CPU-second, `view /memories` over 100,000 files under 100 ms. They were set, and first "
      "measured, on another machine (an Intel Xeon @ 2.50GHz, 2 cores: the first runs in the history "
      "of this file, November 21), and absolute times move 2-4× between machines and with the CPU a "
      "session gets: the same `memtool call` took 0.61-0.77 ms there and 2.15 ms here, as the floor "
      "process took 0.44-0.68 ms there and 1.69 ms here. So each is now a ratio to a floor measured in "
      "the same run, taken from what the absolute target was as a ratio to that floor on that machine; "
      "where that varied between runs there, the strictest value is kept, so that no target is looser "
      "than it was meant:\n")
    w(table(["target", "floor in the same run", "the floor there (runs of Nov 21)",
             "the target as a ratio there", "ratio now"], [
        ("one `memtool call` (view) under 2 ms", "the floor process (`bench/once.c`: reads stdin, opens, "
         "reads and prints the file; libc only)", "680.5, 458.8, 444.3, 602.3 µs",
         "2.94×, 4.36×, 4.50×, 3.32×", "≤ %s×" % SPAWN_RATIO),
        ("`serve` ≥ 100,000 views per CPU-second", "the floor server (`bench/floor_serve.c`), per "
         "CPU-second", "125,494 (the only run with the floor server as it is now, which writes the "
         "answers to one read together as `serve` does; earlier runs' floor wrote each alone)",
         "0.797×", "≥ %.2f×" % SERVE_RATIO),
        ("`view /memories` over 100,000 files under 100 ms", "the floor's walk of the same tree "
         "(`getdents64` and `fstatat`, one thread)", "108.8, 176.1, 196.8, 113.5 ms",
         "0.92×, 0.57×, 0.51×, 0.88×", "≤ %.2f×, retired (below)" % LISTING_RATIO),
    ]))
    w("")
    w("Two targets were retired because a floor measured in every run showed them out of reach on "
      "this machine: `view /memories` within 0.50× of the one-thread walk (the floor's own walk on "
      "every core, with no memtool code at all, takes 0.52–0.53× of it on these 2 cores, so the "
      "target is now within %.1f× of that walk on all cores), and SQLite edits within 1.5× of one bare "
      "`UPDATE` (the rows the edit must write, the `floor-rows` floor of [the stores' "
      "section](#stores-sqlite-and-postgresql-against-their-floors), take 2.0–2.2× with history; "
      "the ratio to those rows is still reported, with no target).\n" % LISTING_CORES_RATIO)
    w("The 40× against the SDK was a ratio already and is unchanged. The history log's 20 ms has no "
      "floor to measure (nothing else reads this database) and stays an absolute time.\n")
    notes = os.path.join(HERE, "analysis.md")
    if os.path.exists(notes):
        w("Where a target is missed, [the analysis below](#where-the-time-goes) says why, from profiles.\n")

    # ---- 1
    w("## 1. One operation, in process\n")
    w("(a) libmemtool called from C (`mt_memory_call` on a JSON input built beforehand), "
      "(b) the SDK's tool called from Node in one process, the way its tool runner does "
      "(`betaMemoryTool(new BetaLocalFilesystemMemoryTool(...)).run(input)`), "
      "(c) the floor. The small file is 20 lines, 1,262 bytes; the directory holds 100 such files. "
      "`create` writes a new file; `str_replace` swaps a unique token back and forth in one file; "
      "`insert` adds a line after line 10 of a fresh file; `delete` and `rename` act on fresh files. "
      "Write suites run in batches of 250 files, each batch's setup flushed with `syncfs` before "
      "timing.\n")
    w("The SDK has one durability: it `fsync`s a file it writes (`create`, `str_replace`, `insert`) "
      "and never a directory, which is what memtool's `file` level does; so the SDK is compared at "
      "`file`. Its `create` writes the file in place rather than through a temporary file and a "
      "rename, so a crash can leave a partial file where memtool's cannot; it saves a `rename`. "
      "The floor does, per operation: view: `open`, `fstat`, `read`, `close`; directory view: "
      "`open`, `getdents64`, `fstatat` per entry; create: `open(O_CREAT|O_EXCL)` of a temporary name, "
      "`write`, `fsync` (file, full), `rename(RENAME_NOREPLACE)`, `fsync` of the directory (full); "
      "str_replace/insert: `open`, `flock`, `fstat`, `read`, then as create but `writev` straight from "
      "the read buffer and a replacing `rename`; delete: `unlink` (+ directory `fsync` at full); "
      "rename: `renameat2(RENAME_NOREPLACE)` (+ directory `fsync` at full). It holds the directory "
      "descriptors open across calls, which is the cheapest the kernel allows.\n")
    w(img("inproc.png") if plotted else "(gnuplot was not found: no plots)")
    w("")
    rows = []
    for op in all_ops:
        d = "-" if op in VIEW_OPS else "file"
        m, s, f = (med(t, *inproc(op, i, "file")) for i in ("memtool", "sdk", "floor"))
        rows.append(("`%s`" % op, d, fmt_us(m), fmt_us(p99(t, *inproc(op, "memtool", "file"))),
                     fmt_us(s), fmt_us(p99(t, *inproc(op, "sdk", "file"))),
                     fmt_us(f), fmt_us(p99(t, *inproc(op, "floor", "file"))),
                     "%s (%s faster)" % ("%.3f" % ratio(m, s) if ratio(m, s) else "–", fmt_ratio(ratio(s, m))),
                     fmt_ratio(ratio(m, f))))
    w(table(["op", "durability", "memtool median", "memtool p99", "SDK median", "SDK p99",
             "floor median", "floor p99", "memtool/SDK", "memtool/floor"], rows))
    w("")
    w("Every write at every durability, memtool against the floor doing the same syncs:\n")
    w(img("durability.png"))
    w("")
    rows = []
    for op in WRITE_OPS:
        for d in DURABILITIES:
            m, f = med(t, *inproc(op, "memtool", d)), med(t, *inproc(op, "floor", d))
            rows.append(("`%s`" % op, d, fmt_us(m), fmt_us(p99(t, *inproc(op, "memtool", d))),
                         fmt_us(f), fmt_us(p99(t, *inproc(op, "floor", d))), fmt_ratio(ratio(m, f))))
    w(table(["op", "durability", "memtool median", "memtool p99", "floor median", "floor p99",
             "memtool/floor"], rows))
    w("")

    # ---- 2
    w("## 2. One command, one process\n")
    w("What a shell script or a hook pays: spawn, run one command, exit, reaped "
      "(`posix_spawn` to `waitpid`, stdin from a pipe filled beforehand, stdout to `/dev/null`). "
      "memtool: `memtool --root DIR --durability file call`; the SDK: `node bench/sdk_call.mjs DIR`, "
      "which imports the SDK, runs one input from stdin and prints the result; the floor: a C program "
      "linked against libc only that reads its stdin and then opens, reads and prints the file. "
      "*libmemtool only* is `bench/lean_call.c`: the same `mt_memory_call` from a program linked with "
      "libmemtool and jansson and nothing else, to show what the memtool binary's other libraries "
      "cost at start-up.\n")
    w(img("process.png"))
    w("")
    rows = []
    for op, d in (("view", "-"), ("create", "file"), ("create", "full"), ("str_replace", "file")):
        m = med(t, "process", op, "memtool", d, "one process")
        s = med(t, "process", op, "sdk", d, "one process")
        f = med(t, "process", op, "floor", d, "one process")
        lean = med(t, "process", op, "lean", d, "one process")
        rows.append(("`%s`" % op, d, fmt_us(m), fmt_us(p99(t, "process", op, "memtool", d, "one process")),
                     fmt_us(s), fmt_us(p99(t, "process", op, "sdk", d, "one process")),
                     fmt_us(lean), fmt_us(f), fmt_ratio(ratio(s, m)) if s else "–"))
    w(table(["command", "durability", "memtool call median", "p99", "node + SDK median", "p99",
             "libmemtool only", "floor process", "SDK/memtool"], rows))
    w("")

    # ---- 3
    w("## 3. Throughput of `memtool serve`\n")
    w("One client per serve process, pipelining: a thread writes all requests as fast as the pipe takes "
      "them while another reads and checks the answers (every one must be a success). *4 clients* means "
      "four serve processes on the same store at once. *Per second of server CPU* divides the requests "
      "by the user+system CPU time of the serve processes (`wait4`), i.e. what one core of server "
      "achieves; *per second of wall time* is what the client saw with the client and the server "
      "sharing the machine's %s cores.\n" % meta.get("nproc", "?"))
    w("Mixes: **view**: views of one of 100 small files, round robin. **read**: of every 20 requests, "
      "1 view of a 10-file directory, 3 `view_range` of a small file, 16 whole-file views. "
      "**write**: cycles of `create`, `str_replace`, `insert`, `view`, `rename`, `delete` on a new small "
      "file (5 writes to 1 read), each client in its own directory. The **floor** server (for the view "
      "mix) reads the same request lines, finds the path, does `open`/`fstat`/`read`/`close` and writes "
      "the bytes back in one line; like memtool, it writes the answers to the lines of one read "
      "together, before it reads again.\n")
    w(img("serve.png"))
    w("")
    rows = []
    for k in SERVE_ROWS[:3] + [PINNED_ROW] + SERVE_ROWS[3:]:
        if k not in serve or k[0] == "scan":
            continue
        s = serve[k]
        rows.append((k[0], k[1], k[2], k[3], fmt_count(s["ops"]), "%.2f" % s["wall_s"],
                     fmt_count(s["ops_per_s"]), "%.2f" % s["server_cpu_s"], fmt_count(s["ops_per_cpu_s"])))
    w(table(["mix", "server", "clients", "durability", "requests", "wall s", "requests/s (wall)",
             "server CPU s", "requests per server CPU-second"], rows))
    w("")

    # ---- 4
    w("## 4. Scale\n")
    w("### `view /memories` on big stores\n")
    w("Stores of small files in directories of 100 (so `/memories` has n/100 directories, and all n "
      "files are within the two levels a view lists). memtool's answer is cut at its view limit (16,000 "
      "characters, the default) but the sizes it shows are totals over everything, so every file is "
      "visited. memtool records only the entries its limit can show and adds up the rest on helper "
      "threads, one per core beyond the first (here %s cores, so one helper): its times are wall "
      "time with both cores at work. The floor walks the tree on one thread with `getdents64` and "
      "`fstatat`, the least one thread can do; *floor on every core* is that walk with the top "
      "directory's subdirectories shared out to one thread per core and nothing else, the least "
      "the machine's cores can do. The SDK lists everything (it has no limit) and "
      "`realpath`s every entry.\n" % meta.get("nproc", "?"))
    w(img("listing.png"))
    w("")
    rows = []
    pts = {impl: [(n, med(t, "scale", "view_root", impl, "-", str(n))) for n in trees]
           for impl in ("memtool", "floor", "sdk")}
    for n in trees:
        m, f, c, s = (med(t, "scale", "view_root", i, "-", str(n))
                      for i in ("memtool", "floor", "floor-cores", "sdk"))
        rows.append((fmt_count(n), fmt_us(m), fmt_us(p99(t, "scale", "view_root", "memtool", "-", str(n))),
                     fmt_us(f), fmt_us(c), fmt_us(s), fmt_ratio(ratio(m, f)), fmt_ratio(ratio(m, c)),
                     fmt_ratio(ratio(s, m)), "%.2f µs" % (m / n) if m else "–"))
    w(table(["files", "memtool median", "memtool p99", "floor median", "floor on every core",
             "SDK median", "memtool/floor", "memtool/floor on every core", "SDK/memtool",
             "memtool per file"], rows))
    w("")
    fk = lambda impl: ", ".join("%.2f" % k for k in growth(pts[impl])) or "–"
    w("Growth of the time with the store size, as the exponent k in time ∝ files^k between "
      "successive sizes (1 is linear): memtool %s; the floor %s; the SDK %s.\n" %
      (fk("memtool"), fk("floor"), fk("sdk")))

    w("### Writing into a big store, one process per command\n")
    w("One `create` of a small file (at `file` durability) by one process, `memtool call` against "
      "`node bench/sdk_call.mjs`, in the same stores: what a hook that saves a memory pays as the "
      "store grows.\n")
    rows = []
    cpts = []
    for n in trees:
        m = med(t, "scale", "create_call", "memtool", "file", str(n))
        s = med(t, "scale", "create_call", "sdk", "file", str(n))
        cpts.append((n, m))
        rows.append((fmt_count(n), fmt_us(m), fmt_us(p99(t, "scale", "create_call", "memtool", "file", str(n))),
                     fmt_us(s), fmt_ratio(ratio(s, m)) if s else "–"))
    w(table(["files in the store", "memtool call median", "p99", "node + SDK median", "SDK/memtool"], rows))
    w("")
    w("Growth exponents k for memtool: %s.\n" % (", ".join("%.2f" % k for k in growth(cpts)) or "–"))

    w("### One big file: `view_range` and `str_replace`\n")
    w("Files of 200-byte lines (a 100 MB file has 524,288 lines, under the 999,999-line limit) with one "
      "unique token in the middle line; memtool's limits are raised (`max_file_size` 1 GiB) for this. "
      "`view_range` asks for 20 lines in the middle; `str_replace` swaps the token. The floor for "
      "`view_range` reads the file once (`open`/`fstat`/`read`/`close`); the floor for `str_replace` "
      "reads it once and writes it once (temporary file, `writev`, `fsync` at `file`, `rename`): "
      "*reading and writing it once*.\n")
    w(img("bigfile.png"))
    w("")
    rows = []
    growth_lines = []
    for op, durs in (("view_range", ["-"]), ("str_replace", ["file", "none"])):
        for d in durs:
            series = []
            for b in bigs:
                m, f = med(t, "scale", op, "memtool", d, str(b)), med(t, "scale", op, "floor", d, str(b))
                s = med(t, "scale", op, "sdk", d if d != "none" else "x", str(b))
                series.append((b, m))
                rows.append(("`%s`" % op, d, fmt_bytes(b), fmt_us(m),
                             fmt_us(p99(t, "scale", op, "memtool", d, str(b))), fmt_us(f), fmt_us(s),
                             fmt_ratio(ratio(m, f)), fmt_ratio(ratio(s, m)) if s else "–",
                             "%.2f ms" % (m / 1000 / (b / (1 << 20))) if m else "–"))
            growth_lines.append("`%s` (%s): %s" % (op, d, ", ".join("%.2f" % k for k in growth(series)) or "–"))
    w(table(["op", "durability", "size", "memtool median", "memtool p99", "floor median", "SDK median",
             "memtool/floor", "SDK/memtool", "memtool per MB"], rows))
    w("")
    w("Growth exponents k (time ∝ size^k) between successive sizes: " + "; ".join(growth_lines) + ".\n")

    # ---- 4b
    worst_rows = []
    for i, name in enumerate(WORST_CASES, 1):
        key = ("worst", "case%d" % i)
        a, f, z = (med(t, *key, impl, "none", name) for impl in ("memtool", "floor", "nomatch"))
        if a is not None:
            worst_rows.append((i, "`%s`" % name, fmt_us(a), fmt_us(p99(t, *key, "memtool", "none", name)),
                               fmt_us(f), fmt_us(z), fmt_ratio(ratio(a, z))))
    if worst_rows:
        w("## 4b. `str_replace` on adversarial inputs\n")
        w("The inputs that made match finding quadratic before it was one linear pass (`bench/"
          "str_replace_worst.c`; the first took 148 s of CPU then): files of repeated bytes against "
          "an `old_str` of the same bytes, so that matches overlap everywhere, or almost match "
          "(`a*512K / a*256K`: a file of 512 KiB of `a`, an `old_str` of 256 KiB of `a`). "
          "Each is timed through `mt_memory_call` (durability `none`: the search is timed, not the "
          "disk) next to a `memchr` pass over the same bytes and to the same call with an "
          "`old_str` of as many `z`s, which matches nowhere: that call costs the parsing, the lock, "
          "the read and the echo of `old_str` in the answer, but hardly any search, since a search "
          "for bytes the file lacks is the cheapest there is. So *str_replace / no-match* is large "
          "for a short `old_str` even in the ordinary case 7, and the target compares the worst "
          "case with case 7 instead: an ordinary `str_replace` on a 1 MiB file.\n")
        w(table(["case", "input / old_str", "str_replace median", "str_replace p99", "memchr pass",
                 "no-match call", "str_replace / no-match"], worst_rows))
        w("")

    # ---- 5
    w("## 5. Memory\n")
    scan = serve.get(("scan", "memtool", 1, "none"))
    rows = []
    if scan:
        rows.append(("`memtool serve`: %s requests over the %s-file store, 1 in 50 a `view /memories`, the "
                     "rest file views" % (fmt_count(scan["ops"]), fmt_count(trees[-1])),
                     "%.1f MB" % (scan["max_rss_kb"] / 1024)))
    for n in trees:
        kb = memory.get(("view_root", "sdk", str(n)))
        if kb:
            rows.append(("node + SDK, in process, after its `view /memories` runs over %s files" % fmt_count(n),
                         "%.1f MB" % (kb / 1024)))
    w("Peak resident set size (`getrusage` `ru_maxrss` of the serve process through `wait4`; Node's "
      "`process.resourceUsage().maxRSS`).\n")
    w(table(["process", "peak RSS"], rows))
    w("")
    if scan:
        w("Over the same store, `serve` answered %s requests per second (wall) in this mix.\n" %
          fmt_count(scan["ops_per_s"]))

    # ---- 6
    hv = meta.get("history_versions", "10000")
    w("## 6. History\n")
    w("What a version costs a write (`bench/history.c`): the same writes, a `create`, a `str_replace` "
      "and a `delete` of a small file in turn, through `mt_memory_call`, with history off and on, "
      "at each durability. Each round is a fresh store and a run of writes (100 cycles at `full`, "
      "300 at `file`, 1,500 at `none`), timed as a whole; off and on take turns, %s rounds each, and "
      "the target compares the best rounds (the median round is shown too). Then the log of one "
      "memory with %s versions: `mt_memory_log` in process, and one `memtool --root DIR log PATH "
      "--limit 0` process (spawned and reaped like section 2, its output to `/dev/null`), which "
      "catches up on the store first, as every log does, and prints every version.\n" %
      (fmt_count(t.get(("history", "write", "off", "none", HISTORY_WRITES), {}).get("n", 0)),
       fmt_count(hv)))
    rows = []
    for d in DURABILITIES:
        off, on = (t.get(("history", "write", h, d, HISTORY_WRITES)) for h in ("off", "on"))
        rows.append((d, fmt_us(off["min_us"]) if off else "–", fmt_us(on["min_us"]) if on else "–",
                     "%.3f×" % ratio(on["min_us"], off["min_us"]) if off and on else "–",
                     fmt_us(off["median_us"]) if off else "–", fmt_us(on["median_us"]) if on else "–",
                     "%.3f×" % ratio(on["median_us"], off["median_us"]) if off and on else "–"))
    w(table(["durability", "off, best round (per write)", "on, best round", "on/off",
             "off, median round", "on, median round", "on/off (median rounds)"], rows))
    w("")
    rows = []
    for impl, what in (("libmemtool", "`mt_memory_log` in process"),
                       ("memtool", "one `memtool log` process")):
        row = t.get(("history", "log", impl, "-", "%s versions" % hv))
        rows.append((what, fmt_us(row["median_us"]) if row else "–", fmt_us(row["p99_us"]) if row else "–",
                     fmt_count(row["n"]) if row else "–"))
    w(table(["log of %s versions" % fmt_count(hv), "median", "p99 (worst)", "runs"], rows))
    w("")

    if os.path.exists(notes):
        with open(notes) as f:
            w(fill(f.read().rstrip(), facts(t, serve, trees, bigs, meta)) + "\n")

    # What other scripts measure (stores, bindings, secrets, encryption, search) is kept in
    # its own file, copied as it is: this report does not measure it, and must not drop it.
    separate = os.path.join(HERE, "separate.md")
    if os.path.exists(separate):
        with open(separate) as f:
            text = f.read()
        w(text[text.index("-->") + 3:].strip() + "\n" if "-->" in text else text.strip() + "\n")

    w("## Reproducing\n")
    w("`make bench` builds memtool, installs the SDK with `npm ci` from `bench/package-lock.json`, runs "
      "every suite (a few minutes on 2 cores) and writes this file, `bench/results/*.csv` and the plots. "
      "The stores are made in `$TMPDIR` (`BENCH_WORKDIR` to choose): it should be a disk filesystem, "
      "not tmpfs, for the `fsync` numbers to mean anything. `ctest -R bench_smoke` runs every part "
      "with a few iterations and checks that every result row is produced. `sh bench/secrets.sh` "
      "measures the secrets check (the section above; `ctest -R bench_secrets_smoke` keeps it from "
      "rotting). The sections from *Encryption at rest* on come from their own scripts and are kept in "
      "`bench/separate.md`, which this report copies: update them there.\n")
    with open(markdown, "w") as f:
        f.write("\n".join(out))


HEADER = "suite,op,impl,durability,param,n,median_us,p99_us,mean_us,min_us"


def best_of(all_out, rounds):
    best = {}
    order = []
    with open(all_out, "w") as out:
        out.write("round," + HEADER + "\n")
        for i, path in enumerate(rounds, 1):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if not line:
                        continue
                    cells = line.split(",")
                    if len(cells) != 10:
                        raise SystemExit("report: a timing row of the wrong shape in %s: %s" % (path, line))
                    out.write("%d,%s\n" % (i, line))
                    key = tuple(cells[:5])
                    if key not in best:
                        order.append(key)
                    if key not in best or float(cells[6]) < float(best[key][6]):
                        best[key] = cells
    for key in order:
        print(",".join(best[key]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results")
    ap.add_argument("--markdown")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--best-of", nargs="+", metavar="FILE")
    a = ap.parse_args()
    if a.best_of:
        if len(a.best_of) < 2:
            ap.error("--best-of ALL ROUND...")
        best_of(a.best_of[0], a.best_of[1:])
        return
    if not a.results:
        ap.error("--results is needed")
    if a.check:
        sys.exit(check(a.results))
    if not a.markdown:
        ap.error("--markdown or --check")
    report(a.results, a.markdown)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Which tests the ASan+UBSan pass runs: every test but the golden variants,
and of those a sample that still covers every case and every variant.

The golden suite runs each case (tests/golden/cases/NAME.test) on every store,
plain and encrypted, and through serve and the bindings: about ten variants of
one case, each of which drives the same C code paths as the others but for the
store and the front end underneath. Under the sanitizers the first pass's
exact-output check is already done; what the second pass proves is that no
code path reads or writes out of bounds, leaks or hits undefined behaviour. One
variant per case, chosen round-robin over the variants a case has, runs every
case once and every variant (store, encryption, front end) several times, at a
tenth of the cost. Every other test (unit, stress, fault injection, fuzz
replays, agent, MCP, bindings, memtool server) runs whole, but for some of the
server's (server_first_pass_only says which and why) and the memory browser's
twins in Firefox and on SQLite (web_first_pass_only) and the golden suite on a
remote store (remote_first_pass_only), the lint checks (which
run no binary of the build) and the benchmarks' smoke runs (which only keep
the benchmarks from rotting, and drive code paths the tests drive).

Reads the output of `ctest -N` on stdin; prints a ctest -R regex on stdout and
a summary on stderr. Usage: ctest -N | sanitize-sample.py CASES_DIR
"""
import os
import re
import sys


def server_first_pass_only(name: str) -> bool:
    """memtool server's tests that the first pass runs and this one does not:
    the load and cap tests (concurrency: TSan's question, and the first pass
    checks their outcomes) and the SQLite twins of the session and sync tests
    (the same server code over another store, which the store suites run under
    the sanitizers already). The session, sync, edge and outside-edit tests run
    here, on the file store: every route, hostile input included."""
    return (name.startswith("server_load_") or name == "server_cap"
            or name.endswith("_sqlite"))


def web_first_pass_only(name: str) -> bool:
    """The memory browser's twins: the same flows in Firefox, or on a SQLite
    store. The browser differs only on the page's side, which no sanitizer
    sees, and the SQLite store's code runs under the sanitizers in the store
    suites; the Chromium runs on the file store (web_browser, web_server_ui)
    drive every server path of the page here."""
    return name.startswith("web_") and name.endswith(("_firefox", "_sqlite"))


def remote_first_pass_only(name: str) -> bool:
    """The golden suite on a remote store (one test, every case): the same
    cases run here on the local stores, and the remote store's own code runs
    here in remote_store, remote_hostile and test_store_conformance_remote."""
    return name == "golden_remote"


def main() -> int:
    cases_dir = sys.argv[1]
    cases = sorted(f[:-5] for f in os.listdir(cases_dir) if f.endswith(".test"))
    # Longest first, so "view_dir_fs" is matched before "view_dir".
    by_length = sorted(cases, key=len, reverse=True)
    names = [m.group(1) for m in (re.search(r"Test +#\d+: (\S+)", l) for l in sys.stdin) if m]
    # An agent case's unthreaded twin, but the plain session's (see the top).
    present = set(names)
    twin = {n for n in names if n.startswith("agent_") and n.endswith("_nothread")
            and n[: -len("_nothread")] in present and n != "agent_session_nothread"}
    keep = [n for n in names if not n.startswith("golden_") and n not in twin
            and not (n.startswith("server_") and server_first_pass_only(n))
            and not web_first_pass_only(n) and not remote_first_pass_only(n)
            and not n.startswith(("lint_", "bench_"))]
    variants = {}  # case -> {variant prefix: test name}
    for name in names:
        if not name.startswith("golden_"):
            continue
        rest = name[len("golden_"):]
        case = next((c for c in by_length if rest == c or rest.endswith("_" + c)), None)
        if case is None:
            # A golden test this script cannot place runs whole: never drop one silently
            # (but for the one said above, by name).
            if not remote_first_pass_only(name):
                keep.append(name)
            continue
        variants.setdefault(case, {})[rest[: len(rest) - len(case)]] = name
    all_variants = sorted({v for per in variants.values() for v in per})
    turn = 0
    chosen = {}
    for case in sorted(variants):
        per = variants[case]
        # The next variant in the rotation that this case has.
        for step in range(len(all_variants)):
            v = all_variants[(turn + step) % len(all_variants)]
            if v in per:
                chosen[case] = per[v]
                turn = (turn + step + 1) % len(all_variants)
                break
    keep += chosen.values()
    covered = {n[len("golden_"):][: -len(c) or None] for c, n in chosen.items()}
    missing = [v for v in all_variants if v not in covered]
    print(
        f"sanitize-sample: {len(keep)} of {len(names)} tests: every non-golden test "
        f"but {len(twin)} unthreaded agent twins, "
        f"{len(chosen)} golden cases once each over {len(all_variants) - len(missing)} "
        f"of {len(all_variants)} variants",
        file=sys.stderr,
    )
    if missing:
        print(f"sanitize-sample: variants not sampled: {' '.join(missing)}", file=sys.stderr)
        return 1
    print("^(" + "|".join(re.escape(n) for n in sorted(keep)) + ")$")
    return 0


if __name__ == "__main__":
    sys.exit(main())

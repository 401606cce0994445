#!/usr/bin/env python3
"""Request-body bytes per turn of a scripted six-turn memory session, with and
without message threads, measured by the agent tests' stand-in API.

usage: python3 bench/agent_threads.py [MEMTOOL]     (default build/memtool)

Runs tests/agent/cases/thread_memory_session.json (a chat of six user turns,
each with one memory call, so two requests per turn) through
tests/agent/run_case.py in both modes and prints a Markdown table for
BENCHMARKS.md. Both runs must pass the case's checks.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
CASE = os.path.join(TOP, "tests", "agent", "cases", "thread_memory_session.json")


def sizes(memtool, mode):
    p = subprocess.run([sys.executable, os.path.join(TOP, "tests", "agent", "run_case.py"), memtool,
                        CASE, mode], env=dict(os.environ, PRINT_BYTES="1"),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("the %s run failed:\n%s" % (mode, p.stdout))
    return [int(n) for n in re.findall(r"^request \d+: (\d+) bytes$", p.stdout, re.M)]


def main():
    memtool = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build", "memtool")
    threaded, whole = sizes(memtool, "thread"), sizes(memtool, "nothread")
    if len(threaded) != len(whole) or len(threaded) % 2:
        sys.exit("the runs sent %d and %d requests" % (len(threaded), len(whole)))
    print("| turn | requests | bytes over a thread | bytes without | ratio |")
    print("|---:|---:|---:|---:|---:|")
    for t in range(len(threaded) // 2):
        a = threaded[2 * t] + threaded[2 * t + 1]
        b = whole[2 * t] + whole[2 * t + 1]
        print("| %d | 2 | %d | %d | %.2f |" % (t + 1, a, b, a / b))
    a, b = sum(threaded), sum(whole)
    print("| all | %d | %d | %d | %.2f |" % (len(threaded), a, b, a / b))


if __name__ == "__main__":
    main()

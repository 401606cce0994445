#!/usr/bin/env python3
"""Run one agent test case: the stand-in API server, memtool against it, and the checks.

usage: run_case.py MEMTOOL CASE.json [thread|nothread]
With PRINT_BYTES=1 in the environment it also prints each request's body size.

The mode says how memtool talks to the stand-in: over message threads (the
default), or with --no-thread after the command (run, chat), where no request
may carry a thread. Each case runs in both modes unless its "modes" names one.

A case is a JSON object:
  args        memtool's arguments after the global --root (which is left out
              when an argument holds "{root}"); "{fixtures}" is this folder's fixtures/
  env         extra environment (null removes a variable)
  stdin       text on memtool's standard input
  seed        files the store holds before the run: {"rel/path": "content"}
  setup       memtool commands run on the store before the run, each a list of
              arguments as in `args`; each must exit 0
  exchanges   the scripted requests and answers (see fake_api.py)
  exit        the expected exit status
  stdout, stderr   {"contains": [...], "not_contains": [...], "regex": [...], "equals": "..."}
  stdout_json a subset of the JSON memtool must print on stdout
  files       exactly the files the store must hold afterwards: each a content, or
              {"regex": R} that the whole content must match
  requests    how many requests must arrive (default: every exchange, once)
  client_gone the client must have dropped a connection (a cancel)
  modes       "thread" or "nothread": the one mode the case is for (CMake reads it)
  threads     "off": the stand-in expects no thread whatever the mode (an API
              version before threads, say)
  api         {"versions": [...], "auth": "x-api-key"}: what the stand-in accepts
              (default: 2026-10-21 and Authorization: Bearer)
  thread_unsupported  request fields the stand-in refuses on a thread
  thread_errors       the thread errors the stand-in must have answered, in order
  seconds     {"min": s, "max": s} for the whole run
  pty         steps for an interactive run on a pseudo-terminal instead of pipes:
              {"send": text}, {"expect": regex}, {"absent": regex},
              {"wait_gate": true}, {"open_gate": true}, {"wait_requests": n},
              {"wait_client_gone": true}
"""

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_api  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Failed(Exception):
    pass


def store_files(root):
    """The memories in the store: its own directory (the lock and usage
    counter) is not one of them."""
    out = {}
    for d, dirs, files in os.walk(root):
        if d == root and ".memtool" in dirs:
            dirs.remove(".memtool")
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read().decode("utf-8", "replace")
    return out


def check_text(name, text, want, problems):
    if want is None:
        return
    for s in want.get("contains", []):
        if s not in text:
            problems.append("%s lacks %r" % (name, s))
    for s in want.get("not_contains", []):
        if s in text:
            problems.append("%s holds %r" % (name, s))
    for r in want.get("regex", []):
        if not re.search(r, text, re.M):
            problems.append("%s does not match /%s/" % (name, r))
    if "equals" in want and text != want["equals"]:
        problems.append("%s is %r, expected %r" % (name, text, want["equals"]))


def environment(case, server):
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith("ANTHROPIC_")
           and not k.startswith("MEMTOOL_")}
    env["ANTHROPIC_BASE_URL"] = server.url()
    env["ANTHROPIC_API_KEY"] = fake_api.API_KEY
    env["NO_PROXY"] = "*"
    for k, v in case.get("env", {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def command(memtool, case, root, args=None, mode="thread"):
    given = case.get("args", []) if args is None else args
    if args is None and mode == "nothread":
        at = next(i for i, a in enumerate(given) if a in ("run", "chat"))
        given = given[:at + 1] + ["--no-thread"] + given[at + 1:]
    args = [a.replace("{root}", root).replace("{fixtures}", os.path.join(HERE, "fixtures"))
            for a in given]
    if any("{root}" in a for a in given):
        return [memtool] + args
    return [memtool, "--root", root] + args


def files_mismatch(want, got):
    """Whether the store's files differ from the case's: the same names, each
    content equal to a string or matching a {"regex": R} whole."""
    if sorted(want) != sorted(got):
        return True
    for name, w in want.items():
        if isinstance(w, dict):
            if re.fullmatch(w["regex"], got[name], re.S) is None:
                return True
        elif w != got[name]:
            return True
    return False


def run_pipes(cmd, env, case):
    p = subprocess.run(cmd, env=env, input=case.get("stdin", "").encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def run_pty(cmd, env, case, server):
    """memtool on a pseudo-terminal: its controlling terminal, so Ctrl-C and
    Ctrl-D mean what they mean to a person."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    out = b""
    pos = 0

    def text():
        return out.decode("utf-8", "replace").replace("\r\n", "\n")

    def pump(timeout):
        nonlocal out
        r, _, _ = select.select([fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        out += data
        return True

    try:
        for step in case["pty"]:
            if "send" in step:
                os.write(fd, step["send"].encode())
            elif "expect" in step:
                deadline = time.monotonic() + step.get("timeout", 10)
                while True:
                    m = re.compile(step["expect"], re.M).search(text(), pos)
                    if m:
                        pos = m.end()
                        break
                    if time.monotonic() > deadline or not pump(0.05):
                        raise Failed("the terminal never showed /%s/; it shows:\n%s"
                                     % (step["expect"], text()))
            elif "absent" in step:
                until = time.monotonic() + 0.3
                while time.monotonic() < until and pump(0.05):
                    pass
                if re.search(step["absent"], text()[pos:], re.M):
                    raise Failed("the terminal shows /%s/ too early:\n%s"
                                 % (step["absent"], text()))
            elif step.get("wait_gate"):
                if not server.gate_reached.wait(10):
                    raise Failed("the server never sent the first text delta")
            elif step.get("open_gate"):
                server.gate.set()
            elif "wait_requests" in step:
                deadline = time.monotonic() + 10
                while len(server.requests) < step["wait_requests"]:
                    if time.monotonic() > deadline:
                        raise Failed("request %d never arrived" % step["wait_requests"])
                    pump(0.05)
            elif step.get("wait_client_gone"):
                if not server.client_went_away.wait(10):
                    raise Failed("the client never dropped the request")
        deadline = time.monotonic() + 10
        while True:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid:
                status = os.waitstatus_to_exitcode(st)
                break
            if time.monotonic() > deadline:
                raise Failed("memtool did not exit; the terminal shows:\n%s" % text())
            if not pump(0.05):
                time.sleep(0.01)
        while pump(0.05):
            pass
        return status, text(), ""
    except Failed as e:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        raise e
    finally:
        os.close(fd)


def main():
    memtool, case_path = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "thread"
    with open(case_path) as f:
        case = json.load(f)
    tmp = tempfile.mkdtemp(prefix="memtool-agent-")
    root = os.path.join(tmp, "memories")
    api = case.get("api", {})
    threads = "off" if mode == "nothread" or case.get("threads") == "off" else "on"
    server = fake_api.FakeAPI(case.get("exchanges", []), case.get("echo_check", True),
                              versions=tuple(api.get("versions", ["2026-10-21"])),
                              bearer=api.get("auth") != "x-api-key",
                              search_tool="--no-search" not in case.get("args", []),
                              threads=threads,
                              thread_unsupported=case.get("thread_unsupported", [])).start()
    problems = []
    try:
        for rel, content in case.get("seed", {}).items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), mode=0o700, exist_ok=True)
            with open(p, "w") as fh:
                fh.write(content)
        env = environment(case, server)
        for args in case.get("setup", []):
            p = subprocess.run(command(memtool, case, root, args), env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            if p.returncode != 0:
                raise SystemExit("setup %s exited %d: %s" % (args, p.returncode,
                                                              p.stderr.decode("utf-8", "replace")))
        cmd = command(memtool, case, root, mode=mode)
        began = time.monotonic()
        try:
            if "pty" in case:
                status, out, err = run_pty(cmd, env, case, server)
            else:
                status, out, err = run_pipes(cmd, env, case)
        except Failed as e:
            problems.append(str(e))
            status, out, err = None, "", ""
        took = time.monotonic() - began
        if status is not None and status != case.get("exit", 0):
            problems.append("exit status %s, expected %s" % (status, case.get("exit", 0)))
        check_text("stdout", out, case.get("stdout"), problems)
        check_text("stderr", err, case.get("stderr"), problems)
        if "stdout_json" in case:
            try:
                bad = fake_api.subset_mismatch(case["stdout_json"], json.loads(out), "stdout")
            except ValueError:
                bad = "stdout is not JSON"
            if bad:
                problems.append(bad)
        if "files" in case:
            got = store_files(root) if os.path.isdir(root) else {}
            if files_mismatch(case["files"], got):
                problems.append("the store holds %s\nexpected %s" % (
                    json.dumps(got, indent=1, ensure_ascii=False),
                    json.dumps(case["files"], indent=1, ensure_ascii=False)))
        want_requests = case.get("requests", len(case.get("exchanges", [])))
        if len(server.requests) != want_requests:
            problems.append("%d requests arrived, expected %d" % (len(server.requests),
                                                                  want_requests))
        if case.get("client_gone") and not server.client_went_away.is_set():
            problems.append("the client never dropped its request")
        secs = case.get("seconds", {})
        if "min" in secs and took < secs["min"]:
            problems.append("took %.2f s, expected at least %s" % (took, secs["min"]))
        if "max" in secs and took > secs["max"]:
            problems.append("took %.2f s, expected at most %s" % (took, secs["max"]))
        if "thread_errors" in case and server.thread_errors != case["thread_errors"]:
            problems.append("the stand-in answered thread errors %s, expected %s"
                            % (server.thread_errors, case["thread_errors"]))
        if os.environ.get("PRINT_BYTES"):
            # For bench/agent_threads.py: each request's body size.
            for i, (_, raw) in enumerate(server.requests):
                print("request %d: %d bytes" % (i + 1, len(raw)))
        problems.extend("server: " + f for f in server.failures)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    name = "%s (%s)" % (os.path.basename(case_path), mode)
    if problems:
        print("FAIL %s (%s)" % (name, case.get("description", "")))
        for p in problems:
            print("  - " + p)
        print("--- stdout\n%s--- stderr\n%s---" % (out, err))
        return 1
    print("ok %s: %s" % (name, case.get("description", "")))
    if os.environ.get("VERBOSE"):
        print("--- stdout\n%s--- stderr\n%s---" % (out, err))
    return 0


if __name__ == "__main__":
    sys.exit(main())

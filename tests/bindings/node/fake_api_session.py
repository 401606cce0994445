#!/usr/bin/env python3
"""One scripted session of the stand-in Messages API (tests/agent/fake_api.py), for a
client that is not memtool: the client under test is started by the caller.

    fake_api_session.py CASE.json

Prints one JSON line, {"url": ..., "api_key": ...}, then serves until stdin closes,
then prints {"failures": [...], "requests": N}: every check fake_api.py made, and one
more when fewer or more requests came than the case scripts.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "agent"))
import fake_api  # noqa: E402


def main():
    with open(sys.argv[1]) as f:
        case = json.load(f)
    # The TypeScript SDK sends its key as a bearer token, with its own API version.
    server = fake_api.FakeAPI(case["exchanges"], versions=tuple(case["api_versions"]),
                              bearer=case.get("bearer", False)).start()
    print(json.dumps({"url": server.url(), "api_key": fake_api.API_KEY}), flush=True)
    sys.stdin.read()
    server.stop()
    failures = list(server.failures)
    if server.next != len(case["exchanges"]):
        failures.append("%d requests, expected %d" % (server.next, len(case["exchanges"])))
    print(json.dumps({"failures": failures, "requests": server.next}), flush=True)


if __name__ == "__main__":
    main()

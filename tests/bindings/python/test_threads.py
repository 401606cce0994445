"""One handle, many threads: no lost change, and close() while others call."""
import threading
import time

import memtool


def test_eight_threads_insert_into_one_file(store):
    tool = memtool.MemtoolMemoryTool(store=store, history_keep=0)
    tool.create({"path": "/memories/log.md", "file_text": ""})
    start = threading.Barrier(8)
    errors = []

    def worker(t):
        start.wait()
        for i in range(25):
            try:
                tool.insert({"path": "/memories/log.md", "insert_line": 0,
                             "insert_text": "t%d-%02d\n" % (t, i)})
            except Exception as e:  # collected: an assert in a thread would be lost
                errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    lines = tool.memory.read("/memories/log.md").decode().splitlines()
    assert sorted(lines) == sorted("t%d-%02d" % (t, i) for t in range(8) for i in range(25))
    # Each thread's own lines are in its order (each went in at the top).
    for t in range(8):
        mine = [line for line in lines if line.startswith("t%d-" % t)]
        assert mine == sorted(mine, reverse=True)
    # Every change is one version, none lost or doubled.
    versions = tool.memory.log("/memories/log.md", limit=1000)
    assert [v.id for v in versions] == list(range(201, 0, -1))
    tool.close()


def test_close_while_other_threads_call(store):
    mem = memtool.Memory(store)
    mem.call({"command": "create", "path": "/memories/a.md", "file_text": "x\n"})
    running = threading.Barrier(7)
    outcomes = [[] for _ in range(6)]

    def worker(n):
        running.wait()
        while True:
            try:
                if n % 3 == 0:
                    r = mem.call({"command": "view", "path": "/memories/a.md"})
                    assert r.text.endswith("     1\tx")
                elif n % 3 == 1:
                    mem.call({"command": "create", "path": "/memories/w%d-%d" % (
                        n, len(outcomes[n])), "file_text": "y"})
                else:
                    mem.log(limit=5)
                outcomes[n].append("ok")
            except memtool.ClosedError:
                outcomes[n].append("closed")
                return
            except Exception as e:
                outcomes[n].append(repr(e))
                return

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    running.wait()
    time.sleep(0.2)
    closers = [threading.Thread(target=mem.close) for _ in range(3)]
    for th in closers:
        th.start()
    for th in closers + threads:
        th.join(30)
        assert not th.is_alive()
    for got in outcomes:
        assert got[-1] == "closed" and set(got[:-1]) <= {"ok"}, got[-3:]
        assert len(got) > 1  # each thread called while the handle was open
    assert mem.closed
    # What the writers made is all there: nothing half done by the close.
    with memtool.Memory(store) as again:
        made = sum(len(o) - 1 for n, o in enumerate(outcomes) if n % 3 == 1)
        assert again.usage().files == 1 + made

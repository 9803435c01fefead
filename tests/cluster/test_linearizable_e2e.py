"""End to end: concurrent commits and ReadIndex fetches against 3 local node processes while nodes are
SIGKILLed and restarted or SIGSTOPped and resumed; the recorded history must be linearizable (the
project's own checker, offsets register model). The property the whole cluster exists to provide."""

from __future__ import annotations

import itertools
import random
import signal
import threading
import time

from jepsen_py.checkers.linearizable import Budget, check, get_model
from jepsen_py.cluster.client import ClusterError

from jepsen_py.history import FAIL, INFO, INVOKE, OK, Op
from jepsen_py.raftdb.local import LocalCluster

SECONDS = 10.0
WORKERS = 5
KEYS = ["g/orders/0", "g/orders/1", "g/orders/2"]


class Recorder:
    """A minimal thread-safe history recorder (invocations and completions, Jepsen's rules)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.lock = threading.Lock()
        self.t0 = time.monotonic_ns()

    def add(self, **kw) -> None:
        with self.lock:
            self.ops.append(Op(index=len(self.ops), time=time.monotonic_ns() - self.t0, **kw))


class SharedCounter:
    """Process ids for every worker: a worker whose op went indeterminate takes a fresh one."""

    def __init__(self) -> None:
        self._it = itertools.count()
        self._lock = threading.Lock()

    def __next__(self) -> int:
        with self._lock:
            return next(self._it)


def worker(c: LocalCluster, rec: Recorder, w: int, stop: threading.Event, procs) -> None:
    rng = random.Random(w)
    process = next(procs)
    clients = {nid: c.client(nid, timeout=1.0) for nid in c.nodes}
    seq = 0
    try:
        while not stop.is_set():
            key = rng.choice(KEYS)
            g, t, p = key.rsplit("/", 2)
            nid = rng.choice(list(c.nodes))
            if rng.random() < 0.5:
                seq += 1
                value = w * 1_000_000 + seq  # unique per write: the checker's fast path applies
                rec.add(type=INVOKE, process=process, f="commit", key=key, value=value, node=nid)
                try:
                    clients[nid].commit_offset(g, t, int(p), value)
                    rec.add(type=OK, process=process, f="commit", key=key, value=value, node=nid)
                except ClusterError as e:
                    rec.add(type=FAIL if e.definite else INFO, process=process, f="commit", key=key,
                            value=value, node=nid, error=e.error or type(e).__name__)
                    if not e.definite:
                        process = next(procs)  # an indeterminate op's process never invokes again
            else:
                rec.add(type=INVOKE, process=process, f="fetch", key=key, value=None, node=nid)
                try:
                    ans = clients[nid].fetch_offset(g, t, int(p))
                    rec.add(type=OK, process=process, f="fetch", key=key, value=ans["offset"], node=nid,
                            meta={"role": ans["role"], "term": ans["term"]})
                except ClusterError as e:
                    rec.add(type=FAIL if e.definite else INFO, process=process, f="fetch", key=key,
                            value=None, node=nid, error=e.error or type(e).__name__)
                    if not e.definite:
                        process = next(procs)
            if rng.random() < 0.05:
                time.sleep(0.01)
    finally:
        for cl in clients.values():
            cl.close()


MIN_OK = 50  # ok commits, and ok fetches, the faults must have let through


def enough_oks(rec: Recorder) -> bool:
    with rec.lock:
        oks = [o.f for o in rec.ops if o.type == OK]
    return oks.count("commit") > MIN_OK and oks.count("fetch") > MIN_OK


def test_history_under_kills_is_linearizable(tmp_path):
    rng = random.Random(4)
    with LocalCluster(3, str(tmp_path), extra_args=["--snapshot-entries", "300"]) as c:
        c.start_all()
        c.wait_for_leader(20)
        rec = Recorder()
        stop = threading.Event()
        procs = SharedCounter()
        threads = [threading.Thread(target=worker, args=(c, rec, w, stop, procs)) for w in range(WORKERS)]
        for th in threads:
            th.start()
        try:
            # SECONDS of faults, and on a loaded machine more, until enough ops got through for the
            # check to mean anything (bounded): the ops asserted below, not the clock, end it.
            end = time.monotonic() + SECONDS
            give_up = end + 4 * SECONDS
            while time.monotonic() < end or (not enough_oks(rec) and time.monotonic() < give_up):
                time.sleep(rng.uniform(0.6, 1.2))
                victim = rng.choice(list(c.nodes))
                if rng.random() < 0.5:
                    c.kill(victim)  # crash: restart from its disk
                    time.sleep(rng.uniform(0.2, 0.8))
                    c.start(victim)
                else:
                    # pause: a leader wakes up believing it still leads (the zombie-leader setting)
                    proc = c.nodes[victim].proc
                    proc.send_signal(signal.SIGSTOP)
                    time.sleep(rng.uniform(0.5, 1.5))
                    proc.send_signal(signal.SIGCONT)
        finally:
            stop.set()
            for th in threads:
                th.join(30)
        assert enough_oks(rec), "too few ok ops for the check to mean anything"
        result = check(rec.ops, get_model("offsets"), budget=Budget(time_s=60))
        assert result["valid"] is True, result.get("failures") or result

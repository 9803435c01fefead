"""A plausible stored run, written by hand with HistoryWriter, for the picture tests and the benchmark.

Five nodes; n1 leads term 1 until a partition-leader fault isolates it at 40% of the run; n2 wins
term 2 while n1 keeps claiming leadership (a zombie, since the bug lets it serve local reads); one
fetch served by n1 during the partition returns an overwritten offset (the stale read that
results.json reports); concurrent commit/fetch clients on a few offset keys, some failing with
not_leader and some timing out (info, after which the worker takes a new process id).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from jepsen_py.history import HistoryWriter, Op

MS = 1_000_000
NODES = ["n1", "n2", "n3", "n4", "n5"]
KEYS = ["g1/orders/0", "g1/orders/1", "g1/payments/0", "g2/orders/0"]


@dataclass
class FixtureRun:
    run_dir: Path
    stale_read_ops: list[int]  # [invoke index, completion index] of the stale fetch
    nonlinear_op: int  # completion index of the op the linearizable checker could not place
    partition: tuple[float, float]  # seconds
    split_leader_samples: list[int]  # observer sample indices of the split-leader anomaly
    n_client_ops: int


def make_run(root: Path, n_ops: int = 400, *, seed: int = 7, name: str = "offsets-partition-leader",
             stamp: str = "20261122T031500.000", concurrency: int = 6) -> FixtureRun:
    rng = random.Random(seed)
    run_dir = root / name / stamp
    run_dir.mkdir(parents=True)
    duration_ns = max(10_000 * MS, n_ops * 10 * MS // concurrency)
    p_start, p_end = int(duration_ns * 0.4), int(duration_ns * 0.7)
    elect = p_start + 1200 * MS
    events: list[tuple[int, int, Op]] = []  # (time, tiebreak, op) sorted before indices are assigned
    seq = 0

    def add(op: Op) -> None:
        nonlocal seq
        events.append((op.time, seq, op))
        seq += 1

    def leader_at(t: int) -> tuple[str, int]:
        return ("n2", 2) if t >= elect else ("n1", 1)

    # client ops: each worker runs one op at a time
    latest: dict[str, int] = dict.fromkeys(KEYS, 0)
    next_value = 1
    per_worker = max(1, n_ops // concurrency)
    gap = duration_ns // per_worker  # each worker spreads its ops over the whole run
    made = 0
    for w in range(concurrency):
        proc = w
        t = rng.randrange(0, 20 * MS)
        for _ in range(per_worker):
            key = rng.choice(KEYS)
            f = "commit" if rng.random() < 0.5 else "fetch"
            lat = int(rng.lognormvariate(1.2, 0.6) * MS)
            leader, term = leader_at(t)
            in_partition = p_start <= t < elect
            value = None
            if f == "commit":
                value = next_value
                next_value += 1
            inv = Op(0, t, "invoke", proc, f, key, value, leader)
            add(inv)
            done = t + lat
            r = rng.random()
            if in_partition and r < 0.3:
                done = t + 1000 * MS  # timed out against the isolated leader
                add(Op(0, done, "info", proc, f, key, value, leader, "timeout",
                       {"role": "leader", "term": term}))
                proc += concurrency
            elif r < 0.02:
                add(Op(0, done, "fail", proc, f, key, value, "n3", "not_leader",
                       {"role": "follower", "term": term, "leader": leader}))
            elif f == "commit":
                latest[key] = value  # type: ignore[assignment]
                add(Op(0, done, "ok", proc, f, key, value, leader, None,
                       {"role": "leader", "term": term, "leader": leader}))
            else:
                add(Op(0, done, "ok", proc, f, key, latest[key], leader, None,
                       {"role": "leader", "term": term, "leader": leader}))
            made += 1
            t = max(done + rng.randrange(0, 3 * MS), t + rng.randrange(gap // 2, gap * 3 // 2 + 1))
    # the stale read: n1, deposed but still serving, returns an offset overwritten before it began
    t_stale = elect + 800 * MS
    commit_t = t_stale - 300 * MS
    add(Op(0, commit_t, "invoke", 900, "commit", "g1/orders/0", 1_000_001, "n2"))
    add(Op(0, commit_t + 20 * MS, "ok", 900, "commit", "g1/orders/0", 1_000_001, "n2", None,
           {"role": "leader", "term": 2, "leader": "n2"}))
    stale_invoke = Op(0, t_stale, "invoke", 901, "fetch", "g1/orders/0", None, "n1")
    add(stale_invoke)
    stale_marker = Op(0, t_stale + 4 * MS, "ok", 901, "fetch", "g1/orders/0", 3, "n1", None,
                      {"role": "leader", "term": 1, "leader": "n1"})
    add(stale_marker)
    # nemesis: partition-leader isolating n1, healed later
    add(Op(0, p_start - 2 * MS, "invoke", "nemesis", "start-partition", None, None))
    add(Op(0, p_start, "info", "nemesis", "start-partition", None,
           {"shape": "leader", "leader": "n1", "sides": [["n1"], ["n2", "n3", "n4", "n5"]],
            "grudge": {"n1": ["n2", "n3", "n4", "n5"], **{n: ["n1"] for n in NODES[1:]}}}))
    add(Op(0, p_end - 3 * MS, "invoke", "nemesis", "stop-partition", None, None))
    add(Op(0, p_end, "info", "nemesis", "stop-partition", None, {"healed": True}))
    # observer samples every 100 ms per node
    t = 0
    while t < duration_ns:
        for n in NODES:
            leader, term = leader_at(t)
            if n == "n1" and p_start <= t < p_end:
                val = {"role": "leader", "term": 1, "leader": "n1", "commit_index": 10}
            elif t >= p_end and n == "n1":
                val = {"role": "follower", "term": 2, "leader": "n2", "commit_index": 20}
            elif p_start <= t < elect and n != "n1":
                val = {"role": "candidate" if n == "n2" else "follower", "term": 2 if n == "n2" else 1,
                       "leader": None, "commit_index": 10}
            else:
                val = {"role": "leader" if n == leader else "follower", "term": term, "leader": leader,
                       "commit_index": 10}
            add(Op(0, t + NODES.index(n) * MS, "ok", "observer", "status", None, val, n))
        t += 100 * MS
    events.sort(key=lambda e: (e[0], e[1]))
    with HistoryWriter(run_dir / "history.jsonl") as hw:
        for _, _, op in events:
            hw.append(op)
    stale = [stale_invoke.index, stale_marker.index]
    # two observer samples at one moment after the election: n1 (term 1) and n2 (term 2) both lead
    both = [op for _, _, op in events if op.process == "observer" and op.value["role"] == "leader"
            and op.time >= elect + 500 * MS][:2]
    split = sorted(op.index for op in both)
    (run_dir / "test.json").write_text(json.dumps({
        "name": name, "workload": "offsets", "nemesis": ["partition-leader"], "nodes": NODES,
        "time_limit": duration_ns / 1e9, "concurrency": concurrency, "rate": 100.0,
        "nemesis_interval": 5.0, "seed": seed, "backend": "docker", "read_mode": "local",
        "bugs": ["zombie-leader"], "db": "jepsen_py.raftdb:RaftMetadataDB", "results_dir": str(root)}))
    results = {
        "valid": False,
        "checkers": {
            "staleness": {
                "valid": False, "count": 1,
                "anomalies": [{"kind": "stale-read", "ops": stale,
                               "explanation": "fetch of g1/orders/0 on n1 (leader, term 1: deposed) "
                                              "returned 3, but commit 1000001 completed 280 ms "
                                              "before the read began"}],
            },
            "linearizable": {
                "valid": False, "model": "offsets-register",
                "anomalies": [{"kind": "nonlinearizable", "ops": [stale_marker.index],
                               "explanation": "no linearization places this fetch after the "
                                              "committed 1000001"}],
            },
            "leaders": {
                "valid": False,
                "anomalies": [{"kind": "split-leader", "ops": split,
                               "explanation": "n1 (term 1) and n2 (term 2) both report leading at once"}],
            },
            "availability": {"valid": True, "ok_fraction": 0.93},
        },
    }
    (run_dir / "results.json").write_text(json.dumps(results))
    return FixtureRun(run_dir, stale, stale_marker.index, (p_start / 1e9, p_end / 1e9), split, made)

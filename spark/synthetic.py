"""Realistic synthetic runs, for the Spark tests and the benchmark (no cluster needed).

Two generators:

- `simulate` runs a discrete-event simulation of `concurrency` clients against one register per
  key: every op takes effect at one instant inside its [invoke, complete] interval, so the history is
  linearizable unless a stale read is injected on purpose. Faults (nemesis windows) make ops fail or
  time out (info), an info write may or may not take effect, a process that got info is replaced by a
  new one, and an observer samples each node's role and term. `write_run` stores it as a run
  directory (test.json, history.jsonl through HistoryWriter, results.json) exactly like the runner.
- `fast_tables` builds the Parquet tables of a run directly with numpy, ~100x faster, for the
  10-million-op benchmark: same shape of history, but read values are not register-consistent.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from jepsen_py.spark.export import RUN_DIR_TIME_FORMAT, OpCounts, labels_from_spec, run_table
from jepsen_py.spark.schema import OPS_SCHEMA

from jepsen_py.history import FAIL, INFO, INVOKE, NEMESIS, OBSERVER, OK, HistoryWriter, Op

MS = 1_000_000
NODES = ("n1", "n2", "n3")


@dataclass(slots=True)
class SyntheticRun:
    """The knobs of one synthetic run."""

    test_name: str = "synthetic"
    workload: str = "offsets"
    nemesis: list[str] = field(default_factory=lambda: ["partition-leader"])
    bugs: list[str] = field(default_factory=list)
    read_mode: str | None = "read-index"  # None: a DB without read modes
    db: str = "jepsen_py.raftdb:RaftMetadataDB"
    db_options: dict[str, str] = field(default_factory=dict)
    fault_targets: list[str] = field(default_factory=list)
    nemesis_schedule: str = "random"
    version: str = "0.1.0"
    start: dt.datetime = field(default_factory=lambda: dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC))
    pairs: int = 500  # client invocations
    concurrency: int = 5
    keys: int = 4
    seed: int = 0
    stale_reads: int = 0  # definite stale reads to inject (the run is then invalid)
    verdict_unknown: bool = False  # the checker ran out of budget

    def spec(self) -> dict[str, Any]:
        """The test.json of this run (TestSpec fields)."""
        return {
            "name": self.test_name,
            "workload": self.workload,
            "nemesis": list(self.nemesis),
            "nodes": list(NODES),
            "time_limit": 60.0,
            "concurrency": self.concurrency,
            "rate": 100.0,
            "nemesis_interval": 5.0,
            "seed": self.seed,
            "backend": "docker",
            "read_mode": self.read_mode,
            "bugs": list(self.bugs),
            "db": self.db,
            "db_options": dict(self.db_options),
            "results_dir": "results",
            "leave_db_running": False,
            "test_count": 1,
            "fault_targets": list(self.fault_targets),
            "nemesis_schedule": self.nemesis_schedule,
            "options": {"db_version": self.version},
        }


def key_name(k: int) -> str:
    return f"g{k % 3}/orders/{k}"


@dataclass(slots=True)
class _Slot:
    process: int
    busy: bool = False


def simulate(run: SyntheticRun) -> tuple[list[Op], list[dict[str, Any]]]:
    """A linearizable register history (plus the injected stale reads) and the anomalies injected.

    Returns (ops in index order, anomalies as a checker would report them).
    """
    rng = random.Random(run.seed)
    ops: list[Op] = []

    def emit(op: Op) -> Op:
        op.index = len(ops)
        ops.append(op)
        return op

    # fault windows: one every ~40 ms of history when a nemesis runs
    faulty = bool(run.nemesis) and run.nemesis != ["none"]
    span = run.pairs * 3 * MS // max(1, run.concurrency)
    windows: list[tuple[int, int]] = []
    if faulty:
        t = 10 * MS
        while t < span:
            windows.append((t, t + 12 * MS))
            t += 40 * MS

    def in_fault(t: int) -> bool:
        return any(a <= t < b for a, b in windows)

    events: list[tuple[int, int, str, Any]] = []
    seq = 0

    def push(t: int, kind: str, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, data))

    for a, b in windows:
        push(a, "nemesis-start", None)
        push(b, "nemesis-stop", None)
    for s in range(0, span + 20 * MS, 7 * MS):
        push(s, "observe", None)

    slots = [_Slot(process=i) for i in range(run.concurrency)]
    next_process = run.concurrency
    for i in range(run.concurrency):
        push(rng.randrange(0, 2 * MS), "invoke", i)

    state: dict[str, Any] = {}  # key -> current value (None: initial)
    # key -> (value, completion time of its write if that write was ok, else None); initial: -1
    writer: dict[str, tuple[Any, int | None]] = {}
    # key -> values that every linearization must have overwritten before `time`: the value's write
    # completed ok before the overwriting write began, and the overwriting write completed ok at `time`
    overwritten: dict[str, list[tuple[Any, int]]] = {}
    invoked = 0
    next_value = 1
    anomalies: list[dict[str, Any]] = []
    stale_left = run.stale_reads
    term = 1
    leader = "n1"

    while events:
        t, _, kind, data = heapq.heappop(events)
        if kind == "nemesis-start":
            emit(Op(0, t, INVOKE, NEMESIS, "start-partition", value="leader"))
            emit(Op(0, t + 1000, INFO, NEMESIS, "start-partition", value={"isolated": [leader]}))
            term += 1
            leader = NODES[term % len(NODES)]
        elif kind == "nemesis-stop":
            emit(Op(0, t, INVOKE, NEMESIS, "stop-partition"))
            emit(Op(0, t + 1000, INFO, NEMESIS, "stop-partition", value="healed"))
        elif kind == "observe":
            for n in NODES:
                role = "leader" if n == leader else "follower"
                emit(Op(0, t, OK, OBSERVER, "status", node=n,
                        value={"role": role, "term": term, "leader": leader}))
        elif kind == "invoke":
            slot = slots[data]
            if invoked >= run.pairs:
                continue
            invoked += 1
            key = key_name(rng.randrange(run.keys))
            is_write = rng.random() < 0.5
            f = "write" if is_write else "read"
            value = next_value if is_write else None
            if is_write:
                next_value += 1
            inv = emit(Op(0, t, INVOKE, slot.process, f, key=key, value=value))
            fault = in_fault(t)
            r = rng.random()
            outcome = OK
            if fault and r < 0.5:
                outcome = FAIL
            elif (fault and r < 0.65) or r < 0.01:
                outcome = INFO
            latency = (50 * MS + rng.randrange(10 * MS)) if outcome == INFO else int(
                rng.lognormvariate(0, 0.5) * 2 * MS)
            latency = max(latency, 2000)
            done = t + latency
            op = {"inv": inv, "outcome": outcome, "done": done, "slot": data, "result": value}
            applies = outcome == OK or (outcome == INFO and is_write and rng.random() < 0.5)
            if applies:
                push(t + rng.randrange(1000, latency), "apply", op)
            push(done, "complete", op)
        elif kind == "apply":
            inv = data["inv"]
            if inv.f == "write":
                old, old_done = writer.get(inv.key, (None, -1))
                if data["outcome"] == OK and old_done is not None and old_done < inv.time:
                    overwritten.setdefault(inv.key, []).append((old, data["done"]))
                state[inv.key] = inv.value
                writer[inv.key] = (inv.value, data["done"] if data["outcome"] == OK else None)
            else:
                data["result"] = state.get(inv.key)
                if stale_left > 0 and data["outcome"] == OK:
                    # the newest value surely overwritten by a write that completed before the read began
                    stale = [v for v, tc in overwritten.get(inv.key, []) if tc < inv.time]
                    if stale:
                        data["result"] = stale[-1]
                        data["stale"] = True
                        stale_left -= 1
        elif kind == "complete":
            inv = data["inv"]
            slot = slots[data["slot"]]
            outcome = data["outcome"]
            node = NODES[rng.randrange(len(NODES))]
            if outcome == OK:
                value = data["result"]
                comp = emit(Op(0, t, OK, inv.process, inv.f, key=inv.key, value=value, node=node,
                               meta={"role": "leader" if node == leader else "follower", "term": term,
                                     "leader": leader}))
                if data.get("stale"):
                    anomalies.append({
                        "kind": "stale-read", "ops": [inv.index, comp.index],
                        "explanation": f"read of {inv.key} returned {value!r}, overwritten by a write "
                                       "that completed before the read began"})
            elif outcome == FAIL:
                emit(Op(0, t, FAIL, inv.process, inv.f, key=inv.key, value=inv.value, node=node,
                        error="unavailable"))
            else:
                emit(Op(0, t, INFO, inv.process, inv.f, key=inv.key, value=inv.value, node=node,
                        error="timeout"))
                slot.process = next_process
                next_process += 1
            push(t + rng.randrange(100_000, 1 * MS), "invoke", data["slot"])
    return ops, anomalies


def results_for(run: SyntheticRun, anomalies: list[dict[str, Any]]) -> dict[str, Any]:
    """results.json as the checkers would write it for this run."""
    if run.verdict_unknown:
        lin: dict[str, Any] = {"valid": "unknown", "anomalies": [], "reason": "budget exhausted"}
    else:
        lin = {"valid": not anomalies, "anomalies": [
            {"kind": "nonlinearizable", "ops": a["ops"][1:], "explanation": "cannot be linearized"}
            for a in anomalies]}
    stale = {"valid": not anomalies, "anomalies": anomalies, "count": len(anomalies)}
    checkers = {"linearizable": lin, "staleness": stale, "availability": {"valid": True}}
    if anomalies:
        merged: Any = False
    elif run.verdict_unknown:
        merged = "unknown"
    else:
        merged = True
    return {"valid": merged, "checkers": checkers}


def run_dir_for(results_dir: Path, run: SyntheticRun) -> Path:
    stamp = run.start.strftime(RUN_DIR_TIME_FORMAT)[:-3]
    return Path(results_dir) / run.test_name / stamp


def write_run(results_dir: Path, run: SyntheticRun) -> Path:
    """Writes a complete run directory the way the runner does; returns it."""
    d = run_dir_for(results_dir, run)
    d.mkdir(parents=True, exist_ok=False)
    (d / "test.json").write_text(json.dumps(run.spec(), indent=2))
    ops, anomalies = simulate(run)
    with HistoryWriter(d / "history.jsonl") as w:
        for op in ops:
            w.append(op)
    (d / "results.json").write_text(json.dumps(results_for(run, anomalies), indent=2))
    return d


# ---------------------------------------------------------------- fast path for the benchmark

_TYPE_DICT = pa.array([INVOKE, OK, FAIL, INFO])
_T_INVOKE, _T_OK, _T_FAIL, _T_INFO = 0, 1, 2, 3


def _dict_column(codes: np.ndarray, values: list[str] | pa.Array) -> pa.Array:
    dictionary = values if isinstance(values, pa.Array) else pa.array(values, pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary).cast(pa.string())


def fast_tables(
    run: SyntheticRun, *, detect_probability: float = 0.7
) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """(ops table, run table, results) for one run, built with numpy: one invoke and one completion
    per client op, each process sequential, info replaces the process, fault windows cause fail and
    info. The verdict follows the bug: a run with a bug is judged invalid with `detect_probability`.
    """
    rng = np.random.default_rng(run.seed)
    c = run.concurrency
    per = run.pairs // c
    n = per * c
    latency = np.maximum((rng.lognormal(0.0, 0.5, n) * 2 * MS).astype(np.int64), 2000)
    think = rng.integers(100_000, MS, n)
    slot = np.repeat(np.arange(c), per)
    faulty = bool(run.nemesis) and run.nemesis != ["none"]
    r = rng.random(n)
    # first pass: invoke times without fault-induced timeouts decide which ops land in a window
    steps = (latency + think).reshape(c, per)
    inv_t = (np.cumsum(steps, axis=1) - steps + rng.integers(0, 2 * MS, (c, 1))).reshape(n)
    if faulty:
        in_win = (inv_t % (40 * MS) >= 10 * MS) & (inv_t % (40 * MS) < 22 * MS)
    else:
        in_win = np.zeros(n, dtype=bool)
    bug_penalty = 0.1 if run.bugs else 0.0
    typ = np.full(n, _T_OK, dtype=np.int8)
    typ[in_win & (r < 0.5 + bug_penalty)] = _T_FAIL
    typ[(in_win & (r >= 0.5 + bug_penalty) & (r < 0.65 + bug_penalty)) | (~in_win & (r < 0.01))] = _T_INFO
    latency = np.where(typ == _T_INFO, 50 * MS + rng.integers(0, 10 * MS, n), latency)
    steps = (latency + think).reshape(c, per)
    inv_t = (np.cumsum(steps, axis=1) - steps + rng.integers(0, 2 * MS, (c, 1))).reshape(n)
    done_t = inv_t + latency
    # a process that got info is replaced: process id = slot + c * (infos before it on the slot)
    infos_before = (np.cumsum((typ == _T_INFO).reshape(c, per), axis=1) - (typ == _T_INFO).reshape(c, per))
    process = slot + c * infos_before.reshape(n)
    is_write = rng.random(n) < 0.5
    key = rng.integers(0, run.keys, n)
    value = np.arange(1, n + 1, dtype=np.int64)

    # interleave: rows 0..n-1 invocations, n..2n-1 completions; sort by time (invoke first on ties)
    times = np.concatenate([inv_t, done_t])
    order = np.lexsort((np.concatenate([np.zeros(n), np.ones(n)]), times))
    total = 2 * n
    pos = np.empty(total, dtype=np.int64)
    pos[order] = np.arange(total)
    row_pair = order % n
    row_is_comp = order >= n
    row_type = np.where(row_is_comp, typ[row_pair], _T_INVOKE)
    comp_latency = latency[row_pair]
    inv_index = pos[row_pair]

    key_names = [json.dumps(key_name(k)) for k in range(run.keys)]
    # values: writes carry theirs; reads carry one on ok completion only
    val = np.where(is_write[row_pair], value[row_pair], np.maximum(value[row_pair] - c, 0))
    val_null = (~is_write[row_pair]) & (row_type != _T_OK)
    nodes = rng.integers(0, len(NODES), total)
    labels = labels_from_spec(run_dir_for(Path("."), run), run.spec())
    ok_ = row_type == _T_OK
    err = np.where(row_type == _T_FAIL, 0, np.where(row_is_comp & (row_type == _T_INFO), 1, 2))
    cols: dict[str, pa.Array] = {
        "index": pa.array(np.arange(total, dtype=np.int64)),
        "time": pa.array(times[order].astype(np.int64)),
        "type": _dict_column(row_type, _TYPE_DICT),
        "process": pa.array(process[row_pair]).cast(pa.string()),
        "is_client": pa.array(np.ones(total, dtype=bool)),
        "f": _dict_column(is_write[row_pair].astype(np.int8), ["read", "write"]),
        "key": _dict_column(key[row_pair], key_names),
        "value": pa.array(val, mask=val_null).cast(pa.string()),
        "node": pa.array(np.array(NODES, dtype=object)[nodes], mask=~row_is_comp, type=pa.string()),
        "error": pa.array(np.array(['"unavailable"', '"timeout"', None], dtype=object)[err],
                          type=pa.string()),
        "meta": pa.nulls(total, pa.string()),
        "role": pa.array(np.where(ok_, "leader", None), type=pa.string()),
        "term": pa.array(np.ones(total, dtype=np.int64), mask=~ok_),
        "invoke_index": pa.array(inv_index, mask=~row_is_comp),
        "latency_ns": pa.array(comp_latency, mask=~row_is_comp),
    }
    for name, v in (("run_id", labels.run_id), ("workload", labels.workload), ("nemesis", labels.nemesis),
                    ("bug", labels.bug), ("read_mode", labels.read_mode), ("db_options", labels.db_options),
                    ("fault_targets", labels.fault_targets), ("nemesis_schedule", labels.nemesis_schedule),
                    ("version", labels.version)):
        cols[name] = _dict_column(np.zeros(total, dtype=np.int32), [v])
    ops = pa.Table.from_pydict({f.name: cols[f.name] for f in OPS_SCHEMA}, schema=OPS_SCHEMA)

    counts = OpCounts(
        ops=total,
        client_invokes=n,
        ok=int((typ == _T_OK).sum()),
        fail=int((typ == _T_FAIL).sum()),
        info=int((typ == _T_INFO).sum()),
    )
    detected = bool(run.bugs) and rng.random() < detect_probability
    anomalies: list[dict[str, Any]] = []
    if detected:
        kinds = ["stale-read", "nonlinearizable", "lost-write"]
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, n))
            anomalies.append({"kind": kinds[int(rng.integers(0, 3))], "ops": [int(pos[i]), int(pos[n + i])],
                              "explanation": "synthetic"})
    results = results_for(run, anomalies)
    return ops, run_table(labels, run.spec(), results, counts), results

"""Small transactional histories from real executions, for the exact checker's property tests: a
toy database runs random transactions from a few processes, interleaved in time, under one of
several isolation levels (some of them broken on purpose), and records what each client saw.
Mutations then damage a history the ways a faulty database or a faulty recording would.

  serial    each transaction runs whole at its commit point: strict serializable
  si        snapshot isolation: reads from the state at its start, writes at its commit, a
            conflicting commit (first committer wins) aborts
  no-fcw    snapshots without first-committer-wins: lost updates
  rc        read committed: the first half of its operations at its start, the rest at its commit
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from typing import Any

from jepsen_py.history import Op

ENGINES = ("serial", "si", "no-fcw", "rc")
Mops = list[list[Any]]


def _run(mops: Mops, state: dict[Hashable, Any], own: dict[Hashable, list[Any]], workload: str) -> Mops:
    """The micro-ops with their reads filled from `state` and this transaction's own writes, which
    `own` collects by key (a list's appends, a register's writes) and which land at commit."""
    out: Mops = []
    for f, k, v in mops:
        if f == "r":
            if workload == "list-append":
                out.append(["r", k, [*state.get(k, ()), *own.get(k, ())]])
            else:
                out.append(["r", k, own[k][-1] if k in own else state.get(k)])
        else:
            own.setdefault(k, []).append(v)
            out.append([f, k, v])
    return out


def execute(rng: random.Random, n: int, keys: int, workload: str, engine: str, *, procs: int = 3,
            p_info: float = 0.1) -> list[Op]:
    counter = 0
    txns: list[Mops] = []
    for _ in range(n):
        mops: Mops = []
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(keys)
            if rng.random() < 0.5:
                mops.append(["r", k, None])
            else:
                counter += 1
                mops.append(["append" if workload == "list-append" else "w", k, counter])
        txns.append(mops)
    free = [0] * procs
    events: list[tuple[int, int, str, int, int]] = []  # (time, order, what, txn, process)
    for i in range(n):
        p = rng.randrange(procs)
        start = free[p] + rng.randint(0, 3)
        end = start + rng.randint(1, 6)
        free[p] = end + 1
        events += [(start, rng.random(), "start", i, p), (end, rng.random(), "commit", i, p)]  # type: ignore[list-item]
    events.sort()
    state: dict[Hashable, Any] = {}
    version: dict[Hashable, int] = {}  # key -> commits so far, for first committer wins
    begun: dict[int, tuple[dict[Hashable, Any], dict[Hashable, int], Mops]] = {}
    ops: list[Op] = []
    for _, _, what, i, p in events:
        mops = txns[i]
        if what == "start":
            ops.append(Op(len(ops), len(ops), "invoke", p, "txn", None,
                          [[f, k, None] if f == "r" else [f, k, v] for f, k, v in mops]))
            begun[i] = (dict(state), dict(version), [])
            continue
        snap, seen, _ = begun.pop(i)
        own: dict[Hashable, list[Any]] = {}
        if engine == "serial":
            done = _run(mops, state, own, workload)
        elif engine in ("si", "no-fcw"):
            done = _run(mops, snap, own, workload)
        else:  # rc
            h = len(mops) // 2
            done = _run(mops[:h], snap, own, workload) + _run(mops[h:], state, own, workload)
        conflict = engine == "si" and any(version.get(k, 0) != seen.get(k, 0) for k in own)
        outcome = "fail" if conflict else "info" if rng.random() < p_info else "ok"
        applied = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        if applied:
            for k, vs in own.items():
                state[k] = (*state.get(k, ()), *vs) if workload == "list-append" else vs[-1]
                version[k] = version.get(k, 0) + 1
        value = done if outcome == "ok" else [[f, k, None] if f == "r" else [f, k, v] for f, k, v in mops]
        ops.append(Op(len(ops), len(ops), outcome, p, "txn", None, value))
    return ops


MUTATIONS = ("stale-read", "reorder", "unwritten", "failed-observed", "ok-to-info", "tighten")


def mutate(rng: random.Random, ops: list[Op], workload: str, how: str) -> list[Op]:
    """One damage of `how` (MUTATIONS): a read made stale (a list cut short, a register's earlier
    value), its elements reordered, a read of a value no one wrote, a failed write observed, an
    ok turned info, or a completion moved earlier (real-time order tightened)."""
    ops = list(ops)
    oks = [i for i, o in enumerate(ops) if o.type == "ok"]
    reads = [(i, j) for i in oks for j, m in enumerate(ops[i].value) if m[0] == "r"]
    written = [m[2] for o in ops if o.type != "invoke" for m in o.value if m[0] != "r"]
    failed = [m[2] for o in ops if o.type == "fail" for m in o.value if m[0] != "r"]
    if how in ("stale-read", "reorder", "unwritten", "failed-observed") and reads:
        i, j = rng.choice(reads)
        o = ops[i]
        value = [list(m) for m in o.value]
        cur = value[j][2]
        if workload == "list-append":
            cur = list(cur or [])
            if how == "stale-read" and cur:
                cur = cur[: rng.randrange(len(cur))]
            elif how == "reorder" and len(cur) > 1:
                a, b = rng.sample(range(len(cur)), 2)
                cur[a], cur[b] = cur[b], cur[a]
            elif how == "unwritten":
                cur.append(max(written, default=0) + 1)
            elif how == "failed-observed" and failed:
                cur.append(rng.choice(failed))
        elif how == "stale-read":
            cur = rng.choice([None, *written]) if written else None
        elif how == "unwritten":
            cur = max(written, default=0) + 1
        elif how == "failed-observed" and failed:
            cur = rng.choice(failed)
        value[j][2] = cur
        ops[i] = Op(o.index, o.time, o.type, o.process, o.f, o.key, value)
    elif how == "ok-to-info" and oks:
        i = rng.choice(oks)
        o = ops[i]
        inv = next(x for x in reversed(ops[:i]) if x.process == o.process and x.type == "invoke")
        ops[i] = Op(o.index, o.time, "info", o.process, o.f, o.key, inv.value)
    elif how == "tighten" and oks:
        i = rng.choice(oks)
        o = ops.pop(i)
        at = max(j for j, x in enumerate(ops[:i]) if x.process == o.process and x.type == "invoke")
        ops.insert(rng.randint(at + 1, i), o)
    return [Op(n, n, o.type, o.process, o.f, o.key, o.value) for n, o in enumerate(ops)]

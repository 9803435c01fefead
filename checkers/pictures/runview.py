"""A stored run read back for pictures: its history, results and spec, plus what every picture shades.

The timeline, perf and failure views all need the same derived facts (which fault was active when,
which ops the checkers flagged, which node claimed leadership in a stale term), so they are computed
once here from the run directory and nothing else: a picture can always be regenerated from disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py.nemeses import faults

from jepsen_py.errors import BadInput
from jepsen_py.history import INFO, NEMESIS, OBSERVER, OK, Op, Pair, pairs, read_history
from jepsen_py.store import read_json

NS = 1_000_000_000

@dataclass(slots=True)
class FaultWindow:
    """A stretch of time in which one nemesis fault was in effect (end None: never undone)."""

    start: float  # seconds since the test started
    end: float | None
    f: str
    label: str  # e.g. "start-partition: n1 | n2 n3"
    detail: str  # everything the nemesis said, for hover
    kind: str = ""  # the fault vocabulary's kind (partition, kill, ...); "" for a foreign name


@dataclass(slots=True)
class Anomaly:
    """One entry of some checker's "anomalies" list, tagged with the checker that found it."""

    checker: str
    kind: str
    ops: list[int]
    explanation: str


@dataclass(slots=True)
class StatusSample:
    """One observer sample of one node: what it said of itself (answered False: it did not answer)."""

    time: float
    node: str
    answered: bool
    role: str
    term: int | None
    leader: str | None
    zombie: bool = False
    index: int = -1  # the sample's history index (anomalies may point at it)


@dataclass
class RunView:
    """Everything a picture draws, read from one run directory."""

    run_dir: Path
    ops: list[Op]
    results: dict[str, Any]
    test: dict[str, Any]
    client_pairs: list[Pair] = field(default_factory=list)
    nemesis_pairs: list[Pair] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    samples: list[StatusSample] = field(default_factory=list)
    end_time: float = 0.0

    @property
    def name(self) -> str:
        return str(self.test.get("name") or self.run_dir.parent.name)


def _read_json(path: Path) -> dict[str, Any]:
    """The object in a run's JSON file ({} when absent); damage (not JSON, nested deeper than the
    parser's stack) is one BadInput line, as store.read_json says it."""
    if not path.exists():
        return {}
    d = read_json(path)
    if not isinstance(d, dict):
        raise BadInput(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def load_run(run_dir: Path | str) -> RunView:
    """Reads history.jsonl (required), results.json and test.json (optional) from a run directory."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir}: no such run directory")
    hist = run_dir / "history.jsonl"
    if not hist.exists():
        raise BadInput(f"{run_dir}: no history.jsonl in this run directory")
    ops = read_history(hist)
    view = RunView(run_dir, ops, _read_json(run_dir / "results.json"), _read_json(run_dir / "test.json"))
    view.end_time = (max((o.time for o in ops), default=0)) / NS
    all_pairs = pairs(ops)
    view.client_pairs = [p for p in all_pairs if p.invoke.process != NEMESIS]
    view.nemesis_pairs = [p for p in all_pairs if p.invoke.process == NEMESIS]
    view.faults = fault_windows(view.nemesis_pairs, view.end_time)
    view.anomalies = collect_anomalies(view.results)
    view.samples = status_samples(ops)
    return view


def _nodes(v: Any) -> str:
    if isinstance(v, list):
        if v and all(isinstance(g, list) for g in v):
            return " | ".join(" ".join(str(n) for n in g) for g in v)
        return " ".join(str(n) for n in v)
    return str(v)


def _describe(value: Any) -> str:
    """A short human summary of what the nemesis said it did: which fault, which nodes."""
    if value is None:
        return ""
    if not isinstance(value, dict):
        return _nodes(value)
    if "clock-back-ms" in value and value.get("node") is not None:  # the leader-clock fault
        return f"{value['node']} isolated, clock {-int(value['clock-back-ms']):+d} ms"
    head = str(value.get("shape") or value.get("target") or "")
    for k in ("sides", "partition", "groups", "components"):
        v = value.get(k)
        if isinstance(v, list) and v:
            return f"{head}: {_nodes(v)}" if head else _nodes(v)
    grudge = value.get("grudge")
    if isinstance(grudge, dict) and grudge:
        cut = "; ".join(f"{n}x{','.join(map(str, g))}" for n, g in sorted(grudge.items()) if g)
        return f"{head}: {cut}" if head else cut
    bumped = value.get("bumped-ms")
    if isinstance(bumped, dict):
        return " ".join(f"{n} {d:+g} ms" for n, d in sorted(bumped.items()))
    if "delta-ms" in value and "nodes" in value:
        return f"{_nodes(value['nodes'])} strobe {value['delta-ms']} ms / {value.get('period-ms', '?')} ms"
    for k in ("nodes", "node", "targets", "isolated"):
        if value.get(k) is not None:
            return f"{head}: {_nodes(value[k])}" if head and head != _nodes(value[k]) else _nodes(value[k])
    if head:
        return head
    return ", ".join(f"{k}={v}" for k, v in list(value.items())[:4])


def fault_windows(nemesis_pairs: list[Pair], end_time: float) -> list[FaultWindow]:
    """The fault vocabulary's windows (nemeses.faults), in seconds and labelled for a picture; a
    fault never undone stays open to `end_time`."""
    out = []
    for w in faults.windows_of_pairs(nemesis_pairs):
        desc = _describe(w.value)
        label = f"{w.f}: {desc}" if desc else w.f
        out.append(FaultWindow(
            start=w.start / NS, end=w.end / NS if w.end is not None else end_time, f=w.f,
            label=label[:90], detail=json.dumps(w.value, default=str)[:300] if w.value is not None else "",
            kind=w.kind.name if w.kind is not None else ""))
    return out


def collect_anomalies(results: dict[str, Any]) -> list[Anomaly]:
    """Every checker's "anomalies" entries; a result nested one level (e.g. per key) counts too."""
    out: list[Anomaly] = []
    checkers = results.get("checkers")
    if not isinstance(checkers, dict):
        checkers = {}
    for name, res in checkers.items():
        if not isinstance(res, dict):
            continue
        for a in res.get("anomalies") or []:
            if not isinstance(a, dict):
                continue
            ops = [i for i in (a.get("ops") or []) if isinstance(i, int) and not isinstance(i, bool)]
            out.append(Anomaly(str(name), str(a.get("kind", "anomaly")), ops, str(a.get("explanation", ""))))
    return out


def status_samples(ops: list[Op]) -> list[StatusSample]:
    """Observer samples in time order, each leader claim marked zombie when its term is stale.

    A node claiming leadership is a zombie when another node has already reported a higher term:
    a newer election happened and this leader was deposed without knowing it (the KAFKA-15489 shape).
    """
    out: list[StatusSample] = []
    latest_term: dict[str, int] = {}
    for op in ops:
        if op.process != OBSERVER or op.node is None:
            continue
        v = op.value if isinstance(op.value, dict) else {}
        answered = op.type == OK
        term = v.get("term") if isinstance(v.get("term"), int) else None
        role = str(v.get("role") or ("unreachable" if not answered else "unknown"))
        s = StatusSample(op.time / NS, str(op.node), answered, role if answered else "unreachable",
                         term, None if v.get("leader") is None else str(v.get("leader")),
                         index=op.index)
        if answered and term is not None:
            latest_term[s.node] = term
            if role == "leader":
                newest = max((t for n, t in latest_term.items() if n != s.node), default=term)
                s.zombie = newest > term
        out.append(s)
    out.sort(key=lambda s: s.time)
    return out


def pair_type(p: Pair) -> str:
    """ok / fail / info; never completed counts as info."""
    return p.complete.type if p.complete is not None else INFO

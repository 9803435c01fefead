"""The check: transactions -> inference -> graph -> cycles -> a verdict per consistency model."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jepsen_py.checkers.elle import listappend, models, rwregister
from jepsen_py.checkers.elle.budget import DEFAULT_TIME_S, Deadline, OutOfTime
from jepsen_py.checkers.elle.cycles import find, specs
from jepsen_py.checkers.elle.explain import edge
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import (
    KIND_NAMES,
    REALTIME,
    Component,
    EdgeList,
    cyclic,
    edge_counts,
    restrict,
)
from jepsen_py.checkers.elle.order import process_edges, realtime_edges
from jepsen_py.checkers.elle.txn import APPEND, WRITE, Txn, counts, transactions

from jepsen_py.errors import BadInput
from jepsen_py.history import OK, Op
from jepsen_py.protocols import Test

WORKLOADS = {"list-append": APPEND, "rw-register": WRITE}


def check(history: Sequence[Op], workload: str = "list-append",
          consistency_models: Iterable[str] = models.DEFAULT_MODELS, *, time_s: float = DEFAULT_TIME_S,
          process_keys: bool = False, f: str = "txn") -> dict[str, Any]:
    """Checks a transactional history; see the package docstring for the result's shape."""
    wanted = validated(workload, consistency_models)
    deadline = Deadline(time_s)
    txns = transactions(history, WORKLOADS[workload], f)
    found = Found()
    edges = EdgeList(len(txns))
    try:
        infer(workload, txns, edges, found, deadline, process_keys)
    except OutOfTime as e:
        return conclude(txns, edges, found, workload, wanted, deadline, stopped=e.stage)
    return conclude(txns, edges, found, workload, wanted, deadline)


def validated(workload: str, consistency_models: Iterable[str]) -> list[str]:
    """The models asked for, as a list; BadInput for an unknown workload or model."""
    wanted = list(consistency_models)
    if workload not in WORKLOADS:
        raise BadInput(f"unknown transactional workload {workload!r}; known: {', '.join(WORKLOADS)}")
    unknown = models.unknown_models(wanted)
    if unknown or not wanted:
        raise BadInput(f"unknown consistency model(s) {unknown or wanted}; "
                       f"known: {', '.join(sorted(models.MODELS))}")
    return wanted


def infer(workload: str, txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline,
          process_keys: bool = False) -> None:
    """The data inference: version orders, non-cycle anomalies, ww/wr/rw edges. Everything it
    does is per key, so it may also run key by key (checkers/elle/perkey.py) and be merged."""
    if workload == "list-append":
        listappend.infer(txns, edges, found, deadline)
    else:
        rwregister.infer(txns, edges, found, deadline, process_keys=process_keys)


def conclude(txns: Sequence[Txn], edges: EdgeList, found: Found, workload: str, wanted: list[str],
             deadline: Deadline, *, stopped: str | None = None) -> dict[str, Any]:
    """After inference: process and real-time edges, the cycle search, the verdict and the result.
    `stopped` names the stage where inference ran out of time (no graph is searched then)."""
    time_s = deadline.time_s
    unknown_reason: str | None = None
    n_components = 0
    gave_up: set[str] = set()
    comps: list[Component] = []
    try:
        if stopped is not None:
            raise OutOfTime(stopped)
        proc, rt = models.needs_process_edges(wanted), models.needs_realtime_edges(wanted)
        if proc:
            process_edges(txns, edges)
        if rt:
            realtime_edges(txns, edges)
        deadline.check("graph")
        cyc = cyclic(edges)
        comps = cyc.comps
        n_components = len(comps)
        subs: dict[int, dict[int, list[Component]]] = {}  # allowed kinds -> parent label -> comps
        for comp in comps:
            here: set[str] = set()  # bases found in this component, with or without process order
            for spec in specs(proc, rt):
                # a G-single cycle is also a G-single-process and -realtime one (Elle's implication):
                # a variant is searched for only where its stricter forms were not found
                if spec.name != spec.base and spec.base in here:
                    continue
                deadline.check("cycle search")
                if spec.allowed not in subs:
                    subs[spec.allowed] = restrict(cyc, spec.allowed)
                for sub in subs[spec.allowed].get(comp.parent, ()):
                    cycle, complete = find(sub, spec, deadline, len(txns))
                    if cycle is not None:
                        found.add(spec.name, _cycle_report(cycle, txns, edges, cyc.src,
                                                           workload == "list-append"))
                        here.add(spec.base)
                    elif not complete:
                        gave_up.add(spec.name)
    except OutOfTime as e:
        unknown_reason = f"time limit of {time_s:g} s reached during the {e.stage}"
    kinds = sorted(found.counts)
    bad = sorted(set(kinds) & models.prohibited(wanted))
    c = counts(txns)
    missed = sorted((gave_up - set(found.counts)) & models.prohibited(wanted))
    if missed and unknown_reason is None:
        unknown_reason = (f"the cycle search gave up on {', '.join(missed)} in a component of "
                          f"{max(len(c.nodes) for c in comps)} nodes; such a cycle may exist")
    if bad:
        valid: bool | str = False
    elif unknown_reason is not None:
        valid = "unknown"
    elif c[OK] == 0:
        valid, unknown_reason = "unknown", "no transaction completed ok: nothing to infer from"
    else:
        valid = True
    result: dict[str, Any] = {
        "valid": valid,
        "workload": workload,
        "consistency_models": wanted,
        "anomaly_types": kinds,
        "prohibited_anomaly_types": bad,
        "anomaly_counts": dict(sorted(found.counts.items())),
        "anomalies": [a for k in bad for a in found.examples[k]],
        "other_anomalies": [a for k in kinds if k not in bad for a in found.examples[k]],
        **models.boundary(kinds),
        "txns": c,
        "edges": edge_counts(edges),
        "cyclic_components": n_components,
    }
    if unknown_reason is not None:
        result["unknown_reason"] = unknown_reason
    return result


def _cycle_report(cycle: list[tuple[int, int, int]], txns: Sequence[Txn], edges: EdgeList,
                  among: Any, appends: bool) -> dict[str, Any]:
    """The cycle transaction by transaction; runs of real-time points fold into one edge."""
    n = len(txns)
    steps: list[dict[str, Any]] = []
    members: list[Txn] = []
    src = cycle[0][0]
    for a, b, k in cycle:
        if b >= n:
            continue
        kind = k if a < n else REALTIME
        why = edges.why_of(src, b, kind, among)
        ta, tb = txns[src], txns[b]
        step: dict[str, Any] = {"from": ta.index, "to": tb.index, "type": KIND_NAMES[kind],
                                "explanation": edge(kind, ta, tb, why, appends)}
        if why is not None:
            step["key"] = why[0]
        steps.append(step)
        members.append(ta)
        src = b
    return {"cycle": [t.describe() for t in members],
            "steps": steps,
            "explanation": "; ".join(s["explanation"] for s in steps)
                           + f": a cycle, so {members[0].name()} would have to precede itself"}


class ElleChecker:
    """jepsen_py.protocols.Checker for transactional workloads.

    `test.spec.options["elle_time_s"]` overrides the time budget when given.
    """

    def __init__(self, workload: str = "list-append",
                 consistency_models: Iterable[str] = models.DEFAULT_MODELS, *, time_s: float = DEFAULT_TIME_S,
                 process_keys: bool = False, name: str = "elle", f: str = "txn") -> None:
        self.workload = workload
        self.consistency_models = list(consistency_models)
        self.time_s = time_s
        self.process_keys = process_keys
        self.name = name
        self.f = f
        if workload not in WORKLOADS:
            raise BadInput(f"unknown transactional workload {workload!r}; known: {', '.join(WORKLOADS)}")
        if models.unknown_models(self.consistency_models):
            raise BadInput(f"unknown consistency model(s) {models.unknown_models(self.consistency_models)}")

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        time_s = self.time_s
        if test is not None:
            opts = getattr(test.spec, "options", {}) or {}
            time_s = float(opts.get("elle_time_s", time_s))
        return check(history, self.workload, self.consistency_models, time_s=time_s,
                     process_keys=self.process_keys, f=self.f)

"""The check: transactions -> inference -> graph -> cycles -> a verdict per consistency model."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from jepsen_py.checkers.elle import listappend, models, rwregister
from jepsen_py.checkers.elle.budget import DEFAULT_TIME_S, Deadline, OutOfTime
from jepsen_py.checkers.elle.cycles import find, specs
from jepsen_py.checkers.elle.derived import derive
from jepsen_py.checkers.elle.exact import MODELS as EXACT_MODELS
from jepsen_py.checkers.elle.exact import Decision, decide_all
from jepsen_py.checkers.elle.exists import cycle_exists
from jepsen_py.checkers.elle.explain import edge
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import (
    KIND_NAMES,
    REALTIME,
    RW,
    Component,
    Cyclic,
    EdgeList,
    cyclic,
    edge_counts,
    labels_of,
    restrict,
)
from jepsen_py.checkers.elle.inference import NONE, Inference
from jepsen_py.checkers.elle.order import process_edges, realtime_edges, realtime_pairs
from jepsen_py.checkers.elle.txn import APPEND, WRITE, Txn, counts, left_out, transactions
from jepsen_py.checkers.elle.wanted import parse_wanted

from jepsen_py.errors import BadInput
from jepsen_py.history import OK, Op
from jepsen_py.protocols import Test

WORKLOADS = {"list-append": APPEND, "rw-register": WRITE}


def check(history: Sequence[Op], workload: str = "list-append",
          consistency_models: Iterable[str] | None = models.DEFAULT_MODELS, *,
          anomalies: Iterable[str] = (), time_s: float = DEFAULT_TIME_S,
          inference: Inference = NONE, process_keys: bool = False, f: str = "txn",
          exact: bool = False) -> dict[str, Any]:
    """Checks a transactional history; see the package docstring for the result's shape.
    `consistency_models` and `anomalies` are Elle's options of those names (the check fails on any
    anomaly the models prohibit, or any given anomaly or one that implies it); `inference` what a
    rw-register check may assume (`process_keys` is the older name of sequential keys). With
    `exact`, serializable, strict-serializable and snapshot-isolation among the models are decided
    exactly (checkers/elle/exact.py) besides the Elle-style search."""
    wanted = Wanted.of(workload, consistency_models, anomalies)
    if process_keys:
        inference = replace(inference, sequential_keys=True)
    deadline = Deadline(time_s)
    with gc_paused():
        txns = transactions(history, WORKLOADS[workload], f)
        found = Found()
        edges = EdgeList(len(txns))
        try:
            infer(workload, txns, edges, found, deadline, inference)
        except OutOfTime as e:
            result = conclude(txns, edges, found, workload, wanted, deadline, stopped=e.stage)
        else:
            decisions = decide_exactly(txns, workload, wanted, deadline, found) if exact else None
            result = conclude(txns, edges, found, workload, wanted, deadline)
            if decisions is not None:
                _exact_verdict(result, decisions, txns, workload, wanted)
    ignored = left_out(history, f)
    if ignored:
        result["ignored"] = ignored
    return result


EXACT = {models.canonical(m): m for m in EXACT_MODELS}


def decide_exactly(txns: Sequence[Txn], workload: str, wanted: Wanted, deadline: Deadline,
                   found: Found) -> dict[str, Decision]:
    """Each asked model that exact.py decides, decided; a violation it finds that the inference
    named nothing for becomes an anomaly `<model>-cycle-exists` (Elle's name for "a cycle this
    model prohibits exists"), carrying the cycle."""
    asked = [m for m in dict.fromkeys(models.canonical(x) for x in wanted.models) if m in EXACT]
    out = decide_all(txns, workload, [EXACT[m] for m in asked], deadline)
    for m in asked:
        d = out[EXACT[m]]
        if d.valid is False and (d.cycle is not None or not found.counts):
            found.add(f"{m}-cycle-exists", {"not": EXACT[m], **d.report(txns, workload == "list-append")})
    return out


def _exact_verdict(result: dict[str, Any], decisions: dict[str, Decision], txns: Sequence[Txn],
                   workload: str, wanted: Wanted) -> None:
    """Says which verdicts are exact. Where every model asked for was decided exactly (and no
    anomaly was asked for besides), a decision decides: valid when each model holds, even where
    the inference alone could only say unknown (no dependency to search, a search that gave up)."""
    result["exact"] = {m: d.report(txns, workload == "list-append") for m, d in decisions.items()}
    whole = not wanted.anomalies and all(models.canonical(m) in EXACT for m in wanted.models)
    result["verdict"] = "exact" if whole else "elle-style" if not decisions else "elle-style and exact"
    if not whole or result["valid"] is False:
        return
    verdicts = [d.valid for d in decisions.values()]
    if all(v is True for v in verdicts):
        result["valid"] = True
        result.pop("unknown_reason", None)
    elif any(v == "unknown" for v in verdicts) and result["valid"] is True:
        result["valid"] = "unknown"
        result["unknown_reason"] = "; ".join(str(d.reason) for d in decisions.values()
                                             if d.valid == "unknown")


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a check builds its millions of small objects, none
    of them in a reference cycle: its passes over them were a third of a check's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a check looks for: Elle's :consistency-models and :anomalies, validated."""

    models: tuple[str, ...]
    anomalies: tuple[str, ...] = ()

    @classmethod
    def of(cls, workload: str, consistency_models: str | Iterable[str] | None,
           anomalies: str | Iterable[str] | None = ()) -> Wanted:
        """BadInput for an unknown workload, model or anomaly, or for asking for nothing
        (checkers/elle/wanted.py: None models are the default ones)."""
        if workload not in WORKLOADS:
            raise BadInput(f"unknown transactional workload {workload!r}; known: {', '.join(WORKLOADS)}")
        ms, extra = parse_wanted(consistency_models, anomalies)
        return cls(tuple(ms), tuple(extra))

    def prohibited(self) -> set[str]:
        return models.prohibited(self.models, self.anomalies)


def validated(workload: str, consistency_models: Iterable[str] | None,
              anomalies: Iterable[str] = ()) -> Wanted:
    """The models and anomalies asked for; BadInput for an unknown workload, model or anomaly."""
    return Wanted.of(workload, consistency_models, anomalies)


def infer(workload: str, txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline,
          inference: Inference = NONE) -> None:
    """The data inference: version orders, non-cycle anomalies, ww/wr/rw edges. Everything it
    does is per key, so it may also run key by key (checkers/elle/perkey.py) and be merged."""
    if workload == "list-append":
        listappend.infer(txns, edges, found, deadline)
    else:
        rwregister.infer(txns, edges, found, deadline, inference)


def conclude(txns: Sequence[Txn], edges: EdgeList, found: Found, workload: str, wanted: Wanted,
             deadline: Deadline, *, stopped: str | None = None) -> dict[str, Any]:
    """After inference: process and real-time edges, the cycle search, the verdict and the result.
    `stopped` names the stage where inference ran out of time (no graph is searched then).

    As Elle's: real-time order is added when a prohibited anomaly involves it (it holds process
    order too), else process order when one involves that; a graph with no edge at all is
    `empty-transaction-graph` and a cycle search that gave up where a prohibited cycle may be is
    `cycle-search-timeout`, each of which makes the answer unknown unless a prohibited anomaly
    was found; where a search gave up, a strongly connected component in a model's subgraph still
    proves a cycle that model prohibits (`<model>-cycle-exists`)."""
    time_s = deadline.time_s
    unknown_reason: str | None = None
    n_components = 0
    gave_up: dict[str, int] = {}  # kind -> the largest component it gave up in
    comps: list[Component] = []
    bad_kinds = wanted.prohibited()
    rt = models.needs_realtime_edges(bad_kinds)
    proc = models.needs_process_edges(bad_kinds) and not rt
    cyc: Cyclic | None = None
    try:
        if stopped is not None:
            raise OutOfTime(stopped)
        if workload == "rw-register":
            derive(txns, edges, deadline)
        if proc:
            process_edges(txns, edges)
        if rt:
            realtime_edges(txns, edges)
        if not (edges.src or any(len(c[0]) for c in edges.chunks) or (rt and realtime_pairs(txns))):
            found.add("empty-transaction-graph", {
                "explanation": "no dependency was inferred between any two transactions: nothing "
                               "could be checked for cycles"})
        deadline.check("graph")
        cyc = cyclic(edges)
        comps = cyc.comps
        n_components = len(comps)
        subs: dict[int, dict[int, list[Component]]] = {}  # allowed kinds -> parent label -> comps
        hints: dict[int, Any] = {}  # kinds -> each node's strongly connected component of them
        for comp in comps:
            here: set[str] = set()  # bases found in this component, with or without process order
            implied: set[str] = set()  # kinds implied by those found in this component
            for spec in specs(proc, rt):
                # a G-single-item cycle is also a -process and -realtime one, and a
                # G-nonadjacent-item one (Elle's implication): a kind implied by one found in the
                # component is not searched for
                if (spec.name != spec.base and spec.base in here) or spec.name in implied:
                    continue
                deadline.check("cycle search")
                if spec.allowed not in subs:
                    subs[spec.allowed] = restrict(cyc, spec.allowed)
                hint = None
                if spec.base == "G-single-item":
                    rest = spec.allowed & ~RW
                    if rest not in hints:
                        labels = labels_of(cyc, rest)
                        hints[rest] = (labels, labels.tolist()) if labels is not None else None
                    hint = hints[rest]
                for sub in subs[spec.allowed].get(comp.parent, ()):
                    cycle, complete = find(sub, spec, deadline, len(txns), hint)
                    if cycle is not None:
                        found.add(spec.name, _cycle_report(cycle, txns, edges, cyc.src,
                                                           workload == "list-append"))
                        here.add(spec.base)
                        implied |= models.implied([spec.name])
                    elif not complete:
                        gave_up[spec.name] = max(gave_up.get(spec.name, 0), len(sub.nodes))
        missed = sorted((set(gave_up) - models.implied(found.counts)) & bad_kinds)
        if missed:
            for kind in missed:
                found.add("cycle-search-timeout", {
                    "anomaly_spec_type": kind, "scc_size": gave_up[kind],
                    "explanation": f"the search for a {kind} cycle gave up in a strongly connected "
                                   f"component of {gave_up[kind]} nodes; such a cycle may exist"})
            cycle_exists(cyc, txns, proc, rt, found)
    except OutOfTime as e:
        unknown_reason = f"time limit of {time_s:g} s reached during the {e.stage}"
    kinds = sorted(found.counts)
    bad = sorted(set(kinds) & bad_kinds)
    c = counts(txns)
    if bad:
        valid: bool | str = False
    elif unknown_reason is not None:
        valid = "unknown"
    elif c[OK] == 0:
        valid, unknown_reason = "unknown", "no transaction completed ok: nothing to infer from"
    elif set(kinds) & models.UNKNOWN_KINDS:
        valid = "unknown"
        unknown_reason = "; ".join(found.examples[k][0]["explanation"] for k in sorted(models.UNKNOWN_KINDS)
                                   if k in found.counts)
    else:
        valid = True
    result: dict[str, Any] = {
        "valid": valid,
        "workload": workload,
        "consistency_models": list(wanted.models),
        "anomalies_asked": list(wanted.anomalies),
        "anomaly_types": kinds,
        "prohibited_anomaly_types": bad,
        "anomaly_counts": dict(sorted(found.counts.items())),
        "failing_kinds": bad,  # what every summary counts as failing the run (jepsen_py.analysis)
        "anomalies": [a for k in bad for a in found.examples[k]],
        "other_anomalies": [a for k in kinds if k not in bad for a in found.examples[k]],
        **models.boundary(kinds),
        "verdict": "elle-style",  # evidence found or not; "exact" where exact.py decided (check(exact=))
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
                 consistency_models: Iterable[str] | None = models.DEFAULT_MODELS, *,
                 anomalies: Iterable[str] = (), time_s: float = DEFAULT_TIME_S,
                 inference: Inference = NONE, process_keys: bool = False, name: str = "elle",
                 f: str = "txn", exact: bool = False) -> None:
        self.wanted = Wanted.of(workload, consistency_models, anomalies)
        self.workload = workload
        self.consistency_models = list(self.wanted.models)
        self.anomalies = list(self.wanted.anomalies)
        self.time_s = time_s
        self.inference = replace(inference, sequential_keys=True) if process_keys else inference
        self.name = name
        self.f = f
        self.exact = exact

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        time_s = self.time_s
        if test is not None:
            opts = getattr(test.spec, "options", {}) or {}
            time_s = float(opts.get("elle_time_s", time_s))
        return check(history, self.workload, self.consistency_models, anomalies=self.anomalies,
                     time_s=time_s, inference=self.inference, f=self.f, exact=self.exact)

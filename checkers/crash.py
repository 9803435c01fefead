"""Crash detection: a node process that died when no one killed it, or a traceback in a node's log.

A crash is a finding even when every read was right: a node that dies under a partition (or on
restart, replaying a WAL with duplicate entries) is a bug a release manager must see. Two witnesses:

- the observer's samples: a node still silent at the end of the run although the faults were healed
  `down_at_end_s` earlier (heal restarts killed nodes and resumes paused ones, and no one restarts a
  node that died on its own: a node that stays down crashed, e.g. on restart), or one that stopped
  answering for `min_down_s` when no process fault (kill / pause) was aimed at it just before. The
  second threshold is long on purpose: a node starved of CPU or catching up after a pause can miss
  polls for seconds, and a node that really died stays down and is caught by the first rule. A kill
  or pause explains a silence only until it is undone (the restart, the resume), give or take the
  slack: a node restarted mid-run that stays silent `min_down_s` past its restart did not come back
  (a restart that replays a bad WAL and spins), whatever happens at the end of the run;
- the node logs downloaded into <run dir>/nodes/<node>/: a Python traceback or a fatal error line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.checkers.samples import Sample, samples
from jepsen_py.nemeses.faults import fault_windows

from jepsen_py.history import INVOKE, NEMESIS, Op
from jepsen_py.protocols import Test

S = 1_000_000_000
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|Fatal Python error|^\s*panic:")
MAX_LOG_BYTES = 64 * 1024 * 1024  # a log larger than this is scanned in its first 64 MiB only


@dataclass(frozen=True, slots=True)
class ProcessFault:
    """A kill or pause op: from its invocation to its completion, aimed at `nodes` (None: unknown),
    undone (restarted, resumed) at `undone` (None: never, not even by the final heal)."""

    start: int
    end: int
    nodes: frozenset[str] | None
    undone: int | None = None


class CrashChecker:
    """Invalid when a node died outside a process fault, or its log holds a traceback."""

    name = "crash"

    def __init__(self, *, min_down_s: float = 15.0, down_at_end_s: float = 5.0, slack_s: float = 2.0,
                 store_dir: Path | None = None) -> None:
        self.min_down = int(min_down_s * S)
        self.down_at_end = int(down_at_end_s * S)
        self.slack = int(slack_s * S)
        self.store_dir = store_dir

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        store = self.store_dir or (test.store_dir if test is not None else None)
        nodes = list(test.nodes) if test is not None else []
        smp = samples(history)
        for s in smp:
            if s.node not in nodes:
                nodes.append(s.node)

        faults = self._process_faults(history, set(nodes))
        nemesis_done = [op.time for op in history if op.process == NEMESIS and op.type != INVOKE]
        heal = max(nemesis_done) if nemesis_done else None
        end = max((op.time for op in history), default=0)

        findings: list[dict[str, Any]] = []
        outages: dict[str, list[dict[str, Any]]] = {}
        for node in nodes:
            mine = [s for s in smp if s.node == node]
            outages[node] = []
            for st in _stretches(mine):
                first, last_fail, prev_ok, recovered = st
                length = (recovered.time if recovered else end) - first.time
                explained = self._explained(faults, node, prev_ok.time if prev_ok else first.time,
                                            first.time)
                rec = {"from_ms": round(first.time / 1e6, 3), "ms": round(length / 1e6, 3),
                       "recovered": recovered is not None, "explained_by_fault": explained,
                       "ops": [first.index, last_fail.index]}
                outages[node].append(rec)
                still_down_after_heal = (recovered is None and heal is not None
                                         and end - max(heal, first.time) >= self.down_at_end)
                until = recovered.time if recovered else end
                uncovered = self._uncovered(faults, node, first.time, until) if explained else None
                if still_down_after_heal:
                    findings.append({
                        "node": node, "kind": "down-at-end", "ops": rec["ops"],
                        "explanation": f"{node} stopped answering at {rec['from_ms'] / 1000:.1f} s and "
                                       f"was still down {(end - heal) / 1e9:.1f} s after the faults "
                                       "were healed"})
                elif not explained and length >= self.min_down and (recovered is not None or heal is None):
                    findings.append({
                        "node": node, "kind": "died", "ops": rec["ops"],
                        "explanation": f"{node} stopped answering for {length / 1e9:.1f} s from "
                                       f"{rec['from_ms'] / 1000:.1f} s with no kill or pause aimed at it"})
                elif uncovered is not None and uncovered[0] >= self.min_down:
                    silent, undone_at = uncovered[0] / 1e9, uncovered[1]
                    findings.append({
                        "node": node, "kind": "not-back", "ops": rec["ops"],
                        "explanation": f"{node} stopped answering at {rec['from_ms'] / 1000:.1f} s under a "
                                       f"kill or pause undone at {undone_at / 1e9:.1f} s (restarted, "
                                       f"resumed), then stayed silent {silent:.1f} s more with no fault "
                                       "aimed at it"
                                       + ("" if recovered else ", to the end of the run")})

        logs = self._scan_logs(store, nodes) if store is not None else None
        for hit in logs or []:
            findings.append({"node": hit["node"], "kind": "traceback", "ops": [],
                             "explanation": f"{hit['file']}:{hit['line']}: {hit['error']}"})

        valid: bool | str = not findings
        if valid and logs is None and not smp:
            valid = "unknown"  # no observer samples and no logs: nothing to judge by
        return {
            "valid": valid,
            "findings": findings,
            "outages": {n: o for n, o in outages.items() if o},
            "logs_scanned": None if logs is None else self._scanned,
            "anomalies": [{"kind": "crash", "ops": f["ops"], "explanation": f["explanation"]}
                          for f in findings],
        }

    @staticmethod
    def _process_faults(history: Sequence[Op], nodes: set[str]) -> list[ProcessFault]:
        """The ops that took node processes down on purpose (the fault vocabulary's silencing
        faults: kill, pause, leader-clock's freeze), each with whom it says it hit."""
        return [ProcessFault(w.start, w.started, w.targets, w.end)
                for w in fault_windows(history, nodes=nodes) if w.silences]

    def _explained(self, faults: list[ProcessFault], node: str, lo: int, first_fail: int) -> bool:
        """Was a kill or pause aimed at `node` (or at no one in particular) between its last answer
        and its first silence (give or take the slack)?"""
        return any(
            f.start - self.slack <= first_fail and f.end + self.slack >= lo
            and (f.nodes is None or node in f.nodes)
            for f in faults
        )

    def _uncovered(self, faults: list[ProcessFault], node: str, first_fail: int,
                   until: int) -> tuple[int, int] | None:
        """How long a silence that a fault explains went on with no fault to explain it: the time
        from `first_fail` to `until` that no kill or pause aimed at `node` covers (each covers from its
        start to its undoing, give or take the slack; one never undone covers the rest of the run),
        with the time the first covering fault was undone. None when the faults cover all of it."""
        t, total, undone_at = first_fail, 0, None
        while t < until:
            covering = [f for f in faults if f.start - self.slack <= t
                        and (f.undone is None or f.undone + self.slack >= t)
                        and (f.nodes is None or node in f.nodes)]
            if any(f.undone is None for f in covering):
                break
            if covering:
                undone = max(f.undone for f in covering if f.undone is not None)
                undone_at = undone if undone_at is None else undone_at
                t = undone + self.slack + 1
                continue
            nxt = min((f.start - self.slack for f in faults if f.start - self.slack > t
                       and (f.nodes is None or node in f.nodes)), default=until)
            total += min(nxt, until) - t
            t = nxt
        return (total, undone_at) if total > 0 and undone_at is not None else None

    def _scan_logs(self, store: Path, nodes: list[str]) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = []
        self._scanned = 0
        base = Path(store) / "nodes"
        if not base.is_dir():
            return hits
        for node_dir in sorted(p for p in base.iterdir() if p.is_dir()):
            for f in sorted(p for p in node_dir.rglob("*") if p.is_file()):
                if not _looks_like_text_log(f):
                    continue
                with open(f, "rb") as fh:
                    raw = fh.read(MAX_LOG_BYTES)
                if b"\0" in raw[:4096]:
                    continue  # binary (a WAL, a snapshot): not a log
                self._scanned += 1
                data = raw.decode("utf-8", "replace")
                lines = data.splitlines()
                for i, line in enumerate(lines):
                    if TRACEBACK.search(line):
                        hits.append({"node": node_dir.name, "file": str(f.relative_to(store)),
                                     "line": i + 1, "error": _exception_line(lines, i)})
        return hits


def _looks_like_text_log(p: Path) -> bool:
    name = p.name.lower()
    return name.endswith((".log", ".txt", ".out", ".err")) or "log" in name or name in {"stdout", "stderr"}


def _exception_line(lines: list[str], i: int) -> str:
    """The 'SomeError: message' line that ends the traceback starting at line i."""
    if not lines[i].lstrip().startswith("Traceback"):
        return lines[i].strip()[:300]
    for j in range(i + 1, min(i + 400, len(lines))):
        line = lines[j]
        if line and not line[0].isspace() and not line.startswith("Traceback"):
            return line.strip()[:300]
    return lines[i].strip()[:300]


def _stretches(mine: list[Sample]) -> list[tuple[Sample, Sample, Sample | None, Sample | None]]:
    """Maximal runs of unanswered polls: (first fail, last fail, last ok before, first ok after)."""
    out: list[tuple[Sample, Sample, Sample | None, Sample | None]] = []
    prev_ok: Sample | None = None
    first: Sample | None = None
    last: Sample | None = None
    for s in mine:
        if s.answered:
            if first is not None and last is not None:
                out.append((first, last, prev_ok, s))
                first = last = None
            prev_ok = s
        else:
            if first is None:
                first = s
            last = s
    if first is not None and last is not None:
        out.append((first, last, prev_ok, None))
    return out

"""What a run reached, as a set of named features; the search keeps configurations that reach new ones.

Nothing here knows a bug. The features come from what every run records anyway:

  - the fault timeline: each family and target, which families overlapped, which followed which;
  - the observer's samples of every node's own view: how high terms went, how many leaders there
    were, roles seen, two nodes calling themselves leader at once, restarts (a new pid), snapshots,
    a leader's log running ahead of its commit index (an unreplicated tail), a log that shrank
    while its process lived (a conflicting tail overwritten), a process restarted after that (a
    recovery that reads both versions back), a node restarted behind the cluster's commit index,
    every node restarted;
  - the clients' completions: each op's outcome, which role served the reads that succeeded (a
    leader in lease mode serves lease reads), which fault families were in force when an op
    succeeded, the kinds of error;
  - the node logs: each distinct message shape (digits and names stripped), so a recovery path, a
    rejected message or a lease given up shows up the first time a run takes it;
  - on a real backend, also what the faults did once they landed (nemeses/faults.py's windows of
    the history: kind, how many nodes each hit, how late it took effect, which failed) and the
    anomaly kinds the checkers reported.

Counts are bucketed by powers of two, so "more of the same" is not new.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jepsen_py.explore.schedule import STOP_FAMILY, Event, family_of, fault_windows
from jepsen_py.history import FAIL, NEMESIS, Op
from jepsen_py.nemeses.faults import fault_windows as fault_windows_of


def bucket(n: int) -> str:
    """0, 1, 2-3, 4-7, 8-15, ..."""
    if n <= 1:
        return str(max(n, 0))
    lo = 1 << (n.bit_length() - 1)
    return f"{lo}-{2 * lo - 1}"


def fault_features(events: Iterable[Event]) -> set[str]:
    windows = fault_windows(events)
    out: set[str] = set()
    for w in windows:
        out.add(f"fault:{w.family}")
        if w.start.value is not None and isinstance(w.start.value, str):
            out.add(f"fault:{w.family}:{w.start.value}")
        if w.start.f != w.family:
            out.add(f"fault:{w.start.f}")
        if w.stop is None:
            out.add(f"fault:{w.family}:until-heal")
    for i, a in enumerate(windows):
        for b in windows[i + 1:]:
            if b.start.at < a.end:
                out.add(f"overlap:{'+'.join(sorted((a.family, b.family)))}")
            elif a.stop is not None and b.start.at - a.end <= 5.0:
                out.add(f"then:{a.family}>{b.family}")
    out.add(f"faults:{bucket(len(windows))}")
    return out


_WORDS = re.compile(r"[A-Za-z][A-Za-z_-]+")


def log_shape(line: str) -> str:
    """A log line's message shape: its first few words, numbers and punctuation dropped."""
    words = _WORDS.findall(line)
    return " ".join(words[:5])


def history_features(ops: Iterable[Mapping[str, Any]]) -> set[str]:
    """Features of a history given as dicts (history.jsonl lines) or objects with the same fields."""
    out: set[str] = set()
    max_term = 0
    leaders: set[tuple[Any, Any]] = set()
    pids: dict[str, set[Any]] = {}
    claims: dict[Any, set[str]] = {}
    raft = _RaftLog()
    active: set[str] = set()
    for raw in ops:
        op = raw if isinstance(raw, Mapping) else _as_dict(raw)
        proc, typ, f = op.get("process"), op.get("type"), op.get("f")
        if proc == "nemesis" and typ == "ok" and isinstance(f, str):
            fam = family_of(f)
            if f == "heal":
                active.clear()
            elif fam is not None and f in STOP_FAMILY:
                active.discard(fam)
            elif fam is not None:
                active.add(fam)
            continue
        if proc == "observer":
            st = op.get("value")
            if typ != "ok" or not isinstance(st, Mapping):
                out.add("observer:no-answer")
                continue
            node = str(op.get("node"))
            raft.sample(node, st, out)
            term = st.get("term")
            if isinstance(term, int):
                max_term = max(max_term, term)
            role = st.get("role")
            if role:
                out.add(f"role:{role}")
            if role == "leader":
                leaders.add((term, node))
                claims.setdefault(int(op.get("time") or 0) // 200_000_000, set()).add(node)
            if st.get("pid") is not None:
                pids.setdefault(node, set()).add(st.get("pid"))
            if (st.get("snapshot_index") or 0) > 0:
                out.add("snapshot")
            lag = (st.get("commit") or 0) - (st.get("applied") or 0)
            if lag > 0:
                out.add(f"apply-lag:{bucket(int(lag))}")
            continue
        if proc == "nemesis" or typ == "invoke":
            continue
        out.add(f"op:{f}:{typ}")
        if typ == "ok":
            role = (op.get("meta") or {}).get("role")
            if role:
                out.add(f"served:{f}:{role}")
            for fam in active:
                out.add(f"ok-during:{fam}:{f}")
        elif op.get("error"):
            err = op.get("error")
            out.add(f"error:{f}:{_error_kind(err)}")
    out.add(f"max-term:{bucket(max_term)}")
    out.add(f"leaders:{bucket(len(leaders))}")
    restarts = sum(max(0, len(p) - 1) for p in pids.values())
    out.add(f"restarts:{bucket(restarts)}")
    if any(len(nodes) > 1 for nodes in claims.values()):
        out.add("two-leaders-claimed")
    if pids and all(len(p) > 1 for p in pids.values()):
        out.add("every-node-restarted")
    return out


class _RaftLog:
    """Follows each node's log through the observer's samples: what happened to it across faults."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[Any, int]] = {}  # node -> (pid, last index)
        self.shrank: set[str] = set()
        self.commit = 0

    def sample(self, node: str, st: Mapping[str, Any], out: set[str]) -> None:
        pid, last, commit = st.get("pid"), st.get("last_index"), st.get("commit")
        if isinstance(commit, int):
            self.commit = max(self.commit, commit)
        if not isinstance(last, int):
            return
        if st.get("role") == "leader" and isinstance(commit, int) and last > commit:
            out.add(f"leader-tail:{bucket(last - commit)}")
        before = self.last.get(node)
        self.last[node] = (pid, last)
        if before is None:
            return
        if before[0] == pid and last < before[1]:
            out.add("log-shrank")
            self.shrank.add(node)
        elif before[0] != pid:
            if node in self.shrank:
                out.add("restarted-after-log-shrank")
            if last < self.commit:
                out.add("restarted-behind-commit")


def _error_kind(err: Any) -> str:
    if isinstance(err, str):
        return (_WORDS.findall(err) or ["error"])[0]
    if isinstance(err, list | tuple) and err:
        return str(err[0])
    if isinstance(err, Mapping):
        return str(err.get("type") or err.get("kind") or "error")
    return "error"


def _as_dict(op: Any) -> dict[str, Any]:
    fields = ("process", "type", "f", "value", "node", "time", "meta", "error")
    return {k: getattr(op, k, None) for k in fields}


def log_features(logs: Mapping[str, Iterable[str]]) -> set[str]:
    return {f"log:{shape}" for lines in logs.values() for line in lines if (shape := log_shape(line))}


def landed_features(history: Sequence[Op]) -> set[str]:
    """What the nemesis's ops actually did, as nemeses/faults.py reads them back from the history: on
    a real backend a fault lands late, fails, or hits other nodes than the schedule meant."""
    out: set[str] = set()
    for w in fault_windows_of(history):
        name = w.kind.name if w.kind is not None else w.f
        out.add(f"landed:{name}")
        if w.targets is not None:
            out.add(f"landed:{name}:hit-{bucket(len(w.targets))}")
        if w.end is None:
            out.add(f"landed:{name}:until-heal")
        lag = (w.started - w.start) / 1e9
        out.add(f"landed:{name}:lag-{bucket(int(lag))}s")
    failed = sum(1 for op in history if op.process == NEMESIS and op.type == FAIL)
    if failed:
        out.add(f"nemesis-failed:{bucket(failed)}")
    return out


def anomaly_features(kinds: Iterable[str]) -> set[str]:
    """The anomaly kinds a run showed: a search goes on from a configuration that showed a new one."""
    return {f"anomaly:{k}" for k in kinds}


def features(events: Iterable[Event], ops: Iterable[Mapping[str, Any]] = (),
             logs: Mapping[str, Iterable[str]] | None = None, *, read_mode: str | None = None,
             workload: str | None = None) -> frozenset[str]:
    out = fault_features(list(events)) | history_features(ops) | log_features(logs or {})
    if read_mode:
        out = out | {f"{x}@{read_mode}" for x in out if x.startswith("served:")}
    if workload:
        out.add(f"workload:{workload}")
    return frozenset(out)

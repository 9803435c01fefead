"""Process and real-time edges.

Process order: a process runs one transaction at a time, so its successive transactions are
ordered. Real-time order: a transaction that completed before another was invoked precedes it.
Real-time order has up to n^2 pairs, so it goes into the graph through auxiliary nodes: each
completion adds a point after the previous point (T -> point, point -> next point) and each
invocation hangs off the latest point (point -> T). A path T1 -> ... -> T2 through points exists
exactly when T1 completed before T2 was invoked, with O(n) edges. Points are nodes numbered after
the transactions; reports fold a run of points back into one real-time edge.
"""

from __future__ import annotations

from collections.abc import Sequence

from jepsen_py.checkers.elle.graph import PROCESS, REALTIME, EdgeList
from jepsen_py.checkers.elle.txn import INF_POS, Txn

from jepsen_py.history import FAIL, OK


def process_edges(txns: Sequence[Txn], edges: EdgeList) -> None:
    last: dict[object, int] = {}
    for t in txns:
        if t.type == FAIL:
            continue
        prev = last.get(t.process)
        if prev is not None:
            edges.add(prev, t.id, PROCESS)
        last[t.process] = t.id


def realtime_edges(txns: Sequence[Txn], edges: EdgeList) -> None:
    events: list[tuple[int, int, int]] = []  # (position, 0 complete / 1 invoke, txn id)
    for t in txns:
        if t.type == FAIL:
            continue
        events.append((t.invoke_pos, 1, t.id))
        if t.type == OK and t.complete_pos != INF_POS:
            events.append((t.complete_pos, 0, t.id))
    events.sort()
    point = -1
    for _, what, tid in events:
        if what == 1:
            if point >= 0:
                edges.add(point, tid, REALTIME)
        else:
            p = edges.new_node()
            edges.add(tid, p, REALTIME)
            if point >= 0:
                edges.add(point, p, REALTIME)
            point = p

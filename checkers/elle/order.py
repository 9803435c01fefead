"""Process and real-time edges.

Process order: a process runs one transaction at a time, so its successive ok transactions are
ordered. Real-time order: a transaction that completed before another was invoked precedes it.
Real-time order has up to n^2 pairs, so it goes into the graph through auxiliary nodes: each
completion adds a point after the previous point (T -> point, point -> next point) and each
invocation hangs off the latest point (point -> T). A path T1 -> ... -> T2 through points exists
exactly when T1 completed before T2 was invoked, with O(n) edges. Points are nodes numbered after
the transactions; reports fold a run of points back into one real-time edge.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jepsen_py.checkers.elle.graph import PROCESS, REALTIME, EdgeList
from jepsen_py.checkers.elle.txn import INF_POS, Txn

from jepsen_py.history import FAIL, OK


def process_edges(txns: Sequence[Txn], edges: EdgeList) -> None:
    """Successive ok transactions of each process (as Elle's process graph: an indeterminate one
    may still be running when its process goes on, so it is ordered by nothing)."""
    last: dict[object, int] = {}
    a: list[int] = []
    b: list[int] = []
    for t in txns:
        if t.type != OK:
            continue
        prev = last.get(t.process)
        if prev is not None:
            a.append(prev)
            b.append(t.id)
        last[t.process] = t.id
    edges.add_many(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), PROCESS)


def realtime_edges(txns: Sequence[Txn], edges: EdgeList) -> None:
    """Point j follows the j-th ok completion; a transaction hangs off the last point before its
    invocation (found by binary search over completion positions)."""
    done = sorted((t.complete_pos, t.id) for t in txns if t.type == OK and t.complete_pos != INF_POS)
    if not done:
        return
    pos = np.fromiter((p for p, _ in done), dtype=np.int64, count=len(done))
    ids = np.fromiter((i for _, i in done), dtype=np.int64, count=len(done))
    first = edges.new_nodes(len(done))
    points = np.arange(first, first + len(done), dtype=np.int64)
    edges.add_many(ids, points, REALTIME)
    edges.add_many(points[:-1], points[1:], REALTIME)
    live = [t for t in txns if t.type != FAIL]
    inv = np.fromiter((t.invoke_pos for t in live), dtype=np.int64, count=len(live))
    tid = np.fromiter((t.id for t in live), dtype=np.int64, count=len(live))
    before = np.searchsorted(pos, inv) - 1
    has = before >= 0
    edges.add_many(points[before[has]], tid[has], REALTIME)


def realtime_pairs(txns: Sequence[Txn]) -> bool:
    """Whether some transaction began after an ok one completed (Elle's real-time graph then has
    an edge, even to a failed one)."""
    done = min((t.complete_pos for t in txns if t.type == OK), default=INF_POS)
    return any(t.invoke_pos > done for t in txns)

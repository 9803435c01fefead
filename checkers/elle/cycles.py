"""Cycle anomalies: the shortest cycle of each kind inside each strongly connected component.

A kind is a rule on the edge kinds around the cycle (Adya's, as Elle uses them):

  G0                  only ww edges
  G1c                 ww and wr edges, at least one wr
  G-single-item       exactly one rw edge, the rest ww/wr
  G-nonadjacent-item  two or more rw edges, no two of them consecutive (around the cycle)
  G2-item             two or more rw edges, some two consecutive

(every rw edge here is an item anti-dependency, never a predicate one, hence Elle's -item names)

and its -process variant also uses process edges (at least one), its -realtime variant real-time
edges (at least one) and process edges. The kinds are disjoint, so one cycle is named once.

Every cycle of a kind holds an edge of its base's data kind (ww for G0, wr for G1c, rw for the
G2 family; process and real-time order alone are acyclic). The search takes those edges grouped
by their target v and runs one breadth-first search from v back to any of their sources, over
states (node, last edge rw?, rw count up to 2, consecutive rw seen?, wr seen?, required edge
seen?). Those states are everything the rule reads, so the first cycle the search closes is the
shortest through an edge into v. Per component and kind the search stops after the first cycle and a few more
starts (for a shorter one), or after MAX_STARTS start edges or MAX_STATES states; stopped without
a cycle, it says so, and the checker answers unknown if that kind was prohibited.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.graph import DATA, PROCESS, REALTIME, RW, WR, WW, Component

BASES = ("G0", "G1c", "G-single-item", "G-nonadjacent-item", "G2-item")
VARIANTS = ("", "-process", "-realtime")
MAX_STARTS = 1000


@dataclass(frozen=True, slots=True)
class Spec:
    name: str
    base: str
    allowed: int
    required: int  # an extra edge kind the cycle must hold (0: none)
    start: int  # the kind of the edge a search starts from (every cycle of the kind has one)

    def accepts(self, kinds: list[int]) -> bool:
        n = len(kinds)
        rws = [k == RW for k in kinds]
        nrw = sum(rws)
        adjacent = any(rws[i] and rws[i - 1] for i in range(n))
        if self.required and self.required not in kinds:
            return False
        return _base_ok(self.base, nrw, adjacent, WR in kinds)


def _base_ok(base: str, nrw: int, adjacent: bool, has_wr: bool) -> bool:
    if base == "G0":
        return nrw == 0 and not has_wr
    if base == "G1c":
        return nrw == 0 and has_wr
    if base == "G-single-item":
        return nrw == 1
    if base == "G-nonadjacent-item":
        return nrw >= 2 and not adjacent
    return adjacent  # two consecutive rw edges: at least two


def specs(process: bool, realtime: bool) -> list[Spec]:
    out: list[Spec] = []
    for variant in VARIANTS:
        if (variant == "-process" and not process) or (variant == "-realtime" and not realtime):
            continue
        for base in BASES:
            data = WW if base == "G0" else WW | WR if base == "G1c" else DATA
            extra = {"": 0, "-process": PROCESS, "-realtime": PROCESS | REALTIME}[variant]
            required = {"": 0, "-process": PROCESS, "-realtime": REALTIME}[variant]
            start = {"G0": WW, "G1c": WR}.get(base, RW)
            out.append(Spec(base + variant, base, data | extra, required, start))
    return out


BITS = tuple(tuple(1 << i for i in range(5) if m >> i & 1) for m in range(32))
MAX_STATES = 300_000  # per component and kind, summed over start edges
MORE_STARTS = 3  # start edges tried after the first cycle found, for a shorter one

State = tuple[int, bool, int, bool, bool, bool]


class _GaveUp(Exception):
    pass


def _search(comp: Component, spec: Spec, sources: set[int], v: int, deadline: Deadline,
            left: list[int], walks: list[bool],
            floor: tuple[list[int], int] | None = None) -> tuple[int, list[tuple[int, int]]] | None:
    """The shortest path v -> ... -> u, for u in `sources`, that closes start edge u -> v into a
    `spec` cycle: (u, [(node, kind of the edge into it)]), or None. A state keeps only what the
    kind's rule reads (G-single-item: rw count; G-nonadjacent-item: last edge rw?, rw count; G2-item: last
    edge rw?, consecutive rw seen?; G1c: wr seen?), so the search stays near one state per node.
    `left[0]` counts down states this kind may still explore in this component; `walks[0]` is set
    when a closed walk that is not a simple cycle was passed over. `floor` (labels, lowest), for a
    kind with a single rw edge: a node labelled below `lowest` reaches no source without rw (see
    find), so the search does not enter it."""
    s, base, allowed, required = spec.start, spec.base, spec.allowed, spec.required
    t_last = base in ("G-nonadjacent-item", "G2-item")
    t_nrw = base in ("G-single-item", "G-nonadjacent-item")
    t_adj = base == "G2-item"
    t_wr = base == "G1c"
    no_rw = base in ("G0", "G1c")
    single, nonadjacent = base == "G-single-item", base == "G-nonadjacent-item"
    s_rw = s == RW
    first: State = (v, s_rw and t_last, int(s_rw) if t_nrw else 0, False, s == WR and t_wr, False)
    parent: dict[State, tuple[State, int] | None] = {first: None}
    queue = deque([first])
    steps = 0
    labels, lowest = floor if floor is not None else (None, 0)
    while queue:
        st = queue.popleft()
        node, last_rw, nrw, adj, wr, req = st
        if node in sources:
            closes_adj = adj or (last_rw and s_rw)
            if (req or not required) and _base_ok(base, nrw, closes_adj, wr):
                path: list[tuple[int, int]] = []
                cur: State | None = st
                while cur is not None:
                    p = parent[cur]
                    path.append((cur[0], p[1] if p is not None else s))
                    cur = p[0] if p is not None else None
                if len({n for n, _ in path}) == len(path):
                    return node, path[::-1]
                # a closed walk through some node twice (states differ, nodes do not): two
                # cycles, perhaps of other kinds, not one of this kind; not reported
                walks[0] = True
        steps += 1
        if steps % 4096 == 0:
            deadline.check("cycle search")
            left[0] -= 4096
            if left[0] <= 0:
                raise _GaveUp
        for w, mask in comp.out(node):
            if labels is not None and labels[w] < lowest:
                continue
            for k in BITS[mask & allowed]:
                if k == RW:
                    if no_rw or (single and nrw) or (nonadjacent and last_rw):
                        continue
                    nxt: State = (w, t_last, (2 if nrw else 1) if t_nrw else 0, adj or (t_adj and last_rw),
                                  wr, req)
                else:
                    nxt = (w, False, nrw, adj, wr or (t_wr and k == WR), req or k == required)
                if nxt not in parent:
                    parent[nxt] = (st, k)
                    queue.append(nxt)
    return None


def find(comp: Component, spec: Spec, deadline: Deadline, is_txn: int,
         rest: tuple[np.ndarray, list[int]] | None = None) -> tuple[list[tuple[int, int, int]] | None, bool]:
    """The shortest `spec` cycle found in `comp` as edges [(from, to, kind)], starting at a
    transaction (nodes below `is_txn`), or None; and whether the search finished (False: it gave
    up, after MAX_STARTS targets or MAX_STATES states without a cycle, so one may still exist).

    `rest`, for a kind with a single rw edge, labels every node with its strongly connected
    component of the kind's other edges, numbered so that a node reaches only nodes of labels no
    greater than its own (graph.labels_of checks that; given as an array and as a list). A start
    edge u -rw-> v closes a cycle only if v reaches u without rw, so one whose v's label is below
    u's is skipped, and one whose ends share a label (which surely closes one) is tried first."""
    by_target: dict[int, set[int]] = {}
    us, vs = comp.edges_of(spec.start)
    keep = us < is_txn
    us, vs = us[keep], vs[keep]
    if rest is not None and len(us):
        lu, lv = rest[0][us], rest[0][vs]
        order = np.flatnonzero(lu <= lv)
        order = order[np.argsort(lu[order] != lv[order], kind="stable")]
        us, vs = us[order], vs[order]
    for u, v in zip(us.tolist(), vs.tolist(), strict=True):
        by_target.setdefault(v, set()).add(u)
    best: list[tuple[int, int, int]] | None = None
    after_found = 0
    left = [MAX_STATES]
    walks = [False]
    listed = rest[1] if rest is not None else None
    for tried, (v, sources) in enumerate(by_target.items(), 1):
        floor = (listed, min(listed[u] for u in sources)) if listed is not None else None
        try:
            hit = _search(comp, spec, sources, v, deadline, left, walks, floor)
        except _GaveUp:
            return best, best is not None
        if best is not None:
            after_found += 1
        if hit is not None:
            cycle = _edges(hit[0], v, hit[1], spec.start)
            if spec.accepts([k for _, _, k in cycle]) and (best is None or len(cycle) < len(best)):
                best = cycle
                if len(best) <= 2:
                    return best, True
        if after_found >= MORE_STARTS:
            return best, True
        if tried >= MAX_STARTS:
            return best, best is not None
    return best, best is not None or not walks[0]


def _edges(u: int, v: int, path: list[tuple[int, int]], start: int) -> list[tuple[int, int, int]]:
    """Edges of the cycle u -start-> v -> ... -> u from the search's path [(v, start), ..., (u, k)]."""
    edges = [(u, v, start)]
    prev = v
    for node, k in path[1:]:
        edges.append((prev, node, k))
        prev = node
    return edges

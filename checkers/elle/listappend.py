"""List-append inference, as Elle's elle.list-append infers: version orders from reads,
non-cycle anomalies, ww/wr/rw edges.

Every append to a key is unique, so a read of the whole list names each element's writer and the
order the appends took effect in. A key's version order is the distinct elements of its longest
read (a key never read with exactly one append has the order [x]); every other read must be a
prefix of the longest (else incompatible-order: the first two reads, sorted by length, of which
the shorter is not a prefix of the longer). Element checks (aborted and garbage reads, duplicates)
cost one pass over the longest read per key plus a prefix comparison per read.

Edges, between committed (ok) or indeterminate (info) transactions; every read of an ok
transaction counts, as in Elle, placed by its last element (an empty read: the initial state):
  ww  the writer of the element an append came right after -> the appender
  wr  the writer of a read's last element -> the reader
  rw  every reader of the state an append came right after -> the appender
An append that no read observed came after the highest element observed (after the initial state
if none was): Elle's previously-appended-element, which gives those appends their ww and rw edges.
Reads that contradict the longest one add only wr edges (nothing follows an element the order
does not hold), so no edge is built from a contradiction; when the longest reads themselves
disagree there is no order at all, and the key gives wr edges only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from itertools import pairwise
from typing import Any

from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.explain import list_read, show
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import RW, WR, WW, EdgeList
from jepsen_py.checkers.elle.txn import APPEND, Txn, index_writes

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, OK

Read = tuple[int, tuple[Any, ...]]  # (txn id, value)
Versions = dict[tuple[Hashable, Any], int]


def infer(txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline) -> None:
    def refuse(t: Txn, k: Hashable, v: Any, other: int | None) -> str | None:
        if other is None:
            return None
        where = "twice here" if other == t.id else f"here and in op {txns[other].index}"
        return (f"op {t.index}: {show(v)} is appended to {show(k)} {where}; list-append needs unique "
                f"values per key")

    writer, failed, intermediate = index_writes(txns, APPEND, refuse)
    reads: dict[Hashable, list[Read]] = {}
    appends: dict[Hashable, list[tuple[int, Any]]] = {}  # key -> (ok/info appender, element)
    lost: dict[tuple[Hashable, tuple[Any, ...]], list[int]] = {}
    for n, t in enumerate(txns):
        if n % 8192 == 0:
            deadline.check("list-append reads")
        if t.type == FAIL:
            continue
        for f, k, v in t.mops:
            if f == APPEND:
                appends.setdefault(k, []).append((t.id, v))
        if t.type == OK:
            _txn_reads(t, reads, lost, found)
    for (k, value), tids in lost.items():
        if len(tids) > 1:
            found.add("lost-update", {
                "key": k, "value": list(value), "txns": [txns[i].describe() for i in tids],
                "explanation": f"{', '.join(txns[i].name() for i in tids)} all read "
                               f"{list_read(k, value[-1] if value else None)} and appended to {show(k)}: "
                               f"each append was made without seeing the others"})
    for n, k in enumerate(reads.keys() | appends.keys()):
        if n % 1024 == 0:
            deadline.check("list-append version orders")
        _key(k, reads.get(k, []), appends.get(k, []), txns, writer, failed, intermediate, edges, found)


def _txn_reads(t: Txn, reads: dict[Hashable, list[Read]],
               lost: dict[tuple[Hashable, tuple[Any, ...]], list[int]], found: Found) -> None:
    """Collects t's reads; checks t against itself: internal consistency (Elle's INT: a read that
    disagrees with the transaction's own earlier read and appends; the first per key), future reads
    (a read holding an element the transaction appends only later; the first per key), and the
    first read of a key that the transaction then appends to (for lost updates)."""
    state: dict[Hashable, tuple[Any, ...]] = {}  # key -> what t's own ops say the key holds
    suffix: set[Hashable] = set()  # keys whose state is only known to end with t's appends
    bad: set[Hashable] = set()  # keys with an internal case already
    seen: dict[Hashable, set[Any]] = {}  # key -> elements t has read (for future reads)
    future: set[Hashable] = set()
    first: dict[Hashable, Any] = {}  # key -> first read value, or _WROTE once appended to
    for f, k, v in t.mops:
        if f == APPEND:
            if k not in future and v in seen.get(k, ()):
                future.add(k)
                found.add("future-read", {
                    "key": k, "txn": t.describe(), "element": v,
                    "explanation": f"{t.name()} read {show(k)} holding {show(v)}, which it appends "
                                   f"only later"})
            if k in state:
                state[k] = (*state[k], v)
            else:
                state[k] = (v,)
                suffix.add(k)
            r = first.get(k, _WROTE)
            if r is not _WROTE:
                lost.setdefault((k, r), []).append(t.id)
            first[k] = _WROTE
            continue
        if v is None:
            v = ()
        if not isinstance(v, tuple):
            raise BadInput(f"op {t.complete_index}: read of {show(k)} returned {v!r}, not a list")
        reads.setdefault(k, []).append((t.id, v))
        first.setdefault(k, v)
        if v:
            seen.setdefault(k, set()).update(v)
        if k in state and k not in bad:
            expected = state[k]
            if k in suffix:
                wrong = len(v) < len(expected) or v[len(v) - len(expected):] != expected
            else:
                wrong = v != expected
            if wrong:
                shown = "[.." + show(expected)[1:] if k in suffix else show(expected)
                bad.add(k)
                found.add("internal", {
                    "key": k, "txn": t.describe(), "expected": shown, "read": list(v),
                    "explanation": f"{t.name()} read {show(k)}={show(v)}, but its own earlier reads and "
                                   f"appends give {shown}"})
        state[k] = v
        suffix.discard(k)


_WROTE = object()


def _key(k: Hashable, rs: list[Read], apps: list[tuple[int, Any]], txns: Sequence[Txn],
         writer: Versions, failed: Versions, intermediate: Versions, edges: EdgeList,
         found: Found) -> None:
    """One key: its version order, element anomalies and edges."""
    longest: tuple[Any, ...] = ()
    for _, v in rs:
        if len(v) > len(longest):
            longest = v
    if not longest and len(apps) == 1:
        longest = (apps[0][1],)  # one append and no read of it: versions [] then [x]
    odd = [r for r in rs if longest[:len(r[1])] != r[1]]  # reads that are no prefix of the order
    if odd:
        _incompatible(k, rs, txns, found)
    order: list[Any] = []
    pos: dict[Any, int] = {}
    # Two longest reads that disagree leave no order to prefer (Elle's pick between them is
    # arbitrary): then nothing is ordered and the key gives wr edges only.
    tie = any(len(v) == len(longest) for _, v in odd)
    for x in () if tie else longest:
        if x not in pos:
            pos[x] = len(order)
            order.append(x)
    if len(order) != len(longest) or odd:
        _duplicates(k, rs, txns, found)
    _reordered(k, apps, pos, odd, txns, found)
    _elements(k, longest, rs, odd, txns, writer, failed, found)
    _dirty_update(k, order, txns, writer, failed, found)
    # readers by the state they saw: at[i] read the state before order[i] (at[0]: the initial
    # state, at[len(order)]: the last); a read ending in an element the order lacks follows nothing
    at: list[list[int]] = [[] for _ in range(len(order) + 1)]
    src, dst, kinds, why = edges.src, edges.dst, edges.kind, edges.why
    for tid, v in rs:
        if not v:
            at[0].append(tid)
            continue
        last = v[-1]
        w = writer.get((k, last))
        if w is not None and w != tid:
            src.append(w)
            dst.append(tid)
            kinds.append(WR)
            why.append((k, last, last))
        im = intermediate.get((k, last))
        if im is not None and im != tid:
            _case(found, "G1b", lambda tid=tid, last=last, im=im: {
                "key": k, "reader": txns[tid].describe(), "writer": txns[im].describe(), "element": last,
                "explanation": f"{txns[tid].name()} read {list_read(k, last)}, an intermediate state: "
                               f"{txns[im].name()} appended more to {show(k)} afterwards"})
        p = pos.get(last)
        if p is not None:
            at[p + 1].append(tid)
    prev_w: int | None = None
    prev_x: Any = None
    for i, x in enumerate(order):
        w = writer.get((k, x))
        if w is not None:
            if prev_w is not None and prev_w != w:
                src.append(prev_w)
                dst.append(w)
                kinds.append(WW)
                why.append((k, prev_x, x))
            for r in at[i]:
                if r != w:
                    src.append(r)
                    dst.append(w)
                    kinds.append(RW)
                    why.append((k, order[i - 1] if i else None, x))
        prev_w, prev_x = w, x
    tail = order[-1] if order else None
    for w, x in () if tie else apps:
        if x in pos:
            continue
        # never observed: it came after everything observed
        if prev_w is not None and prev_w != w:
            src.append(prev_w)
            dst.append(w)
            kinds.append(WW)
            why.append((k, prev_x, x))
        for r in at[len(order)]:
            if r != w:
                src.append(r)
                dst.append(w)
                kinds.append(RW)
                why.append((k, tail, x))


def _case(found: Found, kind: str, detail: Callable[[], dict[str, Any]]) -> None:
    """One more case of `kind`: an example while examples are kept, else only counted."""
    if found.full(kind):
        found.count(kind, 1)
    else:
        found.add(kind, detail())


def _reordered(k: Hashable, apps: list[tuple[int, Any]], pos: dict[Any, int], odd: list[Read],
               txns: Sequence[Txn], found: Found) -> None:
    """A transaction's own appends to the key shown in another order than it made them (1 then 2,
    read [2 1 3]): no dependency links a transaction's appends, so no cycle shows it, yet no order
    of versions gives it (beyond Elle; implies cyclic-versions, docs/checkers.md). The order is
    checked, and every read that is not a prefix of it."""
    mine: dict[int, list[Any]] = {}
    for tid, x in apps:
        mine.setdefault(tid, []).append(x)
    for tid, xs in mine.items():
        if len(xs) < 2:
            continue
        for label, at in [("the order", pos), *((txns[r].name(), {x: i for i, x in enumerate(v)})
                                                 for r, v in odd)]:
            seen = [at[x] for x in xs if x in at]
            if seen != sorted(seen):
                found.add("reordered-appends", {
                    "key": k, "txn": txns[tid].describe(), "appended": list(xs),
                    "explanation": f"{txns[tid].name()} appended {show(tuple(xs))} to {show(k)} in that "
                                   f"order, but {label} of {show(k)} has them otherwise"})
                return


def _incompatible(k: Hashable, rs: list[Read], txns: Sequence[Txn], found: Found) -> None:
    """Elle's check: the distinct reads sorted by length, each a prefix of the next; the first
    pair that is not."""
    by_value: dict[tuple[Any, ...], int] = {}
    for tid, v in rs:
        if v:
            by_value.setdefault(v, tid)
    values = sorted(by_value, key=len)
    for a, b in pairwise(values):
        if b[:len(a)] != a:
            found.add("incompatible-order", {
                "key": k, "values": [list(a), list(b)],
                "txns": [txns[by_value[a]].describe(), txns[by_value[b]].describe()],
                "explanation": f"{txns[by_value[a]].name()} read {show(k)}={show(a)} and "
                               f"{txns[by_value[b]].name()} read {show(b)}: neither is a prefix of the "
                               f"other, so no single order of appends gives both"})
            return


def _duplicates(k: Hashable, rs: list[Read], txns: Sequence[Txn], found: Found) -> None:
    """Every read holding an element twice (appends are unique, so it was read twice)."""
    for tid, v in rs:
        if len(set(v)) == len(v):
            continue

        def detail(tid: int = tid, v: tuple[Any, ...] = v) -> dict[str, Any]:
            counts: dict[Any, int] = {}
            for x in v:
                counts[x] = counts.get(x, 0) + 1
            dups = {x: c for x, c in counts.items() if c > 1}
            return {"key": k, "txn": txns[tid].describe(), "read": list(v),
                    "duplicates": [[x, c] for x, c in dups.items()],
                    "explanation": f"{txns[tid].name()} read {show(k)}={show(v)}, with "
                                   + ", ".join(f"{show(x)} {c} times" for x, c in dups.items())}

        _case(found, "duplicate-elements", detail)


def _elements(k: Hashable, longest: tuple[Any, ...], rs: list[Read], odd: list[Read],
              txns: Sequence[Txn], writer: Versions, failed: Versions, found: Found) -> None:
    """Aborted (G1a) and garbage reads: one case per element of each read that a failed
    transaction appended, or that no transaction appended. A read that is a prefix of the longest
    holds exactly the longest's elements before its length, so it is counted by bisection."""
    bad_at: dict[str, list[int]] = {"G1a": [], "garbage-read": []}
    for p, x in enumerate(longest):
        if (k, x) not in writer:
            bad_at["G1a" if (k, x) in failed else "garbage-read"].append(p)
    odd_ids = {id(r) for r in odd}
    for kind, positions in bad_at.items():
        for r in rs:
            tid, v = r
            if id(r) in odd_ids:
                hits = [p for p, x in enumerate(v) if (k, x) not in writer
                        and ((k, x) in failed) == (kind == "G1a")]
            elif positions:
                n = bisect_left(positions, len(v))
                hits = positions[:n]
            else:
                continue
            if found.full(kind):
                found.count(kind, len(hits))
                continue
            for p in hits:
                x = v[p]
                if kind == "G1a":
                    w = txns[failed[(k, x)]]
                    _case(found, kind, lambda x=x, w=w, tid=tid: {
                        "key": k, "element": x, "reader": txns[tid].describe(), "writer": w.describe(),
                        "explanation": f"{txns[tid].name()} read {show(k)}=[..{show(x)}..], but {w.name()}, "
                                       f"which appended {show(x)}, failed"})
                else:
                    _case(found, kind, lambda x=x, tid=tid: {
                        "key": k, "element": x, "txn": txns[tid].describe(),
                        "explanation": f"{txns[tid].name()} read {show(x)} in {show(k)}, which no "
                                       f"transaction appended"})


def _dirty_update(k: Hashable, order: list[Any], txns: Sequence[Txn], writer: Versions,
                  failed: Versions, found: Found) -> None:
    """A committed append right after a failed one in the version order (through indeterminate
    ones), as Elle's dirty-update: the failed transaction's write was built upon."""
    prev = OK  # the initial state is committed
    since: list[Any] = []  # the versions from the last failed or committed one on
    start: int | None = None
    for x in order:
        w = writer.get((k, x))
        t = txns[w] if w is not None else txns[failed[(k, x)]] if (k, x) in failed else None
        if t is None:  # garbage: reported as such; it says nothing of who wrote what
            continue
        kind = FAIL if w is None else t.type
        if kind == OK:
            if prev == FAIL and start is not None:
                found.add("dirty-update", {
                    "key": k, "values": [*since, x], "txns": [txns[start].describe(), t.describe()],
                    "explanation": f"{show(k)}'s order has {show(since[0])}, appended by the failed "
                                   f"{txns[start].name()}, before {show(x)}, appended by the committed "
                                   f"{t.name()}"})
            prev, since, start = OK, [x], t.id
        elif kind == FAIL:
            if prev == FAIL:
                since.append(x)
            else:
                prev, since, start = FAIL, [x], t.id
        else:  # indeterminate: keep the range open
            since.append(x)

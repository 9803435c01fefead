"""List-append inference: version orders from reads, non-cycle anomalies, ww/wr/rw edges.

Every append to a key is unique, so a read of the whole list names each element's writer and
the order the appends took effect in. A key's version order is its longest read; every other read
must be a prefix of it (else incompatible-order). Per key, element checks run once over the
longest read (garbage, aborted, duplicate elements), and each read is placed in it by its length,
so a read costs a prefix comparison, not a walk over its elements.

Edges, between committed (ok) or observed indeterminate (info) transactions:
  ww  consecutive elements of the version order appended by different transactions
  wr  the writer of a read's last element -> the reader
  rw  a reader -> the writer of the element right after what it read
Reads used for edges are external: a transaction's first read of a key, before it appends to it.
A key whose reads are incompatible has no known order, so it gives wr edges only (a guessed order
could make cycles that weaker models would wrongly be charged with).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.explain import list_read, show
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import RW, WR, WW, EdgeList
from jepsen_py.checkers.elle.txn import APPEND, Txn, index_writes

from jepsen_py.errors import BadInput
from jepsen_py.history import OK

Read = tuple[int, int, tuple[Any, ...]]  # (txn id, mop position, value)
Ext = tuple[int, tuple[Any, ...], bool]  # (txn id, value, appends to the key later)


def infer(txns: Sequence[Txn], edges: EdgeList, found: Found, deadline: Deadline) -> None:
    def refuse(t: Txn, k: Hashable, v: Any, other: int | None) -> str | None:
        if other is None:
            return None
        return (f"op {t.index}: {show(v)} is appended to {show(k)} by two transactions (here and op "
                f"{txns[other].index}); list-append needs unique values per key")

    writer, failed, intermediate = index_writes(txns, APPEND, refuse)
    reads: dict[Hashable, list[Read]] = {}
    ext: dict[Hashable, list[Ext]] = {}
    for n, t in enumerate(txns):
        if n % 8192 == 0:
            deadline.check("list-append reads")
        if t.type == OK:
            _txn_reads(t, reads, ext, found)
    for n, (k, rs) in enumerate(reads.items()):
        if n % 1024 == 0:
            deadline.check("list-append version orders")
        _key(k, rs, ext.get(k, []), txns, writer, failed, intermediate, edges, found)


def _txn_reads(t: Txn, reads: dict[Hashable, list[Read]], ext: dict[Hashable, list[Ext]],
               found: Found) -> None:
    """Collects t's reads; checks it against itself (internal consistency, future reads)."""
    known: dict[Hashable, tuple[Any, ...]] = {}
    pending: dict[Hashable, list[Any]] = {}
    appended: set[Hashable] = set()
    has_append = any(m[0] == APPEND for m in t.mops)
    mine: list[tuple[Hashable, tuple[Any, ...]]] = []
    for i, (f, k, v) in enumerate(t.mops):
        if f == APPEND:
            if k in known:
                known[k] = (*known[k], v)
            else:
                pending.setdefault(k, []).append(v)
            appended.add(k)
            continue
        if v is None:
            v = ()
        if not isinstance(v, tuple):
            raise BadInput(f"op {t.complete_index}: read of {show(k)} returned {v!r}, not a list")
        reads.setdefault(k, []).append((t.id, i, v))
        if k not in appended and k not in known:
            mine.append((k, v))
        if has_append:
            later = [x for f2, k2, x in t.mops[i + 1:] if f2 == APPEND and k2 == k]
            if later and set(later) & set(v):
                found.add("future-read", {"key": k, "txn": t.describe(),
                                          "explanation": f"{t.name()} read {show(k)}={show(v)}, which "
                                                         f"holds an element it appends only later"})
        if k in known:
            expected = known[k]
            if v != expected:
                found.add("internal", {"key": k, "txn": t.describe(), "expected": expected, "read": v,
                                       "explanation": f"{t.name()} read {show(k)}={show(v)} but its own "
                                                      f"earlier read and appends give {show(expected)}"})
        elif k in pending:
            own = tuple(pending[k])
            if len(v) < len(own) or v[len(v) - len(own):] != own:
                found.add("internal", {"key": k, "txn": t.describe(), "expected": f"[..{show(own)[1:]}",
                                       "read": v,
                                       "explanation": f"{t.name()} read {show(k)}={show(v)}, which does not "
                                                      f"end with its own appends {show(own)}"})
        known[k] = v
        pending.pop(k, None)
    for k, v in mine:
        ext.setdefault(k, []).append((t.id, v, k in appended))


def _key(k: Hashable, rs: list[Read], ext: list[Ext], txns: Sequence[Txn],
         writer: dict[tuple[Hashable, Any], int], failed: dict[tuple[Hashable, Any], int],
         intermediate: dict[tuple[Hashable, Any], int], edges: EdgeList, found: Found) -> None:
    longest = max((r[2] for r in rs), key=len)
    bad_reads: list[Read] = []
    for r in rs:
        v = r[2]
        if longest[:len(v)] != v:
            bad_reads.append(r)
    if bad_reads:
        a = bad_reads[0]
        found.add("incompatible-order", {
            "key": k, "values": [list(a[2]), list(longest)],
            "txns": [txns[a[0]].describe()],
            "explanation": f"{txns[a[0]].name()} read {show(k)}={show(a[2])} and another read saw "
                           f"{show(longest)}: neither is a prefix of the other"})
    # element checks, once over the version order (and over any read that is not a prefix of it)
    for v in [longest] + [r[2] for r in bad_reads]:
        _elements(k, v, rs, txns, writer, failed, found)
    src, dst, kinds, why = edges.src, edges.dst, edges.kind, edges.why
    # ww (and below, rw) only from an order every read agrees with: with incompatible reads the
    # order is not known, and edges from a guess could fake cycles under weaker models
    certain = not bad_reads
    # ww along the version order
    prev_w = None
    prev_x = None
    aborted_seen = None
    for x in longest:
        w = writer.get((k, x))
        if w is None and (k, x) in failed:
            aborted_seen = x
        elif w is not None and aborted_seen is not None:
            found.add("dirty-update", {
                "key": k, "txn": txns[w].describe(),
                "explanation": f"{show(k)}'s order has {show(aborted_seen)}, appended by the aborted "
                               f"{txns[failed[(k, aborted_seen)]].name()}, before {show(x)}, appended by "
                               f"the committed {txns[w].name()}"})
            aborted_seen = None
        if certain and w is not None and prev_w is not None and w != prev_w:
            src.append(prev_w)
            dst.append(w)
            kinds.append(WW)
            why.append((k, prev_x, x))
        if w is not None:
            prev_w, prev_x = w, x
    # wr, rw, G1b and lost updates from external reads
    seen_version: dict[Any, int] = {}
    n = len(longest)
    for tid, v, appends_later in ext:
        last = v[-1] if v else None
        if v:
            w = writer.get((k, last))
            if w is not None and w != tid:
                src.append(w)
                dst.append(tid)
                kinds.append(WR)
                why.append((k, last, last))
                if (k, last) in intermediate:
                    found.add("G1b", {
                        "key": k, "reader": txns[tid].describe(), "writer": txns[w].describe(),
                        "explanation": f"{txns[tid].name()} read {list_read(k, last)}, an intermediate "
                                       f"state: {txns[w].name()} appended more to {show(k)} afterwards"})
        if certain and len(v) < n:
            nxt = longest[len(v)]
            w2 = writer.get((k, nxt))
            if w2 is not None and w2 != tid:
                src.append(tid)
                dst.append(w2)
                kinds.append(RW)
                why.append((k, last, nxt))
        if appends_later:
            version = last if v else _EMPTY
            other = seen_version.get(version)
            if other is not None:
                t = txns[tid]
                found.add("lost-update", {
                    "key": k, "txns": [txns[other].describe(), t.describe()],
                    "explanation": f"{txns[other].name()} and {t.name()} both read {list_read(k, last)} "
                                   f"and both appended to {show(k)}: one append was made without "
                                   f"seeing the other"})
            else:
                seen_version[version] = tid


_EMPTY = object()


def _elements(k: Hashable, v: tuple[Any, ...], rs: list[Read], txns: Sequence[Txn],
              writer: dict[tuple[Hashable, Any], int], failed: dict[tuple[Hashable, Any], int],
              found: Found) -> None:
    """Garbage, aborted and duplicate elements of one read value, each named with a reader."""
    seen: set[Any] = set()
    for p, x in enumerate(v):
        if x in seen:
            r = _reader(rs, v, p)
            found.add("duplicate-elements", {
                "key": k, "txn": txns[r].describe(), "element": x,
                "explanation": f"{txns[r].name()} read {show(k)}={show(v[:p + 1])}, with {show(x)} twice"})
            break
        seen.add(x)
    for p, x in enumerate(v):
        if (k, x) in writer:
            continue
        r = _reader(rs, v, p)
        if (k, x) in failed:
            w = txns[failed[(k, x)]]
            found.add("G1a", {"key": k, "element": x, "reader": txns[r].describe(), "writer": w.describe(),
                              "explanation": f"{txns[r].name()} read {show(k)}=[..{show(x)}..], but "
                                             f"{w.name()}, which appended {show(x)}, failed"})
        else:
            found.add("garbage-read", {"key": k, "element": x, "txn": txns[r].describe(),
                                       "explanation": f"{txns[r].name()} read {show(x)} in {show(k)}, "
                                                      f"which no transaction appended"})


def _reader(rs: list[Read], v: tuple[Any, ...], p: int) -> int:
    """A transaction whose read of this key shows v[p] (the first one found)."""
    for tid, _, r in rs:
        if len(r) > p and r[:p + 1] == v[:p + 1]:
            return tid
    return rs[0][0]

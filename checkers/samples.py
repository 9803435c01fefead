"""The observer's samples, read back out of a history.

Staleness, availability and crash all ask the same questions of the observer's polls ("who claimed
to lead, in which term, when?", "when did a node stop answering?"), so the parsing lives here once.
A sample is a standalone op: process "observer", f "status", node, type ok (the node answered, value
is its status: role, term, leader, ...) or fail (no answer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jepsen_py.history import OBSERVER, OK, Op


@dataclass(frozen=True, slots=True)
class Sample:
    """One poll of one node. `answered` False means the node did not answer (down, paused, hung)."""

    index: int
    time: int
    node: str
    answered: bool
    role: str | None
    term: int | None
    leader: str | None


def _as_int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and x.isdigit():
        return int(x)
    return None


def samples(history: Iterable[Op]) -> list[Sample]:
    """Every observer sample, in history order (which is time order: the writer appends as it goes)."""
    out: list[Sample] = []
    for op in history:
        if op.process != OBSERVER:
            continue
        v = op.value if isinstance(op.value, dict) else {}
        node = op.node if op.node is not None else v.get("node")
        if node is None:
            continue
        answered = op.type == OK
        out.append(
            Sample(
                index=op.index,
                time=op.time,
                node=str(node),
                answered=answered,
                role=v.get("role") if answered else None,
                term=_as_int(v.get("term")) if answered else None,
                leader=v.get("leader") if answered else None,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class LeaderClaim:
    """The first time anyone saw `node` claim leadership of `term`."""

    time: int
    node: str
    term: int
    index: int | None  # the history op that showed it (observer sample or client completion)


def leader_claims(history: Iterable[Op]) -> list[LeaderClaim]:
    """First sighting of each (term, leader), from observer samples and from what client completions
    said of their serving node (role/term in meta), sorted by time.

    Client completions count too because a read served by a node that says "leader, term 7" is as good
    a witness as a poll, and it narrows the moment a new leader became visible.
    """
    first: dict[tuple[int, str], LeaderClaim] = {}

    def see(time: int, node: str, term: int, index: int | None) -> None:
        k = (term, node)
        c = first.get(k)
        if c is None or time < c.time:
            first[k] = LeaderClaim(time, node, term, index)

    for op in history:
        if op.process == OBSERVER:
            if op.type != OK or not isinstance(op.value, dict):
                continue
            v = op.value
            node = op.node if op.node is not None else v.get("node")
            term = _as_int(v.get("term"))
            if v.get("role") == "leader" and node is not None and term is not None:
                see(op.time, str(node), term, op.index)
        elif isinstance(op.process, int) and op.type == OK and op.node is not None:
            role = op.meta.get("role") if op.meta else None
            term = _as_int(op.meta.get("term")) if op.meta else None
            if role == "leader" and term is not None:
                see(op.time, op.node, term, op.index)
    return sorted(first.values(), key=lambda c: (c.time, c.term))


def newer_leader_before(claims: list[LeaderClaim], term: int, before: int, *, not_node: str | None = None
                        ) -> LeaderClaim | None:
    """The earliest claim of a leader with a term above `term` seen at or before time `before`."""
    for c in claims:
        if c.time > before:
            break
        if c.term > term and c.node != not_node:
            return c
    return None

"""Majority arithmetic over a fixed voter set: committed index, vote outcome, activity.

Kept apart from the step function so that the one rule everything rests on, "a majority of voters",
lives in a single place (etcd-io/raft's quorum package, single-config case).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

VOTE_PENDING = "pending"
VOTE_WON = "won"
VOTE_LOST = "lost"


def majority(n: int) -> int:
    """Smallest number of voters that is more than half of n (n >= 1)."""
    return n // 2 + 1


def committed_index(voters: Collection[str], acked: Mapping[str, int]) -> int:
    """The largest index acknowledged by a majority of voters (a voter missing from acked counts 0).

    The same arithmetic serves any per-voter monotone value, e.g. lease stamps.
    """
    if not voters:
        return 0
    values = sorted((acked.get(v, 0) for v in voters), reverse=True)
    return values[majority(len(values)) - 1]


def vote_result(voters: Collection[str], votes: Mapping[str, bool]) -> str:
    """won when a majority granted, lost when a majority can no longer be reached, else pending."""
    granted = sum(1 for v in voters if votes.get(v) is True)
    rejected = sum(1 for v in voters if votes.get(v) is False)
    need = majority(len(voters))
    if granted >= need:
        return VOTE_WON
    if len(voters) - rejected < need:
        return VOTE_LOST
    return VOTE_PENDING


def quorum_active(voters: Collection[str], active: Collection[str]) -> bool:
    """True when a majority of voters is in `active` (CheckQuorum)."""
    return sum(1 for v in voters if v in active) >= majority(len(voters))

"""Which nodes a fault hits: the leader, one random node, a minority, a majority, all.

Asking the DB who leads is part of choosing a target, so a fault aimed at "the leader" hits the node
that leads at that moment (Jepsen's `primaries`), or, when no node claims leadership, a random one
(the value recorded says which happened).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

from jepsen_py.protocols import Test, has_capability
from jepsen_py.spec import TARGETS


def majority(n: int) -> int:
    return n // 2 + 1


def primaries(test: Test) -> list[str]:
    """The nodes that claim leadership now; [] if the DB cannot say."""
    if not has_capability(test.db, "primaries"):
        return []  # a leaderless DB: "the leader" is a random node
    try:
        answer = test.db.primaries(test)  # type: ignore[union-attr]
        if not isinstance(answer, list | tuple | set | frozenset):  # no answer (the run refuses it)
            return []
        return [n for n in list(answer)[:len(test.nodes)] if type(n) is str and n in test.nodes]
    except BaseException as e:  # a DB that cannot answer mid-fault is not a nemesis failure
        if isinstance(e, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            raise  # Ctrl-C (the simulator chooses targets on the main thread)
        test.log.debug("primaries() failed while choosing a target", exc_info=True)
        return []


def pick(kind: str, test: Test, rng: random.Random, nodes: Sequence[str] | None = None) -> list[str]:
    """The nodes `kind` names, in a stable order."""
    pool = list(nodes if nodes is not None else test.nodes)
    if not pool:
        return []
    if kind == "leader":
        leaders = [n for n in primaries(test) if n in pool]
        return [rng.choice(sorted(leaders))] if leaders else [rng.choice(pool)]
    if kind in ("one", "random"):  # "random": another name for one random node
        return [rng.choice(pool)]
    if kind == "minority":
        k = rng.randint(1, max(1, (len(pool) - 1) // 2))
        return sorted(rng.sample(pool, k))
    if kind == "majority":
        return sorted(rng.sample(pool, majority(len(pool))))
    if kind == "all":
        return sorted(pool)
    raise ValueError(f"unknown target {kind!r} (choose from {', '.join(TARGETS)})")

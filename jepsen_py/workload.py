"""A workload: what the clients do (generators) and how the resulting history is judged (checkers).

Concrete workloads live in workloads/ and are registered in `workloads.WORKLOADS` as
`name -> factory(spec) -> Workload`. The runner routes `generator` to the client threads beside the
nemesis schedule for the main phase (rate and time limit are applied by the runner from the spec),
then runs `final_generator` on the client threads after heal and recovery. Final ops may name a
node (`Template(node=...)`) to read each key on every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jepsen_py.generator import Generator
from jepsen_py.protocols import Checker, Client


@dataclass
class Workload:
    """Everything the runner needs from a workload.

    `client`: a client template to use instead of `DB.client(name)` (for systems whose clients are
    not the DB's business, e.g. in-process tests); None asks the DB.
    `meta`: free-form facts about the workload written into test.json (key counts, models).
    `fs`: the client op names its checkers judge; None leaves them undeclared. A history with none of
    them was not checked at all, whatever the checkers answer (a stored run re-checked as another
    workload, a --generator making other ops), so its verdict is unknown, never valid.
    """

    name: str
    generator: Generator
    final_generator: Generator | None
    checkers: list[Checker]
    client: Client | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    fs: frozenset[str] | None = None

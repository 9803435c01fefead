"""The controller's side of the node's bug registry (cluster/bugs.py): --bug names are checked here,
once, before anything is provisioned, whichever command or backend asked."""

from __future__ import annotations

from collections.abc import Sequence

from jepsen_py.cluster.bugs import NAMES, Bugs
from jepsen_py.errors import BadInput


def check_bugs(bugs: Sequence[str], known: Sequence[str] = NAMES, *, db: str | None = None) -> None:
    """One line naming every unknown --bug and the known ones. `known` is our node's registry unless
    a DB declares its own (`known_bugs()`: jepsen_py.plugins.declared_bugs); none takes no --bug."""
    unknown = [b for b in bugs if b not in known]
    if unknown:
        of = f" for {db}" if db else ""
        raise BadInput(f"--bug: unknown bug {', '.join(map(repr, unknown))}{of} "
                       f"(known: {', '.join(known) or 'none'})")


def node_bugs(names: Sequence[str]) -> Bugs:
    """The node's bug setting for `names`, checked first."""
    check_bugs(names)
    return Bugs.parse(names)

"""Kill: SIGKILL the node process (leader, one, or a minority); restart it from its disk.

Ops: {"f": "kill", "value": target} / {"f": "start"}; done through DB.kill / DB.start, so the restart
recovers from the node's own data directory (WAL and snapshots), as after a power loss.
"""

from __future__ import annotations

from jepsen_py.nemeses import faults
from jepsen_py.nemeses.process import ProcessNemesis

from jepsen_py.protocols import Test


class KillNemesis(ProcessNemesis):
    """SIGKILL the node's process; restart it from its own data directory at start and heal."""

    start_f, stop_f, state_key = faults.KILL, faults.RESTART, "killed"
    capability, nemesis_name = "process", "kill"

    def fault(self, test: Test, node: str) -> None:
        test.db.kill(test, node)  # type: ignore[union-attr]

    def undo(self, test: Test, node: str) -> None:
        test.db.start(test, node)  # type: ignore[union-attr]

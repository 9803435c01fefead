"""Pause: SIGSTOP the node process (leader, one, or a minority); SIGCONT at resume and heal.

Ops: {"f": "pause", "value": target} / {"f": "resume"}; done through DB.pause / DB.resume.
"""

from __future__ import annotations

from jepsen_py.nemeses import faults
from jepsen_py.nemeses.process import ProcessNemesis

from jepsen_py.protocols import Test


class PauseNemesis(ProcessNemesis):
    """SIGSTOP the node's process; SIGCONT at resume and heal."""

    start_f, stop_f, state_key = faults.PAUSE_F, faults.RESUME, "paused"
    capability, nemesis_name = "pause", "pause"

    def fault(self, test: Test, node: str) -> None:
        test.db.pause(test, node)  # type: ignore[union-attr]

    def undo(self, test: Test, node: str) -> None:
        test.db.resume(test, node)  # type: ignore[union-attr]

"""A simulated process's clock: both readings come from its SimLoop, so a clock fault set on the loop
moves them, and the process's timers from its next wake-up, as libfaketime moves a container's."""

from __future__ import annotations

from .loop import SimLoop

#: The wall-clock reading at global virtual time 0 (2024-01-01T00:00:00Z): a fixed epoch keeps log
#: stamps identical from run to run.
EPOCH = 1_704_067_200.0


class SimClock:
    """cluster.io.Clock over a SimLoop: monotonic = the loop's time, wall = EPOCH + the same."""

    def __init__(self, loop: SimLoop, epoch: float = EPOCH) -> None:
        self.loop = loop
        self.epoch = epoch

    def monotonic(self) -> float:
        return self.loop.time()

    def wall(self) -> float:
        return self.epoch + self.loop.time()

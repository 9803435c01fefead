"""A time budget for one check: when it runs out the result is "unknown", never "valid".

Inference and the cycle search call `check()` at points that bound the work between calls, so a
check overruns its budget by at most one such step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

DEFAULT_TIME_S = 120.0


class OutOfTime(Exception):
    """Raised where the deadline passed; the checker turns it into valid "unknown"."""

    def __init__(self, stage: str) -> None:
        super().__init__(stage)
        self.stage = stage


@dataclass(slots=True)
class Deadline:
    time_s: float = DEFAULT_TIME_S
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.time_s - (time.monotonic() - self.started)

    def check(self, stage: str) -> None:
        if self.left() <= 0:
            raise OutOfTime(stage)

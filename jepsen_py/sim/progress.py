"""Live progress of a simulated run: the phase, simulated seconds against the time limit, ops, ok
and faults so far, and how fast virtual time is going.

A Docker run's progress shows wall time, which says little here: a simulated minute may take ten
wall seconds. The numbers are read, never written, by the terminal's refresh thread (counters and
the virtual clock), so drawing cannot change what the simulation does or the bytes it records.
Off a terminal each phase prints one plain line, as for Docker.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from jepsen_py.history import NEMESIS, Op
from jepsen_py.nemeses.faults import is_stop
from jepsen_py.progress import Progress


@dataclass
class SimStatus:
    """What a simulated run has done so far: a few counters, updated as ops are recorded."""

    time_limit: float
    phase: str = "starting"
    simulated_s: Callable[[], float] = field(default=lambda: 0.0)
    counts: Callable[[], tuple[int, int]] = field(default=lambda: (0, 0))
    faults: int = 0
    started: float = field(default_factory=time.monotonic)
    main_from: float | None = None  # simulated s when the main phase began
    main_to: float | None = None  # ... and when it ended

    def enter(self, phase: str) -> None:
        """A new phase; the main phase's span is what the time limit measures."""
        now = self.simulated_s()
        if phase == "main":
            self.main_from = now
        elif self.phase == "main":
            self.main_to = now
        self.phase = phase

    def saw(self, op: Op) -> None:
        """Counts a fault when the nemesis invokes an op that starts one."""
        if op.process == NEMESIS and op.type == "invoke" and not is_stop(str(op.f)):
            self.faults += 1

    def line(self) -> str:
        ops, ok = self.counts()
        sim = self.simulated_s()
        wall = time.monotonic() - self.started
        speed = f"{sim / wall:.1f}x" if wall > 0.5 else "-"
        end = self.main_to if self.main_to is not None else sim
        main = 0.0 if self.main_from is None else end - self.main_from
        return (f"[{self.phase}] main {main:5.1f}/{self.time_limit:g} s  simulated {sim:6.1f} s  "
                f"ops {ops}  ok {ok}  faults {self.faults}  wall {wall:5.1f} s ({speed})")


class SimProgress(Progress):
    """`Progress` for a simulated run: the same live line on a terminal and plain phase lines
    elsewhere, in simulated time."""

    def __init__(self, test_name: str, status: SimStatus, *, enabled: bool = True,
                 console: Console | None = None) -> None:
        super().__init__(test_name, status.counts, enabled=enabled, console=console)
        self.status = status

    def __rich__(self) -> Text:
        t = Text()
        t.append(f"{self.test_name} ", style="bold")
        t.append(self.status.line())
        return t

    def phase(self, name: str) -> None:
        self.status.enter(name)
        self.current = name
        if self.enabled and not self.live_mode:
            print(f"{self.test_name}: {self.status.line()}", file=sys.stderr, flush=True)


__all__ = ["SimProgress", "SimStatus"]

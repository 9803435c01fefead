"""A virtual-time asyncio loop for unit tests of the run driver's parts (no simulated cluster needed):
a wait for a timer moves the clock to it instead of sleeping."""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _VirtualSelector(selectors.SelectSelector):
    """A selector that never blocks: a wait for `timeout` moves virtual time instead."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or not timeout:
            return ready
        self.now += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """An asyncio loop whose clock is virtual and jumps to the next timer when nothing is ready."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now

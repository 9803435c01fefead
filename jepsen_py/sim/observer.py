"""The observer in the simulator: every node's own status sampled into the history in virtual time,
recorded exactly as jepsen_py.observer records it (process "observer", f "status", ok with the
node's status as value when it answers, fail when it does not, meta {"sent": ns}).

One coroutine samples the nodes in their order every interval: the answer is immediate in virtual
time, so a slow node cannot thin out the others' samples (the reason the Docker observer needs a
thread per node).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from jepsen_py.history import FAIL, OBSERVER, OK, Op
from jepsen_py.observer import DEFAULT_INTERVAL
from jepsen_py.protocols import Test


class StatusSource(Protocol):
    def status(self, test: Test | None, node: str) -> dict[str, Any] | None: ...


class SimObserver:
    """Samples `db.status(test, node)` for every node every `interval` virtual seconds."""

    def __init__(self, test: Test, db: StatusSource, record: Callable[[Op], Any],
                 now_ns: Callable[[], int], *, interval: float = DEFAULT_INTERVAL) -> None:
        self.test = test
        self.db = db
        self.record = record
        self.now_ns = now_ns
        self.interval = interval
        self.nodes = list(test.nodes)
        self.latest: dict[str, dict[str, Any] | None] = dict.fromkeys(self.nodes)
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Starts sampling on the running loop (call from a coroutine on the controller's loop)."""
        self._task = asyncio.ensure_future(self._poll())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def leaders(self) -> dict[str, str | None]:
        """Who each node last said leads (None when it did not answer or knows no leader)."""
        return {n: (s or {}).get("leader") for n, s in self.latest.items()}

    def sample(self) -> None:
        for node in self.nodes:
            sent = self.now_ns()
            status = self.db.status(self.test, node)
            self.latest[node] = status
            self.samples += 1
            self.record(Op(index=-1, time=self.now_ns(), type=OK if status is not None else FAIL,
                           process=OBSERVER, f="status", value=status, node=node, error=None,
                           meta={"sent": sent}))

    async def _poll(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

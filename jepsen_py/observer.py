"""The observer: polls every node's own view (role, term, leader) about ten times a second into the
history, so checkers and plots see leadership as the nodes saw it, fault by fault.

The runner starts it only for a DB with the optional Status capability (db.status); for any other
DB the checkers judge by what the clients saw. Each node gets its own polling thread: a paused or
partitioned node that answers slowly must not thin out the samples of the others. Samples are
standalone records (process "observer", f "status"): ok with the node's status as value when it
answered, fail when it did not.

status() is the DB's code, called ten times a second: whatever it raises (KeyboardInterrupt and
SystemExit too: no signal reaches these threads) is a fail sample naming it, and one that never
returns is left behind at stop, named in one log line. An answer that is no status (not a dict or
None, a documented key of the wrong type, more than the history can hold: plugins.checked_status)
is a fail sample too, and stops that node's sampling and, through `on_bad`, the run (254).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, OBSERVER, OK, Op
from jepsen_py.plugins import checked_status, said
from jepsen_py.protocols import Status, Test

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 0.1


@dataclass(slots=True)
class Sample:
    """One ask of a node's status: what to record (the status, or None and the error), and, when
    the answer was no status, the line that stops the run."""

    status: dict[str, Any] | None
    error: str | None = None
    bad: BadInput | None = None


def sample(db: Status, test: Test, node: str, ref: str) -> Sample:
    """db.status(test, node), on the caller's thread (an observer's own, never the main one):
    whatever it raises is the sample's error (KeyboardInterrupt and SystemExit too: no signal
    reaches an observer's thread), and an answer that is no status (plugins.checked_status) is a
    fail sample and a BadInput naming the DB (`ref`)."""
    try:
        answer = db.status(test, node)
    except BaseException as e:  # a status probe must never take the run down
        return Sample(None, said(e))
    try:
        return Sample(checked_status(answer, node, f"status(test, {node!r})"))
    except BadInput as e:  # an answer that is no status: the DB's mistake, the run stops
        return Sample(None, f"not a status: {e}", BadInput(f"--db: {ref}: {e}"))


class Observer:
    """Background sampler of db.status(test, node) for every node."""

    def __init__(
        self,
        test: Test,
        db: Status,
        record: Callable[[Op], Any],
        clock_ns: Callable[[], int],
        *,
        interval: float = DEFAULT_INTERVAL,
        nodes: list[str] | None = None,
        on_bad: Callable[[BadInput], Any] | None = None,
        ref: str = "",
    ) -> None:
        self.test = test
        self.on_bad = on_bad
        self.ref = ref or type(db).__name__
        self.db = db
        self.record = record
        self.clock_ns = clock_ns
        self.interval = interval
        self.nodes = list(nodes if nodes is not None else test.nodes)
        self.latest: dict[str, dict[str, Any] | None] = dict.fromkeys(self.nodes)
        self.samples = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for node in self.nodes:
            t = threading.Thread(target=self._poll, args=(node,), name=f"observer-{node}", daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            log.warning("status() did not return within %g s of the observer's stop, left behind (daemon "
                        "threads): %s", timeout, ", ".join(stuck))
        self._threads.clear()

    def __enter__(self) -> Observer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def leaders(self) -> dict[str, str | None]:
        """Who each node last said leads (None when it did not answer or knows no leader)."""
        return {n: (s or {}).get("leader") for n, s in self.latest.items()}

    def _poll(self, node: str) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            sent = self.clock_ns()
            asked = sample(self.db, self.test, node, self.ref)
            status, error, bad = asked.status, asked.error, asked.bad
            if self._stop.is_set():
                break
            self.latest[node] = status
            self.samples += 1
            try:
                self.record(Op(
                    index=-1, time=self.clock_ns(), type=OK if status is not None else FAIL,
                    process=OBSERVER, f="status", value=status, node=node,
                    error=error if status is None else None, meta={"sent": sent},
                ))
            except RuntimeError:  # history closed under us at the end of the run
                break
            if bad is not None:
                if self.on_bad is not None:
                    self.on_bad(bad)
                break
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()  # a slow answer: no burst of catch-up polls
                delay = 0.0
            self._stop.wait(delay)

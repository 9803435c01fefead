"""An in-process store speaking the four generic workloads' client contracts, for driving the real
runner on them without nodes. `lag` makes it serve reads from a snapshot refreshed every `lag`
seconds (a stale-read bug the checkers must catch); `lose_every` drops every Nth acknowledged
write (a lost-write bug); `rollback_every` makes every Nth write a failover to a replica that missed
the last N/2 writes, which reads had already seen (what an async-replicated store does); the
elements it dropped are kept in `rolled_back`."""

from __future__ import annotations

import collections
import copy
import dataclasses
import threading
import time
from typing import Any

from jepsen_py.history import FAIL, OK, Op
from jepsen_py.protocols import Test, TestSpec


class Store:
    def __init__(self, lag: float = 0.0, lose_every: int = 0, rollback_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.data: dict[str, Any] = {}
        self.queue: collections.deque[Any] = collections.deque()
        self.lag = lag
        self.lose_every = lose_every
        self.rollback_every = rollback_every
        self.checkpoint: dict[str, Any] = {}
        self.rolled_back: set[tuple[str, Any]] = set()
        self.writes = 0
        self.snapshot: dict[str, Any] = {}
        self.snapshot_at = 0.0

    def view(self) -> dict[str, Any]:
        """What reads see: the live data, or with `lag` a copy at most `lag` seconds old."""
        if not self.lag:
            return self.data
        now = time.monotonic()
        if now - self.snapshot_at >= self.lag:
            self.snapshot = copy.deepcopy(self.data)
            self.snapshot_at = now
        return self.snapshot

    def lost(self) -> bool:
        self.writes += 1
        return bool(self.lose_every) and self.writes % self.lose_every == 0

    def replicate(self) -> None:
        """After a write: the lagging replica's copy is taken half way through each period, and at
        its end the store fails over to it."""
        n = self.rollback_every
        if not n:
            return
        if self.writes % n == n // 2:
            self.checkpoint = copy.deepcopy(self.data)
        elif self.writes % n == 0:
            for k, v in self.data.items():
                kept = self.checkpoint.get(k)
                if isinstance(v, list):
                    self.rolled_back |= {(k, x) for x in v if not kept or x not in kept}
            self.data = copy.deepcopy(self.checkpoint)

    def apply(self, op: Op) -> Op:
        ok = dataclasses.replace(op, type=OK)
        with self.lock:
            if op.f == "read":
                v = self.view().get(op.key)
                return dataclasses.replace(ok, value=list(v) if isinstance(v, list) else v)
            if op.f == "write":
                if not self.lost():
                    self.data[op.key] = op.value
                self.replicate()
                return ok
            if op.f == "cas":
                old, new = op.value
                if self.data.get(op.key) != old:
                    return dataclasses.replace(op, type=FAIL, error="mismatch")
                self.data[op.key] = new
                self.writes += 1
                self.replicate()
                return ok
            if op.f in ("add", "append"):
                if not self.lost():
                    self.data.setdefault(op.key, []).append(op.value)
                self.replicate()
                return ok
            if op.f == "txn":
                return dataclasses.replace(ok, value=self.txn(op.value))
            if op.f == "enqueue":
                if not self.lost():
                    self.queue.append(op.value)
                return ok
            if op.f == "dequeue":
                return dataclasses.replace(ok, value=self.queue.popleft() if self.queue else None)
        return dataclasses.replace(op, type=FAIL, error=f"unknown f {op.f}")


    def txn(self, mops: list[list[Any]]) -> list[list[Any]]:
        """A transaction, whole under the lock; with `lag` its reads come from the stale copy."""
        out: list[list[Any]] = []
        for f, k, v in mops:
            key = f"txn{k}"
            if f == "r":
                seen = self.view().get(key)
                out.append([f, k, list(seen) if isinstance(seen, list) else seen])
            elif f == "append":
                self.data.setdefault(key, []).append(v)
                out.append([f, k, v])
            else:
                self.data[key] = v
                out.append([f, k, v])
        return out


class StoreClient:
    def __init__(self, store: Store) -> None:
        self.store = store

    def open(self, test: Test, node: str) -> StoreClient:
        return StoreClient(self.store)

    def invoke(self, test: Test, op: Op) -> Op:
        return self.store.apply(op)

    def close(self, test: Test) -> None:
        pass


class StoreDB:
    """The DB around a Store: nothing to install, and leaderless: no primaries, no status, no
    process faults (the generic workloads must not need them)."""

    def __init__(self, spec: TestSpec | None = None, store: Store | None = None) -> None:
        opts = (spec.options if spec is not None else {}) or {}
        self.store = store or Store(lag=float(opts.get("store_lag", 0.0)),
                                    lose_every=int(opts.get("store_lose_every", 0)))

    def setup(self, test: Test, node: str) -> None: ...
    def teardown(self, test: Test, node: str) -> None: ...

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> StoreClient:
        return StoreClient(self.store)

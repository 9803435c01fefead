"""In-process DB, Client, Nemesis and Checker that obey the contracts, for driving the runner
without a cluster. They record every call so tests can check the phase order."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jepsen_py import generator as gen
from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.workload import Workload


class Calls:
    """A thread-safe call log."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, Any]] = []

    def add(self, what: str, arg: Any = None) -> None:
        with self.lock:
            self.items.append((what, arg))

    def names(self) -> list[str]:
        with self.lock:
            return [w for w, _ in self.items]


class Register:
    """The system under test: one register per key. `invoke_delay` makes ops take time."""

    def __init__(self, invoke_delay: float = 0.0) -> None:
        self.lock = threading.Lock()
        self.values: dict[Any, Any] = {}
        self.invoke_delay = invoke_delay
        self.leader = "n1"
        self.term = 1
        self.in_flight = 0
        self.max_in_flight = 0


class RegisterClient:
    def __init__(self, register: Register, calls: Calls, node: str | None = None,
                 barrier: threading.Barrier | None = None) -> None:
        self.register = register
        self.calls = calls
        self.node = node
        self.barrier = barrier

    def open(self, test: Test, node: str) -> RegisterClient:
        self.calls.add("client.open", node)
        return RegisterClient(self.register, self.calls, node, self.barrier)

    def invoke(self, test: Test, op: Op) -> Op:
        r = self.register
        with r.lock:
            r.in_flight += 1
            r.max_in_flight = max(r.max_in_flight, r.in_flight)
        try:
            if self.barrier is not None:
                self.barrier.wait(timeout=10)  # only passes when every client is inside invoke at once
            if r.invoke_delay:
                time.sleep(r.invoke_delay)
            if op.f == "write":
                with r.lock:
                    r.values[op.key] = op.value
                return dataclasses.replace(op, type=OK, node=self.node)
            if op.f == "read":
                with r.lock:
                    v = r.values.get(op.key)
                return dataclasses.replace(op, type=OK, value=v, node=self.node,
                                           meta={"role": "leader" if self.node == r.leader else "follower",
                                                 "term": r.term, "leader": r.leader})
            if op.f == "fail":
                return dataclasses.replace(op, type=FAIL, error="refused")
            if op.f == "info":
                return dataclasses.replace(op, type=INFO, error="maybe")
            if op.f == "hang":
                time.sleep(float(op.value))
                return dataclasses.replace(op, type=OK)
            if op.f == "raise":
                raise ConnectionError("boom")
            return dataclasses.replace(op, type=FAIL, error=f"unknown f {op.f}")
        finally:
            with r.lock:
                r.in_flight -= 1

    def close(self, test: Test) -> None:
        self.calls.add("client.close", self.node)


class StaleReplica:
    """A register whose replica on `stale_node` stopped applying writes (it serves what it had:
    stale reads), and whose link to that node loses the first `lost` requests sent over it."""

    def __init__(self, *, stale_node: str = "n3", lost: int = 1, timeout: float = 0.05) -> None:
        self.lock = threading.Lock()
        self.values: dict[Any, Any] = {}
        self.stale_node = stale_node
        self.lost = lost
        self.timeout = timeout
        self.opened: list[str] = []


class StuckConnectionClient:
    """One connection to one node. A request lost on it (sent while its node was cut off) is never
    answered, and every later request waits behind it until the client gives up after `timeout`
    (info), as on a TCP stream whose head request is stuck. A new client is a new connection."""

    def __init__(self, replica: StaleReplica, node: str | None = None, *, reuse: bool = False) -> None:
        self.replica = replica
        self.node = node
        self.reuse = reuse
        self.stuck = False

    def open(self, test: Test, node: str) -> StuckConnectionClient:
        with self.replica.lock:
            self.replica.opened.append(node)
        return StuckConnectionClient(self.replica, node, reuse=self.reuse)

    def reusable(self, test: Test) -> bool:
        return self.reuse

    def _send(self, op: Op) -> Op | None:
        """The completion if the node answers; None if the request is stuck."""
        r = self.replica
        with r.lock:
            if not self.stuck and self.node == r.stale_node and r.lost > 0:
                r.lost -= 1
                self.stuck = True
            if self.stuck:
                return None
            if op.f == "write":
                r.values[op.key] = op.value
                return dataclasses.replace(op, type=OK, node=self.node)
            v = None if self.node == r.stale_node else r.values.get(op.key)
            return dataclasses.replace(op, type=OK, value=v, node=self.node)

    def invoke(self, test: Test, op: Op) -> Op:
        done = self._send(op)
        if done is None:
            time.sleep(self.replica.timeout)
            return dataclasses.replace(op, type=INFO, error="timeout", node=self.node)
        return done

    def close(self, test: Test) -> None:
        self.stuck = False


class StaleReplicaDB:
    """A DB around a StaleReplica: nothing to install; its clients are StuckConnectionClients."""

    def __init__(self, spec: TestSpec | None = None, *, replica: StaleReplica | None = None,
                 reuse: bool = False) -> None:
        self.replica = replica or StaleReplica()
        self.reuse = reuse

    def setup(self, test: Test, node: str) -> None: ...
    def teardown(self, test: Test, node: str) -> None: ...

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> StuckConnectionClient:
        return StuckConnectionClient(self.replica, reuse=self.reuse)


def stale_reads(history: Sequence[Op]) -> list[Op]:
    """Ok reads that returned an older value than a write completed before the read was invoked."""
    done: dict[Any, tuple[int, Any]] = {}  # key -> (completion time, value) of the latest ok write
    invokes: dict[Any, Op] = {}
    out = []
    for op in history:
        if op.type == "invoke":
            invokes[op.process] = op
            continue
        inv = invokes.pop(op.process, None)
        if op.f == "write" and op.type == OK:
            done[op.key] = (op.time, op.value)
        elif op.f == "read" and op.type == OK and inv is not None:
            latest = done.get(op.key)
            if latest is not None and latest[0] < inv.time and op.value != latest[1]:
                out.append(op)
    return out


class FakeDB:
    def __init__(self, spec: TestSpec | None = None, *, register: Register | None = None,
                 calls: Calls | None = None, barrier: threading.Barrier | None = None,
                 log_dir: Path | None = None, fail_setup_on: str | None = None) -> None:
        self.register = register or Register()
        self.calls = calls or Calls()
        self.barrier = barrier
        self.log_dir = log_dir
        self.fail_setup_on = fail_setup_on

    def setup(self, test: Test, node: str) -> None:
        self.calls.add("db.setup", node)
        if node == self.fail_setup_on:
            raise RuntimeError(f"cannot install on {node}")
        if self.log_dir is not None:
            (self.log_dir / f"{node}.log").write_text(f"node {node} log\n")

    def teardown(self, test: Test, node: str) -> None:
        self.calls.add("db.teardown", node)

    def start(self, test: Test, node: str) -> None: ...
    def kill(self, test: Test, node: str) -> None: ...
    def pause(self, test: Test, node: str) -> None: ...
    def resume(self, test: Test, node: str) -> None: ...

    def primaries(self, test: Test) -> list[str]:
        self.calls.add("db.primaries")
        return [self.register.leader]

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        r = self.register
        return {"role": "leader" if node == r.leader else "follower", "term": r.term, "leader": r.leader}

    def log_files(self, test: Test, node: str) -> list[str]:
        if self.log_dir is None:
            return []
        return [str(self.log_dir / f"{node}.log")]

    def client(self, workload: str) -> RegisterClient:
        return RegisterClient(self.register, self.calls, None, self.barrier)


class FakeNemesis:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.active = False

    def fs(self) -> frozenset[str]:
        return frozenset({"start", "stop"})

    def setup(self, test: Test) -> None:
        self.calls.add("nemesis.setup")

    def invoke(self, test: Test, op: Op) -> Op:
        self.calls.add("nemesis.invoke", op.f)
        self.active = op.f == "start"
        return dataclasses.replace(op, type=INFO, value={"did": op.f, "nodes": ["n1"]})

    def heal(self, test: Test) -> None:
        self.calls.add("nemesis.heal")
        self.active = False

    def teardown(self, test: Test) -> None:
        self.calls.add("nemesis.teardown")


class ReadsSeeWritesChecker:
    """Valid when every ok read returned None or a value some write invoked before it completed."""

    name = "reads-see-writes"

    def __init__(self, calls: Calls | None = None) -> None:
        self.calls = calls

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        if self.calls is not None:
            self.calls.add("checker.check")
        written: set[Any] = set()
        bad = []
        for op in history:
            if not isinstance(op.process, int):
                continue
            if op.f == "write" and op.type == "invoke":
                written.add((op.key, op.value))
            if (op.f == "read" and op.type == OK and op.value is not None
                    and (op.key, op.value) not in written):
                bad.append(op.index)
        anomalies = [{"kind": "phantom-read", "ops": bad, "explanation": "never written"}] if bad else []
        return {"valid": not bad, "reads": sum(1 for o in history if o.f == "read" and o.type == OK),
                "anomalies": anomalies}


def register_workload(*, calls: Calls | None = None, keys: int = 3, final: bool = True,
                      generator: gen.Generator | None = None, checker: Any = None) -> Workload:
    counter = iter(range(10**9))

    def write(ctx: gen.Context) -> dict[str, Any]:
        return {"f": "write", "key": ctx.rng.randrange(keys), "value": next(counter)}

    def read(ctx: gen.Context) -> dict[str, Any]:
        return {"f": "read", "key": ctx.rng.randrange(keys)}

    final_gen = gen.defer(lambda ctx: [{"f": "read", "key": k, "node": n}
                                       for k in range(keys) for n in ctx.nodes]) if final else None
    return Workload(
        name="register",
        generator=generator if generator is not None else gen.mix(write, read),
        final_generator=final_gen,
        checkers=[checker if checker is not None else ReadsSeeWritesChecker(calls)],
    )


def make_spec(tmp: Path, **kw: Any) -> TestSpec:
    base: dict[str, Any] = dict(
        name="register-fake", workload="register", nemesis=[], nodes=["n1", "n2", "n3"],
        time_limit=0.5, concurrency=6, rate=0.0, nemesis_interval=0.1, seed=7, backend="none",
        read_mode="read-index", bugs=[], db="tests.jepsen_py.fakes:FakeDB", results_dir=tmp / "results",
        op_timeout=2.0, recovery_timeout=2.0,
    )
    base.update(kw)
    return TestSpec(**base)

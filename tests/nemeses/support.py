"""Helpers for nemesis tests: real containers running a small probe server (probe_server.py) under
libfaketime, behind a DB that obeys the same contract as jepsen_py.raftdb.RaftMetadataDB."""

from __future__ import annotations

import json
import logging
import random
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.protocols import Test, TestSpec

PROBE_PORT = 7700
HERE = Path(__file__).parent
# How long a live probe may take to answer, and how long a probe may take to start or die: bounds on a
# hang, not expectations (containers share 2 cores with the rest of the suite). A check that a node
# does NOT answer passes its own short timeout.
ANSWER_TIMEOUT_S = 10.0
START_TIMEOUT_S = 60.0


def make_spec(nodes: list[str], tmp: Path, **kw: Any) -> TestSpec:
    base: dict[str, Any] = dict(
        name="nemesis-test", workload="probe", nemesis=[], nodes=nodes, time_limit=10, concurrency=1,
        rate=0, nemesis_interval=1, seed=7, backend="docker", read_mode="read-index", bugs=[], db="",
        results_dir=tmp,
    )
    base.update(kw)
    return TestSpec(**base)


def make_test(spec: TestSpec, tmp: Path) -> Test:
    return Test(spec=spec, store_dir=tmp, log=logging.getLogger("nemesis-test"), rng=random.Random(spec.seed))


class ProbeDB:
    """Runs probe_server.py on each node under libfaketime; signals go to its pidfile."""

    DIR = "/opt/probe"
    ports = [PROBE_PORT]

    def __init__(self, spec: TestSpec) -> None:
        self.spec = spec
        self.leader: str | None = None  # what primaries() claims, set by a test

    def dir(self, test: Test, node: str) -> str:
        """The node's own directory (the local backend's nodes share one filesystem)."""
        return getattr(test.remotes[node], "workdir", None) or self.DIR

    def pidfile(self, test: Test, node: str) -> str:
        return f"{self.dir(test, node)}/probe.pid"

    def faketime_file(self, test: Test, node: str) -> str:
        from jepsen_py.nemeses.clock import faketime_file

        return faketime_file(self.dir(test, node))

    def setup(self, test: Test, node: str) -> None:
        from jepsen_py.nemeses.clock import write_offset

        r = test.remotes[node]
        d = self.dir(test, node)
        r.exec(["mkdir", "-p", f"{d}/data"])
        r.upload(HERE / "probe_server.py", f"{d}/probe_server.py")
        write_offset(r, self.faketime_file(test, node), 0.0)
        self.start(test, node)

    def start(self, test: Test, node: str) -> None:
        from jepsen_py.nemeses.clock import faketime_env

        r = test.remotes[node]
        if r.signal(self.pidfile(test, node), "0"):
            return
        d = self.dir(test, node)
        r.start_daemon(["python3", f"{d}/probe_server.py", node, str(PROBE_PORT), f"{d}/data"],
                       pidfile=self.pidfile(test, node), logfile=f"{d}/probe.log",
                       env=faketime_env(self.faketime_file(test, node)), cwd=d)
        wait_for(lambda: self.status(test, node) is not None, START_TIMEOUT_S, f"probe on {node} to answer")

    def kill(self, test: Test, node: str) -> None:
        r = test.remotes[node]
        r.signal(self.pidfile(test, node), "KILL")
        wait_for(lambda: not r.signal(self.pidfile(test, node), "0"), START_TIMEOUT_S,
                 f"probe on {node} to die")

    def pause(self, test: Test, node: str) -> None:
        test.remotes[node].signal(self.pidfile(test, node), "STOP")

    def resume(self, test: Test, node: str) -> None:
        test.remotes[node].signal(self.pidfile(test, node), "CONT")

    def teardown(self, test: Test, node: str) -> None:
        r = test.remotes[node]
        r.signal(self.pidfile(test, node), "CONT")
        r.signal(self.pidfile(test, node), "KILL")
        r.exec(["rm", "-rf", self.dir(test, node)], check=False)

    def status(self, test: Test, node: str, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any] | None:
        host, port = test.backend.client_endpoint(node, PROBE_PORT)  # type: ignore[union-attr]
        return probe(host, port, timeout)

    def primaries(self, test: Test) -> list[str]:
        return [self.leader] if self.leader else []

    def log_files(self, test: Test, node: str) -> list[str]:
        return [f"{self.dir(test, node)}/probe.log"]

    def client(self, workload: str) -> Any:
        raise NotImplementedError("the probe DB has no workload clients")


def probe(host: str, port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """One request to a probe server; None when it does not answer in time."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"?\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    return None
                buf += chunk
            return json.loads(buf)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class ClockReading:
    """A node's clocks read over the network, against the controller's clocks at the middle of the
    round trip: however slow the answer, the node read its clocks within half a round trip of it."""

    node_wall: float
    node_mono: float
    wall: float  # the controller's time.time() at the middle of the round trip
    mono: float  # the controller's time.monotonic() then
    half_trip: float

    @property
    def skew(self) -> float:
        """The node's wall clock minus the controller's, within +-half_trip."""
        return self.node_wall - self.wall


def read_clock(test: Test, node: str) -> ClockReading:
    wall0, mono0 = time.time(), time.monotonic()
    s = test.db.status(test, node)
    wall1, mono1 = time.time(), time.monotonic()
    assert s is not None, f"{node} did not answer"
    return ClockReading(s["time"], s["mono"], (wall0 + wall1) / 2, (mono0 + mono1) / 2, (mono1 - mono0) / 2)


def wait_for(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def peer_can_reach(test: Test, src: str, dst: str, timeout: float = 1.0) -> bool:
    """Whether `src` can open a TCP connection to `dst`'s probe port, tested from inside `src`."""
    addr = test.backend.peer_address(dst)  # type: ignore[union-attr]
    code = ("import socket, sys\n"
            "try:\n"
            "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))\n"
            "except OSError:\n    sys.exit(1)\n")
    res = test.remotes[src].exec(["python3", "-c", code, addr, str(PROBE_PORT), str(timeout)], check=False,
                                 timeout=timeout + 10)
    return res.exit_code == 0

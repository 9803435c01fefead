"""A cluster of real node processes on 127.0.0.1: what the cluster tests and the benchmark run.

Each node is `python3 -m cluster.node` in its own process with its own data dir under `base_dir`;
ports are picked free on loopback. kill() is SIGKILL (a crash), stop() is SIGTERM (a clean stop).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jepsen_py import cluster
from jepsen_py.cluster.client import ClusterClient, ClusterError

HOST = "127.0.0.1"
#: the directory holding the `cluster` package: where `python3 -m cluster.node` is started
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cluster.__file__)))


def free_ports(n: int) -> list[int]:
    """n distinct TCP ports free on loopback right now (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class LocalNode:
    id: str
    peer_port: int
    client_port: int
    data_dir: str
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def log_file(self) -> str:
        return os.path.join(self.data_dir, "node.log")


@dataclass
class LocalCluster:
    """n nodes n1..nN on loopback. Use as a context manager so every process is reaped."""

    n: int
    base_dir: str
    read_mode: str = "read-index"
    tick_ms: int = 50
    election_tick: int = 10
    extra_args: Sequence[str] = ()
    nodes: dict[str, LocalNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._pick_ports()

    def _pick_ports(self) -> None:
        ports = free_ports(2 * self.n)
        for i in range(self.n):
            nid = f"n{i + 1}"
            self.nodes[nid] = LocalNode(
                id=nid,
                peer_port=ports[2 * i],
                client_port=ports[2 * i + 1],
                data_dir=os.path.join(self.base_dir, nid),
            )

    @property
    def peers_arg(self) -> str:
        return ",".join(f"{n.id}={HOST}:{n.peer_port}" for n in self.nodes.values())

    def argv(self, nid: str) -> list[str]:
        n = self.nodes[nid]
        return [
            sys.executable, "-m", "cluster.node",
            "--id", nid,
            "--peers", self.peers_arg,
            "--data-dir", n.data_dir,
            "--client-port", str(n.client_port),
            "--client-host", HOST,
            "--read-mode", self.read_mode,
            "--tick-ms", str(self.tick_ms),
            "--election-tick", str(self.election_tick),
            *self.extra_args,
        ]

    def start(self, nid: str) -> None:
        n = self.nodes[nid]
        os.makedirs(n.data_dir, exist_ok=True)
        err = open(os.path.join(n.data_dir, "stderr.log"), "ab")  # noqa: SIM115 - handed to the child
        try:
            n.proc = subprocess.Popen(self.argv(nid), cwd=REPO_ROOT, stdout=err, stderr=err,
                                      stdin=subprocess.DEVNULL)
        finally:
            err.close()
        n.starts += 1

    def start_all(self, attempts: int = 3) -> None:
        """Starts every node; if a fresh cluster loses a port race (another process took a port
        between free_ports() and the bind), it picks new ports and starts again."""
        for attempt in range(attempts):
            for nid in self.nodes:
                self.start(nid)
            lost = self._wait_listening()
            if not lost:
                return
            fresh = all(n.starts == 1 for n in self.nodes.values())
            if not fresh or attempt == attempts - 1:
                raise RuntimeError(f"{', '.join(lost)} could not listen: {self.stderr_text(lost[0])[-500:]}")
            self.close()
            for n in self.nodes.values():
                shutil.rmtree(n.data_dir, ignore_errors=True)
                n.starts = 0
            self._pick_ports()

    def _wait_listening(self, timeout: float = 20.0) -> list[str]:
        """Waits until every node logged that it listens; returns those that exited instead."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [nid for nid in self.nodes if not self.alive(nid)]
            if dead:
                return dead
            if all("listening:" in self.log_text(nid) for nid in self.nodes):
                return []
            time.sleep(0.05)
        return []

    def kill(self, nid: str) -> None:
        """SIGKILL: the process dies mid-whatever, as in a crash."""
        p = self.nodes[nid].proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def stop(self, nid: str) -> None:
        p = self.nodes[nid].proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def alive(self, nid: str) -> bool:
        p = self.nodes[nid].proc
        return p is not None and p.poll() is None

    def client(self, nid: str, timeout: float = 5.0) -> ClusterClient:
        return ClusterClient(HOST, self.nodes[nid].client_port, timeout=timeout)

    def status(self, nid: str, timeout: float = 1.0) -> dict[str, Any] | None:
        """The node's status, or None if it does not answer."""
        try:
            with self.client(nid, timeout) as c:
                return c.status()
        except ClusterError:
            return None

    def wait_for_leader(self, timeout: float = 15.0, among: Sequence[str] | None = None) -> str:
        """The id of a leader that every live node in `among` agrees on (same leader, same term)."""
        ids = list(among or [n for n in self.nodes if self.alive(n)])
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            sts = {nid: self.status(nid) for nid in ids}
            last = sts
            leaders = {(s["leader"], s["term"]) for s in sts.values() if s is not None}
            if len(leaders) == 1 and all(s is not None for s in sts.values()):
                (leader, _term), = leaders
                if leader is not None and leader in ids and sts[leader]["role"] == "leader":
                    return leader
            time.sleep(0.05)
            dead = [nid for nid in ids if not self.alive(nid)]
            if dead:
                raise RuntimeError(f"{dead[0]} exited: {self.stderr_text(dead[0])[-800:]}")
        raise TimeoutError(f"no agreed leader among {ids} within {timeout}s; last statuses: {last}")

    def log_text(self, nid: str) -> str:
        try:
            with open(self.nodes[nid].log_file, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def stderr_text(self, nid: str) -> str:
        """What the node process printed (a traceback here means it crashed)."""
        try:
            with open(os.path.join(self.nodes[nid].data_dir, "stderr.log"), encoding="utf-8",
                      errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def close(self) -> None:
        for nid in self.nodes:
            with contextlib.suppress(Exception):
                self.kill(nid)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

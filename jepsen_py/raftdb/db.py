"""RaftMetadataDB: the DB contract (jepsen_py.protocols.DB) for our cluster, on any backend.

setup uploads the cluster/ package (standard library only, so nothing is installed on the node) and
starts `python3 -m cluster.node` as a daemon under libfaketime, whose timestamp file the clock nemesis
rewrites at run time. start/kill/pause/resume are signals on the daemon's pidfile; a restart reuses
the node's data directory, so kill tests recovery from disk. primaries() and status() ask the nodes
themselves over the client API. teardown stops the daemon and wipes its directory.

Layout on a node, under DIR (or the remote's own `workdir`, e.g. per node for the local backend):
  code/cluster/   the uploaded package      data/   WAL and snapshots
  node.log        the node's own log        node.out   its stdout/stderr (tracebacks)
  node.pid
  faketime.offset libfaketime's timestamp file ("+0.000" when no clock fault is in force)
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jepsen_py import cluster
from jepsen_py.cluster.bugs import NAMES as BUG_NAMES
from jepsen_py.cluster.client import ClusterClient, ClusterError, Timeout
from jepsen_py.cluster.readmodes import READ_MODES
from jepsen_py.errors import BadInput, FrameworkFailure
from jepsen_py.nemeses.clock import FAKETIME_NAME, faketime_env, faketime_file, offset_text
from jepsen_py.protocols import Client, Remote, Test, TestSpec
from jepsen_py.seeds import node_seed
from jepsen_py.workloads import cluster_client


class RaftMetadataDB:
    """Our Raft metadata cluster as the system under test."""

    CLIENT_PORT = 9092
    PEER_PORT = 9093
    DIR = "/opt/jepsen-py"
    ports: list[int] = [CLIENT_PORT]

    @staticmethod
    def known_bugs() -> tuple[str, ...]:
        """The --bug names the node accepts; `run` checks them before it provisions anything."""
        return BUG_NAMES

    @staticmethod
    def read_modes() -> tuple[str, ...]:
        """The --read-mode values the node serves, read-index (linearizable) first: the default."""
        return ("read-index", *(m for m in READ_MODES if m != "read-index"))

    def __init__(self, spec: TestSpec, *, leader_timeout: float = 30.0) -> None:
        if spec.read_mode not in READ_MODES:
            raise BadInput(f"--read-mode: unknown mode {spec.read_mode!r} "
                           f"(choose from {', '.join(READ_MODES)})")
        self.spec = spec
        self.leader_timeout = leader_timeout
        self.status_timeout = 1.0
        self._lock = threading.Lock()
        self._clients = threading.local()
        self._stage: Path | None = None
        self._stage_tmp: tempfile.TemporaryDirectory[str] | None = None

    # ---- paths ----------------------------------------------------------------------------------

    def dir(self, test: Test, node: str) -> str:
        return str(getattr(test.remotes.get(node), "workdir", None) or self.DIR)

    def _path(self, test: Test, node: str, *parts: str) -> str:
        return posixpath.join(self.dir(test, node), *parts)

    def pidfile(self, test: Test, node: str) -> str:
        return self._path(test, node, "node.pid")

    def logfile(self, test: Test, node: str) -> str:
        return self._path(test, node, "node.log")

    def outfile(self, test: Test, node: str) -> str:
        return self._path(test, node, "node.out")

    def faketime_file(self, test: Test, node: str) -> str:
        return faketime_file(self.dir(test, node))

    def _remote(self, test: Test, node: str) -> Remote:
        try:
            return test.remotes[node]
        except KeyError:
            raise FrameworkFailure(f"no remote for node {node!r} (backend not set up?)") from None

    # ---- lifecycle ------------------------------------------------------------------------------

    def argv(self, test: Test, node: str) -> list[str]:
        """The node's command line; peers are addressed as the backend says peers reach them."""
        assert test.backend is not None
        peers = ",".join(f"{n}={test.backend.peer_address(n)}:{self.PEER_PORT}" for n in test.nodes)
        argv = ["python3", "-m", "cluster.node", "--id", node, "--peers", peers,
                "--data-dir", self._path(test, node, "data"),
                "--client-port", str(self.CLIENT_PORT), "--client-host", "0.0.0.0",
                "--read-mode", self.spec.read_mode, "--log-file", self.logfile(test, node),
                "--seed", str(node_seed(self.spec.seed, test.nodes.index(node)))]
        for bug in self.spec.bugs:
            argv += ["--bug", bug]
        return argv

    def _staging(self) -> Path:
        """A local copy of what every node gets (code, empty data dir, the clock file at +0), made
        once, so setting up a node is a single upload."""
        with self._lock:
            if self._stage is None:

                self._stage_tmp = tempfile.TemporaryDirectory(prefix="jepsen-py-db-")
                root = Path(self._stage_tmp.name) / "node"
                shutil.copytree(Path(cluster.__file__).parent, root / "code" / "cluster",
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                (root / "data").mkdir()
                (root / FAKETIME_NAME).write_text(offset_text(0.0))
                self._stage = root
            return self._stage

    def setup(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        if not getattr(remote, "fresh", False):
            # A node that outlived an earlier run (ssh hosts, a crashed controller) starts clean:
            # no old daemon holding the ports, no old cluster's data to recover.
            self.teardown(test, node)
        remote.upload(self._staging(), self.dir(test, node))
        self._launch(test, node)
        self.wait_for_leader(test, node)

    def start(self, test: Test, node: str) -> None:
        """Starts the daemon unless it runs already (a paused process counts as running)."""
        if self._remote(test, node).signal(self.pidfile(test, node), "0"):
            return
        self._launch(test, node)

    def _launch(self, test: Test, node: str) -> None:
        env = {**faketime_env(self.faketime_file(test, node)),
               "PYTHONPATH": self._path(test, node, "code"), "PYTHONUNBUFFERED": "1"}
        self._remote(test, node).start_daemon(
            self.argv(test, node), pidfile=self.pidfile(test, node), logfile=self.outfile(test, node),
            env=env, cwd=self._path(test, node, "code"))

    def kill(self, test: Test, node: str) -> None:
        """SIGKILL, then wait until the process is really gone so a restart cannot race it."""
        remote = self._remote(test, node)
        pidfile = self.pidfile(test, node)
        remote.signal(pidfile, "KILL")
        deadline = time.monotonic() + 10
        while remote.signal(pidfile, "0"):
            if time.monotonic() > deadline:
                raise FrameworkFailure(f"{node}: the node process survived SIGKILL for 10 s")
            time.sleep(0.05)

    def pause(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(self.pidfile(test, node), "STOP")

    def resume(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(self.pidfile(test, node), "CONT")

    def teardown(self, test: Test, node: str) -> None:
        remote = test.remotes.get(node)
        if remote is None:
            return
        self.kill(test, node)  # SIGKILL ends a stopped (paused) process too
        remote.exec(["rm", "-rf", self.dir(test, node)], check=False, timeout=60)

    # ---- what the nodes say ---------------------------------------------------------------------

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        """The node's own status, or None when it does not answer within status_timeout.

        The observer asks every node ~10 times a second, so each thread keeps one connection per
        node; a cached connection that fails gets one retry on a fresh one before the node counts
        as silent (it may have been restarted, which closes the old connection)."""
        if test.backend is None:
            return None
        cache: dict[str, ClusterClient] = self._clients.__dict__.setdefault("by_node", {})
        for _ in range(2):
            client = cache.pop(node, None)
            fresh = client is None
            if client is None:
                host, port = test.backend.client_endpoint(node, self.CLIENT_PORT)
                client = ClusterClient(host, port, timeout=self.status_timeout)
            try:
                answer = client.status()
            except (ClusterError, OSError) as e:
                client.close()
                if fresh or isinstance(e, Timeout):
                    return None  # a silent (paused, cut off) node: no second wait
                continue
            cache[node] = client
            return answer
        return None

    def statuses(self, test: Test, nodes: Sequence[str] | None = None) -> dict[str, dict[str, Any] | None]:
        nodes = list(nodes if nodes is not None else test.nodes)
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            return dict(zip(nodes, pool.map(lambda n: self.status(test, n), nodes), strict=True))

    def primaries(self, test: Test) -> list[str]:
        return sorted(n for n, s in self.statuses(test).items() if s and s.get("role") == "leader")

    def wait_for_leader(self, test: Test, node: str) -> str:
        """Waits until `node` answers and knows a leader; returns the leader's name."""
        deadline = time.monotonic() + self.leader_timeout
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            last = self.status(test, node)
            if last and last.get("leader"):
                return str(last["leader"])
            if last is None and not self._remote(test, node).signal(self.pidfile(test, node), "0"):
                tail = self._tail_log(test, node)
                raise FrameworkFailure(f"{node}: the node process exited during setup: {tail}")
            time.sleep(0.1)
        raise FrameworkFailure(f"{node}: no leader within {self.leader_timeout:.0f} s (last status: {last})")

    def _tail_log(self, test: Test, node: str) -> str:
        res = self._remote(test, node).exec(["tail", "-n", "5", self.outfile(test, node)], check=False)
        return " | ".join(res.stdout.strip().splitlines()) or "(empty log)"

    def log_files(self, test: Test, node: str) -> list[str]:
        return [self.logfile(test, node), self.outfile(test, node)]

    def client(self, workload: str) -> Client:
        return cluster_client(workload, self)

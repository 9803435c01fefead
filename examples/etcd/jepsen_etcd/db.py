"""EtcdDB: etcd's lifecycle on the test's nodes, its leader and each member's view, and the
register client.

The nodes run the etcd image (jepsen_etcd.image, derived from the node image); on the docker
backend the DB picks that image itself unless --docker-image names another. Every member listens
for clients on 2379 (published to the controller) and for peers on 2380. Its settings are
`--db-option`s (see `db_options()`): reads=linearizable (default) or serializable (served from the
member's own state), pre-vote=true (default) or false. Faults: partitions (iptables, as for any
DB), kill/start, pause/resume; the leader comes from each member's own status
(`/v3/maintenance/status`, what `etcdctl endpoint status` shows).
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from jepsen_etcd.client import CLIENT_PORT, EtcdRegisterClient, EtcdUnreachable, post
from jepsen_py.errors import BadInput
from jepsen_py.protocols import Remote, Test, TestSpec

PEER_PORT = 2380
DATA_DIR = "/var/lib/jepsen-etcd"
PIDFILE = "/var/run/jepsen-etcd/etcd.pid"
LOGFILE = "/var/log/jepsen-etcd/etcd.log"
STATUS_TIMEOUT_S = 0.5


class EtcdDB:
    ports = (CLIENT_PORT,)

    @staticmethod
    def db_options() -> dict[str, str]:
        """The --db-option keys this DB takes, and what each sets."""
        return {"reads": "linearizable (default: through the leader's quorum) or serializable (a "
                         "member's own state, stale under a partition)",
                "pre-vote": "true (default) or false: etcd's --pre-vote"}

    @staticmethod
    def db_option_values() -> dict[str, tuple[str, ...]]:
        """The values `jepsen-py explore` may try for each setting: both read modes and PreVote on
        and off, so a search finds the weak configuration without being told which it is."""
        return {"reads": ("linearizable", "serializable"), "pre-vote": ("true", "false")}

    @staticmethod
    def workloads() -> tuple[str, ...]:
        """The workloads this DB's client speaks."""
        return ("register",)

    def __init__(self, spec: TestSpec) -> None:
        opts = spec.db_options
        reads = opts.get("reads", "linearizable")
        if reads not in ("linearizable", "serializable"):
            raise BadInput(f"--db-option reads: etcd serves linearizable or serializable reads, "
                           f"not {reads!r}")
        pre_vote = opts.get("pre-vote", "true")
        if pre_vote not in ("true", "false"):
            raise BadInput(f"--db-option pre-vote: true or false, not {pre_vote!r}")
        self.spec = spec
        self.serializable = reads == "serializable"
        self.pre_vote = pre_vote == "true"
        self.op_timeout = min(2.0, spec.op_timeout)
        self.token = f"jepsen-{spec.seed}"
        self.member_names: dict[str, str] = {}
        if spec.backend == "docker" and not spec.options.get("docker_image"):
            from jepsen_etcd.image import ensure_image

            spec.options["docker_image"] = ensure_image(spec.options.get("image_base"))

    # ---- lifecycle ----------------------------------------------------------------------------

    def _remote(self, test: Test, node: str) -> Remote:
        try:
            return test.remotes[node]
        except KeyError:
            raise BadInput(f"--backend {test.spec.backend}: etcd needs nodes to run on "
                           f"(docker, ssh or local)") from None

    def _argv(self, test: Test, node: str) -> list[str]:
        assert test.backend is not None
        addr = test.backend.peer_address
        cluster = ",".join(f"{n}=http://{addr(n)}:{PEER_PORT}" for n in test.nodes)
        return [
            "etcd", "--name", node, "--data-dir", DATA_DIR,
            "--listen-client-urls", f"http://0.0.0.0:{CLIENT_PORT}",
            "--advertise-client-urls", f"http://{addr(node)}:{CLIENT_PORT}",
            "--listen-peer-urls", f"http://0.0.0.0:{PEER_PORT}",
            "--initial-advertise-peer-urls", f"http://{addr(node)}:{PEER_PORT}",
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", self.token,
            "--heartbeat-interval", "100", "--election-timeout", "1000",
            # PreVote (etcd 3.5's default): a member cut off by a partition does not bump its term
            # over and over and depose the leader when it rejoins (3.4 leaves it off).
            f"--pre-vote={'true' if self.pre_vote else 'false'}",
        ]

    def setup(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        remote.exec(["rm", "-rf", DATA_DIR])
        self.start(test, node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.status(test, node) is not None:
                return
            time.sleep(0.2)
        raise RuntimeError(f"etcd on {node} did not answer within 30 s (see {LOGFILE})")

    def teardown(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        remote.signal(PIDFILE, "KILL")
        remote.exec(["rm", "-rf", DATA_DIR], check=False)

    def start(self, test: Test, node: str) -> None:
        self._remote(test, node).start_daemon(self._argv(test, node), pidfile=PIDFILE, logfile=LOGFILE)

    def kill(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(PIDFILE, "KILL")

    def pause(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(PIDFILE, "STOP")

    def resume(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(PIDFILE, "CONT")

    def log_files(self, test: Test, node: str) -> list[str]:
        return [LOGFILE]

    # ---- leadership ----------------------------------------------------------------------------

    def _names(self, test: Test, node: str) -> dict[str, str]:
        """member id -> node name, from the cluster's member list (asked once)."""
        if not self.member_names:
            assert test.backend is not None
            host, port = test.backend.client_endpoint(node, CLIENT_PORT)
            r = post(host, port, "/v3/cluster/member/list", {}, STATUS_TIMEOUT_S)
            self.member_names = {str(m["ID"]): m.get("name", "") for m in r.get("members", [])
                                 if m.get("name")}
        return self.member_names

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        """The member's own view: role, raft term and leader (by node name)."""
        assert test.backend is not None
        host, port = test.backend.client_endpoint(node, CLIENT_PORT)
        try:
            r = post(host, port, "/v3/maintenance/status", {}, STATUS_TIMEOUT_S)
            me = str(r["header"]["member_id"])
            leader = str(r.get("leader", "0"))
            names = self._names(test, node) if leader != "0" else {}
        except (EtcdUnreachable, TimeoutError, RuntimeError, KeyError, ValueError):
            return None
        return {"role": "leader" if leader == me else "follower",
                "term": int(r["header"].get("raft_term", 0)),
                "leader": names.get(leader)}

    def primaries(self, test: Test) -> list[str]:
        """The members that say they lead right now."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(test.nodes)) as pool:
            views = list(pool.map(lambda n: (n, self.status(test, n)), test.nodes))
        return [n for n, s in views if s is not None and s["role"] == "leader"]

    # ---- clients -------------------------------------------------------------------------------

    def client(self, workload: str) -> EtcdRegisterClient:
        if workload != "register":
            raise BadInput(f"--workload: the etcd example speaks the register workload, not {workload!r}")
        return EtcdRegisterClient(serializable=self.serializable, timeout=self.op_timeout)

"""RedisDB: one Redis primary and asynchronous replicas on the test's nodes, their roles, and the
register client.

The first node is the primary for the whole test; every other node is its replica (`replicaof`).
There is no failover (no Sentinel): a primary that is killed or cut off stays the primary, so
there are no leader terms, and a replica never takes over. Settings (`--db-option`):

  reads=primary      (default) every read goes to the primary
  reads=replica      a client reads from the node it is bound to: a replica answers from its own
                     copy, however far behind the primary it is
  persistence=none   (default) nothing on disk: a killed primary comes back empty
  persistence=aof    every write appended and fsync'd before the reply (appendfsync always)

On the docker backend the DB builds its image (jepsen_redis.image, FROM the node image) unless
--docker-image names another. Each node's status comes from `INFO replication`: role leader (the
primary) or follower, no term, the primary's name as leader, and the replication offset the node
has applied.
"""

from __future__ import annotations

import concurrent.futures
import posixpath
import time
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.protocols import Remote, Test, TestSpec
from jepsen_redis.client import PORT, Connection, RedisError, RedisRegisterClient, RedisUnreachable

DATA_DIR = "/var/lib/jepsen-redis"
CONF = "/etc/jepsen-redis/redis.conf"
PIDFILE = "/var/run/jepsen-redis/redis.pid"
LOGFILE = "/var/log/jepsen-redis/redis.log"
STATUS_TIMEOUT_S = 0.5
SETUP_TIMEOUT_S = 30.0


class RedisDB:
    ports = (PORT,)

    @staticmethod
    def db_options() -> dict[str, str]:
        return {
            "reads": "primary (default): every read from the primary; replica: each client reads "
                     "from its own node, a replica's possibly stale copy",
            "persistence": "none (default): in memory only; aof: every write fsync'd to an "
                           "append-only file before the reply",
        }

    @staticmethod
    def workloads() -> tuple[str, ...]:
        return ("register",)

    def __init__(self, spec: TestSpec) -> None:
        opts = spec.db_options
        reads = opts.get("reads", "primary")
        if reads not in ("primary", "replica"):
            raise BadInput(f"--db-option reads: primary or replica, not {reads!r}")
        persistence = opts.get("persistence", "none")
        if persistence not in ("none", "aof"):
            raise BadInput(f"--db-option persistence: none or aof, not {persistence!r}")
        if not spec.nodes:
            raise BadInput("redis needs at least one node")
        self.spec = spec
        self.replica_reads = reads == "replica"
        self.aof = persistence == "aof"
        self.primary = spec.nodes[0]
        self.op_timeout = min(2.0, spec.op_timeout)
        if spec.backend == "docker" and not spec.options.get("docker_image"):
            from jepsen_redis.image import ensure_image

            spec.options["docker_image"] = ensure_image(spec.options.get("image_base"))

    # ---- lifecycle ------------------------------------------------------------------------------

    def _remote(self, test: Test, node: str) -> Remote:
        try:
            return test.remotes[node]
        except KeyError:
            raise BadInput(f"--backend {test.spec.backend}: redis needs nodes to run on "
                           f"(docker, ssh or local)") from None

    def path(self, test: Test, node: str, path: str) -> str:
        """`path` on `node`: under the node's own directory on the local backend, where every node
        shares this host's file system (the remote's `workdir`), else as it is."""
        workdir = getattr(test.remotes.get(node), "workdir", None)
        return posixpath.join(workdir, path.lstrip("/")) if workdir else path

    def config(self, test: Test, node: str) -> str:
        """The node's redis.conf: the primary's, or a replica's pointing at the primary."""
        assert test.backend is not None
        lines = [
            "bind 0.0.0.0", f"port {PORT}", "protected-mode no", "daemonize no",
            f"dir {self.path(test, node, DATA_DIR)}", 'save ""',
            f"appendonly {'yes' if self.aof else 'no'}", "appendfsync always",
            # a replica whose link is down still answers reads, from what it has (Redis's default)
            "replica-serve-stale-data yes", "replica-read-only yes",
            "repl-timeout 5", "repl-ping-replica-period 1",
        ]
        if node != self.primary:
            lines.append(f"replicaof {test.backend.peer_address(self.primary)} {PORT}")
        return "\n".join(lines) + "\n"

    def setup(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        data = self.path(test, node, DATA_DIR)
        remote.exec(["rm", "-rf", data])
        remote.exec(["mkdir", "-p", data])
        remote.write_file(self.path(test, node, CONF), self.config(test, node))
        self.start(test, node)
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.status(test, node) is not None:
                return
            time.sleep(0.2)
        raise RuntimeError(f"redis on {node} did not answer within {SETUP_TIMEOUT_S:g} s "
                           f"(see {self.path(test, node, LOGFILE)})")

    def teardown(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        remote.signal(self.path(test, node, PIDFILE), "KILL")
        remote.exec(["rm", "-rf", *(self.path(test, node, p) for p in (DATA_DIR, CONF, PIDFILE))],
                    check=False)

    def start(self, test: Test, node: str) -> None:
        self._remote(test, node).start_daemon(
            ["redis-server", self.path(test, node, CONF)], pidfile=self.path(test, node, PIDFILE),
            logfile=self.path(test, node, LOGFILE))

    def kill(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(self.path(test, node, PIDFILE), "KILL")

    def pause(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(self.path(test, node, PIDFILE), "STOP")

    def resume(self, test: Test, node: str) -> None:
        self._remote(test, node).signal(self.path(test, node, PIDFILE), "CONT")

    def log_files(self, test: Test, node: str) -> list[str]:
        return [self.path(test, node, LOGFILE)]

    # ---- roles -----------------------------------------------------------------------------------

    def _info(self, test: Test, node: str) -> dict[str, str] | None:
        assert test.backend is not None
        host, port = test.backend.client_endpoint(node, PORT)
        conn = Connection(host, port, STATUS_TIMEOUT_S)
        try:
            text = conn.call("INFO", "replication")
        except (RedisUnreachable, RedisError, TimeoutError, ConnectionError):
            return None
        finally:
            conn.close()
        out = {}
        for line in str(text).splitlines():
            k, sep, v = line.partition(":")
            if sep:
                out[k.strip()] = v.strip()
        return out

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        """The node's own view: role leader (primary) or follower (replica), no term (Redis has
        none), the primary's node name as leader, and the replication offset it has applied."""
        info = self._info(test, node)
        if info is None:
            return None
        if info.get("role") == "master":
            return {"role": "leader", "term": None, "leader": node,
                    "applied": int(info.get("master_repl_offset", 0))}
        link = info.get("master_link_status", "down")
        return {"role": "follower", "term": None, "leader": self.primary, "link": link,
                "applied": int(info.get("slave_repl_offset", 0)) if link == "up" else None}

    def primaries(self, test: Test) -> list[str]:
        """The nodes that say they are the primary right now."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(test.nodes)) as pool:
            views = list(pool.map(lambda n: (n, self.status(test, n)), test.nodes))
        return [n for n, s in views if s is not None and s["role"] == "leader"]

    # ---- clients ---------------------------------------------------------------------------------

    def client(self, workload: str) -> RedisRegisterClient:
        if workload != "register":
            raise BadInput(f"--workload: the Redis example speaks the register workload, not {workload!r}")
        return RedisRegisterClient(primary=self.primary, replica_reads=self.replica_reads,
                                   timeout=self.op_timeout)

"""PostgresDB: one PostgreSQL server on the test's one node, its status, and the list-append client.

A single primary and nothing else: no replicas, no failover. A test of PostgreSQL's isolation
levels needs one server and many concurrent clients, not many nodes: the docker backend runs one
node (`--node-count 1`) and every client connects to it through its published port (raise
`--concurrency` for contention). More nodes would host nothing or replicas that no client reads,
so they are refused rather than pretended.

Settings (`--db-option`):

  isolation=read-committed    every transaction BEGIN ISOLATION LEVEL READ COMMITTED
  isolation=repeatable-read   .. REPEATABLE READ (snapshot isolation in PostgreSQL)
  isolation=serializable      (default) .. SERIALIZABLE (serializable snapshot isolation)

The server is Debian's PostgreSQL 15 (jepsen_postgres.image, FROM the node image) in a cluster
made by initdb in setup, trust authentication, fsync on. Capabilities: process (SIGKILL of every
postgres process, then a restart that runs crash recovery), pause (SIGSTOP/SIGCONT of every
postgres process), primaries and status (the node, when a connection answers).
"""

from __future__ import annotations

import time
from typing import Any

from jepsen_postgres.client import CREATE_TABLE, LEVELS, PORT, PostgresTxnClient, close_quietly, connect
from jepsen_py.errors import BadInput
from jepsen_py.protocols import Remote, Test, TestSpec

ROOT = "/var/lib/jepsen-postgres"
DATA_DIR = f"{ROOT}/data"
PIDFILE = "/var/run/jepsen-postgres/postgres.pid"
LOGFILE = "/var/log/jepsen-postgres/postgres.log"
BIN_ROOT = "/usr/lib/postgresql"
SYSTEM_USER = "postgres"
STATUS_TIMEOUT_S = 0.5
SETUP_TIMEOUT_S = 60.0
CONF = f"""
listen_addresses = '*'
port = {PORT}
unix_socket_directories = ''
max_connections = 200
fsync = on
synchronous_commit = on
# appends to a few hot rows deadlock often; found after 1 s by default, they stall every waiter
deadlock_timeout = '100ms'
"""
# Every address may connect without a password: the server is reachable only through the test's
# own containers and the port published on the controller's loopback.
HBA = """
host all all 0.0.0.0/0 trust
host all all ::/0 trust
"""


def as_postgres(argv: list[str]) -> list[str]:
    """`argv` run as the postgres system user (PostgreSQL refuses root). setpriv execs in place,
    so a daemon started through it keeps the pid start-stop-daemon recorded."""
    return ["setpriv", f"--reuid={SYSTEM_USER}", f"--regid={SYSTEM_USER}", "--init-groups", *argv]


class PostgresDB:
    ports = (PORT,)

    @staticmethod
    def db_options() -> dict[str, str]:
        return {"isolation": "read-committed, repeatable-read or serializable (default): the "
                             "isolation level every transaction begins with"}

    @staticmethod
    def workloads() -> tuple[str, ...]:
        return ("list-append",)

    def __init__(self, spec: TestSpec) -> None:
        isolation = spec.db_options.get("isolation", "serializable")
        if isolation not in LEVELS:
            raise BadInput(f"--db-option isolation: {', '.join(LEVELS)}, not {isolation!r}")
        if spec.backend != "docker":
            raise BadInput(f"--backend {spec.backend}: the postgres example runs on docker only")
        if len(spec.nodes) != 1:
            raise BadInput(f"postgres runs one server: give --node-count 1, not {len(spec.nodes)} "
                           f"(and --concurrency for more clients)")
        self.spec = spec
        self.isolation = isolation
        self.primary = spec.nodes[0]
        # per round trip, and a transaction makes several: below --op-timeout
        self.op_timeout = min(5.0, spec.op_timeout / 2)
        if not spec.options.get("docker_image"):
            from jepsen_postgres.image import ensure_image

            spec.options["docker_image"] = ensure_image(spec.options.get("image_base"))

    # ---- lifecycle ------------------------------------------------------------------------------

    def _remote(self, test: Test, node: str) -> Remote:
        return test.remotes[node]

    def _bin(self, remote: Remote, name: str) -> str:
        """A PostgreSQL program's path: Debian keeps them under /usr/lib/postgresql/<major>/bin."""
        majors = remote.exec(["ls", BIN_ROOT]).stdout.split()
        if not majors:
            raise RuntimeError(f"no PostgreSQL under {BIN_ROOT}: is this the postgres image?")
        major = max(majors, key=lambda m: int(m) if m.isdigit() else -1)
        return f"{BIN_ROOT}/{major}/bin/{name}"

    def setup(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        remote.exec(["rm", "-rf", ROOT])
        remote.exec(["mkdir", "-p", DATA_DIR])
        remote.exec(["chown", "-R", f"{SYSTEM_USER}:{SYSTEM_USER}", ROOT])
        remote.exec(as_postgres([self._bin(remote, "initdb"), "--pgdata", DATA_DIR, "--auth", "trust",
                                 "--username", "postgres", "--encoding", "UTF8", "--no-sync"]))
        conf = remote.exec(["cat", f"{DATA_DIR}/postgresql.conf"]).stdout
        remote.write_file(f"{DATA_DIR}/postgresql.conf", conf + CONF)
        hba = remote.exec(["cat", f"{DATA_DIR}/pg_hba.conf"]).stdout
        remote.write_file(f"{DATA_DIR}/pg_hba.conf", hba + HBA)
        remote.exec(["chown", "-R", f"{SYSTEM_USER}:{SYSTEM_USER}", ROOT])
        self.start(test, node)
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.status(test, node) is not None:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"postgres on {node} did not answer within {SETUP_TIMEOUT_S:g} s "
                               f"(see {LOGFILE})")
        conn = connect(test, node, 10.0)
        try:
            conn.run(CREATE_TABLE)
        finally:
            close_quietly(conn)

    def teardown(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        self.kill(test, node)
        deadline = time.monotonic() + 10
        while self._running(remote) and time.monotonic() < deadline:
            time.sleep(0.1)
        remote.exec(["rm", "-rf", ROOT, PIDFILE], check=False)

    def log_files(self, test: Test, node: str) -> list[str]:
        return [LOGFILE]

    # ---- process and pause: every postgres process, the postmaster and its backends -------------

    def _running(self, remote: Remote) -> bool:
        return remote.exec(["pgrep", "-u", SYSTEM_USER], check=False).exit_code == 0

    def _signal_all(self, test: Test, node: str, sig: str) -> None:
        self._remote(test, node).exec(["pkill", f"--signal={sig}", "-u", SYSTEM_USER], check=False)

    def start(self, test: Test, node: str) -> None:
        remote = self._remote(test, node)
        remote.start_daemon(as_postgres([self._bin(remote, "postgres"), "-D", DATA_DIR]),
                            pidfile=PIDFILE, logfile=LOGFILE)

    def kill(self, test: Test, node: str) -> None:
        """SIGKILL to the postmaster and every backend: a restart then finds no process attached
        to the old shared memory and runs crash recovery from the WAL."""
        self._signal_all(test, node, "KILL")

    def pause(self, test: Test, node: str) -> None:
        self._signal_all(test, node, "STOP")

    def resume(self, test: Test, node: str) -> None:
        self._signal_all(test, node, "CONT")

    # ---- roles -----------------------------------------------------------------------------------

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        """The server's view when a connection answers: the one primary, no term, and the WAL
        position it has written up to as `applied`."""
        try:
            conn = connect(test, node, STATUS_TIMEOUT_S)
        except Exception:
            return None
        try:
            rows = conn.run("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        except Exception:
            return None
        finally:
            close_quietly(conn)
        return {"role": "leader", "term": None, "leader": node, "applied": int(rows[0][0])}

    def primaries(self, test: Test) -> list[str]:
        return [self.primary] if self.status(test, self.primary) is not None else []

    # ---- clients ---------------------------------------------------------------------------------

    def client(self, workload: str) -> PostgresTxnClient:
        if workload != "list-append":
            raise BadInput(f"--workload: the postgres example speaks list-append, not {workload!r}")
        return PostgresTxnClient(primary=self.primary, isolation=self.isolation, timeout=self.op_timeout)

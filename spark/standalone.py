"""A standalone Spark cluster on this machine: a Master and one Worker started from PySpark's own
spark-class on 127.0.0.1, for the tests and benchmarks of `--master spark://...`.

The daemons choose their own ports (port 0) and the cluster reads them back from their logs. A port
found free beforehand can be taken by another process before the JVM binds it, and Spark then moves
to the next port without failing, so the caller would talk to someone else's server. The Master's
REST server, whose port is fixed (6066), is off for the same reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_MASTER_PORT = re.compile(r"Successfully started service 'sparkMaster' on port (\d+)")
_MASTER_UI = re.compile(r"Successfully started service 'MasterUI' on port (\d+)")


@dataclass(frozen=True)
class Standalone:
    """A running cluster: the URL to pass as --master, the Master's web UI, the daemons' logs."""

    url: str
    webui: str
    logs: tuple[Path, ...]

    def state(self) -> dict[str, Any]:
        """The Master's view (workers, applications), from its web UI's JSON."""
        with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as r:
            state: dict[str, Any] = json.load(r)
        return state

    def log_tail(self, chars: int = 2000) -> str:
        return _tail(self.logs, chars)


def _tail(logs: tuple[Path, ...], chars: int = 2000) -> str:
    return "\n".join(p.read_text(errors="replace")[-chars:] for p in logs if p.exists())


def stop_group(p: subprocess.Popen[bytes]) -> None:
    """The daemon and what it started (a Worker's executors share its process group)."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
    # executors may outlive a Worker that exited on SIGTERM: nothing of the group is left behind
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)


def _wait(what: str, ready: Callable[[], T | None], procs: list[subprocess.Popen[bytes]],
          logs: tuple[Path, ...], deadline: float) -> T:
    """Polls `ready()` until it returns something, failing early if a daemon died."""
    while True:
        found = ready()
        if found is not None:
            return found
        dead = [str(p.args[1]) for p in procs if p.poll() is not None]  # type: ignore[index]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"standalone Spark: {what} did not come ({dead or 'timeout'}):\n{_tail(logs)}")
        time.sleep(0.3)


@contextlib.contextmanager
def standalone(work: Path, cores: int = 2, memory: str = "2g",
               start_timeout_s: float = 120) -> Iterator[Standalone]:
    """Starts a Master and a Worker with `cores` cores under `work` (logs, executors' directories),
    yields once the Worker has registered, and stops both, executors included, on the way out."""
    import pyspark

    home = Path(pyspark.__file__).parent
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           "SPARK_LOG_DIR": str(work / "logs"), "SPARK_WORKER_DIR": str(work / "work"),
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "PYSPARK_PYTHON": sys.executable}
    spark_class = str(home / "bin" / "spark-class")
    logs = (work / "master.log", work / "worker.log")
    procs: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + start_timeout_s

    def master_ports() -> tuple[int, int] | None:
        text = logs[0].read_text(errors="replace") if logs[0].exists() else ""
        port, ui = _MASTER_PORT.search(text), _MASTER_UI.search(text)
        return (int(port.group(1)), int(ui.group(1))) if port and ui else None

    try:
        with open(logs[0], "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", "0", "--webui-port", "0"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        port, ui = _wait("the Master", master_ports, procs, logs, deadline)
        cluster = Standalone(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", logs)
        with open(logs[1], "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", cluster.url, "--host", "127.0.0.1",
                 "--port", "0", "--webui-port", "0", "--cores", str(cores), "--memory", memory,
                 "--work-dir", str(work / "work")],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))

        def registered() -> bool | None:
            try:
                return True if int(cluster.state().get("aliveworkers", 0)) >= 1 else None
            except (OSError, ValueError):
                return None

        _wait("the Worker", registered, procs, logs, deadline)
        yield cluster
    finally:
        for p in reversed(procs):
            stop_group(p)

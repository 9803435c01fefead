"""`check --engine spark` and `aggregate` on a real standalone cluster: a Master and a Worker started
from PySpark's own spark-class, bound to 127.0.0.1, so executors are separate JVMs that must fetch
our code from the driver (local mode hides that: it runs tasks in the driver's own Python)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from jepsen_py.spark.synthetic import SyntheticRun, write_run

from tests.conftest import require
from tests.spark.conftest import spark_available

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

START_TIMEOUT_S = 120
JOB_TIMEOUT_S = 400


@dataclass
class Standalone:
    url: str
    webui: str
    logs: list[Path]

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as r:
            return json.load(r)

    def log_tail(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in self.logs if p.exists())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(p: subprocess.Popen[bytes]) -> None:
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


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    require("Java and PySpark", spark_available())
    import pyspark

    home = Path(pyspark.__file__).parent
    d = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
           "SPARK_LOG_DIR": str(d / "logs"), "SPARK_WORKER_DIR": str(d / "work"),
           "PYSPARK_PYTHON": sys.executable}
    port, master_ui, worker_port, worker_ui = (_free_port() for _ in range(4))
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    logs = [d / "master.log", d / "worker.log"]
    try:
        with open(logs[0], "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(master_ui)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        with open(logs[1], "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--port", str(worker_port), "--webui-port", str(worker_ui), "--cores", "2",
                 "--memory", "2g", "--work-dir", str(d / "work")],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        cluster = Standalone(url, f"http://127.0.0.1:{master_ui}", logs)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if cluster.state().get("aliveworkers", 0) >= 1:
                    break
            except OSError:
                pass
            dead = [p.args[1] for p in procs if p.poll() is not None]
            assert not dead and time.monotonic() < deadline, (
                f"standalone cluster did not come up ({dead or 'timeout'}):\n{cluster.log_tail()}")
            time.sleep(0.5)
        yield cluster
    finally:
        for p in reversed(procs):
            _stop(p)


def _jepsen(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py", *argv], capture_output=True, text=True,
                          cwd=REPO, timeout=JOB_TIMEOUT_S)


def _apps(cluster: Standalone) -> list[str]:
    return [a.get("name") for a in cluster.state().get("completedapps", []) + cluster.state().get(
        "activeapps", [])]


def test_check_engine_spark_on_a_standalone_cluster(standalone: Standalone, tmp_path: Path) -> None:
    run = write_run(tmp_path, SyntheticRun(pairs=300, keys=3, seed=41, stale_reads=1, bugs=["zombie-leader"]))
    p = _jepsen("check", str(run / "history.jsonl"), "--model", "register", "--engine", "spark",
                "--master", standalone.url, "--json")
    assert p.returncode == 1, p.stderr[-3000:] + standalone.log_tail()
    out = json.loads(p.stdout)
    assert out["valid"] is False and out["engine"] == "spark" and out["master"] == standalone.url
    assert out["keys_checked"] == 3 and out["failures"]
    # the tasks ran on the Worker's executors: the Master ran the application
    assert "jepsen-py check" in _apps(standalone)


def test_aggregate_on_a_standalone_cluster(standalone: Standalone, tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, SyntheticRun(pairs=200, keys=2, seed=3))
    p = _jepsen("aggregate", str(results), "--master", standalone.url, "--no-dashboard", "--quiet")
    assert p.returncode == 0, p.stderr[-3000:] + standalone.log_tail()
    assert "1 runs" in p.stdout
    assert (results / "aggregate" / "summary.parquet").is_file()
    assert "jepsen-py aggregate" in _apps(standalone)


def test_check_txn_engine_spark_on_a_standalone_cluster(standalone: Standalone, tmp_path: Path) -> None:
    """The Elle check's per-key inference on the Worker's executors: the local engine's verdict."""
    from jepsen_py.history import HistoryWriter
    from tests.spark.test_distributed_txn import SAME, cycles, history

    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        for o in history(11, 300, 5, "list-append", ("G-single", "G1a")):
            w.append(o)
    argv = ("check", str(path), "--model", "list-append", "--consistency-models", "serializable", "--json")
    loc = _jepsen(*argv)
    assert loc.returncode == 1, loc.stderr[-3000:]
    p = _jepsen(*argv, "--engine", "spark", "--master", standalone.url)
    assert p.returncode == 1, p.stderr[-3000:] + standalone.log_tail()
    out, want = json.loads(p.stdout), json.loads(loc.stdout)
    assert out["engine"] == "spark" and out["master"] == standalone.url and out["keys"] >= 5
    for k in SAME:
        assert out[k] == want[k], k
    assert cycles(out) == cycles(want) and "G-single" in out["anomaly_types"]
    assert "jepsen-py check" in _apps(standalone)

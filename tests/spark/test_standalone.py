"""`check --engine spark` and `aggregate` on a real standalone cluster: a Master and a Worker started
from PySpark's own spark-class, bound to 127.0.0.1, so executors are separate JVMs that must fetch
our code from the driver (local mode hides that: it runs tasks in the driver's own Python)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jepsen_py.spark.standalone import Standalone
from jepsen_py.spark.standalone import standalone as start_standalone
from jepsen_py.spark.synthetic import SyntheticRun, write_run

from tests.conftest import require
from tests.spark.conftest import spark_available

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

START_TIMEOUT_S = 120
JOB_TIMEOUT_S = 400


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    require("Java and PySpark", spark_available())
    with start_standalone(tmp_path_factory.mktemp("standalone"), cores=2,
                          start_timeout_s=START_TIMEOUT_S) as cluster:
        yield cluster


def _jepsen(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py", *argv], capture_output=True, text=True,
                          cwd=REPO, timeout=JOB_TIMEOUT_S)


def _apps(cluster: Standalone) -> list[str]:
    return [a.get("name") for a in cluster.state().get("completedapps", []) + cluster.state().get(
        "activeapps", [])]


def test_the_cluster_is_the_one_its_daemons_bound(standalone: Standalone) -> None:
    """The URL and UI come from what the Master bound, not from ports chosen before its start (which
    another process can take first): the Master's own page names the same URL, and its Worker."""
    state = standalone.state()
    assert state["url"] == standalone.url and state["status"] == "ALIVE"
    (worker,) = state["workers"]
    assert worker["state"] == "ALIVE" and worker["cores"] == 2
    assert "Successfully started service on port 6066" not in standalone.log_tail(100_000)


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
        for o in history(11, 300, 5, "list-append", ("G-single-item", "G1a")):
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
    assert cycles(out) == cycles(want) and "G-single-item" in out["anomaly_types"]
    assert "jepsen-py check" in _apps(standalone)

"""`check --engine spark` and `aggregate` through Spark Connect (sc://): a real Connect server started
from PySpark's own spark-submit on 127.0.0.1, reached over gRPC by a thin client (no RDDs: the check
ships our code as a session artifact and runs with mapInArrow)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jepsen_py.spark.standalone import stop_group
from jepsen_py.spark.synthetic import SyntheticRun, write_run

from jepsen_py.raftdb.local import free_ports
from tests.conftest import require
from tests.spark.conftest import spark_available

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

START_TIMEOUT_S = 240
JOB_TIMEOUT_S = 400
BIND_ATTEMPTS = 3


def _free_port() -> int:
    (port,) = free_ports(1)
    return port


def _connect_client_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("grpc", "pandas", "google.rpc"))


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require("Java and PySpark", spark_available())
    require("the Spark Connect client (the spark-connect extra)", _connect_client_available())
    import pyspark

    home = Path(pyspark.__file__).parent
    d = tmp_path_factory.mktemp("connect")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    log = d / "server.log"
    deadline = time.monotonic() + START_TIMEOUT_S
    # the port is free when chosen but bound only when the server starts: another process can
    # take it in between, and then the server exits saying so; it starts again on another port
    for attempt in range(BIND_ATTEMPTS):
        port = _free_port()
        with open(log, "wb") as out:
            server = subprocess.Popen(
                [str(home / "bin" / "spark-submit"), "--class",
                 "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
                 "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                 "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
                 "--conf", "spark.driver.memory=1g", "spark-internal"],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=d, start_new_session=True)
        while server.poll() is None and time.monotonic() < deadline:
            with socket.socket() as s:
                s.settimeout(1)
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(1)
        text = log.read_text(errors="replace")
        if server.poll() is None or "BindException" not in text or attempt == BIND_ATTEMPTS - 1:
            break
    try:
        assert server.poll() is None and time.monotonic() < deadline, (
            "Spark Connect server did not come up:\n" + log.read_text(errors="replace")[-3000:])
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_group(server)


def _jepsen(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "ignore", "-m", "jepsen_py", *argv], capture_output=True,
                          text=True, cwd=REPO, timeout=JOB_TIMEOUT_S)


def test_check_engine_spark_over_spark_connect(connect_url: str, tmp_path: Path) -> None:
    run = write_run(tmp_path, SyntheticRun(pairs=300, keys=3, seed=41, stale_reads=1, bugs=["zombie-leader"]))
    p = _jepsen("check", str(run / "history.jsonl"), "--model", "register", "--engine", "spark",
                "--master", connect_url, "--json")
    assert p.returncode == 1, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["valid"] is False and out["engine"] == "spark" and out["master"] == connect_url
    assert out["keys_checked"] == 3 and out["failures"]


def test_check_txn_engine_spark_over_spark_connect(connect_url: str, tmp_path: Path) -> None:
    """The Elle check's per-key inference with mapInArrow on the Connect server: the local verdict."""
    from jepsen_py.history import HistoryWriter
    from tests.spark.test_distributed_txn import SAME, cycles, history

    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        for o in history(12, 300, 5, "rw-register", ("G-single-item", "G1a")):
            w.append(o)
    argv = ("check", str(path), "--model", "rw-register", "--consistency-models", "serializable", "--json")
    loc = _jepsen(*argv)
    assert loc.returncode == 1, loc.stderr[-3000:]
    p = _jepsen(*argv, "--engine", "spark", "--master", connect_url)
    assert p.returncode == 1, p.stderr[-3000:]
    out, want = json.loads(p.stdout), json.loads(loc.stdout)
    assert out["engine"] == "spark" and out["master"] == connect_url and out["keys"] >= 5
    for k in SAME:
        assert out[k] == want[k], k
    assert cycles(out) == cycles(want) and "G-single-item" in out["anomaly_types"]


def test_aggregate_over_spark_connect(connect_url: str, tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results, SyntheticRun(test_name="weak", read_mode="local", stale_reads=1, seed=1, pairs=120))
    write_run(results, SyntheticRun(test_name="correct", seed=2, pairs=120))
    p = _jepsen("aggregate", str(results), "--master", connect_url, "--no-dashboard", "--quiet")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "2 runs" in p.stdout
    import pyarrow.parquet as pq

    rows = pq.read_table(results / "aggregate" / "summary.parquet").to_pylist()
    assert sorted(r["read_mode"] for r in rows) == ["local", "read-index"]


def test_no_server_is_one_line_254(tmp_path: Path) -> None:
    require("the Spark Connect client (the spark-connect extra)", _connect_client_available())
    run = write_run(tmp_path, SyntheticRun(pairs=40, keys=1, seed=3))
    p = _jepsen("check", str(run / "history.jsonl"), "--model", "register", "--engine", "spark",
                "--master", f"sc://127.0.0.1:{_free_port()}")
    assert p.returncode == 254, p.stderr[-3000:]
    assert "Traceback" not in p.stderr

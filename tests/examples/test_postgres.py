"""The PostgreSQL example plugin (examples/postgres, found from its own directory) on Docker: one
PostgreSQL 15 server, the list-append workload, each isolation level checked against serializable
and snapshot isolation, Elle-style and exactly (--exact).

What PostgreSQL documents, each checked here:
- it passes `jepsen-py db-check` (its declared capabilities and the list-append workload work);
- read committed takes a new snapshot per statement: read skew (G-single-item), write skew (G2-item),
  non-repeatable reads (internal) and lost updates show, but nothing read committed itself forbids
  (no G0, G1a, G1b, G1c): Elle does not rule the read-committed model out;
- repeatable read is snapshot isolation: write skew (G2-item) shows, and nothing snapshot isolation
  forbids; decided exactly, it is not serializable and it is snapshot isolation;
- serializable (serializable snapshot isolation) shows no anomaly: conflicting transactions get a
  serialization failure and are recorded as fail;
- killed with SIGKILL and restarted (crash recovery from the WAL, fsync on), serializable still
  shows no anomaly: nothing acknowledged is lost, and commits cut off unanswered are info.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.elle.models import implied

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "postgres"
DB = "jepsen_postgres.db:PostgresDB"

# Few keys, ten clients and transactions of up to four micro-ops: enough contention that the
# anomalies of the weak levels show in every 20 s run measured.
RUN = ("--db", DB, "--workload", "list-append", "--node-count", "1", "--concurrency", "10",
       "--time-limit", "20", "--rate", "1000", "--no-progress",
       "--workload-option", "consistency_models=serializable,snapshot-isolation",
       "--workload-option", "exact=true")
# What read committed forbids (Adya's PL-2): write cycles, aborted and intermediate reads, and
# cycles of write and read dependencies.
G1 = {"G0", "G1a", "G1b", "G1c"}


def jepsen_py(*argv: str) -> subprocess.CompletedProcess[str]:
    """This checkout's jepsen-py, run from the example's directory (so `jepsen_postgres` is found
    there, not installed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], cwd=EXAMPLE, env=env,
                          capture_output=True, text=True, timeout=900)


def run_postgres(tmp_path: Path, isolation: str, nemesis: str = "none",
                 *extra: str) -> tuple[int, dict[str, Any], dict[str, Any], str]:
    results = tmp_path / "results"
    res = jepsen_py("run", *RUN, "--results-dir", str(results), "--db-option", f"isolation={isolation}",
                    "--nemesis", nemesis, *extra)
    latest = results / f"list-append-{nemesis}-isolation_{isolation}" / "latest"
    out = res.stdout + res.stderr
    assert (latest / "results.json").exists(), out
    return (res.returncode, json.loads((latest / "results.json").read_text()),
            json.loads((latest / "test.json").read_text()), out)


def ruled_out(elle: dict[str, Any]) -> set[str]:
    return set(elle["not"]) | set(elle["also_not"])


def test_bad_settings_are_refused_with_one_line() -> None:
    for extra, words in ((("--db-option", "isolation=snapshot"), "--db-option isolation"),
                         (("--node-count", "3"), "give --node-count 1")):
        res = jepsen_py("run", "--db", DB, "--workload", "list-append", "--backend", "docker", *extra)
        assert res.returncode == 254, res.stdout + res.stderr
        assert words in res.stderr and "Traceback" not in res.stderr, res.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_db_check_passes(node_image: str) -> None:
    res = jepsen_py("db-check", "--db", DB, "--backend", "docker", "--node-count", "1")
    out = " ".join(res.stdout.split())
    assert res.returncode == 0, res.stdout + res.stderr
    for words in ("primaries │ works │ n1", "no terms (term None)", "workload list-append │ works",
                  "kill/start │ works", "pause/resume │ works", "no listening port or process left behind",
                  "0 fail, 0 skipped"):
        assert words in out, (words, res.stdout)


@pytest.mark.docker
@pytest.mark.slow
def test_read_committed_shows_read_and_write_skew_but_nothing_it_forbids(tmp_path: Path,
                                                                        node_image: str) -> None:
    code, results, spec, out = run_postgres(tmp_path, "read-committed")
    assert code == 1, out
    elle = results["checkers"]["elle"]
    assert elle["valid"] is False, elle
    kinds = set(elle["anomaly_types"])
    # read skew; write skew too, which every G-single-item implies (a component where one was
    # found is not searched again for what it implies, as in Elle)
    assert "G-single-item" in kinds and "G2-item" in implied(kinds), kinds
    assert "repeatable-read" in ruled_out(elle), elle["not"]
    assert not kinds & G1, kinds
    assert "read-committed" not in ruled_out(elle) and "serializable" in ruled_out(elle), elle["not"]
    assert elle["exact"]["serializable"]["valid"] is False
    assert spec["db_options"] == {"isolation": "read-committed"}
    assert elle["txns"]["ok"] > 500, elle["txns"]


@pytest.mark.docker
@pytest.mark.slow
def test_repeatable_read_is_snapshot_isolation_with_write_skew(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_postgres(tmp_path, "repeatable-read")
    assert code == 1, out
    elle = results["checkers"]["elle"]
    assert elle["valid"] is False and "G2-item" in elle["anomaly_types"], elle["anomaly_types"]
    assert "snapshot-isolation" not in ruled_out(elle) and "serializable" in ruled_out(elle), elle["not"]
    # decided exactly: not serializable, and snapshot isolation (PostgreSQL's repeatable read is SI)
    assert elle["exact"]["serializable"]["valid"] is False
    assert elle["exact"]["snapshot-isolation"]["valid"] is True
    # concurrent appends to one row: the second writer gets a serialization failure, recorded fail
    assert elle["txns"]["fail"] > 0 and elle["txns"]["ok"] > 200, elle["txns"]


@pytest.mark.docker
@pytest.mark.slow
def test_serializable_shows_no_anomaly(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_postgres(tmp_path, "serializable")
    assert code == 0, out
    elle = results["checkers"]["elle"]
    assert elle["valid"] is True and elle["anomaly_types"] == [], elle
    assert elle["verdict"] == "exact"
    decided = {m: d["valid"] for m, d in elle["exact"].items()}
    assert decided == {"serializable": True, "snapshot-isolation": True}
    assert elle["txns"]["fail"] > 0 and elle["txns"]["ok"] > 200, elle["txns"]


@pytest.mark.docker
@pytest.mark.slow
def test_serializable_survives_kills(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_postgres(tmp_path, "serializable", "kill", "--nemesis-interval", "5")
    assert code == 0, out
    elle = results["checkers"]["elle"]
    assert elle["valid"] is True and elle["anomaly_types"] == [], elle
    assert elle["txns"]["ok"] > 200, elle["txns"]
    history = (tmp_path / "results" / "list-append-kill-isolation_serializable" / "latest" / "history.jsonl")
    kills = [op for op in map(json.loads, history.read_text().splitlines())
             if op["f"] == "kill" and op["type"] != "invoke"]
    assert kills, "no kill happened"

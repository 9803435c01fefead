"""The distributed per-key check on real PySpark local[2] gives the local checker's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.linearizable import check, get_model
from jepsen_py.spark.distributed_check import check_distributed, check_distributed_parquet
from jepsen_py.spark.export import export_run
from jepsen_py.spark.synthetic import SyntheticRun, simulate, write_run

from jepsen_py.cli import main
from jepsen_py.errors import BadInput
from jepsen_py.history import Op, read_history
from tests.spark.test_export import framework_run

SAME = ("valid", "model", "keys_checked", "ops", "engines", "unknown_reasons")


def local(ops: list[Op]) -> dict[str, Any]:
    # every key checked, as the distributed engine does (the local one may stop at the first failure)
    return check(ops, get_model("register"), stop_at_first_failure=False, workers=1)


def assert_same(dist: dict[str, Any], loc: dict[str, Any]) -> None:
    for k in SAME:
        assert dist[k] == loc[k], k
    assert dist.get("invalid_keys") == loc.get("invalid_keys")
    assert [f["op"] for f in dist["failures"]] == [f["op"] for f in loc["failures"]]
    assert dist["anomalies"] == loc["anomalies"]
    assert dist["engine"] == "spark"


def test_a_valid_history_is_valid_on_both(spark_session: Any) -> None:
    ops, _ = simulate(SyntheticRun(pairs=1500, keys=6, seed=21))
    loc = local(ops)
    assert loc["valid"] is True and loc["keys_checked"] == 6
    assert_same(check_distributed(ops, "register", None, spark=spark_session), loc)


def test_an_invalid_key_is_found_by_both(spark_session: Any) -> None:
    ops, injected = simulate(SyntheticRun(pairs=1500, keys=6, seed=22, stale_reads=1, bugs=["zombie-leader"]))
    assert len(injected) == 1
    loc = local(ops)
    assert loc["valid"] is False and len(loc["invalid_keys"]) == 1
    dist = check_distributed(ops, "register", None, spark=spark_session, partitions=3)
    assert_same(dist, loc)
    # the failing op is the injected stale read
    stale_invoke, stale_complete = injected[0]["ops"]
    assert dist["failures"][0]["op"]["index"] in (stale_invoke, stale_complete)


def test_a_framework_run_checks_the_same(spark_session: Any, tmp_path: Path) -> None:
    ops = read_history(framework_run(tmp_path) / "history.jsonl")
    loc = local(ops)
    assert loc["keys_checked"] >= 2
    assert_same(check_distributed(ops, "register", None, spark=spark_session), loc)


def test_the_parquet_route_never_collects_the_history(spark_session: Any, tmp_path: Path) -> None:
    good = write_run(tmp_path, SyntheticRun(test_name="good", pairs=600, keys=4, seed=31))
    bad = write_run(tmp_path, SyntheticRun(test_name="bad", pairs=600, keys=4, seed=32, stale_reads=2,
                                           bugs=["zombie-leader"]))
    paths = [export_run(d) / "ops.parquet" for d in (good, bad)]
    got = check_distributed_parquet(paths, "register", None, spark=spark_session)
    assert set(got) == {f"good/{good.name}", f"bad/{bad.name}"}
    for d, name in ((good, "good"), (bad, "bad")):
        loc = local(read_history(d / "history.jsonl"))
        r = got[f"{name}/{d.name}"]
        for k in ("valid", "keys_checked", "ops"):
            assert r[k] == loc[k], (name, k)
        assert sorted(r.get("invalid_keys", [])) == sorted(loc.get("invalid_keys", []))
    assert got[f"bad/{bad.name}"]["valid"] is False and got[f"good/{good.name}"]["valid"] is True


def test_bad_input_is_refused_on_the_driver(spark_session: Any) -> None:
    ops, _ = simulate(SyntheticRun(pairs=20, seed=1))
    with pytest.raises(BadInput, match="unknown model 'no-such-model'"):
        check_distributed(ops, "no-such-model", None, spark=spark_session)
    broken = [Op(0, 1, "ok", 1, "read", key="a", value=None)]
    with pytest.raises(BadInput, match="without an invocation"):
        check_distributed(broken, "register", None, spark=spark_session)


def test_cli_check_engine_spark(spark_session: Any, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    d = write_run(tmp_path, SyntheticRun(pairs=400, keys=3, seed=41, stale_reads=1, bugs=["zombie-leader"]))
    code = main(["check", str(d / "history.jsonl"), "--model", "register", "--engine", "spark", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["valid"] is False and out["engine"] == "spark"


def test_the_shipped_zip_is_importable_as_installed(tmp_path: Path) -> None:
    # executors import from the zip alone: it must hold jepsen_py/checkers/..., jepsen_py/spark/...
    import subprocess
    import sys
    import zipfile

    from jepsen_py.spark.distributed_check import _code_zip

    zpath = _code_zip()
    names = set(zipfile.ZipFile(zpath).namelist())
    assert {"jepsen_py/__init__.py", "jepsen_py/checkers/linearizable/__init__.py",
            "jepsen_py/spark/distributed_check.py"} <= names
    assert not any(n.startswith(("checkers/", "spark/")) for n in names)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import jepsen_py.spark.distributed_check as d, jepsen_py.checkers.linearizable as c; "
            "print(d.__file__); print(c.__file__)")
    out = subprocess.run([sys.executable, "-c", code, str(zpath)], cwd=tmp_path, capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.splitlines() == [f"{zpath}/jepsen_py/spark/distributed_check.py",
                                       f"{zpath}/jepsen_py/checkers/linearizable/__init__.py"]

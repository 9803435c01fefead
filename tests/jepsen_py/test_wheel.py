"""The built wheel, installed in a fresh venv outside the source tree, is a working jepsen-py: it
carries its data (expectations, page templates), and checking histories needs no PySpark (the
`spark` extra), while the commands that do need it say which extra to install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from jepsen_py.spark.synthetic import SyntheticRun, write_run

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# what a source checkout has and a wheel build must not see
_NOT_SOURCE = shutil.ignore_patterns(".git", "results", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                     ".ruff_cache", ".pytest_cache", ".hypothesis", "tests", "bench",
                                     "test-artifacts", "spark-warehouse")


@dataclass
class Installed:
    venv: Path
    wheel: Path
    cwd: Path  # outside the source tree

    def run(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        # the venv's own scripts first; nothing from the source tree on the path
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        base["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{base.get('PATH', '')}"
        return subprocess.run(list(argv), capture_output=True, text=True, cwd=self.cwd, timeout=300,
                              env={**base, **(env or {})})


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    d = tmp_path_factory.mktemp("wheel")
    src = d / "src"  # a copy, so the build leaves no build/ in the checkout
    shutil.copytree(REPO, src, ignore=_NOT_SOURCE, symlinks=True)
    dist = d / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                            str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("jepsen_py-*.whl")
    venv = d / "venv"
    # system site-packages only for the dependencies (no download); jepsen-py itself comes from the wheel
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                          "--force-reinstall", "--no-index", str(wheel)], capture_output=True, text=True,
                         timeout=300)
    assert pip.returncode == 0, pip.stderr[-3000:]
    cwd = d / "elsewhere"
    cwd.mkdir()
    yield Installed(venv, wheel, cwd)


def _no_pyspark(d: Path) -> dict[str, str]:
    """An environment in which `import pyspark` fails as on a machine without the spark extra."""
    block = d / "no-pyspark"
    block.mkdir(exist_ok=True)
    (block / "pyspark.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pyspark'\", name='pyspark')\n")
    return {"PYTHONPATH": str(block)}


def test_imports_come_from_the_wheel_not_the_checkout(installed: Installed) -> None:
    p = installed.run("python", "-c", "import jepsen_py, jepsen_py.checkers, jepsen_py.spark, json; "
                      "print(json.dumps([jepsen_py.__file__, jepsen_py.checkers.__file__, "
                      "jepsen_py.spark.__file__]))")
    assert p.returncode == 0, p.stderr
    for f in json.loads(p.stdout):
        assert Path(f).is_relative_to(installed.venv), f
        assert not Path(f).is_relative_to(REPO), f
    # one namespace: nothing of ours installs as a top-level checkers, spark, cluster, ...
    with zipfile.ZipFile(installed.wheel) as z:
        tops = {n.split("/")[0] for n in z.namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"jepsen_py"}, tops


def test_the_wheel_carries_its_data_and_pyspark_is_an_extra(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    data = [n for n in (REPO / "jepsen_py" / "expectations.toml",
                        *REPO.glob("checkers/**/*.js"), *REPO.glob("checkers/**/*.html"))]
    for f in data:
        rel = f.relative_to(REPO)
        assert (str(rel) if rel.parts[0] == "jepsen_py" else f"jepsen_py/{rel}") in names, f
    requires = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist: pyspark")]
    # every PySpark requirement is behind an extra: spark, or spark-connect for the Connect client
    assert requires and all("; extra == " in ln for ln in requires), requires
    assert any(ln.endswith('extra == "spark"') for ln in requires), requires
    p = installed.run("python", "-c", "from jepsen_py import matrix as mx; "
                      "print(len(mx.load_expectations(mx.DEFAULT_EXPECTATIONS, True)))")
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) > 0


def test_check_analyze_and_test_all_from_the_wheel_without_pyspark(installed: Installed,
                                                                   tmp_path: Path) -> None:
    env = _no_pyspark(tmp_path)
    run = write_run(tmp_path / "results", SyntheticRun(pairs=200, keys=2, seed=7, stale_reads=1,
                                                       bugs=["zombie-leader"]))
    p = installed.run("jepsen-py", "--version", env=env)
    assert p.returncode == 0 and p.stdout.startswith("jepsen-py ")
    p = installed.run("jepsen-py", "check", str(run / "history.jsonl"), "--model", "register", env=env)
    assert p.returncode == 1, p.stderr
    assert "NOT linearizable" in p.stdout
    p = installed.run("jepsen-py", "analyze", str(run), env=env)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    # the pictures come from the wheel's templates; the Parquet export needs pyarrow, not Spark
    assert (run / "timeline.html").is_file()
    assert (run / "parquet" / "run.parquet").is_file()
    p = installed.run("jepsen-py", "test-all", "--help", env=env)
    assert p.returncode == 0 and "--quick" in p.stdout
    # installed from a wheel, our cluster's code is no git checkout: no version to tell
    p = installed.run("python", "-c", "from jepsen_py.dbversion import db_version; "
                      "print(db_version('cluster.db:RaftMetadataDB'))", env=env)
    assert p.returncode == 0 and p.stdout.strip() == "unversioned", p.stderr


def test_spark_commands_name_the_extra_without_pyspark(installed: Installed, tmp_path: Path) -> None:
    env = _no_pyspark(tmp_path)
    run = write_run(tmp_path / "results", SyntheticRun(pairs=50, keys=1, seed=2))
    for argv in (["jepsen-py", "aggregate", str(tmp_path / "results")],
                 ["jepsen-py", "check", str(run / "history.jsonl"), "--model", "register",
                  "--engine", "spark"]):
        p = installed.run(*argv, env=env)
        assert p.returncode == 254, (argv, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("spark: ")]
        assert len(lines) == 1, p.stderr
        assert "pip install 'jepsen-py[spark]'" in lines[0]

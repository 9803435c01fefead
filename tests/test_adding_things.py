"""Adding a thing is one file in one place: a workload, a fault, a checker and a backend, each a
single module outside the package (docs/architecture.md, "Where to add a thing"), named on the
command line as MODULE:NAME and found from the working directory.

The fault is docs/plugins.md's freezer (a node paused through the DB, declared in the fault
vocabulary). The toy workload, fault and checker run together in the simulator and on `--backend local`; the
toy backend runs a stock workload with a stock fault. Nothing here is registered anywhere else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.jepsen_py.test_backend_local import local_env  # noqa: F401  (the fixture)
from tests.jepsen_py.test_outside_plugins import DECLARED as FREEZER  # docs/plugins.md's fault

FILES = {
    "toy_workload.py": '''
        """Topics created and described on our cluster; judged by whatever checkers join it."""
        from jepsen_py.generator import fn
        from jepsen_py.workload import Workload
        from jepsen_py.workloads.client import MetadataClient

        FS = frozenset({"create", "describe"})

        def workload(spec):
            def op(ctx):
                name = ctx.rng.choice(["toy-a", "toy-b"])
                if ctx.rng.random() < 0.3:
                    return {"f": "create", "key": name, "value": {"partitions": 1, "rf": 1}}
                return {"f": "describe", "key": name}
            return Workload(name="toy", generator=fn(op), final_generator=None, checkers=[],
                            client=MetadataClient(fs=FS), fs=FS)
        ''',
    "toy_checker.py": '''
        """Valid when every created topic was described by some node afterwards."""

        class Described:
            name = "described"
            def check(self, test, history):
                created = {op.key for op in history if op.f == "create" and op.type == "ok"}
                described = {op.key for op in history if op.f == "describe" and op.type == "ok"}
                missing = sorted(created - described)
                return {"valid": bool(created) and not missing, "created": sorted(created),
                        "missing": missing}

        def described(spec):
            return Described()
        ''',
    "toy_backend.py": '''
        """Nodes as local processes, under a name of its own; refuses the flags of other backends and
        takes one option of its own (--backend-option greeting=...), written where it runs."""
        from pathlib import Path

        from jepsen_py.backends import given_backend_options
        from jepsen_py.backends.local import LocalBackend
        from jepsen_py.errors import BadInput

        OPTIONS = {"greeting": "a word the backend writes to greeting.txt as it sets up"}

        def check_args(args):
            given = given_backend_options(args)
            if given:
                raise BadInput(f"{given[0]}: not an option of the toy backend")

        class ToyLocal(LocalBackend):
            name = "toy-local"

            def setup(self, test):
                Path("greeting.txt").write_text(self.spec.options.get("greeting", "none"))
                return super().setup(test)
        ''',
}

TOYS = ["--workload", "toy_workload:workload", "--nemesis", "freezer:Freeze",
        "--checker", "toy_checker:described"]


@pytest.fixture
def toys(tmp_path: Path) -> Path:
    for name, text in {**FILES, "freezer.py": FREEZER}.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def run(where: Path, *argv: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = where / "results"
    p = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--no-progress", "--node-count", "3",
                        "--nemesis-interval", "1", "--results-dir", str(results), *argv],
                       capture_output=True, text=True, cwd=where, timeout=timeout)
    [run_dir] = [d for d in results.glob("*/*") if not d.is_symlink() and (d / "results.json").exists()]
    return p, run_dir


def ops(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def assert_the_toys_ran(p: subprocess.CompletedProcess[str], run_dir: Path) -> None:
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    toy = results["checkers"]["described"]
    assert toy["valid"] is True and toy["created"], toy
    history = ops(run_dir)
    freezes = [o for o in history if o["f"] == "freeze" and o["type"] == "info"]
    assert freezes and all(len(o["value"]["nodes"]) == 1 for o in freezes)
    assert {o["f"] for o in history if o["type"] == "ok"} >= {"create", "describe"}


def test_the_toy_workload_fault_and_checker_run_in_the_simulator(toys: Path) -> None:
    p, run_dir = run(toys, "--backend", "sim", *TOYS, "--time-limit", "8", "--seed", "3")
    assert_the_toys_ran(p, run_dir)


@pytest.mark.slow
def test_the_toy_workload_fault_and_checker_run_on_local(local_env: None, toys: Path) -> None:  # noqa: F811
    p, run_dir = run(toys, "--backend", "local", *TOYS, "--time-limit", "8", "--seed", "3")
    assert_the_toys_ran(p, run_dir)


@pytest.mark.slow
def test_the_toy_backend_runs_a_stock_workload_with_a_stock_fault(local_env: None, toys: Path) -> None:  # noqa: F811
    p, run_dir = run(toys, "--backend", "toy_backend:ToyLocal", "--workload", "offsets", "--nemesis", "kill",
                     "--time-limit", "8", "--seed", "4", "--backend-option", "greeting=hello")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert (toys / "greeting.txt").read_text() == "hello"  # its own option reached it
    assert json.loads((run_dir / "test.json").read_text())["backend"] == "toy_backend:ToyLocal"
    history = ops(run_dir)
    assert any(o["f"] == "kill" and o["type"] == "info" and o["value"]["nodes"] for o in history)
    assert sum(1 for o in history if o["f"] == "commit" and o["type"] == "ok") > 10
    refused = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--backend",
                              "toy_backend:ToyLocal", "--ssh-host", "n1=10.0.0.1",
                              "--results-dir", str(toys / "refused")],
                             capture_output=True, text=True, cwd=toys, timeout=60)
    assert refused.returncode == 254 and "--ssh-host: not an option of the toy backend" in refused.stderr
    for backend, option, said in [
            ("toy_backend:ToyLocal", "colour=red",
             "toy_backend:ToyLocal has no option 'colour' (it takes: greeting)"),
            ("local", "greeting=hi", "--backend-option: for a backend of your own (--backend MODULE:CLASS)")]:
        refused = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--backend", backend,
                                  "--backend-option", option, "--results-dir", str(toys / "refused")],
                                 capture_output=True, text=True, cwd=toys, timeout=60)
        assert refused.returncode == 254 and said in refused.stderr, refused.stderr

"""The engine seam (jepsen_py.engine): the runner's phases are written once and ask the engine for
time and waits; the real engine runs them without an event loop, and bounds the DB's setup and
teardown; the simulator's run is the runner's run on its own engine."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from jepsen_py import engine
from jepsen_py.backends.none import NoneBackend
from jepsen_py.engine import RealEngine
from jepsen_py.errors import FrameworkFailure
from jepsen_py.interpreter import MonotonicClock
from jepsen_py.runner import run_test
from tests.jepsen_py import hostile
from tests.jepsen_py.fakes import Calls, FakeDB, make_spec, register_workload


class SkippingClock(MonotonicClock):
    """The real clock, except that a sleep moves it forward at once (as virtual time does)."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0.0

    def ns(self) -> int:
        return super().ns() + round(self.skipped * 1e9)

    def s(self) -> float:
        return super().s() + self.skipped

    def sleep(self, seconds: float) -> None:
        self.skipped += seconds


class LeaderlessDB(FakeDB):
    """Claims primaries but never names one: setup's leader wait runs to its bound."""

    def primaries(self, test: object) -> list[str]:
        return []


def test_the_leader_wait_sleeps_through_the_engine(tmp_path: Path) -> None:
    """An hour's leader wait on an engine whose sleeps skip time ends at once, with the runner's
    note: the phases read the engine's clock and wait through it, not through time.sleep."""
    spec = make_spec(tmp_path, time_limit=0.2, rate=50.0, recovery_timeout=0)
    clock = SkippingClock()
    engine = RealEngine(clock=clock)
    t0 = time.monotonic()
    out = run_test(spec, db=LeaderlessDB(spec, calls=Calls()), workload=register_workload(final=False),
                   backend=NoneBackend(spec), engine=engine, setup_timeout=3600.0)
    assert time.monotonic() - t0 < 60
    assert "no leader within 3600s of setup; running the test anyway" in out.results["notes"]
    # nearly all of the hour was slept through the engine (each of its 18,000 asks of primaries()
    # takes real time: it runs within the wait's bound on the asking thread)
    assert clock.skipped > 3500.0
    assert out.results["stats"]["duration_s"] >= 3600.0


def test_the_real_engine_refuses_phases_that_suspend() -> None:
    """Real waits block; a phase that suspends would need a loop the real engine does not have, so
    it is a framework failure, not a run that silently stops half way."""

    async def suspends() -> None:
        await asyncio.sleep(0)

    with pytest.raises(FrameworkFailure, match="suspended on the real engine"):
        RealEngine().drive(suspends())


def test_a_simulated_run_is_the_runner_s_run_with_virtual_seconds(tmp_path: Path) -> None:
    """The simulator's run goes through the runner's phases (its phase list and log line) and adds
    what its engine measures: simulated seconds per phase, instead of CPU seconds."""
    from jepsen_py.protocols import TestSpec
    from jepsen_py.sim.run import run_sim

    spec = TestSpec(name="engine", workload="offsets", nemesis=["kill"], nodes=["n1", "n2", "n3"],
                    time_limit=2, concurrency=3, rate=20, nemesis_interval=1, seed=5, backend="sim",
                    read_mode="read-index", bugs=[], db="jepsen_py.raftdb:RaftMetadataDB",
                    results_dir=tmp_path)
    out = run_sim(spec)
    assert out.exit_code == 0, out.results
    assert out.phases == ["setup", "main", "heal", "recovery", "final", "collect logs", "check"]
    stats = out.results["stats"]
    assert set(stats["phase_simulated_s"]) == set(out.phases) and "phase_cpu_s" not in stats
    assert stats["simulated_s"] >= 2 and round(out.simulated_s, 3) == stats["simulated_s"]
    assert json.loads((out.run_dir / "test.json").read_text())["simulated"] is True
    assert "simulated run engine in" in (out.run_dir / "jepsen.log").read_text()


# ---- a DB whose setup or teardown never returns (tests/jepsen_py/hostile.py) ---------------------

released = pytest.fixture(hostile.releasing)


@pytest.mark.parametrize(("db", "said", "tested"), [
    ("StuckSetupDB", "db setup did not return within 0.3 s on n1, n2, n3 (left behind)", False),
    ("StuckTeardownDB", "db teardown did not return within 0.3 s on n1, n2, n3 (left behind)", True),
])
def test_a_db_hook_that_never_returns_fails_its_phase(tmp_path: Path, released: None,
                                                      monkeypatch: pytest.MonkeyPatch, db: str, said: str,
                                                      tested: bool) -> None:
    """setup or teardown blocks on every node: bounded by DB_HOOK_S (one deadline for all nodes),
    the phase fails as one that raised would (255), named in one line; the run is stored, unknown,
    and a setup that never returned is still torn down."""
    monkeypatch.setattr(engine, "DB_HOOK_S", 0.3, raising=False)
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:{db}",
                                            "--workload", f"{hostile.HERE}:reads"))
    assert code == 255
    results = hostile.failed_phase(tmp_path / "results", said)
    assert (results["stats"]["invokes"] > 0) is tested


@pytest.mark.parametrize(("db", "said"), [
    ("StuckLogFilesDB", "log_files(n1) did not return within 0.3 s (left behind): no logs copied"),
    ("ExitingLogFilesDB", "log_files(n1) failed: SystemExit"),
])
def test_log_files_that_hang_or_exit_leave_the_verdict_alone(tmp_path: Path, released: None,
                                                             monkeypatch: pytest.MonkeyPatch, db: str,
                                                             said: str) -> None:
    """log_files() is asked after the history is checked: one that never returns is abandoned after
    LOG_FILES_S (the other nodes are not asked), one that raises SystemExit or KeyboardInterrupt
    is a warning like any failure; the run keeps its verdict (valid here) and its store."""
    monkeypatch.setattr(engine, "LOG_FILES_S", 0.3, raising=False)
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:{db}",
                                            "--workload", f"{hostile.HERE}:reads"))
    assert code == 0
    run = hostile.the_run(tmp_path / "results")
    assert hostile.results_of(run)["valid"] is True
    assert [line for line in hostile.log_lines(run, said) if " WARNING " in line], said
    if db == "StuckLogFilesDB":
        assert hostile.log_lines(run, "log_files(n2) not asked")
    else:
        assert hostile.log_lines(run, "log_files(n2) failed: KeyboardInterrupt")

"""Optional DB capabilities: a leaderless DB runs without waiting for a leader, and a nemesis that
needs what the DB cannot do is refused with one line before anything is provisioned."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from jepsen_py.nemeses.compose import ComposedNemesis
from jepsen_py.nemeses.kill import KillNemesis
from jepsen_py.nemeses.partition import PartitionNemesis

from jepsen_py import cli, nemeses
from jepsen_py import generator as gen
from jepsen_py.backends.none import NoneBackend
from jepsen_py.errors import BadInput
from jepsen_py.history import OBSERVER, read_history
from jepsen_py.plugins import check_capabilities
from jepsen_py.protocols import Test, TestSpec, capabilities
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import Calls, FakeNemesis, Register, RegisterClient, make_spec, register_workload

LEADERLESS = "tests.jepsen_py.test_capabilities:LeaderlessDB"


class LeaderlessDB:
    """A register every node serves alike: no leaders, no status, no process control."""

    def __init__(self, spec: TestSpec | None = None) -> None:
        self.register = Register()
        self.calls = Calls()

    def setup(self, test: Test, node: str) -> None:
        self.calls.add("db.setup", node)

    def teardown(self, test: Test, node: str) -> None:
        self.calls.add("db.teardown", node)

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> RegisterClient:
        return RegisterClient(self.register, self.calls)


class KillableLeaderlessDB(LeaderlessDB):
    def kill(self, test: Test, node: str) -> None:
        self.calls.add("db.kill", node)

    def start(self, test: Test, node: str) -> None:
        self.calls.add("db.start", node)


def test_capabilities_are_what_the_db_implements() -> None:
    assert capabilities(LeaderlessDB()) == frozenset()
    assert capabilities(KillableLeaderlessDB()) == {"process"}


def test_a_leaderless_db_runs_without_waiting_for_a_leader(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, time_limit=0.5, rate=200.0, recovery_timeout=20.0)
    db = LeaderlessDB(spec)
    t0 = time.monotonic()
    schedule = gen.cycle([gen.sleep(0.1), {"f": "start"}, gen.sleep(0.1), {"f": "stop"}])
    out = run_test(spec, db=db, workload=register_workload(), nemesis=FakeNemesis(db.calls),
                   nemesis_generator=schedule,
                   backend=NoneBackend(spec), setup_timeout=20.0)
    took = time.monotonic() - t0
    assert out.exit_code == 0 and out.valid is True, out.results
    # neither setup nor recovery waited for a leader that never comes: either wait alone would take
    # 20 s, so under 20 s says so however slow a loaded machine ran the rest
    assert took < 20, took
    assert "notes" not in out.results
    assert out.phases[:5] == ["setup", "main", "heal", "recovery", "final"]
    history = read_history(out.run_dir / "history.jsonl")
    assert not [op for op in history if op.process == OBSERVER]  # no status: nothing to sample
    assert out.oks > 10


def test_availability_judges_a_leaderless_run_by_what_clients_saw(tmp_path: Path) -> None:
    from jepsen_py.checkers.availability import AvailabilityChecker

    spec = make_spec(tmp_path, time_limit=0.5, rate=200.0)
    w = register_workload()
    w.checkers = [AvailabilityChecker()]
    out = run_test(spec, db=LeaderlessDB(spec), workload=w, backend=NoneBackend(spec))
    r = out.results["checkers"]["availability"]
    assert r["valid"] is True, r
    assert r["basis"] == "clients"
    assert r["leader_changes"] == 0 and r["unavailable_keys"] == []


@pytest.mark.parametrize(("names", "message"), [
    ("partition-leader", "--nemesis partition-leader needs a DB that can name its leaders (primaries); "
                         f"{LEADERLESS} has no primaries"),
    ("kill", "--nemesis kill needs a DB that can kill and restart its nodes (kill, start); "
             f"{LEADERLESS} has no kill, start"),
    ("pause", "--nemesis pause needs a DB that can pause and resume its nodes"),
    ("leader-clock", "--nemesis leader-clock needs a DB that can name its leaders"),
    ("clock", "--nemesis clock needs a DB that can run its daemons under a controllable clock"),
])
def test_a_nemesis_needing_what_the_db_lacks_is_refused_before_anything_is_created(
        tmp_path: Path, names: str, message: str) -> None:
    spec = make_spec(tmp_path, db=LEADERLESS, nemesis=[names], nemesis_interval=1.0)
    nemesis, schedule = nemeses.build(names, spec)
    with pytest.raises(BadInput) as e:
        run_test(spec, db=LeaderlessDB(spec), workload=register_workload(), nemesis=nemesis,
                 nemesis_generator=schedule, backend=NoneBackend(spec))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert not spec.results_dir.exists()


def test_leader_targets_are_refused_only_when_chosen(tmp_path: Path) -> None:
    db = KillableLeaderlessDB()
    spec = make_spec(tmp_path, nemesis_interval=1.0)
    nemesis, _ = nemeses.build("kill", spec)  # default targets: "leader" falls back to a random node
    check_capabilities(db, nemesis, db_name="db")
    chosen = make_spec(tmp_path, nemesis_interval=1.0, fault_targets=["leader", "one"])
    nemesis, _ = nemeses.build("kill", chosen)
    with pytest.raises(BadInput, match="--fault-targets leader needs a DB that can name its leaders"):
        check_capabilities(db, nemesis, db_name="db")
    # the mixed partition shapes need no leader either; partition-leader alone does
    check_capabilities(db, PartitionNemesis(["leader", "one"]), db_name="db")
    with pytest.raises(BadInput, match="partition-leader"):
        check_capabilities(db, ComposedNemesis([KillNemesis(), PartitionNemesis(["leader"])]), db_name="db")


def test_the_cli_refuses_partition_leader_for_a_leaderless_db_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    code = cli.main(["run", "--workload", "offsets", "--db", LEADERLESS, "--backend", "none",
                     "--nemesis", "partition-leader", "--time-limit", "1", "--no-progress",
                     "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert code == 254
    assert err.strip().count("\n") == 0 and "partition-leader needs a DB that can name its leaders" in err
    assert not results.exists()

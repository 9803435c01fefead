"""BackendSystem's trials: their coverage comes from the history the run's analysis already read and
validated (the outcome carries it), and is what reading history.jsonl again would give."""

from __future__ import annotations

from pathlib import Path

import pytest

from jepsen_py.explore import system as system_module
from jepsen_py.explore.coverage import features
from jepsen_py.explore.space import Config
from jepsen_py.explore.system import BackendSystem, read_history, read_logs
from jepsen_py.history import read_history as read_ops

SHORT = Config(workload="offsets", families=("partition", "kill"), shapes=("leader",), targets=("one",),
               interval=1.0, mode="random", read_mode="read-index", node_count=3, time_limit=4.0, seed=3)


def test_a_trial_takes_its_coverage_from_the_analysed_history(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    reread: list[Path] = []
    real = system_module.read_history

    def counted(run_dir: Path):  # type: ignore[no-untyped-def]
        reread.append(run_dir)
        return real(run_dir)

    monkeypatch.setattr(system_module, "read_history", counted)
    system = BackendSystem(work_dir=tmp_path / "trials", keep_clean=True)
    trial = system.trial(SHORT)
    assert trial.error is None and trial.run_dir is not None
    assert reread == [], "history.jsonl was parsed again for coverage"
    run_dir = Path(trial.run_dir)
    ops = read_ops(run_dir / "history.jsonl")
    assert any(op.process == "observer" for op in ops) and any(op.process == "nemesis" for op in ops)
    # the same features as the history read back line by line
    again = features(trial.schedule.events, read_history(run_dir), read_logs(run_dir),
                     read_mode=trial.schedule.read_mode, workload=trial.schedule.workload)
    assert trial.coverage == again
    assert any(f.startswith("role:") for f in again) and any(f.startswith("op:") for f in again)


def test_a_trial_whose_history_the_analysis_could_not_read_still_gets_its_coverage(
        tmp_path: Path) -> None:
    """An outcome without the analysed history (a damaged one, a RunFn of a test's own): the lines
    of history.jsonl that parse, as before."""
    system = BackendSystem(work_dir=tmp_path / "trials", keep_clean=True)
    trial = system.trial(SHORT)
    assert trial.run_dir is not None
    run_dir = Path(trial.run_dir)

    class Outcome:
        def __init__(self) -> None:
            self.run_dir = run_dir
            self.results = {"valid": True}
            self.exit_code = 0
            self.error = None

    again = system._trial(trial.schedule, Outcome(), 0.0, SHORT, keep=True)  # type: ignore[arg-type]
    assert again.coverage == trial.coverage

"""A simulated run's live progress: it counts what the run did (main phase in simulated seconds
against the time limit, ops, faults), prints one plain line per phase off a terminal, and drawing it
changes nothing in the history."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from jepsen_py.history import INFO, INVOKE, NEMESIS, Op, read_history
from jepsen_py.sim.progress import SimProgress, SimStatus
from jepsen_py.sim.run import run_sim
from tests.jepsen_py.sim.run_many import spec


def test_status_follows_a_real_run_main_span_ops_and_faults(tmp_path: Path) -> None:
    s = spec(tmp_path, "kill", 3, 4.0)
    s.nemesis_interval = 1.0
    status = SimStatus(s.time_limit)
    outcome = run_sim(s, status=status)
    assert outcome.exit_code == 0, outcome.error
    history = read_history(outcome.run_dir / "history.jsonl")
    kills = [op for op in history if op.process == NEMESIS and op.type == INVOKE and op.f == "kill"]
    assert kills and status.faults == len(kills)
    assert status.main_from is not None and status.main_to is not None
    # the main phase lasts the time limit, plus the wait for ops in flight (a killed node's clients
    # time out in virtual time)
    span = status.main_to - status.main_from
    assert 4.0 <= span <= 4.0 + s.op_timeout + 1 and 0 < status.main_from < 30
    ops, ok = status.counts()
    assert ops == outcome.invokes and ok == outcome.oks and ops > 100
    assert status.phase == "check"
    assert f"main {span:5.1f}/4 s" in status.line()


def test_ending_ops_are_not_faults() -> None:
    status = SimStatus(10.0)
    for f in ("start-partition", "kill", "pause", "stop-partition", "start", "resume", "heal"):
        status.saw(Op(index=0, time=0, type=INVOKE, process=NEMESIS, f=f))
    status.saw(Op(index=1, time=0, type=INFO, process=NEMESIS, f="kill"))  # a completion, not a fault
    status.saw(Op(index=2, time=0, type=INVOKE, process=0, f="kill"))  # a client op
    assert status.faults == 3  # start-partition, kill, pause; a restart ("start") ends a kill


def test_off_a_terminal_each_phase_is_one_plain_line(capsys: object) -> None:
    status = SimStatus(60.0, simulated_s=lambda: 12.5, counts=lambda: (300, 290))
    with SimProgress("t", status, console=Console(file=io.StringIO(), force_terminal=False)) as p:
        p.phase("main")
        p.phase("heal")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]  # type: ignore[attr-defined]
    assert len(lines) == 2
    assert lines[0].startswith("t: [main] main   0.0/60 s  simulated   12.5 s  ops 300  ok 290  faults 0")
    assert lines[1].startswith("t: [heal]")


def test_drawing_progress_leaves_the_history_byte_identical(tmp_path: Path) -> None:
    a = run_sim(spec(tmp_path / "a", "partition-leader", 5, 3.0), show_progress=True)
    b = run_sim(spec(tmp_path / "b", "partition-leader", 5, 3.0), show_progress=False)
    assert a.exit_code == b.exit_code == 0
    assert (a.run_dir / "history.jsonl").read_bytes() == (b.run_dir / "history.jsonl").read_bytes()

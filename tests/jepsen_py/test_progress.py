"""The terminal output: the verdict table's contents, and plain phase lines off a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from jepsen_py.progress import Progress, print_summary


def test_summary_names_verdict_counts_anomalies_and_place() -> None:
    console = Console(record=True, width=100, file=io.StringIO())
    print_summary(valid=False, invokes=200, oks=150, anomalies=3, run_dir="results/x/20261122T000000.000",
                  checkers={"linearizable": {"valid": False}, "stats": {"valid": True}},
                  error=None, title="offsets-partition-leader", console=console)
    text = console.export_text()
    for needle in ("offsets-partition-leader", "verdict", "false", "200", "75.0%", "anomalies", "3",
                   "linearizable", "results/x/20261122T000000.000"):
        assert needle in text, needle


def test_no_ops_is_a_dash_not_a_division_by_zero() -> None:
    console = Console(record=True, width=100, file=io.StringIO())
    print_summary(valid="unknown", invokes=0, oks=0, anomalies=0, run_dir="r", error="db setup failed",
                  console=console)
    text = console.export_text()
    assert "unknown" in text and "db setup failed" in text


def test_off_a_terminal_each_phase_is_one_plain_line(capsys: object) -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    with Progress("t", lambda: (10, 9), console=console) as p:
        p.phase("main")
        p.phase("heal")
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 2 and "t: main (ops 10, ok 9)" in lines[0] and "heal" in lines[1]

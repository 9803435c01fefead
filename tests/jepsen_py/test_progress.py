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


def test_summary_says_which_anomalies_fail_the_run_and_which_are_reported_only() -> None:
    """A true verdict beside 'anomalies 100' contradicted itself: stale reads under
    linearizable=false are reported, not failing, and the summary says so, with the real count."""
    from jepsen_py.checkers.sets import SetChecker

    from tests.checkers.test_generic_checkers import H

    h = H()
    for v in range(150):  # every element missed once, then seen: stale, 150 of them
        h.op(0, "add", "s", v)
        h.op(1, "read", "s", None, list(range(v)))
    h.op(1, "read", "s", None, list(range(150)))
    result = SetChecker(linearizable=False).check(None, h.ops)
    assert result["valid"] is True and len(result["anomalies"]) == 100
    console = Console(record=True, width=200, file=io.StringIO())
    print_summary(valid=True, invokes=301, oks=301, anomalies=100, run_dir="r",
                  checkers={"set": result, "stats": {"valid": True}}, console=console)
    text = console.export_text()
    assert "150 reported only (stale-read 150)" in text and "failing the run" not in text, text
    result = SetChecker(linearizable=True).check(None, h.ops)
    console = Console(record=True, width=200, file=io.StringIO())
    print_summary(valid=False, invokes=301, oks=301, anomalies=100, run_dir="r",
                  checkers={"set": result}, console=console)
    assert "150 failing the run (stale-read 150)" in console.export_text()


def test_a_checker_without_failing_kinds_counts_by_its_verdict() -> None:
    from jepsen_py.analysis import count_anomalies, tally_anomalies

    results = {"checkers": {
        "staleness": {"valid": True, "anomalies": [{"kind": "stale-read"}] * 3},
        "linearizable": {"valid": False, "anomalies": [{"kind": "nonlinearizable"}],
                         "anomaly_counts": {"nonlinearizable": 140}, "failing_kinds": ["nonlinearizable"]},
        "crash": {"valid": False, "anomalies": [{"kind": "crash"}] * 2}}}
    t = tally_anomalies(results)
    assert t.failing == {"nonlinearizable": 140, "crash": 2} and t.reported == {"stale-read": 3}
    assert count_anomalies(results) == 145

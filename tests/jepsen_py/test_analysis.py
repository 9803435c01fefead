"""A plugin's checker cannot decide the exit code by accident: what it raises (SystemExit and
KeyboardInterrupt too), a verdict that is not exactly true, false or "unknown", a result of the
wrong shape, a call that never returns, or edits to the history it was given: each makes that
checker unknown, named, and no other checker sees it. A real signal still stops the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py.analysis import run_checkers
from jepsen_py.history import FAIL, OK, Op
from tests.jepsen_py.fakes import make_spec


class Test_:
    def __init__(self, **options: Any) -> None:
        self.spec = make_spec(Path("/nonexistent"), options=options)


class Plugin:
    """A checker from outside the package, doing whatever `behave` does."""

    def __init__(self, behave: Any, name: str = "plugin") -> None:
        self.behave = behave
        self.name = name

    def check(self, test: Any, history: list[Op]) -> Any:
        return self.behave(history)


Plugin.__module__ = "plugin_pkg.checkers"  # as a plugin's class is: not jepsen_py's


def history() -> list[Op]:
    """One failed write: our stats checker fails a run whose ops never succeeded."""
    return [Op(0, 0, "invoke", 0, "write", "x", 1), Op(1, 1, FAIL, 0, "write", "x", 1)]


def judged(*checkers: Any, test: Any = None) -> dict[str, Any]:
    return run_checkers(list(checkers), test, history())


def _raise(e: BaseException) -> Any:
    def go(h: list[Op]) -> Any:
        raise e
    return go


@pytest.mark.parametrize("exc", [SystemExit(0), SystemExit(3), KeyboardInterrupt(), ValueError("no")],
                         ids=["SystemExit(0)", "SystemExit(3)", "KeyboardInterrupt", "ValueError"])
def test_what_a_checker_raises_is_its_own_unknown(exc: BaseException) -> None:
    r = judged(Plugin(_raise(exc)))
    mine = r["checkers"]["plugin"]
    assert mine["valid"] == "unknown" and type(exc).__name__ in mine["error"]
    # the other checkers still ran: the stats checker's verdict stands
    assert r["checkers"]["stats"]["valid"] is False and r["valid"] is False


@pytest.mark.parametrize("valid", [1, 1.0, "true", 0, 0.0, 2, None, "valid", [True]])
def test_a_verdict_that_is_not_exactly_one_of_three_is_unknown(valid: Any) -> None:
    r = run_checkers([Plugin(lambda h: {"valid": valid})], None,
                     [Op(0, 0, "invoke", 0, "write", "x", 1), Op(1, 1, OK, 0, "write", "x", 1)])
    mine = r["checkers"]["plugin"]
    assert mine["valid"] == "unknown" and "no valid verdict" in mine["error"], mine
    assert r["valid"] == "unknown"


@pytest.mark.parametrize("result", [
    [True], {"valid": True, "anomalies": "lots"}, {"valid": False, "anomaly_counts": {"x": "many"}},
    {"valid": True, 3: "not a string key"}, {"valid": True, "failing_kinds": 7},
    {"valid": True, "blob": object()} | {"self": None},
])
def test_a_result_of_the_wrong_shape_is_unknown(result: Any) -> None:
    if isinstance(result, dict) and "self" in result:
        result["self"] = result  # a cycle: not JSON
    mine = judged(Plugin(lambda h: result))["checkers"]["plugin"]
    assert mine["valid"] == "unknown" and mine["error"], mine


def test_a_checker_that_rewrites_the_history_changes_no_other_verdict() -> None:
    def turn_fails_ok(h: list[Op]) -> dict[str, Any]:
        for op in h:
            if op.type == FAIL:
                op.type = OK
        h.append(Op(2, 2, OK, 0, "write", "x", 2))
        return {"valid": True}

    r = judged(Plugin(turn_fails_ok))
    assert r["checkers"]["plugin"]["valid"] is True
    assert r["checkers"]["stats"]["valid"] is False and r["valid"] is False  # it saw the fail


def test_a_checker_that_never_returns_is_unknown_after_its_deadline() -> None:
    stop = threading.Event()
    t0 = time.monotonic()
    r = judged(Plugin(lambda h: stop.wait(60)), test=Test_(checker_time_s=0.5))
    stop.set()
    assert time.monotonic() - t0 < 10
    mine = r["checkers"]["plugin"]
    assert mine["valid"] == "unknown" and "did not return within 0.5 s" in mine["error"]
    assert r["checkers"]["stats"]["valid"] is False


def test_a_real_signal_still_stops_the_checking() -> None:
    """Ctrl-C (SIGINT) while a plugin's checker runs is the user's, not the checker's."""
    stop = threading.Event()
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        judged(Plugin(lambda h: stop.wait(30)))
    stop.set()


BEHAVIOURS = st.one_of(
    st.builds(lambda e: _raise(e), st.sampled_from([SystemExit(1), KeyboardInterrupt(), RecursionError(),
                                                    MemoryError(), GeneratorExit(), ArithmeticError()])),
    st.builds(lambda v: (lambda h: v), st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8)),
    st.builds(lambda d: (lambda h: d), st.fixed_dictionaries(
        {"valid": st.sampled_from([True, False, "unknown", 1, 0, "True", None])},
        optional={"anomalies": st.none() | st.integers() | st.lists(st.integers(), max_size=2),
                  "anomaly_counts": st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=2),
                                                    max_size=2)})),
)


@settings(max_examples=150, deadline=None)
@given(behave=BEHAVIOURS)
def test_whatever_a_checker_does_the_verdict_is_one_of_three(behave: Any) -> None:
    r = judged(Plugin(behave))
    mine = r["checkers"]["plugin"]
    assert mine["valid"] is True or mine["valid"] is False or mine["valid"] == "unknown"
    if mine["valid"] is not True and mine["valid"] is not False:
        assert type(mine["valid"]) is str
    json.dumps(r, default=str)  # results.json can be written
    assert r["checkers"]["stats"]["valid"] is False and r["valid"] is False


CHECKER_MODULE = '''
def broken(spec):
    class Exits:
        name = "exits"
        def check(self, test, history):
            raise SystemExit(0)
    return Exits()
'''


def test_a_run_whose_checker_exits_is_unknown_with_its_store(tmp_path: Path) -> None:
    (tmp_path / "exitchecker.py").write_text(CHECKER_MODULE)
    res = subprocess.run([sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--workload",
                          "offsets", "--time-limit", "3", "--seed", "3", "--checker", "exitchecker:broken",
                          "--results-dir", str(tmp_path / "results")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    results = json.loads((tmp_path / "results" / "latest" / "results.json").read_text())
    assert results["checkers"]["exits"] == {"valid": "unknown", "error": "SystemExit: 0"}

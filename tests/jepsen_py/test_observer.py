"""The observer (jepsen_py.observer) samples a DB's status(), the DB's code ten times a second: an
answer that is no status stops the run with one line naming the DB (254), stored; one that raises,
even SystemExit or KeyboardInterrupt, is a fail sample; one that never returns is left behind at
stop, named in one line."""

from __future__ import annotations

import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.history import FAIL, OK, Op
from jepsen_py.observer import Observer
from jepsen_py.protocols import Test
from tests.jepsen_py import hostile
from tests.jepsen_py.fakes import make_spec

released = pytest.fixture(hostile.releasing)


@pytest.mark.parametrize(("db", "said"), [
    ("GarbageStatusDB", "returned int, not a dict or None"),
    ("UnprintableStatusDB", "gave a value that is not JSON (not JSON serializable: Unprintable)"),
])
def test_a_status_that_is_no_status_stops_the_run_with_one_line(tmp_path: Path, released: None,
                                                                capsys: pytest.CaptureFixture[str], db: str,
                                                                said: str) -> None:
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:{db}",
                                            "--workload", f"{hostile.HERE}:reads", time_limit=5))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 254
    assert len(err) == 1 and err[0].startswith(f"jepsen-py: --db: {hostile.HERE}:{db}: status(test, 'n"), err
    assert said in err[0] and "(run stored in " in err[0], err
    run = hostile.the_run(tmp_path / "results")
    results = hostile.results_of(run)
    assert results["valid"] == "unknown" and results["stats"]["phase_s"]["main"] < 4  # stopped, not run out
    samples = [o for o in hostile.history_of(run) if o["process"] == "observer"]
    assert samples and all(o["type"] == FAIL and o["error"].startswith("not a status") for o in samples)


class Moody:
    """status() raises SystemExit, then KeyboardInterrupt, then never returns."""

    def __init__(self) -> None:
        self.asked = 0

    def status(self, test: Any, node: str) -> dict[str, Any] | None:
        self.asked += 1
        if self.asked == 1:
            raise SystemExit(5)
        if self.asked == 2:
            raise KeyboardInterrupt
        hostile.block()
        return None


def test_a_status_that_exits_or_never_returns_is_a_sample_or_left_behind(
        tmp_path: Path, released: None, caplog: pytest.LogCaptureFixture) -> None:
    recorded: list[Op] = []
    test = Test(spec=make_spec(tmp_path, nodes=["n1"]), store_dir=tmp_path, log=logging.getLogger("t"),
                rng=random.Random(1))
    db = Moody()
    obs = Observer(test, db, recorded.append, lambda: 0,  # type: ignore[arg-type]
                   interval=0.01, nodes=["n1"])
    obs.start()
    for _ in range(500):  # until it is inside the ask that never returns
        if db.asked >= 3:
            break
        threading.Event().wait(0.01)
    with caplog.at_level(logging.WARNING):
        obs.stop(timeout=0.2)
    assert [(o.type, o.error) for o in recorded] == [(FAIL, "SystemExit: 5"), (FAIL, "KeyboardInterrupt")]
    named = [r.getMessage() for r in caplog.records if "left behind" in r.getMessage()]
    assert len(named) == 1 and "observer-n1" in named[0]
    assert OK not in {o.type for o in recorded}

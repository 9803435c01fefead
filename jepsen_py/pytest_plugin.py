"""The pytest plugin (entry point `pytest11`): jepsen-py tests inside a user's own test suite.

    def test_register_survives_partitions(jepsen):
        jepsen.run(db=MyDB, workload="register", nemesis=["partition-one"], time_limit=20)

    @pytest.mark.jepsen(db="mypkg.db:MyDB", workload="set")
    def test_set(jepsen):
        jepsen.run()                      # the marker's test map; keywords here override it

`jepsen.run(**fields)` takes jepsen_py.api.JepsenTest's fields, runs the test and fails the pytest
test unless the verdict is valid, with a message listing each failing checker and its first
anomalies (the first line is the summary, what JUnit reports show as the failure message).
`jepsen.run(..., check=False)` returns the outcome without judging it, for tests that expect an
anomaly. Runs go under the test's tmp_path unless --jepsen-results-dir says otherwise.

Command-line options, applied to every jepsen test in the session: --jepsen-seed N (reproduce a
run), --jepsen-time-limit S (shorter runs in CI, longer ones nightly), --jepsen-results-dir DIR.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from jepsen_py.api import JepsenTest, failure_message, run
from jepsen_py.errors import JepsenError
from jepsen_py.numbers import seed

if TYPE_CHECKING:
    from jepsen_py.api import JepsenTest
    from jepsen_py.runner import RunOutcome

MARKER = "jepsen"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("jepsen-py", "jepsen-py tests (the jepsen fixture and marker)")
    g.addoption("--jepsen-seed", type=seed, default=None, metavar="N",
                help="seed for every jepsen-py test (default: each test's own, else random and reported)")
    g.addoption("--jepsen-time-limit", type=float, default=None, metavar="S",
                help="main-phase seconds for every jepsen-py test (overrides the tests' own)")
    g.addoption("--jepsen-results-dir", default=None, metavar="DIR",
                help="where jepsen-py runs are stored (default: each test's tmp_path)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**test): a jepsen-py test map (jepsen_py.api.JepsenTest fields) that "
                   f"the jepsen fixture's run() uses")


class JepsenRunner:
    """What the `jepsen` fixture gives a test: builds the test map and runs it."""

    def __init__(self, config: pytest.Config, marker_fields: dict[str, Any], results_dir: Path) -> None:
        self.config = config
        self.marker_fields = marker_fields
        self.results_dir = results_dir
        self.outcomes: list[RunOutcome] = []

    def test(self, **fields: Any) -> JepsenTest:
        """The test map: the marker's fields, then these, then the command line's overrides."""
        merged: dict[str, Any] = {"results_dir": self.results_dir, **self.marker_fields, **fields}
        seed = self.config.getoption("--jepsen-seed")
        if seed is not None:
            merged["seed"] = seed
        limit = self.config.getoption("--jepsen-time-limit")
        if limit is not None:
            merged["time_limit"] = limit
        if "db" not in merged:
            raise pytest.UsageError("jepsen.run(): no db given (as a keyword or in @pytest.mark.jepsen)")
        try:
            return JepsenTest(**merged)
        except TypeError as e:
            raise pytest.UsageError(f"jepsen.run(): {e}") from None

    def run(self, *, check: bool = True, **fields: Any) -> RunOutcome:
        """Runs the test; unless `check` is false, fails the pytest test when it is not valid."""
        try:
            outcome = run(self.test(**fields))
        except JepsenError as e:
            pytest.fail(f"jepsen-py: {e}", pytrace=False)
        self.outcomes.append(outcome)
        if check and outcome.valid is not True:
            pytest.fail(failure_message(outcome), pytrace=False)
        return outcome


@pytest.fixture
def jepsen(request: pytest.FixtureRequest, tmp_path: Path) -> JepsenRunner:
    """Runs jepsen-py tests from a pytest test: `jepsen.run(db=..., workload=..., ...)`."""
    marker = request.node.get_closest_marker(MARKER)
    fields = dict(marker.kwargs) if marker is not None else {}
    option = request.config.getoption("--jepsen-results-dir")
    results = Path(option) if option else tmp_path / "jepsen"
    return JepsenRunner(request.config, fields, results)

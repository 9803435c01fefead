"""explore's exit code from what its trials came to: no verdict in any trial is 2 (unknown), not 0."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pytest

from jepsen_py.commands.explore import _summarize
from jepsen_py.errors import EXIT_FRAMEWORK, EXIT_UNKNOWN, EXIT_VALID
from jepsen_py.explore.plan import Plan
from jepsen_py.explore.report import TrialRow
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Space


def _code(tmp_path: Path, rows: list[TrialRow], errors: int = 0) -> int:
    search = Search(system=None, space=Space(), seed=1)  # type: ignore[arg-type]
    search.stats.tried, search.stats.errors = len(rows), errors
    plan = Plan("docker", False, "jepsen_py.raftdb:RaftMetadataDB", [], Space(), (1, 2), 300.0)
    return _summarize(argparse.Namespace(budget=60.0), 1, plan, search, time.monotonic(), time.process_time(),
                      [], tmp_path, None, rows)


@pytest.mark.parametrize("kinds, expected", [
    (["unknown", "unknown"], EXIT_UNKNOWN),
    (["unknown", "error"], EXIT_UNKNOWN),
    (["unknown", "valid"], EXIT_VALID),
    (["error", "error"], EXIT_FRAMEWORK),
])
def test_the_exit_code_says_whether_anything_was_checked(tmp_path: Path, kinds: list[str],
                                                        expected: int) -> None:
    rows = [TrialRow(n=i + 1, at_s=10.0 * i, config="c", wall_s=10.0, features=1, new=1,
                     error="exit 255" if k == "error" else None, unknown=k == "unknown")
            for i, k in enumerate(kinds)]
    assert _code(tmp_path, rows, errors=kinds.count("error")) == expected
    summary = json.loads((tmp_path / "explore.json").read_text())
    assert summary["trials_unknown"] == kinds.count("unknown") and summary["backend"] == "docker"
    assert (tmp_path / "report.html").is_file()

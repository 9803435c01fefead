"""The time budget holds: a search that rejects thousands of candidates per step still looks at
the clock often enough to stop within a small bound of its limit."""

from __future__ import annotations

import json
import time
from pathlib import Path

from jepsen_py import cli

LIMIT_S = 2.0
# Loading and splitting the history happen before the search starts; they take well under a second
# of CPU here. Before the clock counted rejected candidates this history ran for more than 10 s
# against a 2 s limit. The bound is on this process's CPU time, not on the wall clock: the limit is
# wall time, so a search that gets less of a loaded machine uses less CPU before it stops, while one
# that never looks at the clock spends its whole search's CPU however loaded the machine is.
SLACK_S = 2.5


def hard_history(path: Path, n: int = 5000) -> Path:
    """n writes that never complete (each may take effect any time after it began) and n reads,
    all concurrent, each seeing one write's value: at every step the search turns down thousands
    of reads before it lifts a write. One value is written twice, so the unique-value fast path
    does not apply and the general search must run."""
    out: list[dict[str, object]] = []

    def add(**d: object) -> None:
        out.append({"index": len(out), "time": len(out), **d})

    for i in range(n):
        add(type="invoke", process=10_000 + i, f="write", value=(i % (n - 1)) + 1)
    for i in range(n):
        add(type="invoke", process=i, f="read", value=None)
    for i in range(n):
        add(type="ok", process=i, f="read", value=n - i)
    path.write_text("\n".join(json.dumps(o) for o in out) + "\n")
    return path


def test_a_single_key_search_stops_within_a_small_bound_of_its_limit(tmp_path, capsys) -> None:
    h = hard_history(tmp_path / "h.jsonl")
    t0 = time.process_time()  # --workers 1 searches in this process
    code = cli.main(["check", str(h), "--model", "register", "--time-limit", str(LIMIT_S),
                     "--workers", "1"])
    elapsed = time.process_time() - t0
    out = capsys.readouterr().out
    assert code == 2 and "time limit reached" in out, out
    assert elapsed < LIMIT_S + SLACK_S, f"{elapsed:.2f} CPU s against a {LIMIT_S} s limit"

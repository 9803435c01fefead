"""The driver of a search fanned out over other cores (`explore --parallel`, `--master`): fanout.py
hands out the slices and merges what comes back; this is what the driver does with each trial it
merges (a row for report.html, the corpus directory brought up to date) and with each finding (shrunk
and hardened here, while the other slices go on or stop), so the command is left to print.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.analysis import PostRun
from jepsen_py.explore.corpus import Keeper
from jepsen_py.explore.fanout import FanoutStats, Runner, run_fanout
from jepsen_py.explore.finding import FindingReport, handle_finding, stops_search
from jepsen_py.explore.report import TrialRow, trial_row
from jepsen_py.explore.search import Search, Trial


@dataclass(frozen=True)
class FindingRules:
    """What is done with each finding (how long it may be shrunk and hardened, the steps run after its
    final replay) and whether it ends the search (`stops_search`)."""

    shrink_budget: float
    harden_budget: float
    post_run: Sequence[PostRun]
    keep_going: bool = False
    until_replayable: bool = False


def fan_out(runner: Runner, fan: FanoutStats, search: Search, system: Any, *, bugs: list[str],
            out_dir: Path, started: float, budget_s: float, round_size: int, rules: FindingRules,
            findings: list[FindingReport], trials_with_finding: list[Trial], rows: list[TrialRow],
            keeper: Keeper | None, on_trial: Callable[[Trial], None],
            on_status: Callable[[str], None]) -> FanoutStats:
    """The search as slices on `runner` (fanout.py) for `budget_s` wall seconds from `started`. Each
    trial merged gets its row in `rows` (unless the budget cut it) and the corpus directory is brought
    up to date, then `on_trial` is told; each finding is handled here (`findings`, and the trial it
    came from in `trials_with_finding` first, so an interruption can tell it was unfinished), with
    `on_status` told "shrinking" before and "searching" after."""
    cpu0 = time.process_time()
    features = [search.stats.features]  # before the trial the next on_trial reports

    def merged(trial: Trial) -> None:
        if not trial.cut:
            rows.append(trial_row(trial, search, features[0], time.monotonic() - started))
        features[0] = search.stats.features
        if keeper is not None:
            keeper.flush()
        on_trial(trial)

    def on_finding(trial: Trial) -> bool:
        trials_with_finding.append(trial)
        on_status("shrinking")
        now = time.monotonic()
        cpu = time.process_time() - cpu0 + fan.task_cpu_s
        findings.append(handle_finding(trial, system, search, out_dir, len(findings) + 1, now - started,
                                       cpu, rules.shrink_budget, rules.harden_budget,
                                       post_run=rules.post_run))
        on_status("searching")
        return stops_search(findings[-1], keep_going=rules.keep_going,
                            until_replayable=rules.until_replayable)

    return run_fanout(search, runner, bugs=bugs, budget_s=budget_s,
                      stop_at_first=not (rules.keep_going or rules.until_replayable),
                      on_trial=merged, on_finding=on_finding, stats=fan, round_size=round_size)

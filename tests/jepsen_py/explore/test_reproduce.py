"""--reproduce K/N: on a real backend a shrinking step is kept only when K of N replays show the kind,
and replays stop as soon as the answer is known."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jepsen_py.explore.finding import reproduces, still_fails
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule
from jepsen_py.explore.search import Trial

S = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=1, time_limit=10.0, concurrency=3,
             events=[Event(1.0, NEMESIS_THREAD, "start-partition", value="one"),
                     Event(2.0, 0, "send", key="k", value=1)], bugs=["zombie-leader"], recorded_on="docker")


@dataclass
class Flaky:
    """A real backend whose replays show the kind in the pattern given (then never again)."""

    pattern: list[bool]
    exact: bool = False
    replays: int = 0
    seen: list[Schedule] = field(default_factory=list)

    def replay(self, s: Schedule, **_: object) -> Trial:
        shown = self.pattern[self.replays] if self.replays < len(self.pattern) else False
        self.replays += 1
        self.seen.append(s)
        return Trial(schedule=s, anomalies={"stale-read": 1} if shown else {}, coverage=frozenset(),
                     sim_seconds=0.0, wall_seconds=0.0, run_dir=Path("/nonexistent"))


def test_k_of_n_stops_as_soon_as_k_is_reached_or_out_of_reach() -> None:
    assert reproduces(Flaky([False, True]), S, "stale-read", (1, 2)) == 2
    system = Flaky([True, True, True])
    assert reproduces(system, S, "stale-read", (1, 3)) == 1 and system.replays == 1
    system = Flaky([False, False, True])
    assert reproduces(system, S, "stale-read", (2, 3)) is None and system.replays == 2  # 2 of 3 impossible
    assert reproduces(Flaky([True, False, True]), S, "stale-read", (2, 3)) == 3
    assert reproduces(Flaky([True]), S, "lost-commit", (1, 2)) is None


def test_a_real_backend_step_needs_k_of_n_and_runs_no_control_without_the_bugs() -> None:
    system = Flaky([False, True])
    assert still_fails(system, S, "stale-read", (1, 2))
    assert all(s.bugs == ["zombie-leader"] for s in system.seen)  # no control build was run
    assert not still_fails(Flaky([False, False]), S, "stale-read", (1, 2))
    assert not still_fails(Flaky([True, False]), S, "stale-read", (2, 2))


def test_in_simulation_one_exact_replay_and_the_control_decide() -> None:
    system = Flaky([True, False], exact=True)
    assert still_fails(system, S, "stale-read", (1, 2))
    assert system.replays == 2 and system.seen[1].bugs == []  # the replay, then the build without bugs

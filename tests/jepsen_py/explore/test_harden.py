"""Hardening a shrunk schedule: which targets it widens, when it keeps a wider one, and, on the
simulator, a recovery-duplicates schedule whose kill of a minority only sometimes restarts the node
whose tail was overwritten."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from jepsen_py.explore.finding import FindingReport, harden_finding, still_fails, stops_search
from jepsen_py.explore.harden import (
    HardenResult,
    Rate,
    harden,
    in_kind_key,
    steadier_kinds,
    timing_rate,
    timing_seeds,
    widenings,
)
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule, load
from jepsen_py.explore.system import BackendSystem
from jepsen_py.sim.run import TIMING_SEED

SCHEDULES = Path(__file__).parent / "schedules"


def _schedule(*nemesis: Event) -> Schedule:
    client = Event(at=0.5, thread=0, f="commit", key="k", value=1, node="n1")
    return Schedule(workload="offsets", nodes=["n1", "n2", "n3", "n4", "n5"], seed=5, time_limit=10.0,
                    concurrency=1, events=[client, *nemesis], anomaly="crash")


def _kill(target: str, at: float = 4.0) -> Event:
    return Event(at=at, thread=NEMESIS_THREAD, f="kill", value=target)


def test_widenings_are_wider_targets_of_kills_and_pauses_widest_first() -> None:
    assert widenings(_kill("one")) == ["all", "majority", "minority"]
    assert widenings(_kill("leader")) == ["all", "majority", "minority"]
    assert widenings(_kill("minority")) == ["all", "majority"]
    assert widenings(_kill("majority")) == ["all"]
    assert widenings(_kill("all")) == []
    assert widenings(Event(at=1.0, thread=NEMESIS_THREAD, f="pause", value="majority")) == ["all"]
    # a partition's shape and a clock op's draws are not targets to widen
    assert widenings(Event(at=1.0, thread=NEMESIS_THREAD, f="start-partition", value="leader")) == []
    assert widenings(Event(at=1.0, thread=NEMESIS_THREAD, f="strobe-clock")) == []


def test_timing_seeds_are_fixed_per_schedule_and_distinct() -> None:
    s = _schedule(_kill("majority"))
    assert timing_seeds(s, 8) == timing_seeds(s, 8)
    assert len(set(timing_seeds(s, 8))) == 8
    assert timing_seeds(replace(s, seed=6), 8) != timing_seeds(s, 8)


def _race(wins: dict[str, int]):
    """A stand-in for the simulator's in-kind replay: a kill of target T shows the anomaly under the
    first wins[T] of every 8 timing seeds (the race goes the recorded way that often)."""
    def shows(c: Schedule, timing: int) -> bool:
        [kill] = [e for e in c.nemesis_events if e.f == "kill"]
        seeds = timing_seeds(c, 8)
        return seeds.index(timing) < wins[str(kill.value)]
    return shows


def test_harden_keeps_the_widest_target_that_raises_the_rate() -> None:
    s = _schedule(Event(at=2.0, thread=NEMESIS_THREAD, f="strobe-clock"), _kill("majority", 6.0))
    result = harden(s, "crash", shows=_race({"majority": 4, "all": 7}), still_fails=lambda c: True)
    assert [e.value for e in result.schedule.nemesis_events] == [None, "all"]
    assert (result.before, result.after) == (Rate(4, 8), Rate(7, 8))
    assert result.widened == ["kill at 6 s: majority -> all"]
    assert s.nemesis_events[1].value == "majority", "the input schedule is left as it was"


def test_harden_refuses_a_wider_target_that_no_longer_fails_exactly_or_does_not_help() -> None:
    s = _schedule(_kill("one"))
    # "all" raises the rate but the exact replay (or its bug-free control) refuses it; "majority"
    # raises it and fails exactly; "minority" is not needed once majority is kept
    result = harden(s, "crash", shows=_race({"one": 2, "minority": 3, "majority": 6, "all": 8}),
                    still_fails=lambda c: c.nemesis_events[0].value != "all")
    assert result.schedule.nemesis_events[0].value == "majority"
    assert result.after == Rate(6, 8)
    # a wider target that does not raise the rate is not kept: the schedule stays as narrow as found
    same = harden(s, "crash", shows=_race({"one": 5, "minority": 5, "majority": 5, "all": 5}),
                  still_fails=lambda c: True)
    assert same.schedule.nemesis_events[0].value == "one" and same.widened == []
    assert same.before == same.after == Rate(5, 8)


def test_harden_stops_at_a_full_rate_and_at_its_budget() -> None:
    tried: list[object] = []

    def shows(c: Schedule, timing: int) -> bool:
        tried.append(c.nemesis_events[0].value)
        return True

    full = harden(_schedule(_kill("one")), "crash", shows=shows, still_fails=lambda c: True)
    assert set(tried) == {"one"} and full.after == Rate(8, 8)
    ticks = iter(range(100))
    cut = harden(_schedule(_kill("one")), "crash", shows=_race({"one": 1, "all": 2}),
                 still_fails=lambda c: True, budget_s=0.5, clock=lambda: float(next(ticks)))
    assert cut.exhausted and cut.schedule.nemesis_events[0].value == "one"


def test_timing_rate_stops_once_the_need_cannot_be_met() -> None:
    s = _schedule(_kill("one"))
    seeds = timing_seeds(s, 8)
    asked: list[int] = []

    def never(c: Schedule, timing: int) -> bool:
        asked.append(timing)
        return False

    assert timing_rate(s, "crash", never, seeds, need=4) == Rate(0, 5)
    assert asked == seeds[:5], "after 5 misses, 3 runs cannot make 4 hits"
    assert timing_rate(s, "crash", lambda c, timing: True, seeds, need=4) == Rate(8, 8)


def test_in_kind_key_ignores_client_ops_only_where_an_in_kind_replay_does() -> None:
    faulty = _schedule(_kill("one"))
    fewer_ops = faulty.with_events(faulty.nemesis_events, concurrency=3)
    assert in_kind_key(fewer_ops) == in_kind_key(faulty), "clients are the workload's own there"
    assert in_kind_key(faulty.with_events([*faulty.events], time_limit=9.0)) != in_kind_key(faulty)
    assert in_kind_key(_schedule(_kill("all"))) != in_kind_key(faulty)
    calm = _schedule()
    # without faults the recorded client ops are what is replayed
    assert in_kind_key(calm.with_events([])) != in_kind_key(calm)


def test_harden_steps_back_along_the_shrink_path_to_the_smallest_replayable_schedule() -> None:
    kills = [_kill("one", at) for at in (2.0, 4.0, 6.0)]
    original, middle, smallest = _schedule(*kills), _schedule(*kills[1:]), _schedule(kills[2])
    client_only = smallest.with_events([*smallest.nemesis_events], concurrency=0)
    seeds = timing_seeds(smallest, 8)
    asked: list[int] = []

    def shows(c: Schedule, timing: int) -> bool:
        # the single kill fails only with the recorded client ops in flight; two or more kills fail
        # under most timings whatever the clients do
        asked.append(len(c.nemesis_events))
        return len(c.nemesis_events) >= 2 and seeds.index(timing) < 6

    result = harden(smallest, "crash", shows=shows, still_fails=lambda c: True,
                    path=[original, middle, smallest, client_only])
    assert result.stepped_back_from is smallest
    assert result.schedule.nemesis_events == middle.nemesis_events
    assert (result.before, result.base) == (Rate(0, 8), Rate(6, 8))
    assert asked.count(3) == 0, "the original is not tried once a smaller one on the path will do"
    assert asked.count(1) == 8, "a path entry with the same in-kind replay is not run again"
    # widening then starts from the stepped-back schedule: here no target changes the rate
    assert result.after == Rate(6, 8) and result.widened == []


def test_until_replayable_searches_on_past_a_finding_a_real_backend_would_rarely_reproduce() -> None:
    def finding(replayable: bool | None) -> FindingReport:
        return FindingReport(kind="crash", kinds={"crash": 1}, found_after_s=1.0, schedules_tried=3,
                             found_after_cpu_s=1.0, config="", original={}, replayable=replayable)

    rare, replays, unforecast = finding(False), finding(True), finding(None)
    assert stops_search(rare, keep_going=False, until_replayable=False), "by default the first one ends it"
    assert not stops_search(rare, keep_going=False, until_replayable=True)
    assert stops_search(replays, keep_going=False, until_replayable=True)
    assert stops_search(unforecast, keep_going=False, until_replayable=True), "no faults: its ops replay"
    assert not stops_search(replays, keep_going=True, until_replayable=True)


def test_a_result_is_replayable_when_most_timings_show_it() -> None:
    s = _schedule(_kill("one"))
    assert HardenResult(s, Rate(0, 8), Rate(5, 8), Rate(5, 8)).replayable
    assert not HardenResult(s, Rate(0, 8), Rate(4, 8), Rate(4, 8)).replayable, "half is not most"
    assert HardenResult(s, Rate(0, 3), Rate(2, 3), Rate(2, 3)).replayable
    assert not HardenResult(s, Rate(0, 0), Rate(0, 0), Rate(0, 0)).replayable


@pytest.mark.slow
def test_a_recovery_duplicates_schedule_hardens_from_a_minority_to_every_node(tmp_path: Path) -> None:
    """explore's shrunk schedule (seed 42): the leader's clock stepped while it is cut off, then a
    kill of a minority. The crash needs the old leader, whose unreplicated tail the new leader
    overwrote, among the killed; a kill of a minority picks it under some timings only, a kill of
    every node restarts it whichever it is."""
    s = load(SCHEDULES / "recovery-duplicates-leader-clock-then-kill-minority.json")
    system = BackendSystem(work_dir=tmp_path, bugs=list(s.bugs))
    result = harden(s, "crash", shows=lambda c, timing: "crash" in system.replay_timed(c, timing),
                    still_fails=lambda c: still_fails(system, c, "crash"), budget_s=900)
    assert not result.exhausted
    assert result.widened == ["kill at 11.25 s: minority -> all"]
    assert result.after.above(result.before) and result.replayable
    assert [e.value for e in result.schedule.nemesis_events if e.f == "kill"] == ["all"]
    kept = [json.loads(p.read_text()) for p in tmp_path.glob("trial-*/2*/test.json")]
    assert kept, "the exact replays that failed are kept, as the shrinker's are"
    assert not [k for k in kept if TIMING_SEED in k["options"]], "the in-kind replays are not kept"


def test_a_finding_stepped_back_keeps_its_smallest_schedule_beside_it(tmp_path: Path) -> None:
    """explore writes the schedule that replays (a larger one from the shrink's path) and keeps the
    smallest failing one as schedule-smallest.json, which the note names."""
    kills = [_kill("one", at) for at in (2.0, 4.0)]
    larger, smallest = _schedule(*kills), _schedule(kills[1])

    class TwoKillsReplay:
        deadline: float | None = None

        def replay_timed(self, c: Schedule, timing: int) -> dict[str, int]:
            return {"crash": 1} if len(c.nemesis_events) >= 2 else {}

    report = FindingReport(kind="crash", kinds={"crash": 1}, found_after_s=1.0, schedules_tried=1,
                           found_after_cpu_s=1.0, config="", original=larger.size())
    written, kind = harden_finding(smallest, "crash", TwoKillsReplay(), report, 60.0, [larger, smallest],
                                   tmp_path)
    assert kind == "crash" and written.nemesis_events == larger.nemesis_events and report.timing_rate == "8/8"
    kept = load(tmp_path / "schedule-smallest.json")
    assert kept.nemesis_events == smallest.nemesis_events and kept.anomaly == "crash"
    assert report.smallest == smallest.size() and report.smallest["faults"] == 1
    assert str(tmp_path / "schedule-smallest.json") in report.notes[0]


def test_steadier_kinds_are_those_more_timings_show_most_first_the_more_severe_among_equals() -> None:
    rates = {"lost-commit": Rate(5, 8), "stale-read": Rate(8, 8), "nonlinearizable": Rate(8, 8),
             "unavailable": Rate(6, 8), "crash": Rate(5, 8)}
    assert steadier_kinds(rates, "lost-commit") == ["stale-read", "nonlinearizable", "unavailable"]
    assert steadier_kinds(rates, "stale-read") == []
    assert steadier_kinds(rates, "duplicate-create") == ["stale-read", "nonlinearizable", "unavailable",
                                                         "lost-commit", "crash"]


def test_a_finding_is_named_by_the_kind_its_replays_under_other_timings_show_most(tmp_path: Path) -> None:
    """explore's split-brain-metadata schedule (one commit, then every clock bumped as the run ends)
    was shrunk for lost-commit, the most severe kind its run showed; its exact replay shows a
    non-linearizable history too. Under other timings the commit is lost only sometimes (in
    simulation, where which free worker takes which op decides the node a commit lands on, in none
    of 8), while the history is non-linearizable every time (on Docker: lost-commit in 4 of 10 runs,
    nonlinearizable in 10 of 10), so the schedule written is named nonlinearizable."""
    s = load(SCHEDULES / "split-brain-metadata-commit-then-bump-clock.json")
    system = BackendSystem(work_dir=tmp_path / "trials", bugs=list(s.bugs))
    report = FindingReport(kind="lost-commit", kinds={"lost-commit": 1}, found_after_s=1.0, schedules_tried=1,
                           found_after_cpu_s=1.0, config="", original=s.size())
    written, kind = harden_finding(s, "lost-commit", system, report, 300.0, [], tmp_path)
    assert kind == report.kind == "nonlinearizable"
    assert report.notes[0] == ("named nonlinearizable, not lost-commit: in-kind replays under other "
                               "timings show nonlinearizable in 8/8, lost-commit in 0/8 (its exact "
                               "replay shows both)")
    assert written.events == s.events and report.timing_rate == "8/8" and report.replayable
    # stale-read shows in every in-kind replay too, but not in the exact one: not a name it could keep
    assert "stale-read" not in system.replay(s).anomalies

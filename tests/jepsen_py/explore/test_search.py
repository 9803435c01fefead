"""The search against the planted system: it must find the bug blind, within a budget, and a clean
system must give no finding however long it searches."""

from __future__ import annotations

import itertools
from pathlib import Path

from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.search import Search, Trial, primary_kind, run_search
from jepsen_py.explore.space import Config, Space
from tests.jepsen_py.explore.planted import PlantedSystem


def ticks() -> object:
    """A clock that advances one second per reading: a budget of N seconds is about N trials."""
    c = itertools.count()
    return lambda: float(next(c))


def test_finds_the_planted_bug_within_budget() -> None:
    found_after = []
    for seed in range(5):
        system = PlantedSystem()
        search = Search(system, Space(), seed=seed)
        found = run_search(search, budget_s=3000, clock=ticks())  # type: ignore[arg-type]
        assert found, f"seed {seed}: no finding in {system.runs} trials"
        assert found[0].anomalies.keys() == {"lost-commit"}
        assert search.stats.findings == 1
        found_after.append(system.runs)
    assert sorted(found_after)[2] < 1500, found_after


def test_stops_at_the_first_finding_unless_keep_going() -> None:
    system = PlantedSystem()
    found = run_search(Search(system, Space(), seed=1), budget_s=3000, clock=ticks())  # type: ignore[arg-type]
    assert len(found) == 1 and found[0] is not None
    system2 = PlantedSystem()
    more = run_search(Search(system2, Space(), seed=1), budget_s=1000, keep_going=True,
                      clock=ticks())  # type: ignore[arg-type]
    assert len(more) > 1 and system2.runs == 999


class Clean(PlantedSystem):
    """The same system with the bug fixed: no trial may fail."""

    def _judge(self, s: Schedule, cfg: Config | None) -> Trial:
        t = super()._judge(s, cfg)
        t.anomalies = {}
        return t


def test_a_clean_system_gives_no_finding() -> None:
    system = Clean()
    search = Search(system, Space(), seed=0)
    assert run_search(search, budget_s=300, keep_going=True, clock=ticks()) == []  # type: ignore[arg-type]
    assert search.stats.tried == 299 and search.stats.findings == 0


def test_coverage_grows_the_corpus_and_mutation_takes_over_after_warmup() -> None:
    system = PlantedSystem()
    search = Search(system, Space(families=("partition", "pause")), seed=2, warmup=5)
    for _ in range(60):
        search.step()
    assert 1 < len(search.corpus) < 60
    assert search.stats.features == len(search.seen) > 5


def test_search_is_deterministic_for_a_seed() -> None:
    def labels(seed: int) -> list[str]:
        search = Search(PlantedSystem(), Space(), seed=seed)
        return [search.step().config.label() for _ in range(30)]  # type: ignore[union-attr]

    assert labels(4) == labels(4)
    assert labels(4) != labels(5)


def test_primary_kind_prefers_data_anomalies_to_liveness() -> None:
    assert primary_kind({"unavailable": 3, "stale-read": 1}) == "stale-read"
    assert primary_kind({"election-churn": 1, "zzz-new-kind": 1}) == "election-churn"
    assert primary_kind({"b-kind": 1, "a-kind": 2}) == "a-kind"
    assert primary_kind({}) is None


def test_elle_anomalies_are_data_anomalies_ranked_before_liveness() -> None:
    assert primary_kind({"unavailable": 5, "G1c": 1, "internal": 3}) == "G1c"
    assert primary_kind({"G2-item": 1, "G-single-item": 1, "G0": 1}) == "G0"
    assert primary_kind({"stale-read": 1, "G0": 1}) == "stale-read"


def test_replay_path_is_used_for_schedules(tmp_path: Path) -> None:
    system = PlantedSystem()
    t = system.trial(Space().sample(__import__("random").Random(1)))
    again = system.replay(t.schedule, keep=tmp_path)
    assert again.anomalies == t.anomalies and again.coverage == t.coverage

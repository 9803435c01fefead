"""Pairwise draws: of several candidates the search takes the one trying the most untried pairs of
configuration factors, keeping swarm testing's mix of fault counts; one draw is the plain search."""

from __future__ import annotations

import statistics

from jepsen_py.explore.pairs import factors, most_new_pairs, pairs
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Config, Space
from tests.jepsen_py.explore.test_search import Clean

# the space explore draws from on a real backend (realspace.py's intervals and time limits)
REAL = Space(intervals=(2.0, 3.0, 5.0, 8.0), time_limits=(10.0, 20.0, 30.0))


def _cfg(workload: str = "offsets", families: tuple[str, ...] = ("kill", "partition"),
         targets: tuple[str, ...] = ("leader", "all")) -> Config:
    return Config(workload=workload, families=families, shapes=("bridge",), targets=targets, interval=2.0,
                  mode="random", read_mode="lease", node_count=3, time_limit=10.0, seed=1,
                  db_options=(("reads", "serializable"),))


def test_factors_and_pairs_of_a_configuration() -> None:
    c = _cfg()
    assert factors(c) == ("workload=offsets", "fault=kill", "fault=partition", "read=lease", "nodes=3",
                          "target=leader", "target=all", "option:reads=serializable")
    ps = pairs(c)
    assert ("fault=kill", "workload=offsets") in ps and ("fault=kill", "fault=partition") in ps
    assert ("target=all", "target=leader") not in ps  # two values of one dimension are no pair
    assert ("nodes=3", "option:reads=serializable") in ps
    assert len(ps) == 8 * 7 // 2 - 1
    # targets count only where something is killed or paused
    assert not any(f.startswith("target=") for f in factors(_cfg(families=("partition",))))
    assert "fault=none" in factors(_cfg(families=()))


def test_the_candidate_with_most_untried_pairs_wins_the_first_of_equals() -> None:
    a, b = _cfg("offsets"), _cfg("topics")
    assert most_new_pairs([a, b], set()) is a
    assert most_new_pairs([a, b], set(pairs(a))) is b


def _workload_fault_pairs(search: Search, trials: int) -> tuple[int, list[int]]:
    got: set[tuple[str, str]] = set()
    counts = []
    for _ in range(trials):
        cfg = search.step().config
        assert cfg is not None
        got |= {(cfg.workload, f) for f in cfg.families}
        counts.append(len(cfg.families))
    return len(got), counts


def test_a_pairwise_search_meets_every_workload_with_every_fault_sooner() -> None:
    """25 trials (a 15-minute search on Docker): 6 workloads x 5 fault families = 30 pairs."""
    plain, paired = [], []
    plain_sizes: list[int] = []
    paired_sizes: list[int] = []
    for seed in range(1, 11):
        n, sizes = _workload_fault_pairs(Search(Clean(), REAL, seed=seed), 25)
        plain.append(n)
        plain_sizes += sizes
        n, sizes = _workload_fault_pairs(Search(Clean(), REAL, seed=seed, draws=20), 25)
        paired.append(n)
        paired_sizes += sizes
    assert min(paired) >= 24 and statistics.mean(paired) >= statistics.mean(plain) + 5, (plain, paired)
    # swarm testing's mix of fault counts is kept: no drift toward the configurations with most pairs
    for k in range(4):
        assert abs(paired_sizes.count(k) - plain_sizes.count(k)) <= 0.1 * len(plain_sizes), (k, plain_sizes,
                                                                                             paired_sizes)


def test_the_chosen_candidate_has_as_many_faults_as_the_first() -> None:
    search = Search(Clean(), REAL, seed=1, draws=3)
    search.tried_pairs |= pairs(_cfg("offsets", ("kill",)))
    cands = iter([_cfg("offsets", ("kill",)), _cfg("topics", ("kill", "partition", "pause")),
                  _cfg("offsets", ("kill",), targets=("one",))])
    chosen = search._best(lambda: next(cands))
    assert chosen.targets == ("one",)  # the 3-fault topics draw tries more new pairs, but has 3 faults


def test_the_first_trial_is_the_plain_search_s_then_they_part() -> None:
    def labels(draws: int) -> list[str]:
        s = Search(Clean(), REAL, seed=9, draws=draws)
        return [s.step().config.label() for _ in range(15)]  # type: ignore[union-attr]

    plain, paired = labels(1), labels(20)
    assert paired[0] == plain[0]  # nothing tried yet: the first candidate
    assert paired[1:] != plain[1:]

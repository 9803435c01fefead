"""Every seed derived from a test's --seed, in one place: the same seed gives the same streams on
every backend and in every command. The simulated histories the tests pin byte for byte depend on
each formula here, so none may change."""

from __future__ import annotations

import random


def derive(seed: int, label: str) -> random.Random:
    """A stream of its own for `label`, independent of the run's (`test_rng`) and of other labels."""
    return random.Random(f"{label}:{seed}")


def test_rng(seed: int) -> random.Random:
    """The run's own stream, test.rng: the nemesis's draws (targets, fault values)."""
    return random.Random(seed)


def generator_rng(seed: int) -> random.Random:
    """The generators' stream, so a nemesis drawing from test.rng cannot shift the clients' ops."""
    return derive(seed, "generator")


def timing_rng(seed: int) -> random.Random:
    """Where the timing seeds of a schedule's in-kind replays come from (explore's forecast)."""
    return derive(seed, "timing")


def recorder_rng(seed: int) -> random.Random:
    """The stream a recorded exploration trial draws its clients' ops from."""
    return random.Random(seed ^ 0x5EED)  # older than derive(); its values are pinned


def run_seed(seed: int, i: int) -> int:
    """The seed of run i of --test-count (or of a matrix cell's runs)."""
    return seed + i


def node_seed(seed: int, index: int) -> int:
    """The --seed of the node at `index` of the node list (its Raft timeouts)."""
    return seed * 1000 + index


def cluster_seed(seed: int, timing_seed: int | None) -> int:
    """The simulated cluster's own randomness (delays, disks, entropy): the run's seed unless a timing
    seed replaces it."""
    return seed if timing_seed is None else int(timing_seed)

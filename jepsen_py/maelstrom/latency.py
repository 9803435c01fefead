"""How long the network holds each message, as Maelstrom's --latency and --latency-dist say: its own
module, so the flags that name the distributions need not load the router."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

DISTRIBUTIONS = ("constant", "uniform", "exponential")
Distribution = Literal["constant", "uniform", "exponential"]


@dataclass(frozen=True, slots=True)
class Latency:
    """Each message's delay, as Maelstrom's --latency and --latency-dist: `mean_ms` constant, or
    uniform on [0, 2 * mean_ms], or exponential with that mean."""

    mean_ms: float = 0.0
    distribution: Distribution = "constant"

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"latency distribution {self.distribution!r}: one of {', '.join(DISTRIBUTIONS)}")
        if not self.mean_ms >= 0:
            raise ValueError(f"latency {self.mean_ms} ms: must be 0 or more")

    def sample(self, rng: random.Random) -> float:
        """One delay, in seconds."""
        if self.mean_ms == 0:
            return 0.0
        if self.distribution == "constant":
            ms = self.mean_ms
        elif self.distribution == "uniform":
            ms = rng.uniform(0, 2 * self.mean_ms)
        else:
            ms = rng.expovariate(1 / self.mean_ms)
        return ms / 1000

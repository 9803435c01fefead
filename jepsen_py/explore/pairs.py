"""Pairwise coverage of the configuration space, for searches whose trials are expensive.

In simulation a search tries thousands of configurations, so random draws meet every combination of
workload, fault family, read mode and node count many times over. On a real backend a trial takes
tens of seconds and a search of 15 minutes tries about twenty: random draws repeat some combinations
and never reach others (a workload that loses data only when a node is killed may never meet a kill).
Combinatorial testing's answer is to cover pairs: each configuration is a set of factors
(workload=..., fault=..., read=..., nodes=..., a kill or pause target, a DB option), and of several
candidate draws the search takes the one that tries the most pairs of factors no earlier trial tried.
Nothing here knows a bug: every pair counts the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from jepsen_py.explore.space import Config

Pair = tuple[str, str]


def factors(cfg: Config) -> tuple[str, ...]:
    """The factors of `cfg` whose combinations a pairwise search covers."""
    out = [f"workload={cfg.workload}"]
    out += [f"fault={f}" for f in cfg.families] or ["fault=none"]
    if cfg.read_mode is not None:
        out.append(f"read={cfg.read_mode}")
    out.append(f"nodes={cfg.node_count}")
    if {"kill", "pause"} & set(cfg.families):
        out += [f"target={t}" for t in cfg.targets]
    out += [f"option:{k}={v}" for k, v in (*cfg.db_options, *cfg.backend_options)]
    return tuple(out)


def _dimension(factor: str) -> str:
    return factor.split("=", 1)[0]


def pairs(cfg: Config) -> frozenset[Pair]:
    """Every pair of `cfg`'s factors from two dimensions (two fault families also make a pair:
    faults overlap; two targets of one configuration do not)."""
    return frozenset((a, b) for a, b in itertools.combinations(sorted(factors(cfg)), 2)
                     if _dimension(a) != _dimension(b) or _dimension(a) == "fault")


def most_new_pairs(candidates: Sequence[Config], tried: set[Pair]) -> Config:
    """The candidate that tries the most pairs not in `tried` (the first of equals). A count favours
    configurations with more faults and targets: the caller offers candidates of one fault count."""
    return max(candidates, key=lambda c: len(pairs(c) - tried))

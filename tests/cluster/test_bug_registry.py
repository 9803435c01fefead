"""The seed-bug registry: one record of booleans, each bug decided at exactly one place in the node."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from jepsen_py.cluster.bugs import BUGS, NAMES, NO_BUGS, Bugs, UnknownBug
from jepsen_py.cluster.node import leader_rules
from jepsen_py.cluster.raft.config import READ_ONLY_LEASE, READ_ONLY_SAFE, Config

CLUSTER = Path(__file__).resolve().parents[2] / "cluster"


def test_every_registered_bug_is_a_field_and_back():
    assert [f.name for f in dataclasses.fields(Bugs)] == [b.field for b in BUGS]
    for b in BUGS:
        assert b.post_mortem and b.description and b.decided_in
        assert Bugs.parse([b.name]).names() == (b.name,)
    assert Bugs.parse(reversed(NAMES)).names() == NAMES
    assert not NO_BUGS and Bugs.parse([]) == NO_BUGS


def test_an_unknown_name_is_refused_with_the_known_ones():
    with pytest.raises(UnknownBug) as e:
        Bugs.parse(["zombie-leader", "zombie-leadr"])
    assert "'zombie-leadr'" in str(e.value) and "lease-no-drift-bound" in str(e.value)


def test_the_record_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        NO_BUGS.zombie_leader = True  # type: ignore[misc]


def _reads_of_bug_fields() -> dict[str, list[str]]:
    fields = {b.field for b in BUGS}
    seen: dict[str, list[str]] = {f: [] for f in fields}
    for path in sorted(CLUSTER.rglob("*.py")):
        if path.name == "bugs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in fields and isinstance(node.ctx, ast.Load):
                seen[node.attr].append(f"{path.relative_to(CLUSTER)}:{node.lineno}")
    return seen


def test_each_bug_is_decided_at_exactly_one_place_the_registry_names():
    seen = _reads_of_bug_fields()
    for b in BUGS:
        assert len(seen[b.field]) == 1, (b.name, seen[b.field])
        assert seen[b.field][0].startswith(b.decided_in.split()[0] + ":"), (b.name, seen[b.field])
        module, _, func = b.decided_in.partition(" ")
        assert func.split(".")[-1] in (CLUSTER / module).read_text()


def test_no_bug_is_tested_by_its_name_as_a_string():
    names = set(NAMES)
    hits = []
    for path in sorted(CLUSTER.rglob("*.py")):
        if path.name == "bugs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                hits.append(f"{path.name}:{node.lineno} {node.value}")
    assert hits == []


def test_leader_rules_decide_zombie_leader_and_the_drift_bound_once():
    ok = leader_rules("lease", NO_BUGS)
    assert (ok.check_quorum, ok.read_only, ok.leader_reads_locally) == (True, READ_ONLY_LEASE, False)
    assert (ok.lease_margin_ticks, ok.ticks_follow_clock) == (Config.lease_margin_ticks, True)
    zombie = leader_rules("lease", Bugs(zombie_leader=True))
    assert (zombie.check_quorum, zombie.read_only) == (False, READ_ONLY_SAFE) and zombie.leader_reads_locally
    drift = leader_rules("lease", Bugs(lease_no_drift_bound=True))
    assert (drift.check_quorum, drift.read_only) == (True, READ_ONLY_LEASE)
    assert (drift.lease_margin_ticks, drift.ticks_follow_clock) == (0, False)
    assert leader_rules("read-index", NO_BUGS).read_only == READ_ONLY_SAFE

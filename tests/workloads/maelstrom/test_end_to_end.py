"""Every Maelstrom workload the maelstrom backend serves, through the real runner, its codec talking
to in-process fake nodes: correct nodes pass, each bug is caught by its workload's checker."""

from __future__ import annotations

from pathlib import Path

import pytest

from jepsen_py.maelstrom_world.workloads import WORKLOADS, codec_for
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.fakenodes import FakeClient, FakeNodes
from tests.workloads.memstore import StoreDB

CHECKER = {"echo": "echo", "unique-ids": "unique-ids", "g-set": "g-set", "broadcast": "broadcast",
           "g-counter": "g-counter", "pn-counter": "pn-counter", "lin-kv": "linearizable", "kafka": "kafka",
           "txn-list-append": "elle", "txn-rw-register": "elle"}


def run(tmp_path: Path, name: str, nodes: FakeNodes):
    spec = make_spec(tmp_path, name=f"maelstrom-{name}", workload=name, time_limit=0.3, rate=300.0,
                     options={"final_delay": 0})
    workload = WORKLOADS[name].build(spec)
    workload.client = FakeClient(codec_for(name), nodes)
    return run_test(spec, db=StoreDB(spec), workload=workload)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_correct_nodes_pass(tmp_path: Path, name: str) -> None:
    nodes = FakeNodes(workload=name)
    out = run(tmp_path, name, nodes)
    r = out.results["checkers"][CHECKER[name]]
    assert r["valid"] is True, r
    assert out.valid is True, out.results
    assert nodes.calls > 20


@pytest.mark.parametrize(("name", "bug", "kind"), [
    ("unique-ids", {"duplicate_ids": True}, "duplicate"),
    ("broadcast", {"isolated": "n2"}, "not-converged"),
    ("g-set", {"isolated": "n3"}, "not-converged"),
    ("lin-kv", {"stale_kv": True}, "nonlinearizable"),
    ("kafka", {"local_offsets": True}, "inconsistent-offsets"),
    ("txn-list-append", {"split_txn": True}, "incompatible-order"),
])
def test_buggy_nodes_are_caught(tmp_path: Path, name: str, bug: dict, kind: str) -> None:
    out = run(tmp_path, name, FakeNodes(workload=name, **bug))
    r = out.results["checkers"][CHECKER[name]]
    assert r["valid"] is False and kind in r["failing_kinds"], r
    assert out.valid is False


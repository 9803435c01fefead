"""Inference key by key, merged, is the whole history's inference: the same edges (with the same
reasons), the same anomaly counts, hence the same verdict once the cycle search runs on it."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.elle import check
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.checker import WORKLOADS, conclude, infer, validated
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import EdgeList
from jepsen_py.checkers.elle.inference import NONE, Inference
from jepsen_py.checkers.elle.perkey import infer_key, merge, split_by_key
from jepsen_py.checkers.elle.txn import Txn, transactions

from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from tests.checkers.elle.build import LIST_KINDS, Hist, inject, pattern, serial_history
from tests.checkers.elle.test_patterns import RW_KINDS

SAME = ("valid", "anomaly_types", "prohibited_anomaly_types", "anomaly_counts", "not", "also_not", "txns",
        "edges", "cyclic_components")


def _by_key(ops: list[Op], workload: str, assume: Inference = NONE) -> tuple[list[Txn], EdgeList, Found,
                                                                             str | None]:
    txns = transactions(ops, WORKLOADS[workload])
    pieces = [infer_key(workload, rows, len(txns), Deadline(60), assume)
              for _, rows in split_by_key(txns)]
    edges, found = EdgeList(len(txns)), Found()
    late = merge(pieces, txns, edges, found)
    return txns, edges, found, late


def _history(seed: int, n: int, workload: str, kinds: list[str]) -> list[Op]:
    rng = random.Random(seed)
    ops = serial_history(rng, n, 4, workload)
    for j, kind in enumerate(kinds):
        ops = inject(ops, pattern(kind, workload, tag=f"t{j}", p0=1000 + 100 * j).ops, rng)
    return ops


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 120), data=st.data(),
       workload=st.sampled_from(["list-append", "rw-register"]),
       flags=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_merged_inference_is_the_whole_inference(seed: int, n: int, data: st.DataObject, workload: str,
                                                 flags: tuple[bool, bool, bool]) -> None:
    kinds = data.draw(st.lists(st.sampled_from(LIST_KINDS if workload == "list-append" else RW_KINDS),
                               max_size=3))
    ops = _history(seed, n, workload, kinds)
    txns = transactions(ops, WORKLOADS[workload])
    assume = Inference(*flags) if workload == "rw-register" else NONE
    whole_edges, whole_found = EdgeList(len(txns)), Found()
    infer(workload, txns, whole_edges, whole_found, Deadline(60), assume)
    _, edges, found, late = _by_key(ops, workload, assume)
    assert late is None
    assert Counter(zip(edges.src, edges.dst, edges.kind, edges.why, strict=True)) == Counter(
        zip(whole_edges.src, whole_edges.dst, whole_edges.kind, whole_edges.why, strict=True))
    assert found.counts == whole_found.counts
    # the examples are the whole history's, transactions named whole (not projected onto a key)
    sizes = {k: len(v) for k, v in whole_found.examples.items()}
    assert {k: len(v) for k, v in found.examples.items()} == sizes
    whole = [e for v in whole_found.examples.values() for e in v]
    for e in (e for v in found.examples.values() for e in v):
        assert e in whole, e
    # and the verdict, once the graph is searched, is check()'s
    models = ["strict-serializable"] if not flags[1] else ["strong-session-snapshot-isolation"]
    merged = conclude(txns, edges, found, workload, validated(workload, models), Deadline(60))
    local = check(ops, workload, models, inference=assume)
    for k in SAME:
        assert merged[k] == local[k], k
    assert _cycles(merged) == _cycles(local)


def _cycles(r: dict[str, Any]) -> list[Any]:
    return [(a["kind"], a["ops"], [(s["from"], s["to"], s["type"]) for s in a["steps"]])
            for a in r["anomalies"] + r["other_anomalies"] if "steps" in a]


def test_a_key_with_duplicate_appends_is_bad_input() -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1]])
    h.txn(1, [["append", "y", 1], ["append", "x", 1]])
    with pytest.raises(BadInput, match="appended to 'x' here and in op 0"):
        _by_key(h.ops, "list-append")


def test_a_key_out_of_time_is_unknown() -> None:
    ops = _history(5, 60, "list-append", ["G-single-item"])
    txns = transactions(ops, WORKLOADS["list-append"])
    pieces = [infer_key("list-append", rows, len(txns), Deadline(-1)) for _, rows in split_by_key(txns)]
    edges, found = EdgeList(len(txns)), Found()
    late = merge(pieces, txns, edges, found)
    assert late is not None
    r = conclude(txns, edges, found, "list-append", validated("list-append", ["serializable"]), Deadline(60),
                 stopped=late)
    assert r["valid"] == "unknown" and "time limit" in r["unknown_reason"]

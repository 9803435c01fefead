"""Property tests: histories from a serial reference execution (with concurrency, failed and
indeterminate transactions) are valid under every model; the same histories with one anomaly
spliced in are invalid, and the anomaly is named."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.elle import MODELS, check

from jepsen_py.history import validate
from tests.checkers.elle.build import LIST_KINDS, inject, pattern, serial_history
from tests.checkers.elle.test_patterns import RW_KINDS, _model

WORKLOADS = st.sampled_from(["list-append", "rw-register"])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 150), keys=st.integers(1, 6), workload=WORKLOADS)
def test_serial_execution_is_valid_under_every_model(seed: int, n: int, keys: int, workload: str) -> None:
    ops = serial_history(random.Random(seed), n, keys, workload)
    validate(ops)
    r = check(ops, workload, sorted(MODELS), process_keys=True)
    assert r["anomaly_types"] in ([], ["empty-transaction-graph"]), r["anomalies"]
    assert r["not"] == [] and r["also_not"] == []
    # unknown only where nothing could be checked: no ok transaction, or no dependency at all
    nothing = r["txns"]["ok"] == 0 or r["anomaly_types"] == ["empty-transaction-graph"]
    assert r["valid"] is True or (r["valid"] == "unknown" and nothing)
    assert (r["anomaly_types"] == ["empty-transaction-graph"]) == (not r["edges"])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 120), data=st.data(), workload=WORKLOADS)
def test_injected_anomaly_is_found_and_named(seed: int, n: int, data: st.DataObject, workload: str) -> None:
    kind = data.draw(st.sampled_from(LIST_KINDS if workload == "list-append" else RW_KINDS))
    rng = random.Random(seed)
    base = serial_history(rng, n, 4, workload)
    ops = inject(base, pattern(kind, workload).ops, rng)
    validate(ops)
    r = check(ops, workload, _model(kind))
    assert kind in r["anomaly_types"], (kind, r["anomaly_types"])
    assert r["valid"] is False
    # nothing but the injected pattern's keys is blamed
    for a in r["anomalies"] + r["other_anomalies"]:
        key = a.get("key") or next((s.get("key") for s in a.get("steps", []) if s.get("key")), None)
        assert key is None or str(key).startswith("a:"), a
    # every cycle reported is simple: no transaction twice
    for a in r["anomalies"] + r["other_anomalies"]:
        if "cycle" in a:
            idx = [t["index"] for t in a["cycle"]]
            assert len(set(idx)) == len(idx), a
    # and the transactions blamed are the pattern's (fresh processes from 1000)
    pattern_ops = {o.index for o in ops if isinstance(o.process, int) and o.process >= 1000}
    named = [a for a in r["anomalies"] if a["kind"] == kind]
    assert named and set(named[0]["ops"]) <= pattern_ops

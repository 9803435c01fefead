"""Budgets end in "unknown" with a reason (never a hang or an OOM); invalid results carry a report
a person can act on; parallel and serial checks agree."""

from __future__ import annotations

import time

from jepsen_py.checkers.linearizable import (
    Budget,
    check,
    check_key,
    get_model,
    merge_key_results,
    split_by_key,
)

from jepsen_py.history import Op
from tests.checkers.linearizable.histgen import generate


def _hard_set_history(n: int = 22) -> list[Op]:
    """n concurrent adds, then a read no subset explains: the search must try every subset."""
    ops: list[Op] = []
    for p in range(n):
        ops.append(Op(index=len(ops), time=0, type="invoke", process=p, f="add", value=p))
    for p in range(n):
        ops.append(Op(index=len(ops), time=0, type="ok", process=p, f="add", value=p))
    ops.append(Op(index=len(ops), time=0, type="invoke", process=n, f="read", value=None))
    ops.append(Op(index=len(ops), time=0, type="ok", process=n, f="read", value=[-1]))
    # the reads happen after all adds, so first a set of reads in the middle to force exploration
    return ops


def _hard_concurrent_set(n: int = 20) -> list[Op]:
    """n adds and a wrong read all concurrent: 2^n subsets of adds before the read."""
    ops: list[Op] = []
    for p in range(n):
        ops.append(Op(index=len(ops), time=0, type="invoke", process=p, f="add", value=p))
    ops.append(Op(index=len(ops), time=0, type="invoke", process=n, f="read", value=None))
    for p in range(n):
        ops.append(Op(index=len(ops), time=0, type="ok", process=p, f="add", value=p))
    ops.append(Op(index=len(ops), time=0, type="ok", process=n, f="read", value=[-1]))
    ops.append(Op(index=len(ops), time=0, type="invoke", process=n + 1, f="read", value=None))
    ops.append(Op(index=len(ops), time=0, type="ok", process=n + 1, f="read", value=list(range(n))))
    return ops


def test_time_budget_gives_unknown_with_reason():
    t = time.process_time()  # workers=1 searches in this process
    r = check(_hard_concurrent_set(), get_model("set"), budget=Budget(time_s=0.5), workers=1)
    elapsed = time.process_time() - t
    assert r["valid"] == "unknown"
    (reason,) = r["unknown_reasons"].values()
    assert "time limit" in reason
    # CPU time, not wall time: a loaded machine stretches the wall clock, never the CPU a search
    # spends before its 0.5 s wall budget ends; a search that ignores the budget spends far more
    assert elapsed < 5


def test_memory_budget_gives_unknown_with_reason():
    r = check(_hard_concurrent_set(), get_model("set"), budget=Budget(time_s=60, memory_mb=1), workers=1)
    assert r["valid"] == "unknown"
    (reason,) = r["unknown_reasons"].values()
    assert "memory limit (1 MB)" in reason


def test_hard_but_small_history_finishes_invalid():
    r = check(_hard_set_history(8), get_model("set"), workers=1)
    assert r["valid"] is False


def test_failure_report_names_op_prefix_state_and_candidates():
    # write 1, write 2 (sequential), then a read of 1: stale.
    ops = [
        Op(0, 0, "invoke", 0, "write", value=1), Op(1, 0, "ok", 0, "write", value=1),
        Op(2, 0, "invoke", 1, "write", value=2), Op(3, 0, "ok", 1, "write", value=2),
        Op(4, 0, "invoke", 2, "read"), Op(5, 0, "invoke", 3, "write", value=3),
        Op(6, 0, "ok", 2, "read", value=1), Op(7, 0, "ok", 3, "write", value=3),
    ]
    for model in (get_model("register"), get_model("cas-register")):  # fast path + search, search only
        r = check(ops, model, workers=1)
        assert r["valid"] is False
        (f,) = r["failures"]
        assert f["op"]["index"] == 4 and f["op"]["complete_index"] == 6 and f["op"]["value"] == 1
        # The furthest order: write 1, write 2, write 3; then the read of 1 fits nowhere.
        assert f["longest_linearization"] == [0, 2, 5]
        assert f["state_before"] == 3
        cands = {c["op"]: c["why"] for c in f["candidates"]}
        assert set(cands) == {4}
        assert "holds 3" in cands[4]
        assert "holds 3" in f["explanation"]
        assert 4 in f["window"] and 5 in f["window"]
        assert r["anomalies"] == [{"kind": "nonlinearizable", "ops": [4, 6], "key": None,
                                   "window": f["window"], "explanation": f["explanation"]}]


def test_split_check_key_merge_is_what_check_does():
    ops: list[Op] = []
    for k in range(6):
        for o in generate("cas-register", k, n_ops=30, processes=3, key=f"k{k}"):
            o.process += 100 * k
            ops.append(o)
    # interleave keys by re-indexing in a round-robin order of the per-key streams
    ops.sort(key=lambda o: (o.index, o.key))
    for i, o in enumerate(ops):
        o.index = i
    model = get_model("cas-register")
    parts = split_by_key(ops, model)
    assert len(parts) == 6
    merged = merge_key_results({k: check_key(model, k, v) for k, v in parts.items()})
    whole = check(ops, model, workers=1)
    assert merged["valid"] is True and whole["valid"] is True
    assert merged["ops"] == whole["ops"] and merged["keys_checked"] == 6


def test_parallel_and_serial_agree_on_many_keys():
    ops: list[Op] = []
    for k in range(40):
        for o in generate("register", k, n_ops=60, processes=4, unique_writes=True, key=k, crash_p=0.1):
            o.process += 100 * k
            ops.append(o)
    ops.sort(key=lambda o: (o.index, o.key))
    for i, o in enumerate(ops):
        o.index = i
    # a stale read on one key
    ops.append(Op(len(ops), 0, "invoke", 99999, "write", key=7, value=123456))
    ops.append(Op(len(ops), 0, "ok", 99999, "write", key=7, value=123456))
    ops.append(Op(len(ops), 0, "invoke", 99999, "read", key=7))
    ops.append(Op(len(ops), 0, "ok", 99999, "read", key=7, value=None))
    model = get_model("register")
    serial = check(ops, model, workers=1, stop_at_first_failure=False)
    parallel = check(ops, model, workers=2, stop_at_first_failure=False)
    assert serial["valid"] is False and parallel["valid"] is False
    assert serial["invalid_keys"] == parallel["invalid_keys"] == ["7"]
    assert serial["keys_checked"] == parallel["keys_checked"] == 40
    # Another stale key: stopping early still reports every key the fast path decides.
    n = len(ops)
    ops += [Op(n, 0, "invoke", 99998, "write", key=9, value=654321),
            Op(n + 1, 0, "ok", 99998, "write", key=9, value=654321),
            Op(n + 2, 0, "invoke", 99998, "read", key=9),
            Op(n + 3, 0, "ok", 99998, "read", key=9, value=None)]
    for workers in (1, 2):
        r = check(ops, model, workers=workers)
        assert sorted(r["invalid_keys"]) == ["7", "9"] and r["unknown_reasons"] == {}


def test_models_and_results_pickle_and_serialize():
    """The Spark engine ships models to executors and results back; results.json stores them."""
    import json
    import pickle

    from jepsen_py.checkers.linearizable import MODELS

    for name in MODELS:
        pickle.loads(pickle.dumps(get_model(name)))
    w = [["write", "x", 1]]
    ops = [Op(0, 0, "invoke", 0, "txn", value=w), Op(1, 0, "ok", 0, "txn", value=w),
           Op(2, 0, "invoke", 1, "txn", value=[["read", "x", None]]),
           Op(3, 0, "ok", 1, "txn", value=[["read", "x", 2]])]
    model = pickle.loads(pickle.dumps(get_model("multi-register", {"x": 0})))
    r = check(ops, model)
    assert r["valid"] is False
    again = json.loads(json.dumps(pickle.loads(pickle.dumps(r))))
    assert again["failures"][0]["state_before"] == {"x": 1}

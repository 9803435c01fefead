"""g-counter and pn-counter: codec round trip, generators, the bounds and the final reads."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.maelstrom.counters import CounterChecker, subset_sums
from jepsen_py.workloads.maelstrom.counters import CounterCodec, g_counter_workload, pn_counter_workload

from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

ADD = Op(0, 0, "invoke", 0, "add", None, -3)
READ = Op(0, 0, "invoke", 1, "read")
FINAL = {"final": True}


def test_codec_round_trip() -> None:
    c = CounterCodec()
    assert c.request(ADD) == {"type": "add", "delta": -3}
    assert c.request(READ) == {"type": "read"}
    assert c.outcome(ADD, {"type": "add_ok"}).value == -3
    assert c.outcome(READ, {"type": "read_ok", "value": 12}).value == 12
    assert c.outcome(READ, {"type": "read_ok", "value": "12"}).type == "info"
    assert c.outcome(READ, {"type": "read_ok", "value": True}).type == "info"
    assert c.outcome(ADD, {"type": "error", "code": 12}).type == "fail"
    assert c.outcome(ADD, {"type": "error", "code": 0}).type == "info"


def test_generators(tmp_path) -> None:
    g = [o.template for o in drive(g_counter_workload(make_spec(tmp_path)).generator, 300)]
    pn = [o.template for o in drive(pn_counter_workload(make_spec(tmp_path)).generator, 300)]
    g_deltas = [t.value for t in g if t.f == "add"]
    pn_deltas = [t.value for t in pn if t.f == "add"]
    assert g_deltas and all(1 <= d <= 5 for d in g_deltas)
    assert all(d != 0 and -5 <= d <= 5 for d in pn_deltas) and min(pn_deltas) < 0 < max(pn_deltas)
    assert {t.f for t in g} == {"add", "read"}
    finals = drive(g_counter_workload(make_spec(tmp_path, options={"final_delay": 0})).final_generator)
    assert sorted(o.template.node for o in finals) == ["n1", "n2", "n3"]
    assert all(o.template.meta == FINAL for o in finals)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.integers(-5, 5), st.lists(st.integers(-4, 4), max_size=7))
def test_subset_sums_are_exact(base: int, unsure: list[int]) -> None:
    iv, widened = subset_sums(base, unsure)
    want = {base + sum(c) for k in range(len(unsure) + 1) for c in combinations(unsure, k)}
    got = {v for a, b in iv for v in range(a, b + 1)}
    assert not widened and got == want


def test_subset_sums_widen_past_the_cap() -> None:
    iv, widened = subset_sums(0, [10, 100, 1000], cap=3)
    assert widened and len(iv) == 3 and iv[0][0] == 0 and iv[-1][1] == 1110


def finals(h: H, t: float, values: dict[str, int]) -> H:
    for i, (node, v) in enumerate(values.items()):
        h.op(10 + i, "read", None, t, t + 1, result=v, node=node, meta=FINAL)
    return h


def test_a_correct_counter_passes() -> None:
    h = H().op(0, "add", 2, 0, 1).op(1, "add", 3, 0, 2).op(2, "add", 5, 0, 3, "fail")
    h.op(3, "add", 4, 0, 3, "info").op(0, "read", None, 1.5, 2.5, result=0)  # eventually consistent
    r = CounterChecker().check(None, finals(h, 10, {"n1": 9, "n2": 5}).build())
    assert r["valid"] is True, r
    assert r["ok_sum"] == 5 and r["acceptable"] == [[5, 5], [9, 9]]
    assert r["reported_kinds"] == ["stale-read"]


def test_a_read_out_of_the_possible_range_is_impossible() -> None:
    h = H().op(0, "add", 2, 0, 1).op(1, "add", 3, 5, 6).op(0, "read", None, 2, 3, result=4)
    r = CounterChecker().check(None, finals(h, 10, {"n1": 5}).build())
    assert r["valid"] is False and r["anomaly_counts"] == {"impossible-read": 1}
    assert r["anomalies"][0]["bounds"] == [0, 2]
    h2 = H().op(0, "add", -2, 0, 1).op(0, "read", None, 2, 3, result=-3)
    assert CounterChecker().check(None, h2.build())["anomaly_counts"] == {"impossible-read": 1,
                                                                      "wrong-final-read": 1}


def test_a_stale_read_fails_only_a_linearizable_counter() -> None:
    h = H().op(0, "add", 2, 0, 1).op(1, "add", 3, 0, 4).op(0, "read", None, 2, 3, result=1)
    h = finals(h, 10, {"n1": 5})
    loose = CounterChecker().check(None, h.build())
    assert loose["valid"] is True and loose["anomaly_counts"] == {"stale-read": 1}
    assert loose["anomalies"][0]["bounds"] == [2, 5]
    strict = CounterChecker(linearizable=True).check(None, finals(
        H().op(0, "add", 2, 0, 1).op(1, "add", 3, 0, 4).op(0, "read", None, 2, 3, result=1), 10,
        {"n1": 5}).build())
    assert strict["valid"] is False and strict["failing_kinds"] == ["stale-read"]


def test_a_wrong_final_read_fails() -> None:
    h = H().op(0, "add", 2, 0, 1).op(1, "add", 3, 0, 2).op(2, "add", 4, 0, 2, "info")
    r = CounterChecker().check(None, finals(h, 10, {"n1": 9, "n2": 6, "n3": 2}).build())
    assert r["valid"] is False and r["anomaly_counts"]["wrong-final-read"] == 2
    assert sorted(a["node"] for a in r["anomalies"] if a["kind"] == "wrong-final-read") == ["n2", "n3"]


def test_no_final_read_is_unknown() -> None:
    h = H().op(0, "add", 2, 0, 1).op(1, "add", 3, 0, None).op(0, "read", None, 2, 3, result=2)
    assert CounterChecker().check(None, h.build())["valid"] == "unknown"

"""g-set: codec round trip, generators, the convergence checker."""

from __future__ import annotations

from jepsen_py.checkers.maelstrom.converge import ConvergenceChecker
from jepsen_py.workloads.maelstrom.gset import GSetCodec, gset_workload

from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

ADD = Op(0, 0, "invoke", 0, "add", None, 5)
READ = Op(0, 0, "invoke", 1, "read")
FINAL = {"final": True}


def test_codec_round_trip() -> None:
    c = GSetCodec()
    assert c.request(ADD) == {"type": "add", "element": 5}
    assert c.request(READ) == {"type": "read"}
    assert c.outcome(ADD, {"type": "add_ok", "in_reply_to": 1}).value == 5
    o = c.outcome(READ, {"type": "read_ok", "value": [1, 5]})
    assert (o.type, o.value) == ("ok", [1, 5])
    assert c.outcome(READ, {"type": "read_ok", "value": 5}).type == "info"
    assert c.outcome(READ, {"type": "read_ok", "elements": [5]}).type == "info"
    assert c.outcome(ADD, {"type": "error", "code": 11}).type == "fail"
    assert c.outcome(ADD, {"type": "error", "code": 13}).type == "info"
    assert c.outcome(ADD, {"type": "read_ok", "value": []}).type == "info"


def test_generators(tmp_path) -> None:
    w = gset_workload(make_spec(tmp_path, options={"final_delay": 0.5}))
    ops = [o.template for o in drive(w.generator, 200)]
    adds = [t.value for t in ops if t.f == "add"]
    assert adds == sorted(set(adds)) and 100 < len(adds) < 200
    assert all(t.value is None for t in ops if t.f == "read")
    finals = drive(w.final_generator, 50)
    assert sorted(o.template.node for o in finals) == ["n1", "n2", "n3"]
    assert all(o.template.f == "read" and o.template.meta == FINAL and o.time >= 0.5 for o in finals)


def checker() -> ConvergenceChecker:
    return ConvergenceChecker(name="g-set", add_f="add")


def finals(h: H, t: float, values: dict[str, list[int]]) -> H:
    for i, (node, v) in enumerate(values.items()):
        h.op(10 + i, "read", None, t, t + 1, result=v, node=node, meta=FINAL)
    return h


def test_a_converged_set_passes() -> None:
    h = H().op(0, "add", 1, 0, 1).op(1, "add", 2, 0, 2).op(2, "add", 3, 0, 3, "fail")
    h.op(3, "add", 4, 0, 4, "info").op(0, "read", None, 5, 6, result=[1])  # stale, reported only
    r = checker().check(None, finals(h, 10, {"n1": [1, 2], "n2": [2, 1], "n3": [1, 2]}).build())
    assert r["valid"] is True, r
    assert r["final_reads"] == 3 and r["known_elements"] == 2 and r["not_converged"] == {}
    assert r["stale"] == 1 and r["failing_kinds"] == [] and r["reported_kinds"] == ["stale-read"]


def test_an_element_one_node_never_got_is_not_converged() -> None:
    h = finals(H().op(0, "add", 1, 0, 1).op(1, "add", 2, 0, 2), 10, {"n1": [1], "n2": [1, 2]})
    r = checker().check(None, h.build())
    assert r["valid"] is False and r["not_converged"] == {"n1": 1}
    bad = [a for a in r["anomalies"] if a["kind"] == "not-converged"]
    assert bad[0]["node"] == "n1" and bad[0]["missing"] == [2]


def test_a_lost_element_and_an_unexpected_one_fail() -> None:
    h = finals(H().op(0, "add", 1, 0, 1).op(1, "add", 2, 0, 2), 10, {"n1": [1, 9], "n2": [1, 9]})
    r = checker().check(None, h.build())
    assert r["valid"] is False
    assert r["anomaly_counts"]["lost"] == 1 and r["anomaly_counts"]["unexpected"] == 2
    assert r["lost"] == 1 and {"lost", "unexpected", "not-converged"} <= set(r["failing_kinds"])


def test_an_element_whose_add_failed_yet_was_read_is_aborted() -> None:
    h = finals(H().op(0, "add", 1, 0, 1).op(1, "add", 2, 0, 2, "fail"), 10, {"n1": [1, 2]})
    r = checker().check(None, h.build())
    assert r["valid"] is False and r["anomaly_counts"] == {"aborted-read": 1}


def test_no_final_read_is_unknown_and_unmarked_histories_use_quiet_reads() -> None:
    h = H().op(0, "add", 1, 0, 1).op(1, "read", None, 0.5, 0.8, result=[], node="n1")
    assert checker().check(None, h.build())["valid"] == "unknown"
    h.op(1, "read", None, 2, 3, result=[], node="n2").op(2, "read", None, 2, 3, result=[1], node="n1")
    r = checker().check(None, h.build())
    assert r["final_nodes"] == ["n1", "n2"] and r["not_converged"] == {"n2": 1} and r["valid"] is False

"""broadcast: topologies, codec round trip, generators, the checker on lost and unconverged messages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.maelstrom.converge import ConvergenceChecker
from jepsen_py.workloads.maelstrom.broadcast import TOPOLOGIES, BroadcastCodec, broadcast_workload, topology

from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

NODES5 = ["n1", "n2", "n3", "n4", "n5"]


def connected(t: dict[str, list[str]]) -> bool:
    if not t:
        return True
    start = next(iter(t))
    seen, todo = {start}, [start]
    while todo:
        for m in t[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen == set(t)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.sampled_from(TOPOLOGIES), st.integers(0, 30))
def test_every_topology_is_symmetric_connected_and_loop_free(kind: str, n: int) -> None:
    nodes = [f"n{i}" for i in range(1, n + 1)]
    t = topology(kind, nodes)
    assert sorted(t) == sorted(nodes)
    for a, near in t.items():
        assert a not in near and len(set(near)) == len(near)
        assert all(a in t[b] for b in near)
    assert connected(t)


def test_the_shapes() -> None:
    assert topology("line", NODES5)["n3"] == ["n2", "n4"]
    assert topology("total", NODES5)["n1"] == ["n2", "n3", "n4", "n5"]
    assert topology("grid", NODES5) == {"n1": ["n2", "n4"], "n2": ["n1", "n3", "n5"], "n3": ["n2"],
                                        "n4": ["n1", "n5"], "n5": ["n2", "n4"]}
    assert topology("tree2", NODES5) == {"n1": ["n2", "n3"], "n2": ["n1", "n4", "n5"], "n3": ["n1"],
                                         "n4": ["n2"], "n5": ["n2"]}
    assert topology("tree4", NODES5)["n1"] == ["n2", "n3", "n4", "n5"]
    with pytest.raises(BadInput, match="unknown broadcast topology"):
        topology("ring", NODES5)


def test_codec_round_trip() -> None:
    c = BroadcastCodec()
    t = topology("line", ["n1", "n2"])
    top = Op(0, 0, "invoke", 0, "topology", None, t, "n1")
    b = Op(0, 0, "invoke", 0, "broadcast", None, 7)
    r = Op(0, 0, "invoke", 0, "read")
    assert c.request(top) == {"type": "topology", "topology": {"n1": ["n2"], "n2": ["n1"]}}
    assert c.request(b) == {"type": "broadcast", "message": 7}
    assert c.request(r) == {"type": "read"}
    assert c.outcome(top, {"type": "topology_ok"}).type == "ok"
    assert c.outcome(b, {"type": "broadcast_ok", "in_reply_to": 4}).value == 7
    assert c.outcome(r, {"type": "read_ok", "messages": [7, 8]}).value == [7, 8]
    assert c.outcome(r, {"type": "read_ok", "value": [7]}).type == "info"
    assert c.outcome(b, {"type": "error", "code": 11}).type == "fail"
    assert c.outcome(b, {"type": "error", "code": 1001}).type == "info"


def test_generators_send_the_topology_first(tmp_path) -> None:
    spec = make_spec(tmp_path, options={"topology": "line", "final_delay": 0.1})
    w = broadcast_workload(spec)
    ops = drive(w.generator, 200)
    first = [o.template for o in ops[:3]]
    assert [t.f for t in first] == ["topology"] * 3 and sorted(t.node for t in first) == ["n1", "n2", "n3"]
    assert all(t.value == topology("line", ["n1", "n2", "n3"]) for t in first)
    rest = [o for o in ops[3:]]
    assert all(o.template.f in ("broadcast", "read") for o in rest)
    assert min(o.time for o in rest) >= max(o.time for o in ops[:3]) + 0.01  # after every topology ended
    msgs = [o.template.value for o in rest if o.template.f == "broadcast"]
    assert msgs == sorted(set(msgs))
    finals = drive(w.final_generator, 10)
    assert sorted(o.template.node for o in finals) == ["n1", "n2", "n3"]
    with pytest.raises(BadInput):
        broadcast_workload(make_spec(tmp_path, options={"topology": "star"}))


def checker() -> ConvergenceChecker:
    return ConvergenceChecker(name="broadcast", add_f="broadcast")


def run(h: H, t: float, reads: dict[str, list[int]]) -> dict:
    for i, (node, v) in enumerate(reads.items()):
        h.op(10 + i, "read", None, t, t + 1, result=v, node=node, meta={"final": True})
    h.op(20, "topology", {"n1": []}, 0, 0.1)  # not the checker's op: ignored
    return checker().check(None, h.build())


def test_every_node_holding_every_message_passes() -> None:
    h = H().op(0, "broadcast", 1, 0, 1).op(1, "broadcast", 2, 0, 2).op(2, "read", None, 3, 4, result=[2])
    r = run(h, 10, {"n1": [1, 2], "n2": [2, 1], "n3": [1, 2]})
    assert r["valid"] is True
    assert (r["lost"], r["stale"], r["never_read"]) == (0, 1, 0)


def test_a_lost_broadcast_and_a_node_that_missed_one_fail() -> None:
    h = H().op(0, "broadcast", 1, 0, 1).op(1, "broadcast", 2, 0, 2).op(2, "broadcast", 3, 0, 2)
    r = run(h, 10, {"n1": [1, 3], "n2": [1], "n3": [3, 1]})
    assert r["valid"] is False
    assert r["lost"] == 1 and r["not_converged"] == {"n1": 1, "n2": 2, "n3": 1}
    lost = [a for a in r["anomalies"] if a["kind"] == "lost"]
    assert lost[0]["element"] == 2


def test_an_unexpected_message_fails_and_an_unread_broadcast_is_never_read() -> None:
    h = H().op(0, "broadcast", 1, 0, 1).op(1, "broadcast", 2, 0, None)
    r = run(h, 10, {"n1": [1, 42]})
    assert r["valid"] is False and r["unexpected"] == 1 and r["never_read"] == 1

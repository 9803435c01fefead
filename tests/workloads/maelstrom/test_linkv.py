"""lin-kv: codec round trip, generator, and the cas-register linearizability check of its histories."""

from __future__ import annotations

from jepsen_py.workloads.common import Linearizable
from jepsen_py.workloads.maelstrom.linkv import FS, LinKvCodec, linkv_workload

from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

READ = Op(0, 0, "invoke", 0, "read", "r1")
WRITE = Op(0, 0, "invoke", 0, "write", "r1", 4)
CAS = Op(0, 0, "invoke", 0, "cas", "r1", [4, 5])


def test_codec_round_trip() -> None:
    c = LinKvCodec()
    assert c.request(READ) == {"type": "read", "key": "r1"}
    assert c.request(WRITE) == {"type": "write", "key": "r1", "value": 4}
    assert c.request(CAS) == {"type": "cas", "key": "r1", "from": 4, "to": 5}
    assert c.outcome(READ, {"type": "read_ok", "value": 4}).value == 4
    assert c.outcome(WRITE, {"type": "write_ok"}).value == 4
    assert c.outcome(CAS, {"type": "cas_ok"}).value == [4, 5]
    comp = c.outcome(CAS, {"type": "cas_ok"}).completion(CAS)
    assert (comp.type, comp.key, comp.value) == ("ok", "r1", [4, 5])


def test_codec_errors() -> None:
    c = LinKvCodec()
    for code in (20, 22):
        o = c.outcome(CAS, {"type": "error", "code": code, "text": "no"})
        assert o.type == "fail" and o.error["code"] == code
    assert c.outcome(CAS, {"type": "error", "code": 11}).type == "fail"
    assert c.outcome(CAS, {"type": "error", "code": 13}).type == "info"
    assert c.outcome(WRITE, {"type": "error", "code": 0}).type == "info"
    missing = c.outcome(READ, {"type": "error", "code": 20})
    assert (missing.type, missing.value) == ("ok", None)
    assert c.outcome(READ, {"type": "error", "code": 11}).type == "fail"
    assert c.outcome(READ, {"type": "read_ok"}).type == "info"
    assert c.outcome(READ, {"type": "cas_ok"}).type == "info"


def test_generator_ops_are_well_formed(tmp_path) -> None:
    w = linkv_workload(make_spec(tmp_path, options={"active_keys": 2, "ops_per_key": 30}))
    ops = [o.template for o in drive(w.generator, 200)]
    assert {t.f for t in ops} == {"read", "write", "cas"}
    for t in ops:
        assert isinstance(t.key, str)
        assert t.value is None if t.f == "read" else True
        if t.f == "cas":
            assert isinstance(t.value, list) and len(t.value) == 2 and t.value[0] != t.value[1]
    written = {}
    for t in ops:
        if t.f != "read":
            v = t.value if t.f == "write" else t.value[1]
            assert v not in written.setdefault(t.key, set())
            written[t.key].add(v)
    finals = drive(w.final_generator, 100)
    assert {o.template.node for o in finals} == {"n1", "n2", "n3"}
    assert all(o.template.f == "read" for o in finals)


def check(h: H) -> dict:
    return Linearizable("cas-register", FS).check(None, h.build())


def test_a_linearizable_history_passes() -> None:
    h = H().op(0, "write", 1, 0, 1, key="a").op(1, "cas", [1, 2], 2, 3, key="a")
    h.op(2, "cas", [1, 3], 4, 5, "fail", key="a", error={"code": 22})
    h.op(3, "read", None, 4, 6, result=2, key="a").op(4, "read", None, 0, 0.5, result=None, key="b")
    h.op(1, "write", 7, 4, 5, "info", key="b").op(0, "read", None, 8, 9, result=7, key="b")
    r = check(h)
    assert r["valid"] is True, r
    assert r["keys_checked"] == 2


def test_a_stale_read_is_not_linearizable() -> None:
    h = H().op(0, "write", 1, 0, 1, key="a").op(1, "write", 2, 2, 3, key="a")
    h.op(2, "read", None, 4, 5, result=1, key="a").op(3, "write", 1, 0, 1, key="b")
    r = check(h)
    assert r["valid"] is False and r["invalid_keys"] == ["a"]
    assert r["anomaly_counts"] == {"nonlinearizable": 1}


def test_a_cas_that_succeeded_on_a_stale_value_is_caught() -> None:
    h = H().op(0, "write", 1, 0, 1, key="a").op(1, "write", 2, 2, 3, key="a")
    h.op(2, "cas", [1, 3], 4, 5, key="a")
    assert check(h)["valid"] is False


def test_a_forgotten_key_read_as_missing_is_caught() -> None:
    h = H().op(0, "write", 1, 0, 1, key="a").op(1, "read", None, 2, 3, result=None, key="a")
    assert check(h)["valid"] is False

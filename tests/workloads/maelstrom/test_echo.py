"""echo: codec round trip, generator, checker."""

from __future__ import annotations

from jepsen_py.checkers.maelstrom.echo import EchoChecker
from jepsen_py.workloads.maelstrom.codec import error_outcome, timeout_outcome
from jepsen_py.workloads.maelstrom.echo import EchoCodec, echo_workload

from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

INV = Op(0, 0, "invoke", 0, "echo", None, "hello")


def test_codec_round_trip() -> None:
    c = EchoCodec()
    assert c.request(INV) == {"type": "echo", "echo": "hello"}
    ok = c.outcome(INV, {"type": "echo_ok", "echo": "hello", "in_reply_to": 1})
    assert (ok.type, ok.value) == ("ok", "hello")
    comp = ok.completion(INV)
    assert (comp.type, comp.value, comp.f, comp.process) == ("ok", "hello", "echo", 0)
    assert c.outcome(INV, {"type": "error", "code": 11, "text": "busy"}).type == "fail"
    assert c.outcome(INV, {"type": "error", "code": 13}).type == "info"
    assert c.outcome(INV, {"type": "echo_ok"}).error["name"] == "malformed-reply"
    assert c.outcome(INV, {"type": "read_ok", "echo": "hello"}).type == "info"


def test_error_codes_split_definite_from_indefinite() -> None:
    for code in (1, 10, 11, 12, 14, 20, 21, 22, 30):
        assert error_outcome({"type": "error", "code": code}).type == "fail", code
    for code in (0, 13, 2, 999, 1000, 5000):
        assert error_outcome({"type": "error", "code": code}).type == "info", code
    assert error_outcome({"type": "error", "code": "11"}).type == "info"
    assert error_outcome({"type": "error", "code": True}).type == "info"
    assert error_outcome({"type": "error", "code": 22, "text": "no"}).error == {
        "code": 22, "name": "precondition-failed", "text": "no"}
    assert timeout_outcome().type == "info"


def test_generator_makes_fresh_echo_strings(tmp_path) -> None:
    w = echo_workload(make_spec(tmp_path, options={"echo_length": 8}))
    ops = [o.template for o in drive(w.generator, 100)]
    assert len(ops) == 100
    assert all(t.f == "echo" and isinstance(t.value, str) and len(t.value) == 8 for t in ops)
    assert len({t.value for t in ops}) > 90
    assert w.fs == frozenset({"echo"})
    finals = [o.template for o in drive(w.final_generator, 10)]
    assert sorted(t.node for t in finals) == ["n1", "n2", "n3"] and all(t.f == "echo" for t in finals)


def test_checker_passes_matching_echoes_and_catches_a_mismatch() -> None:
    good = H().op(0, "echo", "a", 0, 1).op(1, "echo", "b", 0, 2).op(2, "echo", "c", 1, 3, "info").build()
    r = EchoChecker().check(None, good)
    assert r["valid"] is True and r["ok"] == 2 and r["attempted"] == 3
    bad = H().op(0, "echo", "a", 0, 1).op(1, "echo", "b", 0, 2, result="a").build()
    r = EchoChecker().check(None, bad)
    assert r["valid"] is False and r["anomaly_counts"] == {"mismatch": 1}
    assert r["anomalies"][0]["sent"] == "b" and r["anomalies"][0]["received"] == "a"


def test_no_ok_echo_is_unknown() -> None:
    h = H().op(0, "echo", "a", 0, 1, "fail").op(1, "echo", "b", 0, None).build()
    assert EchoChecker().check(None, h)["valid"] == "unknown"
    assert EchoChecker().check(None, [])["valid"] == "unknown"

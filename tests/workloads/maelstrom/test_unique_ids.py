"""unique-ids: codec round trip, generator, checker."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.maelstrom.unique_ids import UniqueIdsChecker
from jepsen_py.workloads.maelstrom.unique_ids import UniqueIdsCodec, unique_ids_workload

from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.workloads.maelstrom.hist import H, drive

INV = Op(0, 0, "invoke", 0, "generate")


def test_codec_round_trip() -> None:
    c = UniqueIdsCodec()
    assert c.request(INV) == {"type": "generate"}
    for id_ in (123, "n1-7", [1, 2], {"a": 1}, None, 1.5):
        o = c.outcome(INV, {"type": "generate_ok", "id": id_, "in_reply_to": 3})
        assert (o.type, o.value) == ("ok", id_)
    assert c.outcome(INV, {"type": "generate_ok"}).type == "info"
    assert c.outcome(INV, {"type": "error", "code": 10}).type == "fail"
    assert c.outcome(INV, {"type": "error", "code": 0}).type == "info"


def test_generator_asks_for_ids(tmp_path) -> None:
    w = unique_ids_workload(make_spec(tmp_path))
    ops = [o.template for o in drive(w.generator, 50)]
    assert len(ops) == 50 and all(t.f == "generate" and t.value is None for t in ops)
    finals = [o.template for o in drive(w.final_generator, 10)]
    assert sorted(t.node for t in finals) == ["n1", "n2", "n3"] and all(t.f == "generate" for t in finals)


def generates(ids: list, extra_info: int = 0) -> list[Op]:
    h = H()
    for i, id_ in enumerate(ids):
        h.op(i, "generate", None, i, i + 0.5, result=id_)
    for j in range(extra_info):
        h.op(100 + j, "generate", None, 0, None)
    return h.build()


def test_unique_ids_pass_with_counts() -> None:
    r = UniqueIdsChecker().check(None, generates([3, 1, 2], extra_info=1))
    assert r["valid"] is True
    assert (r["attempted_count"], r["acknowledged_count"], r["duplicated_count"]) == (4, 3, 0)
    assert r["range"] == [1, 3]


def test_a_duplicated_id_is_caught() -> None:
    r = UniqueIdsChecker().check(None, generates(["a", "b", "a", "a", 7]))
    assert r["valid"] is False
    assert r["duplicated_count"] == 1 and r["duplicated"] == [{"id": "a", "count": 3}]
    assert r["anomalies"][0]["kind"] == "duplicate" and len(r["anomalies"][0]["ops"]) == 3
    assert r["range"] == [7, "b"]


def test_json_types_are_distinct_ids() -> None:
    assert UniqueIdsChecker().check(None, generates([1, 1.5, True, "1", [1]]))["valid"] is True
    assert UniqueIdsChecker().check(None, generates([[1, 2], [1, 2]]))["valid"] is False


def test_no_ok_generate_is_unknown() -> None:
    assert UniqueIdsChecker().check(None, generates([], extra_info=2))["valid"] == "unknown"


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.lists(st.integers(-5, 5), max_size=12))
def test_valid_exactly_when_no_id_repeats(ids: list[int]) -> None:
    r = UniqueIdsChecker().check(None, generates(ids))
    if ids:
        assert r["valid"] is (len(set(ids)) == len(ids))
        assert r["duplicated_count"] == sum(1 for x in set(ids) if ids.count(x) > 1)

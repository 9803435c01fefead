"""Each model's semantics, step by step and on small hand-written histories."""

from __future__ import annotations

import pytest
from jepsen_py.checkers.linearizable import MODELS, check, get_model
from jepsen_py.checkers.linearizable.model import INF, Call, Model, freeze

from jepsen_py.errors import BadInput
from jepsen_py.history import Op


def call(f, value=None, output=None, *, known=True, outcome="ok", error=None, key=None) -> Call:
    return Call(id=0, index=0, complete_index=1, process=0, f=f, key=key, input=freeze(value),
                output=freeze(output), known=known, outcome=outcome, start=0,
                end=1 if outcome != "info" else INF, error=error)


def run(model: Model, *calls: Call):
    state = model.init()
    for c in calls:
        ok, state = model.step(state, c)
        if not ok:
            return False, state
    return True, state


def hist(*ops: tuple) -> list[Op]:
    """(type, process, f, value[, key]) tuples into records."""
    out = []
    for i, t in enumerate(ops):
        typ, p, f, v = t[:4]
        out.append(Op(index=i, time=i, type=typ, process=p, f=f, value=v, key=t[4] if len(t) > 4 else None))
    return out


def test_all_knossos_models_and_ours_are_registered():
    assert {"register", "cas-register", "multi-register", "mutex", "set", "fifo-queue",
            "unordered-queue", "offsets", "topics"} <= set(MODELS)
    with pytest.raises(BadInput, match="unknown model"):
        get_model("nope")


def test_register():
    m = get_model("register", 0)
    assert run(m, call("read", output=0))[0]
    assert run(m, call("write", 3), call("read", output=3)) == (True, 3)
    ok, why = run(m, call("write", 3), call("read", output=4))
    assert not ok and "holds 3" in str(why)
    assert m.droppable(call("read", known=False, outcome="info"))
    # nil reads: empty register by default, unconstrained in Knossos's reading
    assert not run(get_model("register", 1), call("read", output=None))[0]
    assert run(get_model("register", 1, nil_read="unknown"), call("read", output=None))[0]


def test_cas_register():
    m = get_model("cas-register", 1)
    assert run(m, call("cas", [1, 2]), call("read", output=2))[0]
    assert not run(m, call("cas", [5, 2]))[0]
    failed = call("cas", [1, 2], [1, 2], outcome="fail")
    assert not m.keeps_failed(failed)  # Knossos: a failed cas did not happen
    mm = get_model("cas-register", 1, failed_cas="mismatch")
    assert mm.keeps_failed(failed)
    assert not run(mm, failed)[0]  # it held 1, so the compare could not have failed
    assert run(mm, call("cas", [7, 2], outcome="fail"))[0]
    assert not mm.keeps_failed(call("cas", [1, 2], outcome="fail", error="timed-out"))


def test_cas_failed_as_mismatch_changes_a_verdict():
    h = hist(("invoke", 0, "write", 1), ("ok", 0, "write", 1),
             ("invoke", 1, "cas", [1, 2]), ("fail", 1, "cas", [1, 2]))
    assert check(h, get_model("cas-register"))["valid"] is True
    assert check(h, get_model("cas-register", failed_cas="mismatch"))["valid"] is False


def test_multi_register():
    m = get_model("multi-register", {"x": 0, "y": 0})
    assert run(m, call("txn", [["write", "x", 1]]), call("txn", [["read", "x", 1], ["read", "y", 0]]))[0]
    assert not run(m, call("txn", [["read", "x", 1]]))[0]
    assert run(m, call("txn", [["read", "x", None]]))[0]  # nil reads are always legal
    assert run(m, call("write", {"x": 2}), call("read", output={"x": 2}))[0]


def test_mutex():
    m = get_model("mutex")
    assert run(m, call("acquire"), call("release"), call("acquire"))[0]
    assert not run(m, call("acquire"), call("acquire"))[0]
    assert not run(m, call("release"))[0]
    h = hist(("invoke", 0, "acquire", None), ("ok", 0, "acquire", None),
             ("invoke", 1, "acquire", None), ("ok", 1, "acquire", None))
    assert check(h, m)["valid"] is False


def test_set():
    m = get_model("set")
    assert run(m, call("add", 1), call("add", 2), call("read", output=[2, 1]))[0]
    assert not run(m, call("add", 1), call("read", output=[1, 2]))[0]


def test_fifo_queue():
    m = get_model("fifo-queue")
    assert run(m, call("enqueue", 1), call("enqueue", 2), call("dequeue", output=1),
               call("dequeue", output=2), call("dequeue", output=None))[0]
    assert not run(m, call("enqueue", 1), call("enqueue", 2), call("dequeue", output=2))[0]
    # an info dequeue may have taken the head
    assert run(m, call("enqueue", 1), call("enqueue", 2), call("dequeue", known=False, outcome="info"),
               call("dequeue", output=2))[0]


def test_unordered_queue():
    m = get_model("unordered-queue")
    assert run(m, call("enqueue", 1), call("enqueue", 2), call("dequeue", output=2),
               call("dequeue", output=1))[0]
    assert not run(m, call("enqueue", 1), call("dequeue", output=1), call("dequeue", output=1))[0]
    assert run(m, call("enqueue", 1), call("enqueue", 1), call("dequeue", output=1),
               call("dequeue", output=1))[0]


def test_offsets_register_per_key():
    m = get_model("offsets")
    k0, k1 = ["g", "t", 0], ["g", "t", 1]
    h = hist(("invoke", 0, "commit_offset", 5, k0), ("ok", 0, "commit_offset", 5, k0),
             ("invoke", 1, "fetch_offset", None, k1), ("ok", 1, "fetch_offset", None, k1),
             ("invoke", 1, "fetch_offset", None, k0), ("ok", 1, "fetch_offset", 5, k0))
    r = check(h, m)
    assert r["valid"] is True and r["keys_checked"] == 2
    assert r["engines"] == {"fastpath": 2}
    stale = [*h[:2], *hist(("invoke", 2, "commit", 6), ("ok", 2, "commit", 6),
                           ("invoke", 2, "fetch", None), ("ok", 2, "fetch", 5))]
    for i, o in enumerate(stale):
        o.index, o.key = i, "g/t/0"
    r = check(stale, m)
    assert r["valid"] is False
    assert r["failures"][0]["key"] == "g/t/0"


def test_topics_create_if_absent():
    m = get_model("topics")
    described = call("describe", output={"partitions": 3})
    assert run(m, call("describe", output=None), call("create"), described)[0]
    assert not run(m, call("create"), call("create"))[0]
    exists = call("create", outcome="fail", error="already-exists")
    assert m.keeps_failed(exists)
    assert run(m, call("create"), exists)[0]
    assert not run(m, exists)[0]
    # A name created twice: two ok creates on one key is the split-brain symptom.
    h = hist(("invoke", 0, "create_topic", None, "orders"), ("ok", 0, "create_topic", None, "orders"),
             ("invoke", 1, "create_topic", None, "orders"), ("ok", 1, "create_topic", None, "orders"))
    assert check(h, m)["valid"] is False


def test_ops_outside_the_model_are_left_out_and_counted():
    h = hist(("invoke", 0, "list", None), ("ok", 0, "list", ["a"]),
             ("invoke", 0, "create", None, "a"), ("ok", 0, "create", {"created": True}, "a"),
             ("invoke", 0, "describe", None, "a"), ("ok", 0, "describe", {"partitions": 1}, "a"))
    r = check(h, get_model("topics"))
    assert r["valid"] is True and r["ignored"] == {"list": 1} and r["keys_checked"] == 1


def test_kv():
    m = get_model("kv")
    assert run(m, call("get", output=""), call("put", "a"), call("append", "b"), call("get", output="ab"))[0]
    assert not run(m, call("append", "x"), call("get", output=""))[0]


def test_user_model_in_a_few_lines():
    class Counter(Model):
        name = "counter"

        def init(self):
            return 0

        def step(self, state, c):
            if c.f == "add":
                return True, state + c.input
            return (c.output == state, state)

    h = hist(("invoke", 0, "add", 2), ("invoke", 1, "read", None), ("ok", 1, "read", 2), ("ok", 0, "add", 2))
    assert check(h, Counter())["valid"] is True
    h[2].value = 3
    assert check(h, Counter())["valid"] is False


def test_info_op_may_take_effect_late_or_never():
    m = get_model("register", 0)
    late = hist(("invoke", 0, "write", 1), ("info", 0, "write", 1),
                ("invoke", 1, "read", None), ("ok", 1, "read", 0),
                ("invoke", 1, "read", None), ("ok", 1, "read", 1))
    assert check(late, m)["valid"] is True
    never = hist(("invoke", 0, "write", 1), ("invoke", 1, "read", None), ("ok", 1, "read", 0))
    assert check(never, m)["valid"] is True
    # but once it has been observed it cannot be undone
    flip = [*late, *hist(("invoke", 2, "read", None), ("ok", 2, "read", 0))[0:2]]
    for i, o in enumerate(flip):
        o.index = i
    assert check(flip, m)["valid"] is False


def test_failed_write_did_not_happen():
    h = hist(("invoke", 0, "write", 1), ("fail", 0, "write", 1),
             ("invoke", 1, "read", None), ("ok", 1, "read", 1))
    assert check(h, get_model("register", 0))["valid"] is False


def test_freeze_keeps_scalars_and_freezes_every_container_inside() -> None:
    """Scalars come back as they are (the fast path), containers at any depth become hashable."""
    from jepsen_py.checkers.linearizable.model import FrozenDict, thaw

    for scalar in ("k", 3, 2.5, True, None):
        assert freeze(scalar) is scalar
    v = {"a": [1, {"b": (2, [3])}], "c": {4, 5}, "d": None}
    f = freeze(v)
    same = freeze({"d": None, "c": {5, 4}, "a": [1, {"b": [2, [3]]}]})
    assert isinstance(f, FrozenDict) and f == same and hash(f) == hash(same)
    assert f.get("a") == (1, FrozenDict({("b", (2, (3,)))})) and f.get("c") == frozenset({4, 5})
    assert thaw(f) == {"a": [1, {"b": [2, [3]]}], "c": [4, 5], "d": None}

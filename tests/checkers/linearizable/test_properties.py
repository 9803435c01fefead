"""Property tests: generated linearizable histories pass, injected impossible reads fail, the
search agrees with a brute-force oracle over all orders, and the fast path agrees with the search."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.linearizable import check, get_model
from jepsen_py.checkers.linearizable.calls import build_calls
from jepsen_py.checkers.linearizable.fastpath import check_unique_register
from jepsen_py.checkers.linearizable.model import INF, Call, Model
from jepsen_py.checkers.linearizable.search import search

from jepsen_py.history import Op
from tests.checkers.linearizable.histgen import generate

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def brute_force(calls: list[Call], model: Model) -> bool:
    """Any order of the calls that respects real time and the model; info calls optional."""

    def go(state, left: frozenset[int]) -> bool:
        if all(calls[i].end == INF for i in left):
            return True
        for i in left:
            c = calls[i]
            if any(calls[j].end < c.start for j in left if j != i):
                continue  # some op that finished before c began is still unplaced
            ok, new = model.step(state, c)
            if ok and go(new, left - {i}):
                return True
        return False

    return go(model.init(), frozenset(range(len(calls))))


def _append_read(ops: list[Op], value, *, key=None) -> list[Op]:
    """A read on a fresh process, after everything else, returning `value`."""
    n = len(ops)
    return [*ops,
            Op(index=n, time=n, type="invoke", process=999, f="read", key=key, value=None),
            Op(index=n + 1, time=n + 1, type="ok", process=999, f="read", key=key, value=value)]


def _append_write(ops: list[Op], value, *, key=None) -> list[Op]:
    n = len(ops)
    return [*ops,
            Op(index=n, time=n, type="invoke", process=998, f="write", key=key, value=value),
            Op(index=n + 1, time=n + 1, type="ok", process=998, f="write", key=key, value=value)]


@FAST
@given(st.sampled_from(["register", "cas-register", "mutex", "fifo-queue"]), st.integers(0, 2**32),
       st.integers(1, 6), st.floats(0, 0.3))
def test_generated_histories_are_accepted(model_name, seed, procs, crash_p):
    # Queues with crashed dequeues are the hard case for any search (Knossos's too): keep them small.
    n_ops = 12 if model_name == "fifo-queue" else 40
    ops = generate(model_name, seed, n_ops=n_ops, processes=procs, crash_p=crash_p)
    for failed_cas in (["drop", "mismatch"] if model_name == "cas-register" else [None]):
        opts = {"failed_cas": failed_cas} if failed_cas else {}
        r = check(ops, get_model(model_name, **opts), workers=1)
        assert r["valid"] is True, r["failures"]


@FAST
@given(st.sampled_from(["register", "cas-register"]), st.integers(0, 2**32), st.integers(1, 5))
@example("cas-register", 489717, 5)  # the report stops at a cas, not at the injected read
def test_injected_impossible_read_is_rejected(model_name, seed, procs):
    ops = generate(model_name, seed, n_ops=30, processes=procs, crash_p=0.1)
    # A value nobody wrote.
    r = check(_append_read(ops, 77777), get_model(model_name), workers=1)
    assert r["valid"] is False
    # The report names the op where the longest order found got stuck. That is the injected read,
    # unless a crashed op still open at the end let the search stop elsewhere; even then the read
    # is never part of the order found.
    failure = r["failures"][0]
    assert failure["op"]["value"] == 77777 or len(ops) not in failure["longest_linearization"]
    # A stale read: after a completed write of 55555 that follows everything, reading anything else.
    bad = _append_read(_append_write(ops, 55555), 44444)
    assert check(bad, get_model(model_name), workers=1)["valid"] is False
    good = _append_read(_append_write(ops, 55555), 55555)
    assert check(good, get_model(model_name), workers=1)["valid"] is True


def _perturb(ops: list[Op], seed: int) -> list[Op]:
    """Change one ok read's value, to get histories that are sometimes not linearizable."""
    import random

    rng = random.Random(seed)
    reads = [o for o in ops if o.type == "ok" and o.f == "read"]
    if reads:
        victim = rng.choice(reads)
        victim.value = rng.choice([None, 0, 1, 2, 3])
    return ops


@FAST
@given(st.sampled_from(["register", "cas-register", "mutex"]), st.integers(0, 2**32),
       st.integers(1, 4), st.booleans())
def test_search_agrees_with_brute_force(model_name, seed, procs, perturb):
    ops = generate(model_name, seed, n_ops=7, processes=procs, crash_p=0.25, values=3)
    if perturb:
        ops = _perturb(ops, seed)
    model = get_model(model_name, failed_cas="mismatch") if model_name == "cas-register" \
        else get_model(model_name)
    calls = build_calls(ops, model).calls
    expected = brute_force(calls, model)
    assert search(calls, model).valid is expected
    assert check(ops, model, workers=1)["valid"] is expected


@FAST
@given(st.integers(0, 2**32), st.integers(1, 8), st.booleans(), st.floats(0, 0.3))
def test_fastpath_agrees_with_search(seed, procs, perturb, crash_p):
    ops = generate("register", seed, n_ops=25, processes=procs, crash_p=crash_p, unique_writes=True)
    if perturb:
        import random

        rng = random.Random(seed)
        reads = [o for o in ops if o.type == "ok" and o.f == "read"]
        written = [o.value for o in ops if o.f == "write"] + [None]
        if reads:
            rng.choice(reads).value = rng.choice(written)
    model = get_model("register")
    calls = build_calls(ops, model).calls
    fast = check_unique_register(calls, model)
    assert fast is not None
    assert fast.valid is search(calls, model).valid
    if len(calls) <= 9:
        assert fast.valid is brute_force(calls, model)


def test_fastpath_declines_duplicate_values():
    ops = generate("register", 1, n_ops=30, processes=3, values=2)
    model = get_model("register")
    calls = build_calls(ops, model).calls
    if sum(1 for c in calls if c.f == "write") > 2:
        assert check_unique_register(calls, model) is None

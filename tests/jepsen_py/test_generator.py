"""Generators: each combinator's contract, in virtual time (simulate) where timing must be exact and
in real time (through the runner) where rates and limits must hold on a real clock."""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py import generator as gen
from jepsen_py.generator import Context, Pending, Template, simulate
from jepsen_py.history import FAIL, INFO, NEMESIS, OK


def fs(ops: list[gen.SimOp]) -> list[str]:
    return [o.template.f for o in ops]


def ctx(t: float = 0.0, thread: int | str = 0, threads: tuple = (0,), busy: tuple = ()) -> Context:
    return Context(t, thread, thread, random.Random(0), threads, busy, ("n1", "n2"))


# ---- lifting ----------------------------------------------------------------------------------


def test_a_dict_is_one_op_and_a_template_is_kept() -> None:
    g = gen.lift({"f": "read", "key": 3})
    assert g.op(ctx()) == Template("read", key=3)
    assert g.op(ctx()) is None
    t = Template("write", 1, 2)
    assert gen.lift(t).op(ctx()) is t


def test_bad_templates_are_rejected() -> None:
    with pytest.raises(TypeError, match="needs at least an 'f'"):
        gen.lift({"key": 1})
    with pytest.raises(TypeError, match="unknown fields"):
        gen.lift({"f": "read", "colour": "red"})
    with pytest.raises(TypeError, match="not a generator"):
        gen.lift(42)  # type: ignore[arg-type]


def test_a_function_is_called_for_every_op_until_it_returns_none() -> None:
    n = iter(range(3))
    g = gen.lift(lambda c: None if (i := next(n, None)) is None else {"f": "w", "value": i})
    assert [s.value for s in (g.op(ctx()), g.op(ctx()), g.op(ctx()))] == [0, 1, 2]
    assert g.op(ctx()) is None


def test_a_function_may_return_a_generator_that_runs_to_exhaustion() -> None:
    rounds = iter(range(2))
    g = gen.fn(lambda c: None if next(rounds, None) is None else [{"f": "a"}, {"f": "b"}])
    assert fs(simulate(g)) == ["a", "b", "a", "b"]


def test_lists_are_sequences_and_none_is_empty() -> None:
    assert fs(simulate([{"f": "a"}, None, [{"f": "b"}, {"f": "c"}]])) == ["a", "b", "c"]


# ---- counting combinators ----------------------------------------------------------------------


def test_limit_once_repeat() -> None:
    assert fs(simulate(gen.limit(3, gen.repeat({"f": "r"})))) == ["r"] * 3
    assert fs(simulate(gen.once(gen.repeat({"f": "r"})))) == ["r"]
    assert fs(simulate(gen.repeat({"f": "r"}, 4))) == ["r"] * 4


def test_repeat_hands_out_independent_copies() -> None:
    g = gen.repeat(Template("r", meta={"x": 1}), 2)
    a, b = g.op(ctx()), g.op(ctx())
    assert isinstance(a, Template) and isinstance(b, Template)
    a.meta["x"] = 99
    assert b.meta["x"] == 1


def test_cycle_restarts_a_fresh_copy() -> None:
    assert fs(simulate(gen.cycle([{"f": "a"}, {"f": "b"}], 3))) == ["a", "b"] * 3
    assert fs(simulate(gen.limit(5, gen.cycle([{"f": "a"}, {"f": "b"}])))) == ["a", "b", "a", "b", "a"]


def test_cycle_of_nothing_ends_instead_of_spinning() -> None:
    assert simulate(gen.cycle([])) == []


def test_mix_draws_from_every_generator_and_drops_exhausted_ones() -> None:
    g = gen.mix(gen.repeat({"f": "a"}, 50), gen.repeat({"f": "b"}, 50))
    ops = fs(simulate(g, seed=3))
    assert Counter(ops) == {"a": 50, "b": 50}
    assert ops[:50].count("a") not in (0, 50)  # interleaved, not one after the other


def test_mix_is_roughly_uniform() -> None:
    ops = fs(simulate(gen.limit(4000, gen.mix(gen.repeat({"f": "a"}), gen.repeat({"f": "b"}))), seed=1))
    assert 1800 < ops.count("a") < 2200


def test_flip_flop_alternates() -> None:
    g = gen.limit(5, gen.flip_flop(gen.repeat({"f": "start"}), gen.repeat({"f": "stop"})))
    assert fs(simulate(g)) == ["start", "stop", "start", "stop", "start"]


def test_map_and_filter() -> None:
    g = gen.map_ops(lambda t, c: {"f": t.f.upper(), "key": t.key},
                    gen.filter_ops(lambda t: t.key % 2 == 0, [{"f": "r", "key": k} for k in range(6)]))
    assert [(o.template.f, o.template.key) for o in simulate(g)] == [("R", 0), ("R", 2), ("R", 4)]


def test_until_ok_stops_after_the_first_ok() -> None:
    outcomes = iter([FAIL, INFO, OK, OK])
    ops = simulate(gen.until_ok(gen.repeat({"f": "w"})), latency=1.0, complete=lambda t, r: next(outcomes))
    assert len(ops) == 3


def test_defer_builds_the_generator_when_first_asked() -> None:
    g = gen.defer(lambda c: [{"f": "read", "key": 1, "node": n} for n in c.nodes])
    assert [o.template.node for o in simulate(g, nodes=("n1", "n2", "n3"))] == ["n1", "n2", "n3"]


# ---- time -------------------------------------------------------------------------------------


def test_time_limit_ends_the_generator() -> None:
    ops = simulate(gen.time_limit(10, gen.repeat({"f": "r"})), concurrency=2, latency=0.5)
    assert ops and max(o.time for o in ops) < 10
    assert len(ops) == 40  # two threads, one op per 0.5 s each, for 10 s


def test_time_limit_starts_at_first_ask() -> None:
    ops = simulate([gen.sleep(5), gen.time_limit(2, gen.repeat({"f": "r"}))], latency=1.0)
    assert [o.time for o in ops] == [5.0, 6.0]


def test_sleep_delays_the_rest_of_a_sequence() -> None:
    ops = simulate([{"f": "a"}, gen.sleep(3), {"f": "b"}])
    assert [(o.template.f, o.time) for o in ops] == [("a", 0.0), ("b", 3.0)]


def test_delay_spaces_ops_exactly() -> None:
    ops = simulate(gen.limit(5, gen.delay(2, gen.repeat({"f": "r"}))), concurrency=3)
    assert [o.time for o in ops] == [0.0, 2.0, 4.0, 6.0, 8.0]


@pytest.mark.parametrize("rate", [10.0, 100.0, 1000.0])
def test_rate_holds_across_threads_in_virtual_time(rate: float) -> None:
    seconds = 2000 / rate  # about 2000 ops whatever the rate
    ops = simulate(gen.time_limit(seconds, gen.rate(rate, gen.repeat({"f": "r"}))), concurrency=10,
                   latency=0.001)
    assert abs(len(ops) / seconds - rate) / rate < 0.08
    # paced, never stalled: every tenth of the run gets its share of the ops, within the stagger's
    # randomness (a real clock cannot assert this; a loaded machine may starve a thread)
    tenths = Counter(min(int(o.time / seconds * 10), 9) for o in ops)
    assert all(0.6 * len(ops) / 10 <= tenths[k] <= 1.4 * len(ops) / 10 for k in range(10)), tenths


def test_stagger_intervals_are_random_around_the_mean() -> None:
    ops = simulate(gen.limit(2000, gen.stagger(0.1, gen.repeat({"f": "r"}))), concurrency=4, seed=5)
    gaps = [b.time - a.time for a, b in itertools.pairwise(ops)]
    assert abs(sum(gaps) / len(gaps) - 0.1) < 0.01
    assert max(gaps) > 0.15 and min(gaps) < 0.05


def test_rate_zero_means_unlimited() -> None:
    g = gen.rate(0, gen.repeat({"f": "r"}, 5))
    assert all(o.time == 0.0 for o in simulate(g, concurrency=5))


def test_pending_carries_when_to_ask_again() -> None:
    g = gen.stagger(1.0, gen.repeat({"f": "r"}))
    assert isinstance(g.op(ctx(0.0)), Template)
    p = g.op(ctx(0.0))
    assert isinstance(p, Pending) and p.until is not None and 0.0 <= p.until < 2.0


# ---- threads ----------------------------------------------------------------------------------


def test_each_thread_gives_every_thread_its_own_copy() -> None:
    ops = simulate(gen.each_thread([{"f": "a"}, {"f": "b"}]), concurrency=3, latency=1.0)
    per_thread = {t: [o.template.f for o in ops if o.thread == t] for t in range(3)}
    assert per_thread == {0: ["a", "b"], 1: ["a", "b"], 2: ["a", "b"]}


def test_phases_wait_for_every_thread_to_finish() -> None:
    slow = lambda t, r: 5.0 if t.f == "slow" else 0.1  # noqa: E731
    g = gen.phases([{"f": "slow"}, {"f": "fast"}], {"f": "next"})
    ops = simulate(g, concurrency=2, latency=slow)
    nxt = next(o for o in ops if o.template.f == "next")
    assert nxt.time == 5.0  # not before the slow op finished


def test_nemesis_routing_keeps_fault_ops_on_the_nemesis_thread() -> None:
    g = gen.time_limit(10, gen.nemesis(
        gen.cycle([gen.sleep(2), {"f": "start"}, gen.sleep(2), {"f": "stop"}]),
        gen.rate(50, gen.repeat({"f": "read"})),
    ))
    ops = simulate(g, concurrency=4, nemesis_thread=True, latency=0.01)
    nem = [o for o in ops if o.thread == NEMESIS]
    assert [o.template.f for o in nem] == ["start", "stop", "start", "stop"]
    assert [round(o.time) for o in nem] == [2, 4, 6, 8]
    assert all(o.template.f == "read" for o in ops if o.thread != NEMESIS)
    assert 400 < sum(1 for o in ops if o.thread != NEMESIS) < 600


def test_clients_only_never_hands_ops_to_the_nemesis() -> None:
    ops = simulate(gen.clients(gen.repeat({"f": "r"}, 10)), concurrency=2, nemesis_thread=True, latency=1)
    assert len(ops) == 10 and all(o.thread != NEMESIS for o in ops)


def test_on_threads_sees_only_its_threads() -> None:
    seen: list[tuple] = []

    def f(c: Context) -> dict:
        seen.append(c.threads)
        return {"f": "r"}

    simulate(gen.limit(3, gen.on_threads(lambda t: t in (0, 1), f)), concurrency=4)
    assert set(seen) == {(0, 1)}


def test_processes_move_on_after_info() -> None:
    ops = simulate(gen.repeat({"f": "w"}, 4), concurrency=2, latency=1.0, complete=lambda t, r: INFO)
    assert [o.process for o in ops] == [0, 1, 2, 3]


# ---- determinism ------------------------------------------------------------------------------


def workload_like(keys: int = 5) -> gen.Generator:
    vals = iter(range(10**9))
    return gen.time_limit(10, gen.nemesis(
        gen.cycle([gen.sleep(3), {"f": "start"}, gen.sleep(3), {"f": "stop"}]),
        gen.rate(40, gen.mix(lambda c: {"f": "write", "key": c.rng.randrange(keys), "value": next(vals)},
                             lambda c: {"f": "read", "key": c.rng.randrange(keys)})),
    ))


def as_tuples(ops: list[gen.SimOp]) -> list[tuple]:
    return [(o.time, o.thread, o.process, o.template.f, o.template.key, o.template.value) for o in ops]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), concurrency=st.integers(1, 12))
def test_same_seed_same_schedule(seed: int, concurrency: int) -> None:
    a = simulate(workload_like(), concurrency=concurrency, nemesis_thread=True, seed=seed, latency=0.01)
    b = simulate(workload_like(), concurrency=concurrency, nemesis_thread=True, seed=seed, latency=0.01)
    assert as_tuples(a) == as_tuples(b)


def test_different_seeds_differ() -> None:
    a = simulate(workload_like(), concurrency=4, nemesis_thread=True, seed=1, latency=0.01)
    b = simulate(workload_like(), concurrency=4, nemesis_thread=True, seed=2, latency=0.01)
    assert as_tuples(a) != as_tuples(b)


def test_fresh_copies_are_pristine() -> None:
    g = gen.limit(2, gen.repeat({"f": "r"}))
    copy = g.fresh()
    assert len(simulate(g)) == 2
    assert len(simulate(copy)) == 2


def test_copies_share_functions_and_state_but_not_progress() -> None:
    """each_thread copies the generator, not what it refers to: a workload object holding a lock
    is shared (deepcopy would fail on the lock) and its value counter stays unique across threads."""

    class Workload:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.values = iter(range(100))

        def write(self, c: Context) -> dict:
            with self.lock:
                return {"f": "write", "value": next(self.values)}

    ops = simulate(gen.each_thread(gen.limit(3, Workload().write)), concurrency=4)
    assert len(ops) == 12
    assert sorted(o.template.value for o in ops) == list(range(12))


def test_reserve_dedicates_threads() -> None:
    g = gen.time_limit(5, gen.reserve(2, gen.repeat({"f": "write"}), 1, gen.repeat({"f": "cas"}),
                                      gen.repeat({"f": "read"})))
    ops = simulate(g, concurrency=6, nemesis_thread=True, latency=1.0)
    by_thread = {t: {o.template.f for o in ops if o.thread == t} for t in range(6)}
    assert by_thread == {0: {"write"}, 1: {"write"}, 2: {"cas"}, 3: {"read"}, 4: {"read"}, 5: {"read"}}
    assert not [o for o in ops if o.thread == NEMESIS]
    with pytest.raises(TypeError, match="pairs"):
        gen.reserve(2, gen.repeat({"f": "w"}))


def test_log_writes_a_line_and_hands_out_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="jepsen_py.generator"):
        ops = simulate([{"f": "a"}, gen.log("switching to reads"), {"f": "b"}])
    assert fs(ops) == ["a", "b"]
    assert "switching to reads" in caplog.text

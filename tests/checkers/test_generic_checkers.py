"""The set, list-append and queue checkers: small hand-written histories (each anomaly kind is found
where it is and only there), and property tests on histories of known truth."""

from __future__ import annotations

from dataclasses import asdict
from random import Random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.append import AppendChecker
from jepsen_py.checkers.queues import QueueChecker
from jepsen_py.checkers.sets import SetChecker

from jepsen_py.history import Op
from tests.checkers import truth


class H:
    """Builds a history: `op(process, f, key, value, result, type)` appends invoke + completion;
    `invoke` and `complete` split them for concurrency."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def invoke(self, p: int, f: str, key: Any, value: Any = None) -> int:
        self.ops.append(Op(len(self.ops), len(self.ops), "invoke", p, f, key, value))
        return len(self.ops) - 1

    def complete(self, p: int, f: str, key: Any, value: Any = None, typ: str = "ok") -> int:
        self.ops.append(Op(len(self.ops), len(self.ops), typ, p, f, key, value))
        return len(self.ops) - 1

    def op(self, p: int, f: str, key: Any, value: Any = None, result: Any = None, typ: str = "ok") -> None:
        self.invoke(p, f, key, value)
        self.complete(p, f, key, value if result is None else result, typ)


def kinds(r: dict[str, Any]) -> list[str]:
    return sorted(a["kind"] for a in r["anomalies"])


def test_set_valid_lost_stale_unexpected() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2)
    h.op(1, "read", "s", None, [1, 2])
    assert SetChecker().check(None, h.ops)["valid"] is True
    h.op(0, "add", "s", 3)
    h.op(1, "read", "s", None, [1, 2])      # misses 3, seen later: stale
    h.op(1, "read", "s", None, [1, 2, 3, 99])  # 99 never added
    h.op(0, "add", "s", 4)
    h.op(1, "read", "s", None, [1, 2, 3])   # 4 never seen again: lost
    r = SetChecker().check(None, h.ops)
    assert r["valid"] is False
    assert kinds(r) == ["lost", "stale-read", "unexpected"]
    assert r["lost"] == 1 and r["stale_reads"] == 1 and r["unexpected"] == 1


def test_set_info_adds_seen_count_as_recovered_not_unexpected() -> None:
    h = H()
    h.op(0, "add", "s", 1, typ="info")
    h.op(1, "read", "s", None, [1])
    r = SetChecker().check(None, h.ops)
    assert r["valid"] is True and r["recovered"] == 1


def test_append_prefixes_pass_and_diverging_reads_fail() -> None:
    h = H()
    for v in (1, 2, 3):
        h.op(0, "append", "l", v)
        h.op(1, "read", "l", None, list(range(1, v + 1)))
    assert AppendChecker().check(None, h.ops)["valid"] is True
    h.op(2, "read", "l", None, [1, 3, 2])
    r = AppendChecker().check(None, h.ops)
    assert "incompatible-order" in kinds(r) and r["valid"] is False


def test_append_duplicates_unexpected_lost_and_realtime_order() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(0, "append", "l", 2)
    h.op(1, "read", "l", None, [2, 1, 1, 7])
    r = AppendChecker().check(None, h.ops)
    assert set(kinds(r)) == {"duplicate", "unexpected", "realtime-order"}
    h2 = H()
    h2.op(0, "append", "k", 1)
    h2.op(1, "read", "k", None, [])
    r2 = AppendChecker().check(None, h2.ops)
    assert kinds(r2) == ["lost"]


def test_append_concurrent_appends_may_land_in_either_order() -> None:
    h = H()
    h.invoke(0, "append", "l", 1)
    h.invoke(1, "append", "l", 2)
    h.complete(0, "append", "l", 1)
    h.complete(1, "append", "l", 2)
    h.op(2, "read", "l", None, [2, 1])
    assert AppendChecker().check(None, h.ops)["valid"] is True


def test_append_stale_read_fails_only_when_linearizable() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(1, "read", "l", None, [])
    h.op(1, "read", "l", None, [1])
    assert kinds(AppendChecker().check(None, h.ops)) == ["stale-read"]
    assert AppendChecker(linearizable=False).check(None, h.ops)["valid"] is True


def test_queue_lost_duplicated_unexpected() -> None:
    h = H()
    h.op(0, "enqueue", "q", 1)
    h.op(0, "enqueue", "q", 2)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, None)
    assert QueueChecker().check(None, h.ops)["valid"] is False  # 2 lost
    h.op(1, "dequeue", "q", None, 2)
    assert QueueChecker().check(None, h.ops)["valid"] is True
    h.op(1, "dequeue", "q", None, 2)
    h.op(1, "dequeue", "q", None, 5)
    r = QueueChecker().check(None, h.ops)
    assert kinds(r) == ["duplicated", "unexpected"]


# Outside systems (async replication, follower reads): what the checkers must call each case.

def seen_once_then_gone(f: str, key: str, typ: str = "ok", nodes: int = 3) -> H:
    """An add that one read saw, then missing from every later read, final reads on every node."""
    h = H()
    h.op(0, f, key, 1, typ=typ)
    h.op(1, "read", key, None, [1])
    for n in range(nodes):
        h.op(2 + n, "read", key, None, [])
    return h


def test_set_element_seen_then_missing_from_every_later_read_is_lost_not_stale() -> None:
    h = seen_once_then_gone("add", "s")
    for linearizable in (True, False):
        r = SetChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["lost"], r
        assert r["valid"] is False and r["lost"] == 1 and r["stale"] == 0
        assert r["failing_kinds"] == ["lost"]


def test_set_lost_explanation_names_the_earlier_read_that_saw_it() -> None:
    r = SetChecker().check(None, seen_once_then_gone("add", "s").ops)
    text = r["anomalies"][0]["explanation"]
    assert "the last read to see it was op 2" in text and "all 3 reads invoked after that missed it" in text


def test_set_stale_element_is_seen_by_every_later_read() -> None:
    h = H()
    h.op(0, "add", "s", 1)          # ops 0, 1
    h.op(1, "read", "s", None, [])  # ops 2, 3: misses 1
    h.op(1, "read", "s", None, [1])
    r = SetChecker().check(None, h.ops)
    assert kinds(r) == ["stale-read"] and r["stale"] == 1 and r["stale_reads"] == 1
    assert "every read invoked after op 2 saw it" in r["anomalies"][0]["explanation"]
    weak = SetChecker(linearizable=False).check(None, h.ops)
    assert weak["valid"] is True and weak["reported_kinds"] == ["stale-read"] and weak["failing_kinds"] == []


def test_append_element_seen_then_missing_is_lost_whatever_linearizable_says() -> None:
    h = seen_once_then_gone("append", "l")
    for linearizable in (True, False):
        r = AppendChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["lost"] and r["valid"] is False, r


def test_info_add_or_append_seen_once_then_gone_is_lost() -> None:
    for checker, f in ((SetChecker(), "add"), (AppendChecker(), "append")):
        r = checker.check(None, seen_once_then_gone(f, "k", typ="info").ops)
        assert kinds(r) == ["lost"] and r["valid"] is False and r["recovered"] == 1, (f, r)


def test_set_read_with_a_duplicate_element_fails() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2)
    h.op(1, "read", "s", None, [1, 2, 1])
    for linearizable in (True, False):
        r = SetChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["duplicate"] and r["valid"] is False and r["duplicated"] == 1


def test_set_with_no_verified_element_is_unknown() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2, typ="info")
    r = SetChecker().check(None, h.ops)
    assert r["valid"] == "unknown" and r["never_read"] == 2
    assert "nothing could be verified" in r["unknown_reason"]
    h.op(1, "read", "s", None, [1])
    assert SetChecker().check(None, h.ops)["valid"] is True


def test_append_read_of_a_failed_append_is_an_aborted_read() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(0, "append", "l", 2, typ="fail")
    h.op(1, "read", "l", None, [1, 2])
    for linearizable in (True, False):
        r = AppendChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["aborted-read"] and r["valid"] is False and r["aborted_reads"] == 1, r
        assert "G1a" in r["anomalies"][0]["explanation"]


def test_queue_duplicates_fail_by_default_and_are_reported_when_at_least_once() -> None:
    h = H()
    h.op(0, "enqueue", "q", 1)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, None)
    strict = QueueChecker().check(None, h.ops)
    assert strict["valid"] is False and strict["failing_kinds"] == ["duplicated"]
    loose = QueueChecker(exactly_once=False).check(None, h.ops)
    assert loose["valid"] is True and loose["reported_kinds"] == ["duplicated"] and loose["duplicated"] == 1
    h.op(0, "enqueue", "q", 2)
    h.op(0, "enqueue", "q", 3, typ="fail")
    h.op(1, "dequeue", "q", None, 3)
    h.op(1, "dequeue", "q", None, None)
    r = QueueChecker(exactly_once=False).check(None, h.ops)
    assert r["failing_kinds"] == ["aborted-read", "lost"] and r["lost"] == 1 and r["valid"] is False


def test_reported_only_anomalies_never_crowd_out_failing_ones() -> None:
    h = H()
    for v in range(150):                       # 150 stale elements, reported only
        h.op(0, "add", "s", v)
        h.op(1, "read", "s", None, list(range(v)))
    h.op(0, "add", "s", 999)                   # one lost element, last in the history
    h.op(1, "read", "s", None, list(range(150)))
    r = SetChecker(linearizable=False).check(None, h.ops)
    assert r["anomaly_counts"] == {"lost": 1, "stale-read": 150}
    assert r["valid"] is False and len(r["anomalies"]) == 100 and r["anomalies_truncated"] == 51
    assert "lost" in kinds(r)


# Property tests: histories of known truth (tests/checkers/truth.py), a correct store's run with
# faults injected, and the checkers' counts must equal what was injected.

PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAULTS = ("none", "lost", "stale", "resurrected", "random")


@st.composite
def visibility(draw: st.DrawFn, outcome: str, n: int) -> list[bool]:
    """A correct store's visibility for an element over its `n` rounds, then one fault."""
    if outcome == "ok":
        seen = [draw(st.booleans())] + [True] * (n - 1)
    else:  # info: from some round on, or never; fail: never (until a fault)
        start = draw(st.integers(0, n)) if outcome == "info" else n
        seen = [i >= start for i in range(n)]
    fault = draw(st.sampled_from(FAULTS))
    if fault == "lost" and n >= 2:
        t = draw(st.integers(1, n - 1))
        seen[t:] = [False] * (n - t)
    elif fault == "stale" and n >= 3:
        a = draw(st.integers(1, n - 2))
        b = draw(st.integers(a, n - 2))
        seen[a:b + 1] = [False] * (b + 1 - a)
    elif fault == "resurrected" and n >= 3:  # gone, back, and maybe gone again
        t = draw(st.integers(1, n - 2))
        seen = [True] * n
        seen[t] = False
        if draw(st.booleans()):
            seen[-1] = False
    elif fault == "random":
        seen = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return seen


@st.composite
def plans(draw: st.DrawFn, *, injections: bool = True) -> truth.Plan:
    rounds = draw(st.integers(1, 6))
    keys = [f"k{i}" for i in range(draw(st.integers(1, 2)))]
    reads = [draw(st.integers(1, 3)) for _ in range(rounds)]
    elements: list[truth.Element] = []
    for key in keys:
        for r in range(rounds):
            for _ in range(draw(st.integers(0, 3))):
                outcome = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
                elements.append(truth.Element(key, len(elements) + 1, r, outcome,
                                              draw(visibility(outcome, rounds - r))))
    plan = truth.Plan(rounds, reads, elements, keys)
    if injections:
        slots = [(k, r, j) for k in keys for r in range(rounds) for j in range(reads[r])]
        for i, (k, r, j) in enumerate(draw(st.lists(st.sampled_from(slots), max_size=3, unique=True))):
            plan.unexpected.append((k, r, j, 10_000 + i))
        for k, r, j in draw(st.lists(st.sampled_from(slots), max_size=3, unique=True)):
            visible = [e.value for e in elements if e.key == k and e.round <= r and e.seen[r - e.round]]
            if visible:
                plan.duplicated.append((k, r, j, draw(st.sampled_from(visible))))
    return plan


def element_counts(r: dict[str, Any]) -> dict[str, int]:
    return {k: r[k] for k in asdict(truth.Expected())}


def expected_verdict(exp: truth.Expected, failing_extra: bool, linearizable: bool) -> bool | str:
    if exp.lost or exp.aborted_reads or failing_extra or (linearizable and exp.stale):
        return False
    return "unknown" if exp.stable == 0 else True


@PROPS
@given(plans(), st.booleans(), st.randoms(use_true_random=False))
def test_set_checker_counts_equal_what_was_injected(plan: truth.Plan, linearizable: bool,
                                                    rng: Random) -> None:
    r = SetChecker(linearizable=linearizable).check(None, truth.history(plan, "add", rng))
    exp = truth.expected(plan)
    assert element_counts(r) == asdict(exp)
    assert r["unexpected"] == len(plan.unexpected)
    assert r["duplicated"] == len({(k, x) for k, _, _, x in plan.duplicated})
    assert r["valid"] == expected_verdict(exp, bool(plan.unexpected or plan.duplicated), linearizable)
    counts = r["anomaly_counts"]
    assert counts.get("lost", 0) == exp.lost and counts.get("stale-read", 0) == exp.stale
    assert ("stale-read" in r["failing_kinds"]) == (linearizable and exp.stale > 0)


def conflicting_reads(ops: list[Op]) -> bool:
    """Two reads of a key where neither list is a prefix of the other (by brute force)."""
    reads: dict[Any, list[list[Any]]] = {}
    for op in ops:
        if op.f == "read" and op.type == "ok":
            reads.setdefault(op.key, []).append(op.value)
    return any(a[:len(b)] != b and b[:len(a)] != a
               for rs in reads.values() for a in rs for b in rs)


@PROPS
@given(plans(), st.booleans(), st.randoms(use_true_random=False))
def test_append_checker_counts_equal_what_was_injected(plan: truth.Plan, linearizable: bool,
                                                       rng: Random) -> None:
    ops = truth.history(plan, "append", rng, ordered=True)
    r = AppendChecker(linearizable=linearizable).check(None, ops)
    exp = truth.expected(plan)
    assert element_counts(r) == asdict(exp)
    counts = r["anomaly_counts"]
    assert counts.get("unexpected", 0) == len(plan.unexpected)
    assert counts.get("duplicate", 0) == len(plan.duplicated)
    assert counts.get("realtime-order", 0) == 0  # every list is in real-time order
    conflict = conflicting_reads(ops)
    assert ("incompatible-order" in counts) == conflict
    extra = bool(plan.unexpected or plan.duplicated or conflict)
    assert r["valid"] == expected_verdict(exp, extra, linearizable)


@PROPS
@given(plans(injections=False), st.randoms(use_true_random=False), st.data())
def test_append_reordered_read_is_incompatible_order_and_nothing_else(
        plan: truth.Plan, rng: Random, data: st.DataObject) -> None:
    """A correct run (every fault undone; reads in the round of an append do not see it, so every
    read is a prefix of the list), then one read with two elements swapped."""
    for e in plan.elements:
        e.seen = [False] + [e.outcome == "ok"] * (len(e.seen) - 1)
    ops = truth.history(plan, "append", rng, ordered=True)
    base = AppendChecker().check(None, ops)
    assert base["anomaly_counts"] == {} and base["lost"] == base["stale"] == 0
    reads = [op for op in ops if op.f == "read" and op.type == "ok" and len(op.value) >= 2]
    if not reads:
        return
    read = data.draw(st.sampled_from(reads))
    i = data.draw(st.integers(0, len(read.value) - 2))
    j = data.draw(st.integers(i + 1, len(read.value) - 1))
    read.value[i], read.value[j] = read.value[j], read.value[i]
    r = AppendChecker().check(None, ops)
    others = [op for op in ops
              if op.f == "read" and op.type == "ok" and op.key == read.key and op is not read]
    assert ("incompatible-order" in r["anomaly_counts"]) == any(len(o.value) > i for o in others)
    assert set(r["anomaly_counts"]) <= {"incompatible-order", "realtime-order"}
    if "realtime-order" in r["anomaly_counts"]:  # only when the swap put a later round first
        rounds = {e.value: e.round for e in plan.elements}
        assert rounds[read.value[i]] > rounds[read.value[j]]
    assert element_counts(r) == element_counts(base)


@st.composite
def queue_runs(draw: st.DrawFn) -> tuple[list[Op], dict[str, int]]:
    """A correct queue's run (each enqueued element dequeued once, then a drain to empty) with
    lost, duplicated, unexpected and aborted elements injected; returns the history and the truth."""
    n = draw(st.integers(0, 12))
    outcomes = [draw(st.sampled_from(["ok", "ok", "info", "fail"])) for _ in range(n)]
    fates = [draw(st.sampled_from(["out", "out", "lost", "twice", "aborted"])) for _ in range(n)]
    truth_counts = {"lost": 0, "duplicated": 0, "unexpected": 0, "aborted_reads": 0, "recovered": 0,
                    "acknowledged": outcomes.count("ok")}
    outs: list[int] = []
    for v, (o, f) in enumerate(zip(outcomes, fates, strict=True)):
        if o == "fail":  # a correct queue never returns it; the fault does
            if f == "aborted":
                outs.append(v)
                truth_counts["aborted_reads"] += 1
            continue
        if f == "lost" or (o == "info" and f == "aborted"):
            truth_counts["lost"] += o == "ok"
            continue
        outs += [v, v] if f == "twice" else [v]
        truth_counts["duplicated"] += f == "twice"
        truth_counts["recovered"] += o == "info"
    extra = draw(st.integers(0, 2))
    outs += [1000 + i for i in range(extra)]
    truth_counts["unexpected"] = extra
    outs = draw(st.permutations(outs))
    h = H()
    for v, o in enumerate(outcomes):
        h.op(0, "enqueue", "q", v, typ=o)
    for v in outs:
        h.op(1, "dequeue", "q", None, v)
    h.op(1, "dequeue", "q", None, None)  # the drain found it empty
    return h.ops, truth_counts


@PROPS
@given(queue_runs(), st.booleans())
def test_queue_checker_counts_equal_what_was_injected(run: tuple[list[Op], dict[str, int]],
                                                      exactly_once: bool) -> None:
    ops, exp = run
    r = QueueChecker(exactly_once=exactly_once).check(None, ops)
    assert {k: r[k] for k in exp} == exp
    failing = exp["lost"] or exp["unexpected"] or exp["aborted_reads"] or (exactly_once and exp["duplicated"])
    assert r["valid"] is (not failing)
    assert ("duplicated" in r["reported_kinds"]) == (not exactly_once and exp["duplicated"] > 0)

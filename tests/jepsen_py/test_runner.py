"""The runner, driven by an in-process DB, Client and Nemesis that obey the contracts and record
every call: phase order, real concurrency, Jepsen's process rules, timeouts, failures and Ctrl-C;
and by ones that do not: a nemesis whose hooks never return, a DB whose primaries() is no answer."""

from __future__ import annotations

import _thread
import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jepsen_py import generator as gen
from jepsen_py import interpreter, store
from jepsen_py.backends.none import NoneBackend
from jepsen_py.history import INFO, INVOKE, NEMESIS, OBSERVER, OK, read_history, validate
from jepsen_py.runner import run_test
from tests.jepsen_py import hostile
from tests.jepsen_py.fakes import (
    Calls,
    FakeDB,
    FakeNemesis,
    ReadsSeeWritesChecker,
    Register,
    StaleReplica,
    StaleReplicaDB,
    make_spec,
    register_workload,
    stale_reads,
)

NEMESIS_SCHEDULE = [gen.sleep(0.2), {"f": "start"}, gen.sleep(0.2), {"f": "stop"}]


def first(names: list[str], what: str) -> int:
    return names.index(what)


def last(names: list[str], what: str) -> int:
    return len(names) - 1 - names[::-1].index(what)


def test_phases_run_in_order_and_everything_is_stored(tmp_path: Path) -> None:
    calls = Calls()
    spec = make_spec(tmp_path, time_limit=1.0, rate=300.0)
    db = FakeDB(spec, calls=calls, log_dir=tmp_path)
    out = run_test(spec, db=db, workload=register_workload(calls=calls), nemesis=FakeNemesis(calls),
                   nemesis_generator=gen.cycle(NEMESIS_SCHEDULE), backend=NoneBackend(spec))
    assert out.exit_code == 0 and out.valid is True, out.results
    assert out.phases == ["setup", "main", "heal", "recovery", "final", "collect logs", "teardown", "check"]

    names = [n for n in calls.names() if n != "db.primaries"]
    assert sorted(n for n in names if n == "db.setup") == ["db.setup"] * 3
    assert last(names, "db.setup") < first(names, "nemesis.setup") < first(names, "client.open")
    assert last(names, "nemesis.invoke") < first(names, "nemesis.heal")
    assert first(names, "nemesis.heal") < first(names, "client.close")
    assert last(names, "client.close") < first(names, "nemesis.teardown") < first(names, "db.teardown")
    assert last(names, "db.teardown") < first(names, "checker.check")

    run_dir = out.run_dir
    assert run_dir.parent == spec.results_dir / spec.name
    for f in ("test.json", "history.jsonl", "results.json", "jepsen.log"):
        assert (run_dir / f).is_file(), f
    assert json.loads((run_dir / "test.json").read_text())["seed"] == spec.seed
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True and results["checkers"]["reads-see-writes"]["valid"] is True
    assert (run_dir / "nodes" / "n2" / "n2.log").read_text() == "node n2 log\n"
    assert (spec.results_dir / "latest").resolve() == run_dir.resolve()
    assert (spec.results_dir / spec.name / "latest").resolve() == run_dir.resolve()
    assert "phase: main" in (run_dir / "jepsen.log").read_text()

    history = read_history(run_dir / "history.jsonl")
    validate(history)
    nem = [o for o in history if o.process == NEMESIS]
    assert [o.f for o in nem if o.type == INVOKE][-1] == "heal"
    assert all(o.type == INFO for o in nem if o.type != INVOKE)
    assert {o.f for o in nem} >= {"start", "stop", "heal"}
    samples = [o for o in history if o.process == OBSERVER]
    assert {o.node for o in samples} == {"n1", "n2", "n3"}
    assert all(o.type == OK and o.value["leader"] == "n1" for o in samples)
    # final reads: every key on every node, after the heal
    heal_at = next(o.index for o in nem if o.f == "heal")
    finals = {(o.key, o.node) for o in history if o.index > heal_at and o.f == "read" and o.type == OK}
    assert finals == {(k, n) for k in range(3) for n in ("n1", "n2", "n3")}
    # reads carry what the serving node said of itself
    read = next(o for o in history if o.f == "read" and o.type == OK)
    assert read.node and {"role", "term", "leader"} <= set(read.meta)


def test_a_hundred_clients_run_at_the_same_time(tmp_path: Path) -> None:
    """Every invoke waits at a 100-party barrier: with any lock around invocations the barrier
    would break and the ops end info. The op timeout outlasts the barrier's 10 s: a loaded machine
    may take more than the default 2 s to bring a hundred threads into invoke, and that is no lock."""
    spec = make_spec(tmp_path, concurrency=100, time_limit=30.0, recovery_timeout=0, op_timeout=15.0)
    barrier = threading.Barrier(100)
    db = FakeDB(spec, barrier=barrier)
    w = register_workload(final=False, generator=gen.each_thread(gen.repeat({"f": "write", "key": 0,
                                                                             "value": 1}, 3)))
    out = run_test(spec, db=db, workload=w, backend=NoneBackend(spec))
    history = read_history(out.run_dir / "history.jsonl")
    client_ops = [o for o in history if isinstance(o.process, int)]
    assert sum(1 for o in client_ops if o.type == OK) == 300
    assert not [o for o in client_ops if o.type == INFO]
    assert db.register.max_in_flight == 100
    assert out.results["stats"]["phase_s"]["main"] < 20  # ended when the generator did, not at 30 s


def test_rate_and_time_limit_hold_on_a_real_clock(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, time_limit=2.0, rate=150.0, concurrency=10, recovery_timeout=0)
    out = run_test(spec, db=FakeDB(spec), workload=register_workload(final=False),
                   backend=NoneBackend(spec))
    # Asserted on what the limiter decides, not on how fast a shared machine ran the fake ops: a
    # loaded machine may do fewer ops, never more, and never after the time limit.
    main_s = out.results["stats"]["phase_s"]["main"]
    assert 1.9 <= main_s < 2.0 + 10  # stopped at the limit, well before an op timeout's worth
    assert out.invokes <= 1.2 * 300  # the rate is never exceeded
    history = read_history(out.run_dir / "history.jsonl")
    times = sorted(o.time for o in history if isinstance(o.process, int) and o.type == INVOKE)
    t0 = times[0]
    assert (times[-1] - t0) / 1e9 < 2.0 + 0.25  # nothing invoked past the limit (bar recording lag)
    # paced, not bursts: no half second holds more than its share (plus one op per client). That
    # the limiter never stalls is asserted in virtual time (test_generator): on a shared machine's
    # real clock a starved process may do nothing for half a second, and that is not the limiter.
    halves = [sum(1 for t in times if k * 0.5e9 <= t - t0 < (k + 1) * 0.5e9) for k in range(4)]
    assert all(n <= 1.2 * 75 + 10 for n in halves), halves


def test_an_op_that_overruns_the_timeout_is_info_and_its_worker_moves_on(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, concurrency=2, op_timeout=0.3, recovery_timeout=0, time_limit=10)
    w = register_workload(final=False, generator=gen.clients(gen.each_thread(
        [{"f": "hang", "value": 1.0}, {"f": "write", "key": 1, "value": 5}])))
    out = run_test(spec, db=FakeDB(spec), workload=w, backend=NoneBackend(spec))
    history = read_history(out.run_dir / "history.jsonl")
    validate(history)
    hangs = [o for o in history if o.f == "hang" and o.type != INVOKE]
    assert len(hangs) == 2 and all(o.type == INFO and o.error == "timeout" for o in hangs)
    writes = [o for o in history if o.f == "write" and o.type == OK]
    assert sorted(o.process for o in writes) == [2, 3]  # process + concurrency after the info


def test_a_client_exception_is_info_and_the_client_is_reopened(tmp_path: Path) -> None:
    calls = Calls()
    spec = make_spec(tmp_path, concurrency=1, recovery_timeout=0, time_limit=10)
    w = register_workload(final=False, generator=[{"f": "raise"}, {"f": "info"}, {"f": "write", "key": 0,
                                                                                 "value": 1}])
    out = run_test(spec, db=FakeDB(spec, calls=calls), workload=w, backend=NoneBackend(spec))
    history = read_history(out.run_dir / "history.jsonl")
    done = [(o.f, o.type, o.process) for o in history if isinstance(o.process, int) and o.type != INVOKE]
    assert done == [("raise", INFO, 0), ("info", INFO, 1), ("write", OK, 2)]
    raised = next(o for o in history if o.f == "raise" and o.type == INFO)
    assert raised.error == "ConnectionError: boom"
    # one client per process, as in Jepsen: reopened after the raise, and again for process 2
    # (RegisterClient does not say it is reusable), the old one closed first
    opens = [(n, a) for n, a in calls.items if n in ("client.open", "client.close")]
    assert opens == [("client.open", "n1"), ("client.close", "n1"), ("client.open", "n1"),
                     ("client.close", "n1"), ("client.open", "n1"), ("client.close", "n1")]


STUCK_THEN_READS = [{"f": "write", "key": 0, "value": 1, "node": "n1"},
                    *({"f": "read", "key": 0, "node": "n3"} for _ in range(4))]


@pytest.mark.parametrize("reuse", [False, True])
def test_a_new_process_gets_a_new_connection_so_a_stuck_one_cannot_hide_stale_reads(
        tmp_path: Path, reuse: bool) -> None:
    # n3 serves stale reads, and the first request sent to it is lost: that connection never
    # answers again. Only a fresh client (a new connection) for the next process shows the stale
    # read; a client that wrongly says it is reusable hides it behind timeouts.
    spec = make_spec(tmp_path, concurrency=1, recovery_timeout=0, time_limit=10)
    replica = StaleReplica(stale_node="n3", lost=1, timeout=0.05)
    w = register_workload(final=False, generator=list(STUCK_THEN_READS))
    out = run_test(spec, db=StaleReplicaDB(spec, replica=replica, reuse=reuse), workload=w,
                   backend=NoneBackend(spec))
    history = read_history(out.run_dir / "history.jsonl")
    validate(history)
    reads = [(o.type, o.process, o.value) for o in history if o.f == "read" and o.type != INVOKE]
    if reuse:
        assert reads == [(INFO, 0, None), (INFO, 1, None), (INFO, 2, None), (INFO, 3, None)]
        assert stale_reads(history) == []
        assert replica.opened == ["n1", "n3"]
    else:
        assert reads == [(INFO, 0, None), (OK, 1, None), (OK, 1, None), (OK, 1, None)]
        assert [o.value for o in stale_reads(history)] == [None, None, None]
        assert replica.opened == ["n1", "n3", "n3"]


def test_a_failed_db_setup_still_tears_everything_down(tmp_path: Path) -> None:
    calls = Calls()
    spec = make_spec(tmp_path)
    out = run_test(spec, db=FakeDB(spec, calls=calls, fail_setup_on="n2"),
                   workload=register_workload(calls=calls), backend=NoneBackend(spec))
    assert out.exit_code == 255
    assert "cannot install on n2" in (out.error or "")
    assert sorted(a for n, a in calls.items if n == "db.teardown") == ["n1", "n2", "n3"]
    assert "checker.check" not in calls.names()
    results = json.loads((out.run_dir / "results.json").read_text())
    assert results["valid"] == "unknown" and "cannot install on n2" in results["error"]


def interrupted_run(spec: Any, calls: Calls, nemesis: FakeNemesis) -> Path:
    """Runs a test and presses Ctrl-C 0.8 s in; the run's directory. Ctrl-C must reach us even
    when pytest was started in the background of a script, where the shell hands it SIGINT ignored
    (interrupt_main then does nothing)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.8, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_test(spec, db=FakeDB(spec, calls=calls), workload=register_workload(calls=calls),
                     nemesis=nemesis, nemesis_generator=gen.cycle(NEMESIS_SCHEDULE),
                     backend=NoneBackend(spec))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    return (spec.results_dir / "latest").resolve()


class SlowStartNemesis(FakeNemesis):
    """A fault that takes longer to land than the interpreter waits for after a Ctrl-C."""

    def invoke(self, test: Any, op: Any) -> Any:
        if op.f == "start":
            time.sleep(2.0)
        return super().invoke(test, op)


def test_a_fault_still_landing_after_ctrl_c_is_recorded_info_before_heal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The interpreter waits JOIN_GRACE_S for the ops in flight after a Ctrl-C, then gives up on
    # them; nobody records their completions after that, so it records info itself: the nemesis's
    # heal (the next op on its process) must not find its start still open.
    from jepsen_py import interpreter

    monkeypatch.setattr(interpreter, "JOIN_GRACE_S", 0.3)
    calls = Calls()
    run_dir = interrupted_run(make_spec(tmp_path, time_limit=20.0, rate=10.0), calls, SlowStartNemesis(calls))
    history = read_history(run_dir / "history.jsonl")
    validate(history)
    start = [op for op in history if op.process == NEMESIS and op.f == "start"]
    assert [op.type for op in start] == [INVOKE, INFO]
    assert start[1].error == "abandoned: still running when the phase ended"
    assert any(op.process == NEMESIS and op.f == "heal" for op in history if op.index > start[1].index)


def test_ctrl_c_heals_and_tears_down_then_reraises(tmp_path: Path) -> None:
    calls = Calls()
    spec = make_spec(tmp_path, time_limit=20.0, rate=100.0)
    run_dir = interrupted_run(spec, calls, FakeNemesis(calls))
    names = calls.names()
    assert "nemesis.heal" in names and "nemesis.teardown" in names
    assert names.count("db.teardown") == 3
    results = json.loads((run_dir / "results.json").read_text())
    assert results["error"] == "interrupted" and results["valid"] == "unknown"
    validate(read_history(run_dir / "history.jsonl"))


def test_leave_db_running_skips_teardown(tmp_path: Path) -> None:
    calls = Calls()
    spec = make_spec(tmp_path, leave_db_running=True, recovery_timeout=0, time_limit=0.3)
    out = run_test(spec, db=FakeDB(spec, calls=calls), workload=register_workload(final=False),
                   backend=NoneBackend(spec))
    assert out.exit_code == 0
    assert "db.teardown" not in calls.names()


class Raising:
    name = "raises"

    def check(self, test: Any, history: Any) -> dict[str, Any]:
        raise ValueError("checker bug")


class Invalid:
    name = "invalid"

    def check(self, test: Any, history: Any) -> dict[str, Any]:
        return {"valid": False, "anomalies": [{"kind": "stale-read", "ops": [1], "explanation": "x"},
                                              {"kind": "stale-read", "ops": [2], "explanation": "y"}]}


@pytest.mark.parametrize(("checkers", "valid", "code", "anomalies"), [
    ([ReadsSeeWritesChecker()], True, 0, 0),
    ([ReadsSeeWritesChecker(), Raising()], "unknown", 2, 0),
    ([Raising(), Invalid()], False, 1, 2),
])
def test_verdicts_merge_across_checkers(tmp_path: Path, checkers: list, valid: object, code: int,
                                        anomalies: int) -> None:
    spec = make_spec(tmp_path, recovery_timeout=0, time_limit=0.2)
    w = register_workload(final=False)
    w.checkers = checkers
    out = run_test(spec, db=FakeDB(spec), workload=w, backend=NoneBackend(spec))
    assert (out.valid, out.exit_code, out.anomalies) == (valid, code, anomalies)
    if any(isinstance(c, Raising) for c in checkers):
        assert out.results["checkers"]["raises"]["error"] == "ValueError: checker bug"


def test_post_run_steps_passed_in_are_called_and_their_failures_are_not_fatal(tmp_path: Path) -> None:
    seen: list[Path] = []

    def broken(run_dir: Path) -> None:
        raise RuntimeError("renderer bug")

    def results_written_first(run_dir: Path) -> None:
        assert (run_dir / "results.json").exists()
        seen.append(run_dir)

    spec = make_spec(tmp_path, recovery_timeout=0, time_limit=0.2)
    out = run_test(spec, db=FakeDB(spec), workload=register_workload(final=False), backend=NoneBackend(spec),
                   post_run=[broken, results_written_first])
    assert out.exit_code == 0 and seen == [out.run_dir]
    assert (out.run_dir / "results.json").exists()
    assert "renderer bug" in (out.run_dir / "jepsen.log").read_text()


def test_an_unsupported_workload_fails_before_anything_is_created(tmp_path: Path) -> None:
    class PickyDB(FakeDB):
        def client(self, workload: str) -> Any:
            from jepsen_py.errors import BadInput

            raise BadInput(f"--workload: {workload} is not supported by this db")

    spec = make_spec(tmp_path)
    from jepsen_py.errors import BadInput

    with pytest.raises(BadInput, match="not supported"):
        run_test(spec, db=PickyDB(spec), workload=register_workload(), backend=NoneBackend(spec))
    assert not spec.results_dir.exists()


def test_observer_marks_silent_nodes_and_keeps_polling_the_others(tmp_path: Path) -> None:
    class HalfDeadDB(FakeDB):
        def status(self, test: Any, node: str) -> dict[str, Any] | None:
            if node == "n3":
                return None
            return super().status(test, node)

    spec = make_spec(tmp_path, time_limit=1.0, recovery_timeout=0, rate=50.0)
    out = run_test(spec, db=HalfDeadDB(spec), workload=register_workload(final=False),
                   backend=NoneBackend(spec))
    samples = [o for o in read_history(out.run_dir / "history.jsonl") if o.process == OBSERVER]
    by_node = {n: [o for o in samples if o.node == n] for n in ("n1", "n2", "n3")}
    assert all(o.type == "fail" and o.value is None for o in by_node["n3"])
    for n in ("n1", "n2"):
        assert 4 <= len(by_node[n]) <= 25  # ~10 per second over the ~1 s main phase
        assert all(o.type == OK for o in by_node[n])


def test_store_is_created_first(tmp_path: Path) -> None:
    """test.json exists before the backend is asked for anything."""
    seen: dict[str, bool] = {}

    class Spy(NoneBackend):
        def setup(self, test: Any) -> dict:
            seen["test.json"] = (test.store_dir / store.TEST_JSON).exists()
            return {}

    spec = make_spec(tmp_path, recovery_timeout=0, time_limit=0.2)
    run_test(spec, db=FakeDB(spec), workload=register_workload(final=False), backend=Spy(spec))
    assert seen == {"test.json": True}


def test_register_fake_is_a_real_register() -> None:
    """The fake itself: writes are visible to later reads (so the checker tests mean something)."""
    r = Register()
    from jepsen_py.history import Op
    from tests.jepsen_py.fakes import RegisterClient

    c = RegisterClient(r, Calls(), "n1")
    c.invoke(None, Op(0, 0, INVOKE, 0, "write", 1, 42))  # type: ignore[arg-type]
    assert c.invoke(None, Op(1, 0, INVOKE, 0, "read", 1)).value == 42  # type: ignore[arg-type]


def test_a_generator_bug_fails_the_run_instead_of_shortening_it(tmp_path: Path) -> None:
    calls = Calls()
    n = iter(range(10**6))

    def buggy(ctx: gen.Context) -> dict[str, Any]:
        if next(n) == 50:
            raise KeyError("no such key in the workload's table")
        return {"f": "write", "key": 0, "value": 1}

    spec = make_spec(tmp_path, time_limit=5.0, recovery_timeout=0)
    w = register_workload(final=False, generator=buggy)
    out = run_test(spec, db=FakeDB(spec, calls=calls), workload=w, backend=NoneBackend(spec))
    assert out.exit_code == 255
    assert "KeyError" in (out.error or "") and "no such key" in (out.error or "")
    assert out.results["stats"]["phase_s"]["main"] < 3
    assert calls.names().count("db.teardown") == 3
    validate(read_history(out.run_dir / "history.jsonl"))


def test_a_slow_node_does_not_thin_out_the_others_samples(tmp_path: Path) -> None:
    import time as _time

    class SlowN3(FakeDB):
        def status(self, test: Any, node: str) -> dict[str, Any] | None:
            if node == "n3":
                _time.sleep(0.6)  # a paused node answering only at its client timeout
            return super().status(test, node)

    spec = make_spec(tmp_path, time_limit=1.5, recovery_timeout=0, rate=20.0)
    out = run_test(spec, db=SlowN3(spec), workload=register_workload(final=False), backend=NoneBackend(spec))
    samples = [o for o in read_history(out.run_dir / "history.jsonl") if o.process == OBSERVER]
    count = Counter(o.node for o in samples)
    # Each node's poller runs on its own: the fast nodes' samples are not paced by n3's 0.6 s answers
    # (polled in turn they would be as few as n3's). Judged against n3, not a count a loaded machine
    # might miss; n3's bound holds however slow the machine (slower only means fewer).
    assert 1 <= count["n3"] <= 4
    assert count["n1"] > 2 * count["n3"] and count["n2"] > 2 * count["n3"], count
    assert all(o.meta["sent"] <= o.time for o in samples)


def test_the_clock_and_the_scheduler_are_injected(tmp_path: Path) -> None:
    """A simulator supplies its own time and tasks: history times come from the given clock, and
    every worker, the nemesis and the interpreter's own loop (which owns the generator and watches
    the op timeouts) are started through the given scheduler."""
    from jepsen_py.interpreter import Clock, MonotonicClock, Scheduler, Task, ThreadScheduler

    class LateClock(MonotonicClock):
        def ns(self) -> int:
            return super().ns() + 3600 * 10**9

    class CountingScheduler(ThreadScheduler):
        def __init__(self) -> None:
            self.names: list[str] = []

        def spawn(self, name: str, target: Any) -> Task:
            self.names.append(name)
            return super().spawn(name, target)

    clock: Clock = LateClock()
    sched = CountingScheduler()
    scheduler: Scheduler = sched
    calls = Calls()
    spec = make_spec(tmp_path, time_limit=0.5, rate=100.0, recovery_timeout=0, concurrency=3)
    out = run_test(spec, db=FakeDB(spec, calls=calls), workload=register_workload(final=False),
                   nemesis=FakeNemesis(calls), nemesis_generator=gen.cycle(NEMESIS_SCHEDULE),
                   backend=NoneBackend(spec), clock=clock, scheduler=scheduler)
    assert out.exit_code == 0, out.results
    history = read_history(out.run_dir / "history.jsonl")
    assert history and all(op.time >= 3600 * 10**9 for op in history)
    assert sorted(sched.names) == ["interpreter", "nemesis", "worker-0", "worker-1", "worker-2"]


class Freezer:
    """A nemesis from outside: "freeze" pauses n2 until "thaw" (no start-/stop- names), declared."""

    def __init__(self, declare: list[Any]) -> None:
        self.declare = declare

    def fs(self) -> frozenset[str]:
        return frozenset({"freeze", "thaw"})

    def faults(self) -> list[Any]:
        return self.declare

    def setup(self, test: Any) -> None: ...
    def heal(self, test: Any) -> None: ...
    def teardown(self, test: Any) -> None: ...

    def invoke(self, test: Any, op: Any) -> Any:
        import dataclasses

        return dataclasses.replace(op, type=INFO, value={"nodes": ["n2"]})


def test_an_outside_nemesis_s_declared_faults_are_in_the_stored_history(tmp_path: Path) -> None:
    from jepsen_py.checkers.availability import quiet_stretches
    from jepsen_py.nemeses.faults import PAUSE, FaultKind, fault_windows

    freeze = FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset({PAUSE}))
    spec = make_spec(tmp_path, time_limit=1.0, rate=100.0, recovery_timeout=0)
    schedule = [gen.sleep(0.2), {"f": "freeze"}, gen.sleep(0.3), {"f": "thaw"}]
    out = run_test(spec, db=FakeDB(spec), workload=register_workload(final=False), nemesis=Freezer([freeze]),
                   nemesis_generator=schedule, backend=NoneBackend(spec))
    assert out.exit_code == 0, out.results
    history = read_history(out.run_dir / "history.jsonl")
    validate(history)
    nem = [o for o in history if o.process == NEMESIS and o.f in ("freeze", "thaw")]
    assert len(nem) == 4 and all(o.meta["fault"]["kind"] == "freeze" for o in nem)
    # read from the file alone: one pause window on n2, from freeze to thaw, and quiet after it
    (w,) = fault_windows(history, nodes=spec.nodes)
    assert (w.kind, w.targets, w.silences) == (freeze, {"n2"}, True)
    assert w.start == nem[0].time and w.end == nem[3].time
    end = max(o.time for o in history)
    assert any(a >= nem[3].time for a, _ in quiet_stretches(history, end))


def test_a_declaration_the_analysis_cannot_use_is_refused_before_the_run(tmp_path: Path) -> None:
    from jepsen_py.nemeses.faults import FaultKind

    from jepsen_py.errors import BadInput

    bad = FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset({"cpu"}))
    spec = make_spec(tmp_path)
    says = r"^--nemesis: Freezer.faults\(\): fault 'freeze' has effects \['cpu'\]; choose one or more of"
    with pytest.raises(BadInput, match=says):
        run_test(spec, db=FakeDB(spec), workload=register_workload(), nemesis=Freezer([bad]),
                 nemesis_generator=[{"f": "freeze"}], backend=NoneBackend(spec))
    assert not spec.results_dir.exists()


# ---- nothing a plugin does hangs the run (tests/jepsen_py/hostile.py) ----------------------------

released = pytest.fixture(hostile.releasing)


def test_a_nemesis_op_that_never_returns_is_info_by_timeout_and_the_run_goes_on(
        tmp_path: Path, released: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The nemesis's invoke blocks: its op is info by the controller after NEMESIS_JOIN_S, while
    the clients go on; its thread, still blocked when the phase ends, is named in one line."""
    monkeypatch.setattr(interpreter, "NEMESIS_JOIN_S", 0.3)
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:CounterDB",
                                            "--workload", f"{hostile.HERE}:reads",
                                            "--nemesis", f"{hostile.HERE}:StuckInvokeNemesis",
                                            "--nemesis-interval", "0.2", time_limit=1.5))
    assert code == 0
    run = hostile.the_run(tmp_path / "results")
    history = hostile.history_of(run)
    start = [o for o in history if o["process"] == "nemesis" and o["f"] == "start-x"]
    assert [(o["type"], o["error"]) for o in start] == [("invoke", None), ("info", "timeout")]
    assert start[1]["meta"]["by"] == "controller" and start[1]["meta"]["timeout_s"] == 0.3
    # recorded at its bound, a second before the main phase's end, and the clients went on after it
    assert start[1]["time"] - start[0]["time"] < 1.0e9
    assert any(o["type"] == "ok" and o["index"] > start[1]["index"] for o in history)
    assert len(hostile.log_lines(run, "nemesis (start-x on process nemesis)")) == 1


@pytest.mark.parametrize(("nemesis", "phase", "said"), [
    ("StuckSetupNemesis", "setup", "nemesis setup did not return within 0.3 s (left behind)"),
    ("StuckHealNemesis", "heal", "nemesis heal did not return within 0.3 s (left behind)"),
    ("StuckTeardownNemesis", "teardown", "nemesis teardown did not return within 0.3 s (left behind)"),
])
def test_a_nemesis_hook_that_never_returns_fails_its_phase(tmp_path: Path, released: None,
                                                           monkeypatch: pytest.MonkeyPatch, nemesis: str,
                                                           phase: str, said: str) -> None:
    """setup, heal or teardown blocks: bounded by NEMESIS_JOIN_S, the phase fails as one that
    raised would (255), named in one line; the run still tears down and is stored, unknown."""
    monkeypatch.setattr(interpreter, "NEMESIS_JOIN_S", 0.3)
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:CounterDB",
                                            "--workload", f"{hostile.HERE}:reads",
                                            "--nemesis", f"{hostile.HERE}:{nemesis}"))
    assert code == 255
    results = hostile.failed_phase(tmp_path / "results", said)
    if phase == "setup":
        assert results["stats"]["invokes"] == 0  # nothing was tested


def test_primaries_that_answer_none_stop_the_run_with_one_line(tmp_path: Path, released: None,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """primaries() answers None where a list of node names belongs: one --db line, 254, the run
    stored (unknown: nothing was tested)."""
    db = f"{hostile.HERE}:GarbagePrimariesDB"
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", db,
                                            "--workload", f"{hostile.HERE}:reads"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 254
    assert len(err) == 1 and err[0].startswith(
        f"jepsen-py: --db: {db}: primaries() returned None, not a list of node names (run stored in "), err
    assert hostile.results_of(hostile.the_run(tmp_path / "results"))["valid"] == "unknown"

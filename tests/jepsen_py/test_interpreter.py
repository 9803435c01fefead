"""The threaded interpreter (jepsen_py.interpreter) is Jepsen's: one thread owns the generator,
workers only perform the ops they are handed. Nothing a client or a generator does hangs it: a
client stuck forever, one that raises SystemExit or KeyboardInterrupt, a generator that blocks or
spins each end the run with a verdict or one line, and the store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from jepsen_py import generator as gen
from jepsen_py import interpreter
from jepsen_py.backends.none import NoneBackend
from jepsen_py.history import NEMESIS, OK, read_history
from jepsen_py.runner import run_test
from tests.jepsen_py import hostile
from tests.jepsen_py.fakes import Calls, FakeDB, FakeNemesis, make_spec, register_workload


class ThreadRecorder(gen.Generator):
    """Passes every call through to `inner`, noting which thread made it."""

    def __init__(self, inner: gen.GenLike) -> None:
        self.inner = gen.lift(inner)
        self.threads: set[int] = set()
        self.ops = 0
        self.updates = 0

    def op(self, ctx: gen.Context) -> gen.Step:
        self.threads.add(threading.get_ident())
        self.ops += 1
        return self.inner.op(ctx)

    def update(self, ctx: gen.Context, invoke: Any, complete: Any) -> None:
        self.threads.add(threading.get_ident())
        self.updates += 1
        self.inner.update(ctx, invoke, complete)


def test_one_thread_asks_and_tells_the_generator_under_concurrency_ten(tmp_path: Path) -> None:
    """Ten clients inside invoke at once (a ten-party barrier in every op) and a nemesis beside
    them, yet every op() and update() of both generators comes from one thread, none of the
    workers'."""
    spec = make_spec(tmp_path, concurrency=10, time_limit=30.0, recovery_timeout=0, op_timeout=15.0)
    db = FakeDB(spec, barrier=threading.Barrier(10))
    clients = ThreadRecorder(gen.each_thread(gen.repeat({"f": "write", "key": 0, "value": 1}, 5)))
    nemesis = ThreadRecorder(gen.limit(4, gen.cycle([gen.sleep(0.05), {"f": "start"}, gen.sleep(0.05),
                                                      {"f": "stop"}])))
    workers: set[int] = set()
    calls = Calls()

    class Noting(FakeNemesis):
        def invoke(self, test: Any, op: Any) -> Any:
            workers.add(threading.get_ident())
            return super().invoke(test, op)

    out = run_test(spec, db=db, workload=register_workload(final=False, generator=clients),
                   nemesis=Noting(calls), nemesis_generator=nemesis, backend=NoneBackend(spec))
    assert out.exit_code == 0, out.results
    history = read_history(out.run_dir / "history.jsonl")
    assert sum(1 for o in history if isinstance(o.process, int) and o.type == OK) == 50
    assert sum(1 for o in history if o.process == NEMESIS and o.f in ("start", "stop")) == 8
    assert db.register.max_in_flight == 10  # the ten ran at once
    assert clients.updates == 50 and nemesis.updates == 4
    owner = clients.threads | nemesis.threads
    assert len(owner) == 1, owner
    assert not owner & workers and owner != {threading.get_ident()}


# ---- nothing a plugin does hangs the run (tests/jepsen_py/hostile.py) ----------------------------

released = pytest.fixture(hostile.releasing)


def test_a_client_whose_every_worker_is_stuck_forever_still_ends_the_run(tmp_path: Path) -> None:
    """Each worker's first op never returns, even past --op-timeout, so no worker is free to ask
    the generator: the ops are info by the controller's timeout, the phase still ends at its time
    limit, the final reads (fresh processes) are performed, the stuck threads are named in one line,
    and the process ends with them still blocked (daemon threads)."""
    res = hostile.run_process(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:StuckClientDB",
                                               "--workload", f"{hostile.HERE}:reads"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = hostile.the_run(tmp_path / "results")
    assert hostile.results_of(run)["valid"] is True
    history = hostile.history_of(run)
    stuck = [(o["type"], o["error"], o["meta"]["by"]) for o in history
             if o["process"] in (0, 1) and o["type"] != "invoke"]
    assert stuck == [("info", "timeout", "controller")] * 2
    assert {o["process"] for o in history if o["type"] == "ok"} == {2, 3}  # the final reads, new processes
    named = [line for line in res.stderr.splitlines() if "left behind" in line]
    assert len(named) == 1, res.stderr
    assert "worker-0 (get on process 0)" in named[0] and "worker-1 (get on process 1)" in named[0]


def test_systemexit_and_keyboardinterrupt_from_a_client_are_its_op_errors(tmp_path: Path, released: None,
                                                                          capsys: pytest.CaptureFixture[str]
                                                                          ) -> None:
    """Raised in invoke on a worker's thread, where no signal is delivered, they are the client's
    own: each op is info naming what it raised, and its worker goes on as a fresh process."""
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:ExitingClientDB",
                                            "--workload", f"{hostile.HERE}:reads"))
    assert code == 0, capsys.readouterr()
    history = hostile.history_of(hostile.the_run(tmp_path / "results"))
    raised = {o["process"]: o["error"] for o in history if o["process"] in (0, 1) and o["type"] != "invoke"}
    assert raised == {0: "SystemExit: 3", 1: "KeyboardInterrupt"}
    assert {o["process"] for o in history if o["type"] == "ok"} >= {2, 3}  # the run went on


def test_a_generator_that_never_returns_stops_the_run_naming_it(tmp_path: Path, released: None,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """op() blocks: past max(op timeout, JOIN_GRACE_S) in one call the run stops, stored, with one
    line naming the plugin's generator and where it is stuck (254)."""
    monkeypatch.setattr(interpreter, "JOIN_GRACE_S", 0.5)
    code = hostile.run_cli(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:CounterDB",
                                            "--workload", f"{hostile.HERE}:reads",
                                            "--generator", f"{hostile.HERE}:blocking"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 254
    assert len(err) == 1 and err[0].startswith(
        f"jepsen-py: --generator: {hostile.HERE}:blocking: its generator did not return within 0.5 s "
        "(stuck in hostile.py:"), err
    run = hostile.the_run(tmp_path / "results")
    assert hostile.results_of(run)["valid"] == "unknown"
    assert len(hostile.log_lines(run, "the interpreter's thread is abandoned")) == 1


def test_a_generator_that_loops_without_yielding_stops_the_run(tmp_path: Path) -> None:
    """op() spins forever (in a process of its own: the spinning thread takes a core until the
    process ends): the run stops after the default bound, stored, one line, 254, and the process
    ends."""
    res = hostile.run_process(hostile.run_argv(tmp_path / "results", "--db", f"{hostile.HERE}:CounterDB",
                                               "--workload", f"{hostile.HERE}:reads",
                                               "--generator", f"{hostile.HERE}:spinning"))
    assert res.returncode == 254, res.stdout + res.stderr
    err = res.stderr.strip().splitlines()
    said = f"--generator: {hostile.HERE}:spinning: its generator did not return within 5 s"
    assert len(err) == 1 and said in err[0] and "in Spinning.op" in err[0], err
    assert hostile.results_of(hostile.the_run(tmp_path / "results"))["valid"] == "unknown"

"""The threaded interpreter (jepsen_py.interpreter) is Jepsen's: one thread owns the generator,
workers only perform the ops they are handed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from jepsen_py import generator as gen
from jepsen_py.backends.none import NoneBackend
from jepsen_py.history import NEMESIS, OK, read_history
from jepsen_py.runner import run_test
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

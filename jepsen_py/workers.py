"""The client workers every interpreter drives: their processes, their clients and how a failure
is written down, kept once for both engines.

A worker holds one client per node it used, opened for its current process. As in Jepsen, a worker
whose op ended info continues as a new process, and a new process gets new clients unless its
clients say they are reusable (`client_reusable`): a connection left holding an unanswered request
must not hold the worker's later ops behind it. A client whose invoke raised is reopened. In both
engines one loop owns the generator (jepsen_py.interpreter.InterpreterCore); they differ in how an
op reaches a worker and how the loop waits: a thread per worker (jepsen_py.interpreter), or a task
per op in virtual time (jepsen_py.sim.interpreter).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.errors import BadInput, FrameworkFailure
from jepsen_py.generator import Context, Generator, Pending, Template, Thread
from jepsen_py.history import FAIL, INFO, NEMESIS, Op
from jepsen_py.plugins import is_signal, said
from jepsen_py.protocols import Test, client_reusable

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Worker:
    """One client worker's state: its process, its node, its clients (one per node it used, opened
    for process `clients_process`) and the op in its client or nemesis (`inflight` until `deadline`,
    `timeout_s` after it began, watched by the threaded interpreter's loop; `abandoned` once
    recorded info)."""

    thread: Thread
    process: int | str
    node: str | None
    clients: dict[str, Any] = field(default_factory=dict)
    clients_process: int | str | None = None
    invokes: int = 0
    oks: int = 0
    inflight: Op | None = None
    deadline: float = 0.0
    timeout_s: float = 0.0
    abandoned: bool = False
    open_failed: bool = False  # its last op failed to open a client (the threaded worker backs off)


def copy_op(op: Op) -> Op:
    """What a client gets: its own copy, so mutating it cannot touch the recorded invoke."""
    return Op(op.index, op.time, op.type, op.process, op.f, op.key, op.value, op.node, op.error,
              dict(op.meta) if op.meta else {})


class WorkerPool:
    """The workers of one run, `concurrency` client workers and the nemesis's. They persist across
    phases, as Jepsen's do: the final reads of a run continue the process numbering of its main
    phase.

    How ops reach them is the interpreter's: its loop owns the generator and hands each op to a
    worker's thread, or, in the simulator, to a task on the one event loop."""

    def __init__(self, test: Test, client: Any, concurrency: int) -> None:
        self.test = test
        self.client_template = client
        self.concurrency = concurrency
        nodes = test.nodes
        self.workers = [
            Worker(thread=i, process=i, node=nodes[i % len(nodes)] if nodes else None)
            for i in range(concurrency)
        ]
        self.nemesis_worker = Worker(thread=NEMESIS, process=NEMESIS, node=None)
        self.errors: list[str] = []
        # A worker stopped by what the user gave (a plugin generator's bad op): the run ends with it,
        # one line and 254, not as a framework failure.
        self.bad_input: BadInput | None = None

    def counts(self) -> tuple[int, int]:
        """(client invocations, ok completions) so far."""
        return sum(w.invokes for w in self.workers), sum(w.oks for w in self.workers)

    def close_clients(self) -> None:
        for w in self.workers:
            for node in list(w.clients):
                self._drop_client(w, node or None)

    def raise_failures(self) -> None:
        """After a phase: the BadInput a user's generator caused, else FrameworkFailure when a
        worker broke."""
        if self.bad_input is not None:
            raise self.bad_input
        if self.errors:
            raise FrameworkFailure("; ".join(self.errors[:3]))

    def note_failure(self, w: Worker, e: Exception) -> None:
        """A failure outside invoke (a generator bug, the history unwritable) ends the phase for
        everyone (the caller stops it) and fails the run: a silently shortened test would be a lie."""
        if isinstance(e, BadInput):
            self.bad_input = self.bad_input or e
            return
        log.error("worker %s failed: %s: %s", w.thread, type(e).__name__, e)
        log.debug("worker failure in full", exc_info=e)
        self.errors.append(f"worker {w.thread}: {type(e).__name__}: {e}")

    def _client_for(self, w: Worker, node: str | None) -> Any:
        if w.clients_process != w.process:
            self._renew_clients(w)
        key = node or ""
        c = w.clients.get(key)
        if c is None:
            c = self.client_template.open(self.test, node) if node is not None else self.client_template
            w.clients[key] = c
        return c

    def _renew_clients(self, w: Worker) -> None:
        """The worker moved to a new process: closes each client that is not reusable, so the next
        op opens a fresh one (Jepsen's rule)."""
        for key, c in list(w.clients.items()):
            if not client_reusable(c, self.test):
                self._drop_client(w, key or None)
        w.clients_process = w.process

    def _drop_client(self, w: Worker, node: str | None, only: Any = None) -> None:
        """Closes and forgets the worker's client for `node` (only if it is `only`, when given: a
        thread left behind in an old client's invoke must not close the one its worker uses now)."""
        key = node or ""
        if only is not None and w.clients.get(key) is not only:
            return
        c = w.clients.pop(key, None)
        if c is not None and c is not self.client_template:
            try:
                c.close(self.test)
            except BaseException as e:  # the client's own, SystemExit too; never a Ctrl-C
                if is_signal(e):
                    raise
                log.debug("closing a client failed: %s", said(e))

    @staticmethod
    def open_failed(inv: Op, e: BaseException) -> Op:
        """The completion of an op whose client could not be opened: it certainly did not happen."""
        return Op(-1, 0, FAIL, inv.process, inv.f, inv.key, inv.value, inv.node,
                  f"client open failed: {said(e)}", {})

    def invoke_failed(self, w: Worker, inv: Op, e: BaseException, client: Any = None) -> Op:
        """The completion of an op whose invoke raised (anything: a KeyboardInterrupt or SystemExit
        a client raises is its own error, named like any other): unknown, and the client is
        reopened (Jepsen: a crashed client is not trusted again)."""
        log.debug("client invoke raised on process %s", inv.process, exc_info=e)
        self._drop_client(w, inv.node, only=client)
        return Op(-1, 0, INFO, inv.process, inv.f, inv.key, inv.value, inv.node, said(e), {})

    @staticmethod
    def nemesis_failed(inv: Op, e: BaseException) -> Op:
        """The completion of a nemesis op that raised: unknown, as every nemesis op is."""
        log.error("nemesis op %s failed: %s", inv.f, said(e))
        log.debug("nemesis failure in full", exc_info=e)
        return Op(-1, 0, INFO, NEMESIS, inv.f, inv.key, inv.value, inv.node, said(e), {})


class GeneratorPhase:
    """One generator being driven, as both interpreters hand it out: who is busy, whether it is
    exhausted or stopped. Only the interpreter's loop asks and tells it, as in Jepsen's: the
    threaded interpreter's loop thread, or the simulator's loop coroutine."""

    def __init__(self, g: Generator, threads: Sequence[Thread]) -> None:
        self.gen = g
        self.threads = tuple(threads)
        self.busy: set[Thread] = set()
        self.exhausted = False
        self.stopped = False

    @property
    def over(self) -> bool:
        return self.exhausted or self.stopped

    def ask(self, thread: Thread, ctx: Context) -> Template | Pending | None:
        """The generator's next step for `thread` (ask only while not `over`): an op to start (the
        thread is busy until told), a wait, or None: the generator just ran out (wake the waiters)."""
        step = self.gen.op(ctx)
        if step is None:
            self.exhausted = True
            return None
        if isinstance(step, Template):
            self.busy.add(thread)
            return step
        assert isinstance(step, Pending)
        return step

    def tell(self, thread: Thread, ctx: Context, invoke: Op, completion: Op) -> None:
        """The op `thread` started has completed: it is free, and the generator hears how."""
        self.busy.discard(thread)
        try:
            self.gen.update(ctx, invoke, completion)
        except BaseException as e:
            if is_signal(e):
                raise
            log.error("generator update failed: %s", said(e))
            log.debug("generator update failure in full", exc_info=e)

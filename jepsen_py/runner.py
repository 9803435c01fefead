"""The runner: one test run from an empty store directory to an exit code (DESIGN.md section 1).

    store dir + test.json -> backend.setup -> db.setup on every node (parallel) -> wait for a leader
    -> main (client workers + nemesis beside them, observer sampling, until the time limit)
    -> heal -> recovery (a stable leader, bounded) -> final ops -> node logs into nodes/<node>/
    -> db teardown (unless leave_db_running) -> backend teardown -> checkers -> results.json
    -> POST_RUN renderers

Concurrency is real: one thread per client worker, each with its own client; the only shared
critical sections are the generator (asking for the next op, microseconds) and the history append.
A worker whose op completes info (or raises, or overruns the op timeout) takes a fresh process id,
process + concurrency, as Jepsen's workers do. Any failure or Ctrl-C in a phase still heals and
tears down; a failure is reported with exit 255 (254 for environment problems), never swallowed.

`run_test` takes live objects (tests drive it with in-process fakes); `jepsen-py run` builds them
from names.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import random
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py import generator as gen
from jepsen_py import store
from jepsen_py.errors import EXIT_BAD_INPUT, EXIT_FRAMEWORK, BadInput, FrameworkFailure, JepsenError
from jepsen_py.generator import Context, Generator, Pending, Template, Thread
from jepsen_py.history import (
    COMPLETIONS,
    FAIL,
    INFO,
    INVOKE,
    NEMESIS,
    OK,
    HistoryWriter,
    Op,
    read_history,
    validate,
)
from jepsen_py.observer import Observer
from jepsen_py.progress import Progress
from jepsen_py.protocols import DB, Backend, Checker, Client, Nemesis, Test, TestSpec
from jepsen_py.verdict import Valid, exit_code, merge
from jepsen_py.workload import Workload

log = logging.getLogger(__name__)

# Renderers run after results.json is written, each called with the run directory. Their failures
# are logged, never fatal: a plot must not change a verdict.
POST_RUN: list[Callable[[Path], None]] = []


def render_pictures(run_dir: Path) -> None:
    """timeline.html, perf.html and (for a non-linearizable history) linearizability.html."""
    from checkers.render import render_run

    render_run(run_dir)


def export_parquet(run_dir: Path) -> None:
    """The run's ops and verdicts as Parquet, ready for `jepsen-py aggregate`."""
    from spark.export import export_run

    export_run(run_dir)


def install_default_post_run() -> None:
    """What every run from the CLI writes after results.json; idempotent. Tests driving
    run_test directly leave POST_RUN empty so they stay fast."""
    for hook in (render_pictures, export_parquet):
        if hook not in POST_RUN:
            POST_RUN.append(hook)

POLL_S = 0.05  # longest a waiting worker sleeps before asking its generator again
JOIN_GRACE_S = 5.0
NEMESIS_JOIN_S = 120.0


@dataclass
class RunOutcome:
    """What one run produced; the CLI prints it and exits with `exit_code`."""

    run_dir: Path
    valid: Valid
    results: dict[str, Any]
    exit_code: int
    invokes: int = 0
    oks: int = 0
    anomalies: int = 0
    error: str | None = None
    phases: list[str] = field(default_factory=list)

    @property
    def ok_fraction(self) -> float:
        return self.oks / self.invokes if self.invokes else 0.0


class _Clock:
    """Nanoseconds since the test began, from the monotonic clock (history times)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic_ns()

    def ns(self) -> int:
        return time.monotonic_ns() - self.t0

    def s(self) -> float:
        return (time.monotonic_ns() - self.t0) / 1e9


class _Driver:
    """Hands a generator's ops to worker threads. The generator is only ever called under the lock;
    ops run outside it."""

    def __init__(self, g: Generator, rng: random.Random, threads: Sequence[Thread],
                 nodes: Sequence[str], clock: _Clock) -> None:
        self.gen = g
        self.rng = rng
        self.threads = tuple(threads)
        self.nodes = tuple(nodes)
        self.clock = clock
        self.busy: set[Thread] = set()
        self.cond = threading.Condition(threading.Lock())
        self.exhausted = False
        self.stopped = False
        self.event_waiters = 0

    def _ctx(self, thread: Thread, process: int | str) -> Context:
        return Context(self.clock.s(), thread, process, self.rng, self.threads, self.busy, self.nodes)

    def next(self, w: _Worker, start: Callable[[Template], Op],
             done: Callable[[], tuple[int | str, Op, Op]] | None = None) -> Op | None:
        """Finishes the worker's previous op (`done` records its completion), then waits for the
        next template and starts it (`start` records the invoke), all in one critical section:
        one lock handoff per op instead of four is what keeps 100 threads fast."""
        with self.cond:
            if done is not None:
                process, invoke, completion = done()
                self.busy.discard(w.thread)
                try:
                    self.gen.update(self._ctx(w.thread, process), invoke, completion)
                except Exception:
                    log.exception("generator update failed")
                if self.event_waiters:
                    self.cond.notify_all()
            while True:
                if self.exhausted or self.stopped:
                    return None
                ctx = self._ctx(w.thread, w.process)
                step = self.gen.op(ctx)
                if step is None:
                    self.exhausted = True
                    self.cond.notify_all()
                    return None
                if isinstance(step, Template):
                    self.busy.add(w.thread)
                    return start(step)
                assert isinstance(step, Pending)
                if step.until is None:
                    self.event_waiters += 1
                    self.cond.wait(POLL_S)
                    self.event_waiters -= 1
                else:
                    self.cond.wait(min(max(step.until - ctx.time, 0.0), POLL_S))

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


@dataclass(eq=False)
class _Worker:
    """One client thread's state: its process, its node, its clients (one per node it used) and
    the op in flight (watched for the op timeout)."""

    thread: Thread
    process: int | str
    node: str | None
    clients: dict[str, Client] = field(default_factory=dict)
    invokes: int = 0
    oks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    inflight: Op | None = None
    deadline: float = 0.0
    abandoned: bool = False


def _copy(op: Op) -> Op:
    """What a client gets: its own copy, so mutating it cannot touch the recorded invoke."""
    return Op(op.index, op.time, op.type, op.process, op.f, op.key, op.value, op.node, op.error,
              dict(op.meta) if op.meta else {})


def _normalize(comp: Any, inv: Op, *, nemesis: bool = False) -> Op:
    """The completion a client/nemesis returned, made to obey the history's rules."""
    if not isinstance(comp, Op):
        return dataclasses.replace(inv, type=INFO, error=f"invoke returned {type(comp).__name__}, not an Op",
                                   meta=dict(inv.meta))
    typ = INFO if nemesis else comp.type
    error = comp.error
    if typ not in COMPLETIONS:
        error = f"invoke returned an op of type {comp.type!r}"
        typ = INFO
    return Op(index=-1, time=0, type=typ, process=inv.process, f=inv.f, key=comp.key,
              value=comp.value, node=comp.node if comp.node is not None else inv.node, error=error,
              meta=comp.meta if comp.meta is not inv.meta else dict(comp.meta))


class _Run:
    def __init__(self, spec: TestSpec, *, db: DB, workload: Workload, client: Client,
                 nemesis: Nemesis | None, nemesis_generator: Generator | None, backend: Backend,
                 run_dir: Path, writer: HistoryWriter, progress: Progress | None,
                 observer_interval: float, setup_timeout: float) -> None:
        self.spec = spec
        self.db = db
        self.workload = workload
        self.client_template = client
        self.nemesis = nemesis
        self.nemesis_generator = nemesis_generator
        self.backend = backend
        self.run_dir = run_dir
        self.writer = writer
        self.progress = progress
        self.observer_interval = observer_interval
        self.setup_timeout = setup_timeout
        self.clock = _Clock()
        self.test = Test(spec=spec, store_dir=run_dir, log=logging.getLogger("jepsen_py.test"),
                         rng=random.Random(spec.seed), backend=backend, db=db)
        # Generators get their own stream, so a nemesis drawing from test.rng in its own thread
        # cannot shift the ops the clients are handed.
        self.gen_rng = random.Random(f"generator:{spec.seed}")
        self.phases: list[str] = []
        nodes = spec.nodes
        self.workers = [
            _Worker(thread=i, process=i, node=nodes[i % len(nodes)] if nodes else None)
            for i in range(spec.concurrency)
        ]
        self.nemesis_worker = _Worker(thread=NEMESIS, process=NEMESIS, node=None)
        self.observer: Observer | None = None
        self.nemesis_set_up = False
        self.healed = True
        self.backend_set_up = False
        self.db_nodes_set_up: list[str] = []
        self.watchdog_stop = threading.Event()
        self.worker_errors: list[str] = []
        self.notes: list[str] = []
        self.phase_times: dict[str, float] = {}
        self.phase_cpu: dict[str, float] = {}
        self._phase_mark: tuple[str, float, float] | None = None

    # ---- recording --------------------------------------------------------------------------

    def record(self, op: Op) -> Op:
        return self.writer.append(op)

    def end_phases(self) -> None:
        if self._phase_mark is not None:
            prev, t0, c0 = self._phase_mark
            self.phase_times[prev] = self.phase_times.get(prev, 0.0) + (time.monotonic() - t0)
            self.phase_cpu[prev] = self.phase_cpu.get(prev, 0.0) + (time.process_time() - c0)
            self._phase_mark = None

    def counts(self) -> tuple[int, int]:
        return sum(w.invokes for w in self.workers), sum(w.oks for w in self.workers)

    def phase(self, name: str) -> None:
        """Marks the start of a phase; its wall and CPU seconds end up in results.json's stats."""
        self.end_phases()
        self._phase_mark = (name, time.monotonic(), time.process_time())
        self.phases.append(name)
        log.info("phase: %s", name)
        if self.progress is not None:
            self.progress.phase(name)

    # ---- phases -----------------------------------------------------------------------------

    def execute(self) -> None:
        self.phase("setup")
        self.backend_set_up = True
        self.test.remotes = dict(self.backend.setup(self.test) or {})
        self._setup_db()
        if self.nemesis is not None:
            self.nemesis_set_up = True
            self.nemesis.setup(self.test)
        self._wait_for_leader()

        self.observer = Observer(self.test, self.db, self.record, self.clock.ns,
                                 interval=self.observer_interval)
        self.test.state["observer"] = self.observer
        self.observer.start()

        self.phase("main")
        client_gen = gen.rate(self.spec.rate, self.workload.generator)
        if self.nemesis is not None and self.nemesis_generator is not None:
            main = gen.nemesis(self.nemesis_generator, client_gen)
        else:
            main = gen.clients(client_gen)
        self.healed = False
        self._run_phase(gen.time_limit(self.spec.time_limit, main),
                        with_nemesis=self.nemesis is not None and self.nemesis_generator is not None)

        self.phase("heal")
        self._heal()

        self.phase("recovery")
        self._wait_for_stable_leader()

        if self.workload.final_generator is not None:
            self.phase("final")
            final_limit = max(30.0, 3 * self.spec.op_timeout)
            self._run_phase(gen.time_limit(final_limit, gen.clients(self.workload.final_generator)),
                            with_nemesis=False)

    def _setup_db(self) -> None:
        nodes = self.spec.nodes
        if not nodes:
            return
        errors: list[tuple[str, BaseException]] = []
        # Every node is torn down afterwards, whatever happens here: partial setups included.
        self.db_nodes_set_up = list(nodes)
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes),
                                                   thread_name_prefix="db-setup") as pool:
            futures = {pool.submit(self.db.setup, self.test, n): n for n in nodes}
            for fut in concurrent.futures.as_completed(futures):
                exc = fut.exception()
                if exc is not None:
                    errors.append((futures[fut], exc))
        if errors:
            node, exc = sorted(errors, key=lambda e: e[0])[0]
            for n, e in errors:
                log.debug("db setup failed on %s", n, exc_info=e)
            if isinstance(exc, JepsenError):
                raise exc
            raise FrameworkFailure(f"db setup on {node} failed: {type(exc).__name__}: {exc}") from exc

    def _primaries(self) -> list[str]:
        try:
            return list(self.db.primaries(self.test) or [])
        except Exception as e:
            log.debug("primaries() failed: %s", e)
            return []

    def _wait_for_leader(self) -> None:
        if not self.spec.nodes:
            return
        deadline = time.monotonic() + self.setup_timeout
        while time.monotonic() < deadline:
            leaders = self._primaries()
            if leaders:
                log.info("leader after setup: %s", ", ".join(leaders))
                return
            time.sleep(0.2)
        note = f"no leader within {self.setup_timeout:g}s of setup; running the test anyway"
        log.warning(note)
        self.notes.append(note)

    def _wait_for_stable_leader(self, stable_for: float = 1.0) -> None:
        """One and the same leader for `stable_for` seconds, at most recovery_timeout."""
        if not self.spec.nodes or self.spec.recovery_timeout <= 0:
            return
        deadline = time.monotonic() + self.spec.recovery_timeout
        since: float | None = None
        last: list[str] = []
        while time.monotonic() < deadline:
            leaders = self._primaries()
            if len(leaders) == 1 and leaders == last:
                if since is not None and time.monotonic() - since >= stable_for:
                    log.info("stable leader after heal: %s", leaders[0])
                    return
            else:
                since = time.monotonic() if len(leaders) == 1 else None
            last = leaders
            time.sleep(0.1)
        note = (f"no stable leader within {self.spec.recovery_timeout:g}s after heal "
                f"(last seen: {', '.join(last) or 'none'})")
        log.warning(note)
        self.notes.append(note)

    def _heal(self) -> None:
        if self.nemesis is None or self.healed:
            self.healed = True
            return
        inv = self.record(Op(-1, self.clock.ns(), INVOKE, NEMESIS, "heal"))
        try:
            self.nemesis.heal(self.test)
            self.record(Op(-1, self.clock.ns(), INFO, NEMESIS, "heal", value="healed"))
        except BaseException as e:
            self.record(Op(-1, self.clock.ns(), INFO, NEMESIS, "heal", value="heal failed",
                           error=f"{type(e).__name__}: {e}"))
            raise
        finally:
            self.healed = True
        log.debug("heal recorded at op %d", inv.index)

    # ---- workers ----------------------------------------------------------------------------

    def _run_phase(self, g: Generator, *, with_nemesis: bool) -> None:
        threads: list[Thread] = [w.thread for w in self.workers]
        if with_nemesis:
            threads.append(NEMESIS)
        driver = _Driver(g, self.gen_rng, threads, self.spec.nodes, self.clock)
        self.watchdog_stop.clear()
        watchdog = threading.Thread(target=self._watchdog, name="op-timeouts", daemon=True)
        watchdog.start()
        ts = [threading.Thread(target=self._client_loop, args=(w, driver), name=f"worker-{w.thread}",
                               daemon=True) for w in self.workers]
        if with_nemesis:
            ts.append(threading.Thread(target=self._nemesis_loop, args=(driver,), name="nemesis",
                                       daemon=True))
        for t in ts:
            t.start()
        try:
            while True:
                alive = [t for t in ts if t.is_alive()]
                if not alive:
                    break
                if driver.exhausted or driver.stopped:
                    # Client ops in flight at the end get the op timeout plus a grace period; a
                    # fault in progress (a restart, a clock reset) gets longer: heal must not race it.
                    clients = [t for t in alive if t.name != "nemesis"]
                    self._join_bounded(clients, self.spec.op_timeout + JOIN_GRACE_S)
                    self._join_bounded([t for t in alive if t.name == "nemesis"], NEMESIS_JOIN_S)
                    break
                alive[0].join(0.25)
        except BaseException:
            driver.stop()
            self._join_bounded(ts, JOIN_GRACE_S)
            raise
        finally:
            self.watchdog_stop.set()
            watchdog.join(1.0)
        if self.worker_errors:
            raise FrameworkFailure("; ".join(self.worker_errors[:3]))

    @staticmethod
    def _join_bounded(ts: list[threading.Thread], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        for t in ts:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in ts if t.is_alive()]
        if stuck:
            log.warning("workers still blocked after the phase ended, abandoned: %s", ", ".join(stuck))

    def _watchdog(self) -> None:
        """Turns ops that overran the op timeout into info completions (the worker's late answer
        is then dropped, and it continues under a fresh process id)."""
        period = min(0.05, self.spec.op_timeout / 4)
        while not self.watchdog_stop.wait(period):
            now = time.monotonic()
            for w in self.workers:
                if w.inflight is None or now <= w.deadline:
                    continue
                with w.lock:
                    inv = w.inflight
                    if inv is None or w.abandoned or now <= w.deadline:
                        continue
                    w.abandoned = True
                    self.record(Op(-1, self.clock.ns(), INFO, inv.process, inv.f, inv.key, inv.value,
                                   inv.node, error="timeout",
                                   meta={"timeout_s": self.spec.op_timeout, "by": "controller"}))

    def _client_for(self, w: _Worker, node: str | None) -> Client:
        key = node or ""
        c = w.clients.get(key)
        if c is None:
            c = self.client_template.open(self.test, node) if node is not None else self.client_template
            w.clients[key] = c
        return c

    def _drop_client(self, w: _Worker, node: str | None) -> None:
        c = w.clients.pop(node or "", None)
        if c is not None and c is not self.client_template:
            try:
                c.close(self.test)
            except Exception as e:
                log.debug("closing a client failed: %s", e)

    def _start(self, w: _Worker) -> Callable[[Template], Op]:
        def start(tpl: Template) -> Op:
            w.invokes += 1
            return self.record(Op(-1, self.clock.ns(), INVOKE, w.process, tpl.f, tpl.key, tpl.value,
                                  tpl.node or w.node, None, dict(tpl.meta) if tpl.meta else {}))
        return start

    def _done(self, w: _Worker, inv: Op, comp: Op) -> Callable[[], tuple[int | str, Op, Op]]:
        """Records a completion unless the watchdog already recorded info for it; moves a worker
        whose op ended info to a fresh process."""
        comp.time = self.clock.ns()
        tail = comp._json_tail()  # encoded before the driver's lock is taken

        def done() -> tuple[int | str, Op, Op]:
            c = comp
            with w.lock:
                w.inflight = None
                abandoned = w.abandoned
                if not abandoned:
                    self.writer.append(c, tail=tail)
            if abandoned:
                log.debug("late completion of op %d dropped (already info by timeout)", inv.index)
                c = dataclasses.replace(c, type=INFO)
            if c.type == OK:
                w.oks += 1
            process = w.process
            if c.type == INFO and isinstance(process, int):
                w.process = process + self.spec.concurrency
            return process, inv, c
        return done

    def _client_loop(self, w: _Worker, driver: _Driver) -> None:
        op_timeout = self.spec.op_timeout
        start = self._start(w)
        done: Callable[[], tuple[int | str, Op, Op]] | None = None
        try:
            while True:
                inv = driver.next(w, start, done)
                done = None
                if inv is None:
                    return
                try:
                    client = self._client_for(w, inv.node)
                except Exception as e:
                    error = f"client open failed: {type(e).__name__}: {e}"
                    done = self._done(w, inv, Op(-1, 0, FAIL, inv.process, inv.f, inv.key, inv.value,
                                                 inv.node, error, {}))
                    time.sleep(0.05)
                    continue
                with w.lock:
                    w.inflight = inv
                    w.deadline = time.monotonic() + op_timeout
                    w.abandoned = False
                try:
                    comp = _normalize(client.invoke(self.test, _copy(inv)), inv)
                except Exception as e:
                    log.debug("client invoke raised on process %s", w.process, exc_info=True)
                    comp = Op(-1, 0, INFO, inv.process, inv.f, inv.key, inv.value, inv.node,
                              f"{type(e).__name__}: {e}", {})
                    self._drop_client(w, inv.node)  # Jepsen: a crashed client is reopened
                done = self._done(w, inv, comp)
        except Exception as e:
            self._worker_failed(w, driver, e)

    def _worker_failed(self, w: _Worker, driver: _Driver, e: Exception) -> None:
        """A failure outside invoke (a generator bug, the history unwritable) ends the phase for
        everyone and fails the run: a silently shortened test would be a lie."""
        if isinstance(e, RuntimeError) and "history writer is closed" in str(e) and driver.stopped:
            return  # an abandoned worker finishing after the run ended
        log.error("worker %s failed: %s: %s", w.thread, type(e).__name__, e)
        log.debug("worker failure in full", exc_info=e)
        self.worker_errors.append(f"worker {w.thread}: {type(e).__name__}: {e}")
        driver.stop()

    def _nemesis_loop(self, driver: _Driver) -> None:
        assert self.nemesis is not None
        w = self.nemesis_worker
        start = self._start(w)
        done: Callable[[], tuple[int | str, Op, Op]] | None = None
        try:
            while True:
                inv = driver.next(w, start, done)
                if inv is None:
                    return
                try:
                    comp = _normalize(self.nemesis.invoke(self.test, _copy(inv)), inv, nemesis=True)
                except Exception as e:
                    log.error("nemesis op %s failed: %s: %s", inv.f, type(e).__name__, e)
                    log.debug("nemesis failure in full", exc_info=True)
                    comp = Op(-1, 0, INFO, NEMESIS, inv.f, inv.key, inv.value, inv.node,
                              f"{type(e).__name__}: {e}", {})
                done = self._done(w, inv, comp)
        except Exception as e:
            self._worker_failed(w, driver, e)

    # ---- cleanup ----------------------------------------------------------------------------

    def cleanup(self) -> list[str]:
        """Undoes everything that was set up, each step on its own; returns what failed."""
        failures: list[str] = []

        def step(what: str, fn: Callable[[], None]) -> None:
            try:
                fn()
            except BaseException as e:
                log.error("%s failed: %s", what, e)
                log.debug("%s failure in full", what, exc_info=True)
                failures.append(f"{what}: {type(e).__name__}: {e}")

        if self.nemesis is not None and self.nemesis_set_up and not self.healed:
            self.phase("heal")
            step("heal", self._heal)
        if self.observer is not None:
            step("observer stop", self.observer.stop)
        for w in self.workers:
            for node in list(w.clients):
                self._drop_client(w, node or None)
        if self.nemesis is not None and self.nemesis_set_up:
            step("nemesis teardown", lambda: self.nemesis.teardown(self.test))  # type: ignore[union-attr]
        if self.db_nodes_set_up or self.backend_set_up:
            self.phase("collect logs")
            step("log collection", self._collect_logs)
        if not self.spec.leave_db_running:
            if self.db_nodes_set_up:
                self.phase("teardown")
                step("db teardown", self._teardown_db)
            if self.backend_set_up:
                step("backend teardown", lambda: self.backend.teardown(self.test))
        else:
            log.info("leaving the db running (--leave-db-running)")
        return failures

    def _collect_logs(self) -> None:
        for node in self.spec.nodes:
            try:
                paths = list(self.db.log_files(self.test, node) or [])
            except Exception as e:
                log.warning("log_files(%s) failed: %s", node, e)
                continue
            dest_dir = self.run_dir / store.NODES / node
            remote = self.test.remotes.get(node)
            for p in paths:
                dest_dir.mkdir(parents=True, exist_ok=True)
                dest = dest_dir / Path(p).name
                try:
                    if remote is not None:
                        remote.download(p, dest)
                    elif Path(p).is_dir():
                        shutil.copytree(p, dest, dirs_exist_ok=True)
                    elif Path(p).exists():
                        shutil.copy2(p, dest)
                except Exception as e:  # a log the node never wrote is not worth a console line
                    log.info("could not download %s from %s: %s", p, node, e)

    def _teardown_db(self) -> None:
        errors = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(self.db_nodes_set_up)),
                                                   thread_name_prefix="db-teardown") as pool:
            futures = {pool.submit(self.db.teardown, self.test, n): n for n in self.db_nodes_set_up}
            for fut in concurrent.futures.as_completed(futures):
                if fut.exception() is not None:
                    errors.append(f"{futures[fut]}: {fut.exception()}")
        if errors:
            raise FrameworkFailure("db teardown failed on " + "; ".join(sorted(errors)))


def unique_name(name: str, taken: dict[str, Any]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"


def run_checkers(checkers: Sequence[Checker], test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
    """Every checker on the history; a checker that raises or answers nonsense counts as unknown.

    Returns {"valid": merged, "checkers": {name: result}} (results.json's shape).
    """
    out: dict[str, Any] = {}
    for c in checkers:
        name = unique_name(str(getattr(c, "name", type(c).__name__)), out)
        t0 = time.monotonic()
        try:
            r = c.check(test, history)
            if not isinstance(r, dict) or r.get("valid") not in (True, False, "unknown"):
                r = {"valid": "unknown", "error": f"checker returned no valid verdict: {r!r}"[:500]}
        except Exception as e:
            log.exception("checker %s failed", name)
            r = {"valid": "unknown", "error": f"{type(e).__name__}: {e}"}
        log.info("checker %s: valid=%s (%.2fs)", name, r["valid"], time.monotonic() - t0)
        out[name] = r
    return {"valid": merge(r["valid"] for r in out.values()), "checkers": out}


def count_anomalies(results: dict[str, Any]) -> int:
    return sum(len(r.get("anomalies") or []) for r in (results.get("checkers") or {}).values()
               if isinstance(r, dict))


def client_stats(history: Sequence[Op]) -> tuple[int, int]:
    """(client invocations, ok completions)."""
    invokes = oks = 0
    for op in history:
        if isinstance(op.process, int):
            if op.type == INVOKE:
                invokes += 1
            elif op.type == OK:
                oks += 1
    return invokes, oks


def run_post_hooks(run_dir: Path) -> None:
    for hook in list(POST_RUN):
        try:
            hook(run_dir)
        except Exception:
            log.exception("post-run renderer %s failed", getattr(hook, "__name__", hook))


def run_test(
    spec: TestSpec,
    *,
    db: DB,
    workload: Workload,
    nemesis: Nemesis | None = None,
    nemesis_generator: Generator | None = None,
    backend: Backend | None = None,
    show_progress: bool = False,
    observer_interval: float = 0.1,
    setup_timeout: float = 60.0,
    fsync_history: bool = False,
) -> RunOutcome:
    """Runs one test and returns its outcome. KeyboardInterrupt is re-raised after heal, teardown and
    results.json; any other failure is in the outcome (exit 255, or its own JepsenError code)."""
    if backend is None:
        from jepsen_py.backends import get_backend

        backend = get_backend(spec.backend, spec)
    client = workload.client if workload.client is not None else db.client(workload.name)
    if spec.concurrency < 1:
        raise BadInput(f"concurrency must be at least 1, got {spec.concurrency}")

    run_dir = store.create_run_dir(spec.results_dir, spec.name)
    store.write_test_json(run_dir, spec, extra={
        "workload_meta": workload.meta,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    store.update_latest(run_dir)
    history_path = run_dir / store.HISTORY
    error: BaseException | None = None
    interrupted = False
    with store.capture_log(run_dir / store.LOG):
        log.info("run %s in %s (seed %d, %d nodes, concurrency %d)", spec.name, run_dir, spec.seed,
                 len(spec.nodes), spec.concurrency)
        writer = HistoryWriter(history_path, fsync=fsync_history)
        progress = Progress(spec.name, None, enabled=show_progress) if show_progress else None
        run = _Run(spec, db=db, workload=workload, client=client, nemesis=nemesis,
                   nemesis_generator=nemesis_generator, backend=backend, run_dir=run_dir, writer=writer,
                   progress=progress, observer_interval=observer_interval, setup_timeout=setup_timeout)
        if progress is not None:
            progress.counts = run.counts
            progress.__enter__()
        try:
            try:
                run.execute()
            except KeyboardInterrupt:
                interrupted = True
                log.warning("interrupted: healing and tearing down")
            except BaseException as e:
                error = e
                # A problem the user can fix (254) is reported once, by the CLI; the log keeps it.
                level = logging.INFO if getattr(e, "exit_code", None) == EXIT_BAD_INPUT else logging.ERROR
                log.log(level, "run failed in phase %s: %s", run.phases[-1] if run.phases else "?", e)
                log.debug("the failure in full", exc_info=True)
            failures = run.cleanup()
        finally:
            writer.close()
            if progress is not None:
                progress.__exit__(None, None, None)
        if error is None and failures:
            error = FrameworkFailure("; ".join(failures))

        results: dict[str, Any]
        history: list[Op] = []
        try:
            history = read_history(history_path)
            validate(history, source=str(history_path))
        except BadInput as e:
            error = error or FrameworkFailure(f"the runner wrote an invalid history: {e}")
        main_ran = "heal" in run.phases or (error is None and not interrupted)
        if main_ran and not interrupted:
            run.phase("check")
            results = run_checkers(workload.checkers, run.test, history)
        else:
            results = {"valid": "unknown", "checkers": {}}
        invokes, oks = client_stats(history)
        if error is not None or interrupted:
            results["valid"] = merge([results["valid"], "unknown"])
            results["error"] = "interrupted" if interrupted else f"{type(error).__name__}: {error}"
        if run.notes:
            results["notes"] = run.notes
        run.end_phases()
        results["stats"] = {
            "invokes": invokes, "ok": oks, "phases": run.phases,
            "duration_s": round(run.clock.s(), 3),
            "phase_s": {k: round(v, 4) for k, v in run.phase_times.items()},
            "phase_cpu_s": {k: round(v, 4) for k, v in run.phase_cpu.items()},
        }
        store.write_json(run_dir / store.RESULTS, results)
        log.info("verdict: valid=%s", results["valid"])
        run_post_hooks(run_dir)
    if interrupted:
        raise KeyboardInterrupt
    if error is not None:
        code = error.exit_code if isinstance(error, JepsenError) else EXIT_FRAMEWORK
    else:
        code = exit_code(results["valid"])
    return RunOutcome(run_dir=run_dir, valid=results["valid"], results=results, exit_code=code,
                      invokes=invokes, oks=oks, anomalies=count_anomalies(results),
                      error=None if error is None else f"{error}", phases=run.phases)

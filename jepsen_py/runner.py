"""The runner: one test run from an empty store directory to an exit code, along Jepsen's `run!`.

The phases of a run, in order:

  1. store      the run directory, test.json, the `latest` link, jepsen.log (before anything else)
  2. setup      backend.setup (the nodes) -> db.setup on every node, in parallel -> nemesis.setup
                -> wait for a leader (only for a DB with primaries)
  3. main       the workload's generator on the client workers, the nemesis schedule beside them
                (the interpreter), the observer sampling node status (only for a DB with status),
                until the time limit
  4. heal       the nemesis undoes every fault still in force
  5. recovery   one stable leader for a second, bounded by recovery_timeout (only with primaries)
  6. final      the workload's final generator (e.g. a read of every key on every node)
  7. cleanup    observer stop, clients closed, nemesis teardown, node logs into nodes/<node>/,
                db teardown and backend teardown (unless leave_db_running)
  8. check      the analysis: checkers on the history, results.json, verdict, exit code
  9. post-run   the steps the caller passed in (pictures, Parquet), failures logged, never fatal

Any failure or Ctrl-C in a phase still heals and tears down; a failure is reported with exit 255
(254 for environment problems and bad input), never swallowed. A nemesis that needs a capability
the DB lacks (kill, pause, primaries, ...) is refused before step 1.

Nothing a plugin does hangs a run. On real machines every hook runs within a bound and is left
behind, named in one log line, when it overruns it: the DB's setup and teardown (engine.DB_HOOK_S),
the nemesis's setup, heal and teardown (interpreter.NEMESIS_JOIN_S, what a nemesis op gets),
primaries() (what is left of the wait that asks it), closing the clients (the op timeout plus
interpreter.JOIN_GRACE_S); ops and generators have theirs in the interpreter, status() the
observer's stop. A hook that overruns fails its phase as one that raised would. An answer from
primaries() or status() that is not one (a string, None, a name that is no node, a dict the history
cannot hold) stops the run with one --db line, 254.

The phases are written once here, for every world: an engine (jepsen_py.engine) says what time it
is, how to wait, how nodes come up and which interpreter drives the ops. Real backends run on
`RealEngine` (wall time, threads); the simulator on its own (jepsen_py.sim.engine: virtual time,
one event loop), so a simulated run is this runner's run.

`run_test` takes live objects (tests drive it with in-process fakes); `jepsen-py run` builds them
from names. How ops are driven lives in jepsen_py.interpreter, what a verdict is in
jepsen_py.analysis.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jepsen_py import generator as gen
from jepsen_py import interpreter, store
from jepsen_py.analysis import (
    PostRun,
    analyse,
    client_stats,
    count_anomalies,
    run_checkers,
    run_post_steps,
    unique_name,
    write_results,
)
from jepsen_py.backends import get_backend
from jepsen_py.engine import Engine, RealEngine, RunOutcome
from jepsen_py.errors import EXIT_BAD_INPUT, BadInput, FrameworkFailure, JepsenError, RunInterrupted
from jepsen_py.generator import Generator
from jepsen_py.history import INFO, INVOKE, NEMESIS, HistoryWriter, Op
from jepsen_py.interpreter import Clock, Scheduler
from jepsen_py.nodenames import check_node_names
from jepsen_py.plugins import Asker, HookExited, HookTimedOut, plugin_call, primaries_of, said
from jepsen_py.protocols import DB, Backend, Nemesis, Test, TestSpec, has_capability
from jepsen_py.seeds import generator_rng, test_rng
from jepsen_py.workload import Workload

log = logging.getLogger(__name__)

__all__ = ["RunOutcome", "cleanup_step", "client_stats", "count_anomalies", "record_heal", "run_checkers",
           "run_test", "unique_name"]


def record_heal(nemesis: Nemesis, test: Test, record: Callable[[Op], Op], now_ns: Callable[[], int],
                call: Callable[..., Any] | None = None) -> None:
    """The heal phase's nemesis op: invoke, heal, then "healed" or "heal failed" (re-raised).
    `call(fn, *args)` runs the heal (the run's bounded hook); directly when not given."""
    inv = record(Op(-1, now_ns(), INVOKE, NEMESIS, "heal"))
    try:
        if call is None:
            nemesis.heal(test)
        else:
            call(nemesis.heal, test)
        record(Op(-1, now_ns(), INFO, NEMESIS, "heal", value="healed"))
    except BaseException as e:
        record(Op(-1, now_ns(), INFO, NEMESIS, "heal", value="heal failed", error=said(e)))
        raise
    log.debug("heal recorded at op %d", inv.index)


def cleanup_step(failures: list[str]) -> Callable[[str, Callable[[], None]], None]:
    """Runs one cleanup step on its own: a failure is logged and appended to `failures`, and the
    next step still runs."""

    def step(what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:
            text = str(e) if isinstance(e, JepsenError) else said(e)
            if text.startswith(what):  # "nemesis teardown did not return within ...": says it all
                log.error("%s", text)
            else:
                log.error("%s failed: %s", what, text)
                text = f"{what}: {text}"
            log.debug("%s failure in full", what, exc_info=True)
            failures.append(text)

    return step


class Run:
    """The phases of one run, written once for every engine, and what each set up, so cleanup undoes
    exactly that."""

    def __init__(self, spec: TestSpec, *, db: DB, workload: Workload, client: Any,
                 nemesis: Nemesis | None, nemesis_generator: Generator | None, backend: Backend,
                 run_dir: Path, writer: HistoryWriter, observer_interval: float, setup_timeout: float,
                 engine: Engine, saw: Callable[[Op], None] | None = None) -> None:
        self.spec = spec
        self.db = db
        self.workload = workload
        self.nemesis = nemesis
        self.nemesis_generator = nemesis_generator
        self.backend = backend
        self.run_dir = run_dir
        self.writer = writer
        self.progress: Any = None
        self.observer_interval = observer_interval
        self.setup_timeout = setup_timeout
        self.engine = engine
        self.clock = engine.clock
        self.saw = saw
        self.test = Test(spec=spec, store_dir=run_dir, log=logging.getLogger("jepsen_py.test"),
                         rng=test_rng(spec.seed), backend=backend, db=db, net=engine.net,
                         clocks=engine.clocks)
        # Generators get their own stream, so a nemesis drawing from test.rng in its own thread
        # cannot shift the ops the clients are handed.
        self.interpreter = engine.interpreter(
            self.test, client=client, nemesis=nemesis, record=self.record, append=writer.append,
            concurrency=spec.concurrency, op_timeout=spec.op_timeout,
            rng=generator_rng(spec.seed))
        self.phases: list[str] = []
        self.observer: Any = None
        self.db_ref = spec.db or type(db).__name__
        # primaries() once did not return: it is not asked again (each ask would leave a thread)
        self.primaries_hung = False
        self.primaries_asker = Asker("primaries()")  # one thread asks, however often
        # what stopped the run from outside the phases (the observer's refusal of a status)
        self.halted: BadInput | None = None
        self.nemesis_set_up = False
        self.healed = True
        self.backend_set_up = False
        self.db_nodes_set_up: list[str] = []
        self.notes: list[str] = []
        self.phase_times: dict[str, float] = {}
        self.phase_other: dict[str, float] = {}
        self._phase_mark: tuple[str, float, float] | None = None

    # ---- recording --------------------------------------------------------------------------

    def record(self, op: Op) -> Op:
        if self.saw is not None:
            self.saw(op)
        return self.writer.append(op)

    def end_phases(self) -> None:
        if self._phase_mark is not None:
            prev, t0, c0 = self._phase_mark
            self.phase_times[prev] = self.phase_times.get(prev, 0.0) + (time.monotonic() - t0)
            self.phase_other[prev] = self.phase_other.get(prev, 0.0) + (self.engine.phase_clock() - c0)
            self._phase_mark = None

    def counts(self) -> tuple[int, int]:
        return self.interpreter.counts()

    def phase(self, name: str) -> None:
        """Marks the start of a phase; its wall seconds and the engine's other reading (CPU or
        simulated seconds) end up in results.json's stats."""
        self.end_phases()
        self._phase_mark = (name, time.monotonic(), self.engine.phase_clock())
        self.phases.append(name)
        log.info("phase: %s (at %.3f s)", name, self.clock.s())
        if self.progress is not None:
            self.progress.phase(name)

    def stats(self) -> dict[str, Any]:
        self.end_phases()
        key, digits = self.engine.phase_clock_key
        return {
            "phases": self.phases,
            "duration_s": round(self.clock.s(), 3),
            "phase_s": {k: round(v, 4) for k, v in self.phase_times.items()},
            key: {k: round(v, digits) for k, v in self.phase_other.items()},
        }

    # ---- phases -----------------------------------------------------------------------------

    def execute(self) -> None:
        """setup, main, heal, recovery, final (cleanup is separate: it runs whatever happened)."""
        self.engine.drive(self._phases())

    def hook(self, name: str, timeout_s: float, fn: Callable[..., Any], *args: Any) -> Any:
        """A plugin's hook `fn(*args)`: on real machines within `timeout_s` on a thread of its own
        (FrameworkFailure naming it when it overruns, as when it raises; its thread left behind), in
        the simulator directly (the engine's own code, on its one loop)."""
        bounded = getattr(self.engine, "bounded", None)
        if bounded is None:
            return fn(*args)
        try:
            return bounded(fn, *args, timeout_s=timeout_s, name=name)
        except HookTimedOut as e:
            raise FrameworkFailure(str(e)) from None
        except HookExited as e:
            raise FrameworkFailure(f"{name} raised {e}") from None

    def stop(self, e: BadInput) -> None:
        """Stops the run from outside its phases (the observer, on a status that is no status): the
        phase in progress ends, and the run fails with `e`."""
        if self.halted is None:
            self.halted = e
            log.info("stopping the run: %s", e)  # the command says it, once
        self.interpreter.halt(e)

    def _halted(self) -> None:
        if self.halted is not None:
            raise self.halted

    async def _phases(self) -> None:
        self.phase("setup")
        await self.engine.start_nodes(self)
        if self.nemesis is not None:
            self.nemesis_set_up = True
            self.hook("nemesis setup", interpreter.NEMESIS_JOIN_S, self.nemesis.setup, self.test)
        await self.engine.settle(self)
        await self._wait_for_leader()

        self.observer = self.engine.observer(self)
        if self.observer is not None:
            self.test.state["observer"] = self.observer
            self.observer.start()

        self.phase("main")
        client_gen = gen.rate(self.spec.rate, self.workload.generator)
        schedule = self.nemesis_generator if self.nemesis is not None else None
        main = gen.clients(client_gen) if schedule is None else gen.nemesis(schedule, client_gen)
        self.healed = False
        await self.engine.run_ops(self, gen.time_limit(self.spec.time_limit, main),
                                  with_nemesis=schedule is not None)
        self._halted()

        self.phase("heal")
        self._heal()

        self.phase("recovery")
        await self._wait_for_stable_leader()
        self._halted()

        if self.workload.final_generator is not None:
            self.phase("final")
            final_limit = max(30.0, 3 * self.spec.op_timeout)
            await self.engine.run_ops(
                self, gen.time_limit(final_limit, gen.clients(self.workload.final_generator)),
                with_nemesis=False)
        await self.engine.phases_done(self)
        self._halted()

    def _primaries(self, timeout_s: float) -> list[str]:
        """Who claims to lead now, asked within `timeout_s` (plugins.primaries_of). A DB that cannot
        answer (it raises) has no leader for now; one that never returns is not asked again (a note
        says so); an answer that is not a list of the test's node names stops the run (BadInput
        naming the DB)."""
        bounded = getattr(self.engine, "bounded", None) is not None
        try:
            return primaries_of(self.db, self.test, list(self.spec.nodes),
                                timeout_s=max(timeout_s, 0.1) if bounded else None,
                                log_raise=lambda e: log.debug("primaries() failed: %s", said(e)),
                                asker=self.primaries_asker)
        except BadInput as e:
            raise BadInput(f"--db: {self.db_ref}: {e}") from None
        except HookTimedOut as e:
            self.primaries_hung = True
            note = f"{e}; no more waits for a leader"
            log.warning("%s", note)
            self.notes.append(note)
            return []

    async def _wait_for_leader(self) -> None:
        """Until some node claims leadership, at most setup_timeout; a DB without primaries
        (leaderless) has nothing to wait for."""
        if not self.spec.nodes or not has_capability(self.db, "primaries"):
            return
        deadline = self.clock.s() + self.setup_timeout
        while self.clock.s() < deadline and not self.primaries_hung:
            leaders = self._primaries(deadline - self.clock.s())
            if leaders:
                log.info("leader after setup: %s", ", ".join(leaders))
                return
            await self.engine.sleep(self.engine.leader_poll_s)
        if self.primaries_hung:
            return
        note = f"no leader within {self.setup_timeout:g}s of setup; running the test anyway"
        log.warning(note)
        self.notes.append(note)

    async def _wait_for_stable_leader(self, stable_for: float = 1.0) -> None:
        """One and the same leader for `stable_for` seconds, at most recovery_timeout (only for a
        DB with primaries)."""
        if (not self.spec.nodes or self.spec.recovery_timeout <= 0
                or not has_capability(self.db, "primaries") or self.primaries_hung):
            return
        deadline = self.clock.s() + self.spec.recovery_timeout
        since: float | None = None
        last: list[str] = []
        while self.clock.s() < deadline and not self.primaries_hung:
            leaders = self._primaries(deadline - self.clock.s())
            if len(leaders) == 1 and leaders == last:
                if since is not None and self.clock.s() - since >= stable_for:
                    log.info("stable leader after heal: %s", leaders[0])
                    return
            else:
                since = self.clock.s() if len(leaders) == 1 else None
            last = leaders
            await self.engine.sleep(0.1)
        if self.primaries_hung:
            return
        note = (f"no stable leader within {self.spec.recovery_timeout:g}s after heal "
                f"(last seen: {', '.join(last) or 'none'})")
        log.warning(note)
        self.notes.append(note)

    def _heal(self) -> None:
        if self.nemesis is None or self.healed:
            self.healed = True
            return
        try:
            record_heal(self.nemesis, self.test, self.record, self.clock.ns,
                        lambda fn, *args: self.hook("nemesis heal", interpreter.NEMESIS_JOIN_S, fn, *args))
        finally:
            self.healed = True

    # ---- cleanup ----------------------------------------------------------------------------

    def cleanup(self) -> list[str]:
        """Undoes everything that was set up, each step on its own; returns what failed."""
        failures: list[str] = []
        step = cleanup_step(failures)
        self.primaries_asker.close()

        if self.nemesis is not None and self.nemesis_set_up and not self.healed:
            self.phase("heal")
            step("heal", self._heal)
        if self.observer is not None:
            step("observer stop", lambda: self.engine.stop_observer(self))
        self.interpreter.close_clients()
        if self.nemesis is not None and self.nemesis_set_up:
            step("nemesis teardown", lambda: self.hook("nemesis teardown", interpreter.NEMESIS_JOIN_S,
                                                       self.nemesis.teardown, self.test))  # type: ignore[union-attr]
        if self.db_nodes_set_up or self.backend_set_up:
            self.phase("collect logs")
            step("log collection", lambda: self.engine.collect_logs(self))
        if not self.spec.leave_db_running:
            if self.db_nodes_set_up:
                self.phase("teardown")
                step("db teardown", lambda: self.engine.teardown_db(self))
            if self.backend_set_up:
                step("backend teardown", lambda: self.backend.teardown(self.test))
        else:
            log.info("leaving the db running (--leave-db-running)")
        return failures


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
    post_run: Sequence[PostRun] = (),
    clock: Clock | None = None,
    scheduler: Scheduler | None = None,
    engine: Engine | None = None,
    client: Any = None,
    saw: Callable[[Op], None] | None = None,
) -> RunOutcome:
    """Runs one test and returns its outcome. KeyboardInterrupt is re-raised after heal, teardown and
    results.json; any other failure is in the outcome (exit 255, or its own JepsenError code).

    `post_run` steps run after results.json is written (the CLI passes pictures and Parquet);
    `engine` is the world the run happens in (real machines unless given: RealEngine, whose
    `clock` and `scheduler` may be replaced); `client` replaces the workload's or the DB's; `saw`
    is shown each op as it is recorded."""
    if engine is None:
        engine = RealEngine(clock, scheduler)
    if spec.concurrency < 1:
        raise BadInput(f"concurrency must be at least 1, got {spec.concurrency}")
    # Whoever built the spec (the CLI, a test in code, a plugin DB that changed it): node names
    # become directories of the run, so they pass the one rule here too.
    check_node_names(spec.nodes, "nodes", at_least_one=False)
    engine.check(db, nemesis, spec)
    if backend is None:
        backend = get_backend(spec.backend, spec)
    if client is None:
        client = workload.client
    if client is None:
        db_name = spec.db or type(db).__name__
        client = plugin_call("--db", db_name, f"client({workload.name!r})", db.client, workload.name)

    run_dir = store.create_run_dir(spec.results_dir, spec.name)
    store.write_test_json(run_dir, spec, extra={
        "workload_meta": workload.meta,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **engine.test_json_extra(),
    })
    store.update_latest(run_dir)
    history_path = run_dir / store.HISTORY
    error: BaseException | None = None
    interrupted = False
    with store.capture_log(run_dir / store.LOG):
        log.info("%s %s in %s (seed %d, %d nodes, concurrency %d)", engine.label, spec.name, run_dir,
                 spec.seed, len(spec.nodes), spec.concurrency)
        writer = HistoryWriter(history_path, fsync=fsync_history)
        run = Run(spec, db=db, workload=workload, client=client, nemesis=nemesis,
                  nemesis_generator=nemesis_generator, backend=backend, run_dir=run_dir, writer=writer,
                  observer_interval=observer_interval, setup_timeout=setup_timeout, engine=engine,
                  saw=saw)
        run.progress = engine.progress(run, show_progress)
        if show_progress and run.progress is not None:
            run.progress.__enter__()
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
            if show_progress and run.progress is not None:
                run.progress.__exit__(None, None, None)
        if error is None and run.halted is not None:  # seen as the run ended: it still fails it
            error = run.halted
        if error is None and failures:
            error = FrameworkFailure("; ".join(failures))

        main_ran = "heal" in run.phases or (error is None and not interrupted)
        verdict = analyse(history_path, checkers=workload.checkers, test=run.test, judge=main_ran,
                          error=error, interrupted=interrupted, on_check=lambda: run.phase("check"),
                          fs=workload.fs)
        results = verdict.results
        if run.notes:
            results["notes"] = run.notes
        results["stats"] = {"invokes": verdict.invokes, "ok": verdict.oks, **run.stats()}
        engine.finish_stats(results["stats"])
        write_results(run_dir, results)
        run_post_steps(post_run, run_dir)
    if interrupted:
        raise RunInterrupted(run_dir, results)
    return engine.outcome(run_dir=run_dir, valid=verdict.valid, results=results,
                          exit_code=verdict.exit_code, invokes=verdict.invokes, oks=verdict.oks,
                          anomalies=count_anomalies(results),
                          error=None if verdict.error is None else f"{verdict.error}", phases=run.phases,
                          history=verdict.history)

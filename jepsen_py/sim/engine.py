"""The simulator's engine (jepsen_py.engine): the runner's phases in virtual time, on the simulated
cluster's one event loop.

The phase coroutine runs on the controller's loop: its waits are asyncio sleeps in virtual time,
the workers are coroutines (jepsen_py.sim.interpreter), the observer samples every node from one
coroutine. Nodes come up by starting them on their simulated hosts, and each node's log is what the
simulated node printed. Nothing here reads a real clock for what the run records.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jepsen_py import store
from jepsen_py.errors import FrameworkFailure
from jepsen_py.generator import Generator
from jepsen_py.history import Op
from jepsen_py.protocols import DB, Nemesis, Test, TestSpec
from jepsen_py.runner import RunOutcome
from jepsen_py.sim.interpreter import SimInterpreter
from jepsen_py.sim.nemesis import SimClocks, SimNet
from jepsen_py.sim.observer import SimObserver
from jepsen_py.sim.progress import SimProgress, SimStatus
from jepsen_py.sim.watchdog import livelock_watchdog

if TYPE_CHECKING:
    from jepsen_py.runner import Run

log = logging.getLogger(__name__)

#: how long setup waits for every node to know a leader (the DB's own leader_timeout on Docker)
LEADER_TIMEOUT_S = 30.0
POLL_S = 0.1


@dataclass
class SimOutcome(RunOutcome):
    """A run's outcome plus what the simulation cost: simulated and wall seconds."""

    simulated_s: float = 0.0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def speed(self) -> float:
        """Simulated seconds per wall second."""
        return self.simulated_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_speed(self) -> float:
        """Simulated seconds per CPU second of this process (what a loaded machine cannot skew)."""
        return self.simulated_s / self.cpu_s if self.cpu_s > 0 else 0.0


class VirtualClock:
    """The cluster's virtual time since the engine was made."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.t0 = cluster.now()

    def s(self) -> float:
        return float(self.cluster.now() - self.t0)

    def ns(self) -> int:
        return round((self.cluster.now() - self.t0) * 1e9)


class SimEngine:
    """The simulated cluster's world: virtual time, one event loop, nodes as simulated hosts.
    `wall0` and `cpu0` are when the caller began (what the run cost is measured from)."""

    leader_poll_s = POLL_S
    label = "simulated run"
    phase_clock_key = ("phase_simulated_s", 3)

    def __init__(self, cluster: Any, status: SimStatus, *, wall0: float, cpu0: float) -> None:
        self.cluster = cluster
        self.clock = VirtualClock(cluster)
        self.net = SimNet(cluster)
        self.clocks = SimClocks(cluster)
        self.status = status
        self.wall0 = wall0
        self.cpu0 = cpu0

    def check(self, db: DB, nemesis: Nemesis | None, spec: TestSpec) -> None:
        return None  # run_sim's check_spec refused what the simulator cannot run

    def phase_clock(self) -> float:
        return self.clock.s()

    def test_json_extra(self) -> dict[str, Any]:
        return {"simulated": True}

    def interpreter(self, test: Test, *, client: Any, nemesis: Any, record: Any, append: Any,
                    concurrency: int, op_timeout: float, rng: random.Random) -> SimInterpreter:
        saw = self.status.saw

        def append_seen(op: Op, *, tail: str | None = None) -> Op:
            saw(op)  # as `record` does: the live status counts every op
            return append(op, tail=tail)  # type: ignore[no-any-return]

        interpreter = SimInterpreter(test, client=client, nemesis=nemesis, record=record,
                                     concurrency=concurrency, op_timeout=op_timeout, rng=rng,
                                     now_ns=self.clock.ns, append=append_seen)
        self.status.simulated_s = self.clock.s
        self.status.counts = interpreter.counts
        return interpreter

    def progress(self, run: Run, show: bool) -> SimProgress:
        """The live line when shown; else still the status's phase (test-all's bar reads it)."""
        return SimProgress(run.spec.name, self.status, enabled=show)

    def drive(self, phases: Coroutine[Any, Any, None]) -> None:
        with livelock_watchdog():
            self.cluster.run_until_complete(phases)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def start_nodes(self, run: Run) -> None:
        run.backend_set_up = True
        for node in run.spec.nodes:
            self.cluster.start(node)

    async def settle(self, run: Run) -> None:
        """Every node knows a leader, as each node's DB setup waits on Docker."""
        deadline = self.clock.s() + LEADER_TIMEOUT_S
        waiting = list(run.spec.nodes)
        while waiting:
            waiting = [n for n in waiting if not (run.db.status(run.test, n) or {}).get("leader")]  # type: ignore[attr-defined]
            if not waiting:
                break
            if self.clock.s() >= deadline:
                last = run.db.status(run.test, waiting[0])  # type: ignore[attr-defined]
                raise FrameworkFailure(f"{waiting[0]}: no leader within {LEADER_TIMEOUT_S:.0f} s "
                                       f"(last status: {last})")
            await asyncio.sleep(POLL_S)

    def observer(self, run: Run) -> SimObserver:
        return SimObserver(run.test, run.db, run.record, self.clock.ns,  # type: ignore[arg-type]
                           interval=run.observer_interval)

    async def run_ops(self, run: Run, g: Generator, *, with_nemesis: bool) -> None:
        await run.interpreter.run(g, with_nemesis=with_nemesis)

    async def phases_done(self, run: Run) -> None:
        if run.observer is not None:
            await run.observer.stop()

    def stop_observer(self, run: Run) -> None:
        return None  # stopped on the loop when the phases ended; else dropped with the loop

    def collect_logs(self, run: Run) -> None:
        for node, lines in sorted(self.cluster.node_logs().items()):
            dest = store.make_dirs(run.run_dir / store.NODES / node)
            store.write_text(dest / "node.log", "".join(f"{line}\n" for line in lines))

    def teardown_db(self, run: Run) -> None:
        return None  # simulated nodes end with the cluster

    def finish_stats(self, stats: dict[str, Any]) -> None:
        simulated = self.clock.s()
        wall, cpu = time.monotonic() - self.wall0, time.process_time() - self.cpu0
        self.simulated_s, self.wall_s, self.cpu_s = simulated, wall, cpu
        stats.update({"simulated_s": round(simulated, 3), "wall_s": round(wall, 3),
                      "cpu_s": round(cpu, 3), "speed": round(simulated / wall, 2) if wall > 0 else None})
        log.info("simulated %.1f s in %.1f wall s, %.1f CPU s (%.1fx wall, %.1fx CPU)", simulated, wall,
                 cpu, simulated / max(wall, 1e-9), simulated / max(cpu, 1e-9))

    def outcome(self, **fields: Any) -> SimOutcome:
        return SimOutcome(**fields, simulated_s=self.simulated_s, wall_s=self.wall_s, cpu_s=self.cpu_s)

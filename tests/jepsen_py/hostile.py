"""Plugins that misbehave on purpose, for the tests that nothing a plugin does hangs a run: hooks that
never return, raise SystemExit or KeyboardInterrupt, or answer what is no answer.

A hook that "never returns" waits on RELEASE, which nothing in a run sets: a run in a subprocess
ends with the hook's thread left behind, and a test that runs the command in its own process sets
it when it is done (`releasing`, a test module's fixture), so no thread outlives the test. A
generator that loops without yielding spins until RELEASE too (only ever run in a subprocess: it
takes a core while it spins)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jepsen_py import cli
from jepsen_py import generator as gen
from jepsen_py.history import FAIL, OK, Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.workload import Workload

RELEASE = threading.Event()
REPO = Path(__file__).resolve().parents[2]
HERE = "tests.jepsen_py.hostile"
#: Past this a command under test counts as hung: far beyond what any of these runs takes (seconds).
WITHIN_S = 90.0


def run_argv(results: Path, *more: str, time_limit: float = 1.0) -> list[str]:
    """`jepsen-py run` of the in-process backend, short: a second of ops, 0.5 s op timeout."""
    return ["run", "--backend", "none", "--node-count", "3", "--concurrency", "2", "--time-limit",
            str(time_limit), "--op-timeout", "0.5", "--recovery-timeout", "0", "--rate", "50", "--seed", "3",
            "--no-progress", "--results-dir", str(results), *more]


def run_cli(argv: list[str], within: float = WITHIN_S) -> int:
    """The command in this process (cli.main) on a thread of its own: one that has not ended within
    `within` seconds fails the test instead of hanging it."""
    box: list[Any] = []

    def go() -> None:
        try:
            box.append(cli.main(argv))
        except SystemExit as e:  # argparse's refusal
            box.append(e.code)
        except BaseException as e:  # the test reports it
            box.append(e)

    t = threading.Thread(target=go, name="jepsen-py under test", daemon=True)
    t.start()
    t.join(within)
    assert not t.is_alive(), f"jepsen-py {' '.join(argv[:1])} did not end within {within:g} s"
    if isinstance(box[0], BaseException):
        raise box[0]
    return int(box[0])


def run_process(argv: list[str], within: float = WITHIN_S) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own (python -m jepsen_py), which must end within `within`
    seconds (threads left behind in it included: they must not keep it alive)."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "jepsen_py", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=within)


def the_run(results: Path) -> Path:
    """The one run directory under `results`, with its results.json written."""
    runs = [r for d in results.iterdir() if d.is_dir() and d.name != "latest"
            for r in d.iterdir() if r.name != "latest"]
    assert len(runs) == 1, runs
    assert (runs[0] / "results.json").is_file(), f"no results.json in {runs[0]}"
    return runs[0]


def results_of(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text()))


def failed_phase(results_dir: Path, said: str) -> dict[str, Any]:
    """The stored run of a phase that failed as a raising hook does (255): unknown, what happened
    said in its error and in one ERROR line of jepsen.log, the DB still torn down. Its results."""
    run = the_run(results_dir)
    results = results_of(run)
    assert results["valid"] == "unknown" and said in results["error"], results
    assert len([line for line in log_lines(run, said) if " ERROR " in line]) == 1
    assert "teardown" in results["stats"]["phases"]
    return results


def history_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def log_lines(run: Path, words: str) -> list[str]:
    """The lines of the run's jepsen.log that contain `words`."""
    return [line for line in (run / "jepsen.log").read_text().splitlines() if words in line]


def releasing() -> Iterator[None]:
    """A fresh RELEASE for the test, set when it ends: every hook still blocked returns then
    (`released = pytest.fixture(hostile.releasing)` in a test module)."""
    global RELEASE
    RELEASE = threading.Event()
    try:
        yield
    finally:
        RELEASE.set()


def block() -> None:
    """Never returns within a run."""
    RELEASE.wait()


class Client:
    """get and incr on one counter; `db.hostile(op)` may make an op misbehave first."""

    def __init__(self, db: CounterDB) -> None:
        self.db = db

    def open(self, test: Test, node: str) -> Client:
        return Client(self.db)

    def close(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        self.db.hostile(op)
        with self.db.lock:
            if op.f == "incr":
                self.db.value += 1
                return dataclasses.replace(op, type=OK)
            if op.f == "get":
                return dataclasses.replace(op, type=OK, value=self.db.value)
        return dataclasses.replace(op, type=FAIL, error=f"unknown op {op.f}")


class CounterDB:
    """A well-behaved in-process DB (for --backend none); subclasses misbehave in one hook each."""

    def __init__(self, spec: TestSpec) -> None:
        self.lock = threading.Lock()
        self.value = 0

    def hostile(self, op: Op) -> None:
        """What an op does before it is performed: nothing here."""

    def setup(self, test: Test, node: str) -> None:
        pass

    def teardown(self, test: Test, node: str) -> None:
        pass

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> Client:
        return Client(self)


class StuckClientDB(CounterDB):
    """Every worker's first op (processes 0 .. concurrency-1) never returns, even past --op-timeout:
    with every worker stuck, no worker is free to ask the generator for the next op."""

    def __init__(self, spec: TestSpec) -> None:
        super().__init__(spec)
        self.concurrency = spec.concurrency

    def hostile(self, op: Op) -> None:
        if isinstance(op.process, int) and op.process < self.concurrency:
            block()


class ExitingClientDB(CounterDB):
    """Process 0's op raises SystemExit, process 1's KeyboardInterrupt: the client's own doing,
    on a worker's thread, where no signal is ever delivered."""

    def hostile(self, op: Op) -> None:
        if op.process == 0:
            raise SystemExit(3)
        if op.process == 1:
            raise KeyboardInterrupt


class StuckSetupDB(CounterDB):
    def setup(self, test: Test, node: str) -> None:
        block()


class StuckTeardownDB(CounterDB):
    def teardown(self, test: Test, node: str) -> None:
        block()


class StuckLogFilesDB(CounterDB):
    def log_files(self, test: Test, node: str) -> list[str]:
        block()
        return []


class ExitingLogFilesDB(CounterDB):
    """log_files() raises SystemExit on n1 and KeyboardInterrupt on the others."""

    def log_files(self, test: Test, node: str) -> list[str]:
        if node == "n1":
            raise SystemExit(3)
        raise KeyboardInterrupt


class Unprintable:
    """An object whose str() and repr() raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    __repr__ = __str__


class GarbageStatusDB(CounterDB):
    """status() answers a number, where a dict or None belongs."""

    def status(self, test: Test, node: str) -> Any:
        return 42


class UnprintableStatusDB(CounterDB):
    """status() answers a dict holding an object that cannot even be printed."""

    def status(self, test: Test, node: str) -> Any:
        return {"role": "follower", "term": 1, "leader": None, "mood": Unprintable()}


class GarbagePrimariesDB(CounterDB):
    """primaries() answers None, where a list of node names belongs."""

    def primaries(self, test: Test) -> Any:
        return None


class NoOptionsDB(CounterDB):
    @staticmethod
    def db_options() -> Any:
        return None


class RaisingOptionsDB(CounterDB):
    @staticmethod
    def db_options() -> Any:
        raise KeyboardInterrupt  # the plugin's own: no signal


class CheckedDB(CounterDB):
    """What db-check needs to try every step it can without a real system: a leader, a status."""

    @staticmethod
    def workloads() -> tuple[str, ...]:
        return ("register",)

    def primaries(self, test: Test) -> list[str]:
        return [test.nodes[0]]

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        role = "leader" if node == test.nodes[0] else "follower"
        return {"role": role, "term": 1, "leader": test.nodes[0]}

    def client(self, workload: str) -> Any:
        return RegisterClient()


class RegisterClient:
    def open(self, test: Test, node: str) -> RegisterClient:
        return self

    def close(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        return dataclasses.replace(op, type=OK if op.f != "cas" else FAIL,
                                   value=None if op.f == "read" else op.value)


class CheckStuckSetupDB(CheckedDB):
    def setup(self, test: Test, node: str) -> None:
        block()


class CheckStuckStatusDB(CheckedDB):
    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        block()
        return None


class CheckStuckInvokeDB(CheckedDB):
    def client(self, workload: str) -> Any:
        return StuckRegisterClient()


class StuckRegisterClient(RegisterClient):
    def invoke(self, test: Test, op: Op) -> Op:
        block()
        return op


def reads(spec: TestSpec) -> Workload:
    """Reads in the main phase, and one read per worker after heal."""
    return Workload(name="reads", generator=gen.repeat({"f": "get"}),
                    final_generator=gen.each_thread({"f": "get"}), checkers=[])


class Nemesis:
    """One fault, toggled: start-x and stop-x do nothing."""

    def __init__(self, spec: TestSpec) -> None:
        pass

    def fs(self) -> frozenset[str]:
        return frozenset({"start-x", "stop-x"})

    def setup(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        return dataclasses.replace(op, type="info")

    def heal(self, test: Test) -> None:
        pass

    def teardown(self, test: Test) -> None:
        pass


class StuckInvokeNemesis(Nemesis):
    def invoke(self, test: Test, op: Op) -> Op:
        block()
        return op


class StuckSetupNemesis(Nemesis):
    def setup(self, test: Test) -> None:
        block()


class StuckHealNemesis(Nemesis):
    def heal(self, test: Test) -> None:
        block()


class StuckTeardownNemesis(Nemesis):
    def teardown(self, test: Test) -> None:
        block()


class Blocking(gen.Generator):
    """op() never returns."""

    def op(self, ctx: gen.Context) -> gen.Step:
        block()
        return None


class Spinning(gen.Generator):
    """op() loops without yielding."""

    def op(self, ctx: gen.Context) -> gen.Step:
        while not RELEASE.is_set():
            pass
        return None


def blocking(spec: TestSpec) -> gen.Generator:
    return Blocking()


def spinning(spec: TestSpec) -> gen.Generator:
    return Spinning()

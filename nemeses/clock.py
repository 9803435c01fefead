"""Clock faults: bump a node's clock forward or back, or strobe it, through the test's `Clocks`
(jepsen_py.protocols): on real machines libfaketime (`Faketime` here), in the simulator the nodes'
virtual clocks.

A DB starts its daemon with `faketime_env(path)` (LD_PRELOAD of libfaketime, FAKETIME_TIMESTAMP_FILE
naming a file, FAKETIME_NO_CACHE=1 so every clock read re-reads the file). The nemesis rewrites that
file at run time with a relative offset such as "+1.250" seconds, which every libc clock read of the
process sees at once: time.time() and, because DONT_FAKE_MONOTONIC is left at 0, time.monotonic()
too, which is what Raft's election timers and leases are measured with. Only offsets are used:
libfaketime's speed setting misbehaves when changed at run time. Heal writes "+0" everywhere.

The file is written by a rename, so a reader never sees it half-written (libfaketime exits the
process on a timestamp it cannot parse). A daemon under clock faults should read its clocks on one
thread: libfaketime re-reads the file on every call into state its threads share, and a process
reading clocks on two threads at once gets the real time now and then (measured on a threaded probe
server: about 1 answer in 100). The raft node reads its clocks on its event loop's thread; only
asyncio's name lookups, when it dials a peer, run on another.

Ops: {"f": "bump-clock"} (random nodes, random signed offset), {"f": "strobe-clock"} (offset flips
between 0 and delta every period, for a duration, in a helper on the node), {"f": "reset-clock"}.
The info value records the nodes and the offsets in milliseconds.
"""

from __future__ import annotations

import posixpath
import random
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from jepsen_py.nemeses.faults import BUMP_CLOCK, RESET_CLOCK, STROBE_CLOCK
from jepsen_py.nemeses.targets import pick

from jepsen_py.history import INFO, Op
from jepsen_py.protocols import Clocks, Remote, Test

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
FAKETIME_NAME = "faketime.offset"

# Writes argv[2] to argv[1] through a temporary file and a rename (atomic for a polling reader).
_WRITE = (
    "import os, sys\n"
    "p = sys.argv[1]; t = p + '.tmp'\n"
    "with open(t, 'w') as f:\n    f.write(sys.argv[2])\n"
    "os.rename(t, p)\n"
)
# Flips the offset between base and base+delta every period until duration ends, then restores base.
_STROBE = (
    "import os, sys, time\n"
    "p, base, delta, period, duration = sys.argv[1], *map(float, sys.argv[2:6])\n"
    "def put(x):\n"
    "    t = p + '.strobe'\n"
    "    with open(t, 'w') as f:\n        f.write('%+.3f' % x)\n"
    "    os.rename(t, p)\n"
    "end = time.perf_counter() + duration\n"
    "on = False\n"
    "while time.perf_counter() < end:\n"
    "    on = not on\n"
    "    put(base + delta if on else base)\n"
    "    time.sleep(period)\n"
    "put(base)\n"
)


def faketime_file(remote_dir: str) -> str:
    """Where a daemon's timestamp file lives, under the DB's directory on the node."""
    return posixpath.join(remote_dir, FAKETIME_NAME)


def faketime_env(path: str, lib: str = LIBFAKETIME) -> dict[str, str]:
    """The environment that puts a daemon's clocks under the nemesis's control."""
    return {
        "LD_PRELOAD": lib,
        "FAKETIME_TIMESTAMP_FILE": path,
        "FAKETIME_NO_CACHE": "1",
        "DONT_FAKE_MONOTONIC": "0",
    }


def offset_text(seconds: float) -> str:
    return f"{seconds:+.3f}"


def write_offset(remote: Remote, path: str, seconds: float) -> None:
    remote.exec(["python3", "-c", _WRITE, path, offset_text(seconds)], timeout=20)


def random_delta_ms(rng: random.Random) -> int:
    """A signed offset between ~32 ms and ~131 s, log-uniform, like Jepsen's exponential bumps:
    small skews probe lease margins, large ones probe timeouts."""
    return int(rng.choice((-1, 1)) * 2 ** rng.uniform(5, 17))


class Faketime:
    """The `Clocks` of real machines: each daemon's libfaketime timestamp file, through
    test.remotes."""

    def path(self, test: Test, node: str) -> str:
        db = test.db
        fn = getattr(db, "faketime_file", None)
        if not callable(fn):
            raise RuntimeError("the clock nemesis needs a DB with faketime_file(node) (start it under "
                               "jepsen_py.nemeses.clock.faketime_env)")
        return str(fn(test, node))

    def set_offsets(self, test: Test, offsets: Mapping[str, float]) -> None:
        items = list(offsets.items())
        with ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
            list(pool.map(lambda kv: write_offset(test.remotes[kv[0]], self.path(test, kv[0]), kv[1]),
                          items))

    def strobe(self, test: Test, base: Mapping[str, float], delta_s: float, period_s: float,
               duration_s: float) -> None:
        """A helper on each node flips its file, all at once; returns when every helper is done."""

        def strobe(n: str) -> None:
            test.remotes[n].exec(
                ["python3", "-c", _STROBE, self.path(test, n), str(base[n]), str(delta_s), str(period_s),
                 str(duration_s)],
                timeout=duration_s + 30)

        nodes = list(base)
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            list(pool.map(strobe, nodes))

    def reset(self, test: Test) -> list[str]:
        """Every node we reach back to offset 0 (written even where we think it is 0: a strobe may
        linger)."""
        nodes = [n for n in test.nodes if n in test.remotes]
        self.set_offsets(test, dict.fromkeys(nodes, 0.0))
        return nodes


FAKETIME = Faketime()


def clocks_of(test: Test) -> Clocks:
    """The test's clock seam: its own, or libfaketime on the nodes."""
    return test.clocks if test.clocks is not None else FAKETIME


class ClockNemesis:
    """Bumps and strobes clocks through the test's `Clocks`."""

    def __init__(self, *, targets: tuple[str, ...] = ("one", "minority", "all"),
                 strobe_duration: float = 5.0) -> None:
        self.targets = targets
        self.strobe_duration = strobe_duration
        self.offsets: dict[str, float] = {}

    def fs(self) -> frozenset[str]:
        return frozenset({BUMP_CLOCK, STROBE_CLOCK, RESET_CLOCK})

    def needs(self) -> dict[str, str]:
        return {"clock": "--nemesis clock"}

    def setup(self, test: Test) -> None:
        self.reset(test)

    def invoke(self, test: Test, op: Op) -> Op:
        rng = test.rng
        value: dict[str, Any]
        if op.f == BUMP_CLOCK:
            spec = op.value if isinstance(op.value, dict) else None
            if spec:  # an explicit {node: delta_ms} from the schedule
                deltas = {n: int(d) for n, d in spec.items()}
            else:
                nodes = pick(rng.choice(self.targets), test, rng)
                deltas = {n: random_delta_ms(rng) for n in nodes}
            self.set_offsets(test, {n: self.offsets.get(n, 0.0) + d / 1000.0 for n, d in deltas.items()})
            value = {"bumped-ms": deltas, "offsets-ms": self._offsets_ms(deltas)}
        elif op.f == STROBE_CLOCK:
            nodes, delta_ms, period_ms = self.strobe_plan(test)
            clocks_of(test).strobe(test, {n: self.offsets.get(n, 0.0) for n in nodes}, delta_ms / 1000.0,
                                   period_ms / 1000.0, self.strobe_duration)
            value = self.strobe_value(nodes, delta_ms, period_ms)
        elif op.f == RESET_CLOCK:
            value = {"reset": sorted(self.reset(test))}
        else:
            raise ValueError(f"clock nemesis cannot do {op.f!r}")
        test.state["clock"] = dict(self.offsets)
        return replace(op, type=INFO, value=value)

    def _offsets_ms(self, nodes: dict[str, int]) -> dict[str, int]:
        return {n: round(self.offsets[n] * 1000) for n in nodes}

    def set_offsets(self, test: Test, offsets: dict[str, float]) -> None:
        """Puts each node's clock at the given offset (seconds from true time) and remembers it."""
        self.offsets.update(offsets)
        clocks_of(test).set_offsets(test, offsets)
        test.state["clock"] = dict(self.offsets)

    def strobe_plan(self, test: Test) -> tuple[list[str], int, int]:
        """A strobe's nodes, delta and period (ms), drawn from test.rng."""
        rng = test.rng
        nodes = pick(rng.choice(self.targets), test, rng)
        delta_ms = abs(random_delta_ms(rng))
        period_ms = int(2 ** rng.uniform(1, 8))  # 2 ms .. 256 ms
        return nodes, delta_ms, period_ms

    def strobe_value(self, nodes: list[str], delta_ms: int, period_ms: int) -> dict[str, Any]:
        return {"nodes": nodes, "delta-ms": delta_ms, "period-ms": period_ms,
                "duration-s": self.strobe_duration}

    def reset(self, test: Test) -> list[str]:
        """Every node the seam reaches back to offset 0; returns those nodes."""
        nodes = clocks_of(test).reset(test)
        self.offsets = {}
        test.state.pop("clock", None)
        return nodes

    def heal(self, test: Test) -> None:
        self.reset(test)

    def teardown(self, test: Test) -> None:
        self.reset(test)

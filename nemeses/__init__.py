"""Nemeses: the faults a test injects, each done for real and undone at heal.

`--nemesis` takes comma-separated names from NEMESES; `build(names, spec)` returns one (composed)
nemesis and its schedule, a generator for the nemesis thread that toggles a fault every
`spec.nemesis_interval` seconds.

  none               no faults
  partition-leader   the leader alone on one side          (iptables)
  partition-random   random halves                          (iptables)
  partition-one      one random node isolated               (iptables)
  partition-ring     majorities ring                        (iptables)
  partition-bridge   two halves joined by one bridge node   (iptables)
  partition          any of the five shapes above, at random
  clock              bump forward/back and strobe           (libfaketime timestamp file)
  pause              SIGSTOP/SIGCONT leader, one, minority  (signals)
  kill               SIGKILL leader, one, minority; restart from disk
  leader-clock       the leader frozen, isolated, its clock stepped back, thawed (lease drift)
  all                every family above, mixed
"""

from __future__ import annotations

from jepsen_py.nemeses import faults
from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.compose import ComposedNemesis, Family, FaultSchedule, NoopNemesis
from jepsen_py.nemeses.kill import KillNemesis
from jepsen_py.nemeses.leader_clock import LeaderClockNemesis
from jepsen_py.nemeses.partition import PartitionNemesis
from jepsen_py.nemeses.pause import PauseNemesis
from jepsen_py.nemeses.process import PROCESS_TARGETS

from jepsen_py.errors import BadInput
from jepsen_py.generator import Generator, Template, is_nemesis_thread, lift, on_threads
from jepsen_py.protocols import Nemesis, TestSpec

PARTITION_NAMES = {
    "partition-leader": "leader",
    "partition-random": "random",
    "partition-one": "one",
    "partition-ring": "ring",
    "partition-bridge": "bridge",
}
NEMESES: tuple[str, ...] = ("none", *PARTITION_NAMES, "partition", "clock", "pause", "kill", "leader-clock",
                           "all")
FAMILIES = ("partition", "clock", "pause", "kill", "leader-clock")


def parse(names: list[str] | str) -> tuple[list[str], list[str]]:
    """Validates names; returns (partition shapes, other families) with `all` expanded."""
    if isinstance(names, str):
        names = [names]
    flat = [n.strip() for item in names for n in str(item).split(",") if n.strip()]
    unknown = [n for n in flat if n not in NEMESES]
    if unknown:
        raise BadInput(f"--nemesis: unknown nemesis {', '.join(map(repr, unknown))} "
                       f"(choose from {', '.join(NEMESES)}; combine with commas)")
    shapes: list[str] = []
    families: list[str] = []
    for n in flat:
        if n in ("all", "partition"):
            shapes += [s for s in PARTITION_NAMES.values() if s not in shapes]
        if n == "all":
            families += [f for f in ("clock", "pause", "kill") if f not in families]
        elif n in PARTITION_NAMES and PARTITION_NAMES[n] not in shapes:
            shapes.append(PARTITION_NAMES[n])
        elif n in ("clock", "pause", "kill", "leader-clock") and n not in families:
            families.append(n)
    return shapes, families


def build(names: list[str] | str, spec: TestSpec) -> tuple[Nemesis, Generator]:
    """The nemesis for `names` and its schedule (for the nemesis thread only)."""
    shapes, families = parse(names)
    if not shapes and not families:
        return NoopNemesis(), lift(None)
    if spec.nemesis_interval <= 0:
        raise BadInput(f"--nemesis-interval must be > 0 seconds, got {spec.nemesis_interval}")
    if "ring" in shapes and len(spec.nodes) < 4 and shapes == ["ring"]:
        raise BadInput(f"--nemesis partition-ring needs at least 4 nodes, got {len(spec.nodes)}")

    members: list[Nemesis] = []
    fams: list[Family] = []
    if shapes:
        members.append(PartitionNemesis(shapes))
        fams.append(Family("partition",
                           lambda rng: Template(faults.START_PARTITION, value=rng.choice(shapes)),
                           lambda rng: Template(faults.STOP_PARTITION)))
    if "clock" in families:
        members.append(ClockNemesis(strobe_duration=min(5.0, spec.nemesis_interval)))
        clock_starts = (faults.BUMP_CLOCK, faults.BUMP_CLOCK, faults.STROBE_CLOCK)  # bumps twice as often
        fams.append(Family("clock",
                           lambda rng: Template(rng.choice(clock_starts)),
                           lambda rng: Template(faults.RESET_CLOCK)))
    chosen = tuple(spec.fault_targets) or None
    targets = chosen or PROCESS_TARGETS
    if "pause" in families:
        members.append(PauseNemesis(chosen))
        fams.append(Family("pause",
                           lambda rng: Template(faults.PAUSE_F, value=rng.choice(targets)),
                           lambda rng: Template(faults.RESUME)))
    if "kill" in families:
        members.append(KillNemesis(chosen))
        fams.append(Family("kill",
                           lambda rng: Template(faults.KILL, value=rng.choice(targets)),
                           lambda rng: Template(faults.RESTART)))
    if "leader-clock" in families:
        members.append(LeaderClockNemesis(spec.nemesis_interval))
        fams.append(Family("leader-clock",
                           lambda rng: Template(faults.START_LEADER_CLOCK),
                           lambda rng: Template(faults.STOP_LEADER_CLOCK)))
    nemesis: Nemesis = members[0] if len(members) == 1 else ComposedNemesis(members)
    schedule = on_threads(is_nemesis_thread, FaultSchedule.for_spec(fams, spec))
    return nemesis, schedule

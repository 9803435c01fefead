"""The search space on a real backend, drawn from what the DB under test declares.

In simulation the space is our cluster's. On docker, ssh or local the DB is anyone's, so the space
is what it says it can do, read from the class before anything is provisioned: the workloads it
serves (`workloads()`), its read modes (`read_modes()`; our cluster's local mode is stale by design
and left out unless asked for), the fault families its capabilities allow (no kill without Process,
no pause without Pause, no clock faults without ClockControl, no leader targets without Primary),
and for each of its --db-options the values it declares explore may try (`db_option_values()`).
The user narrows any of it from the command line; naming what the DB cannot do is one line.

Runs on a real backend cost tens of seconds (setup, the main phase, the heal, the final reads), so
main phases are short and the smallest cluster comes up most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jepsen_py.errors import BadInput
from jepsen_py.explore.schedule import FAMILIES, OutsideFamily, register_outside
from jepsen_py.explore.space import DEFAULT_WORKLOADS, SAFE_READ_MODES, SHAPES, TARGETS, Space
from jepsen_py.nemeses.faults import declared as declared_faults
from jepsen_py.plugins import check_capabilities, db_option_keys, load_nemesis, plugin_call, read_modes
from jepsen_py.protocols import CAPABILITIES, TestSpec, has_capability

REAL_TIME_LIMITS: tuple[float, ...] = (10.0, 20.0, 30.0)
REAL_NODE_COUNTS: tuple[int, ...] = (3, 5)
# a fault every few seconds: a real cluster needs an election timeout or two to react to each
REAL_INTERVALS: tuple[float, ...] = (2.0, 3.0, 5.0, 8.0)
# candidates per draw (search.py, pairs.py): a real search tries a few dozen configurations, so each
# is the one of 20 that meets the most untried pairs of workload, fault, read mode, nodes, target
REAL_DRAWS = 20

# fault family -> the capabilities it needs of the DB (protocols.CAPABILITIES' names)
FAMILY_NEEDS: dict[str, tuple[str, ...]] = {
    "partition": (),
    "kill": ("process",),
    "pause": ("pause",),
    "clock": ("clock",),
    "leader-clock": ("primaries", "pause", "clock"),
}


@dataclass(frozen=True)
class Declared:
    """What a DB class says about itself, as explore reads it."""

    workloads: tuple[str, ...] | None  # None: it does not say
    read_modes: tuple[str, ...]
    capabilities: frozenset[str]
    option_keys: tuple[str, ...]
    option_values: dict[str, tuple[str, ...]]


def option_values(db: object, ref: str) -> dict[str, tuple[str, ...]]:
    """The values a DB class declares explore may try for each --db-option (`db_option_values()`);
    {} when it declares none. A key it does not take, or an empty list, is the plugin's mistake."""
    declared = getattr(db, "db_option_values", None)
    if not callable(declared):
        return {}
    raw = plugin_call("--db", ref, "db_option_values()", lambda: dict(declared()))
    keys = db_option_keys(db)
    out: dict[str, tuple[str, ...]] = {}
    for k, values in raw.items():
        if str(k) not in keys:
            raise BadInput(f"--db: {ref}.db_option_values() names {k!r}, "
                           "which its db_options() does not take")
        vals = tuple(str(v) for v in (values if isinstance(values, list | tuple) else (values,)))
        if not vals:
            raise BadInput(f"--db: {ref}.db_option_values() gives no values for {k!r}")
        out[str(k)] = vals
    return out


def declared(db: object, ref: str) -> Declared:
    fn = getattr(db, "workloads", None)
    workloads = (tuple(str(w) for w in plugin_call("--db", ref, "workloads()", lambda: tuple(fn())))
                 if callable(fn) else None)
    caps = frozenset(c for c in CAPABILITIES if has_capability(db, c))
    return Declared(workloads=workloads, read_modes=read_modes(db), capabilities=caps,
                    option_keys=tuple(db_option_keys(db)), option_values=option_values(db, ref))


def outside_families(ref: str, db: object, db_ref: str, spec: TestSpec) -> list[OutsideFamily]:
    """The fault families of an outside nemesis (`--nemesis MODULE:NAME`), registered so schedules
    read their ops: each fault its `faults()` declares with a stop op, else its one start*/stop* pair.
    Refused up front (one line) when the DB lacks a capability the nemesis `needs()`."""
    nem, _ = load_nemesis(ref, spec)
    check_capabilities(db, nem, db_name=db_ref)
    try:
        kinds = list(dict.fromkeys(declared_faults(nem).values()))
    except ValueError as e:
        raise BadInput(f"--nemesis: {e}") from None
    fams = [OutsideFamily(k.name if k.name not in FAMILIES else f"{k.name}@{ref}", ref,
                          tuple(sorted(k.starts)), min(k.stops)) for k in kinds if k.stops]
    if not fams:
        fs = sorted(str(f) for f in plugin_call("--nemesis", ref, "fs()", lambda: list(nem.fs())))
        starts = [f for f in fs if f.startswith("start")]
        stops = [f for f in fs if f.startswith("stop")]
        if len(starts) != 1 or len(stops) != 1:
            raise BadInput(f"--nemesis: {ref} handles {', '.join(fs) or 'nothing'}; explore toggles a fault "
                           "it declares in faults() with a stop op, or its one start* and stop* op")
        fams = [OutsideFamily(ref, ref, (starts[0],), stops[0])]
    for f in fams:
        register_outside(f)
    return fams


def real_space(db: object, ref: str, *, default_db: bool, workloads: Sequence[str],
               families: Sequence[str] | None, modes: Sequence[str], node_counts: Sequence[int],
               time_limits: Sequence[float],
               fixed: dict[str, str], outside: Sequence[OutsideFamily] = ()) -> Space:
    """The space for `db` (its class) as the command line narrows it: `families` None means every
    family the DB can take; `fixed` are --db-option values given (each replaces the declared choice)."""
    d = declared(db, ref)
    served = d.workloads if d.workloads is not None else (DEFAULT_WORKLOADS if default_db else None)
    if workloads:
        if served is not None:
            for w in workloads:
                if w not in served:
                    raise BadInput(f"--workload: {ref} serves {', '.join(served)}, not {w!r}")
        chosen = tuple(workloads)
    elif served is not None:
        chosen = tuple(served)
    else:
        raise BadInput(f"--workload: {ref} declares no workloads() to explore; name them with --workload")
    able = [f for f, needs in FAMILY_NEEDS.items() if all(c in d.capabilities for c in needs)]
    if families is None:
        fams = tuple(able)
    else:
        for f in families:
            if f not in FAMILY_NEEDS:
                raise BadInput(f"--nemesis: {f!r} is not a fault family "
                               f"(choose from {', '.join(FAMILY_NEEDS)}, or none)")
            if f not in able:
                lacking = [CAPABILITIES[c][1] for c in FAMILY_NEEDS[f] if c not in d.capabilities]
                raise BadInput(f"--nemesis: {f} needs a DB that can {' and '.join(lacking)}; {ref} cannot")
        fams = tuple(families)
    fams += tuple(f.name for f in outside)
    if d.read_modes:
        read: tuple[str | None, ...] = tuple(modes) or tuple(
            m for m in d.read_modes if m in SAFE_READ_MODES or not default_db)
        for m in read:
            if m not in d.read_modes:
                raise BadInput(f"--read-mode: {ref} serves {', '.join(d.read_modes)}, not {m!r}")
    elif modes:
        raise BadInput(f"--read-mode: {ref} has no read modes")
    else:
        read = (None,)
    for k in fixed:
        if k not in d.option_keys:
            raise BadInput(f"--db-option: {ref} takes no {k!r} "
                           f"(it takes: {', '.join(d.option_keys) or 'none'})")
    values = {**d.option_values, **{k: (v,) for k, v in fixed.items()}}
    leaders = "primaries" in d.capabilities
    return Space(
        workloads=chosen, families=fams, read_modes=read,
        shapes=tuple(s for s in SHAPES if leaders or s != "leader"),
        targets=tuple(t for t in TARGETS if leaders or t != "leader"),
        intervals=REAL_INTERVALS,
        node_counts=tuple(sorted(set(node_counts))) or REAL_NODE_COUNTS,
        time_limits=tuple(sorted(set(time_limits))) or REAL_TIME_LIMITS,
        db_option_values=tuple(sorted(values.items())),
    )

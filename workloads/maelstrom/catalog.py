"""Every Maelstrom workload by its Maelstrom name, with its codec: what `jepsen-py maelstrom
--workload NAME` looks up (workloads.md's names: echo, unique-ids, g-set, broadcast, g-counter,
pn-counter, lin-kv)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from jepsen_py.workloads.maelstrom.broadcast import BroadcastCodec, broadcast_workload
from jepsen_py.workloads.maelstrom.client import Call, MaelstromClient
from jepsen_py.workloads.maelstrom.codec import Codec
from jepsen_py.workloads.maelstrom.counters import CounterCodec, g_counter_workload, pn_counter_workload
from jepsen_py.workloads.maelstrom.echo import EchoCodec, echo_workload
from jepsen_py.workloads.maelstrom.gset import GSetCodec, gset_workload
from jepsen_py.workloads.maelstrom.linkv import LinKvCodec, linkv_workload
from jepsen_py.workloads.maelstrom.unique_ids import UniqueIdsCodec, unique_ids_workload

from jepsen_py.errors import BadInput
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload


@dataclass(frozen=True)
class MaelstromWorkload:
    """A workload's factory (generators and checkers) and its codec (its messages)."""

    name: str
    factory: Callable[[TestSpec], Workload]
    codec: Codec


WORKLOADS: dict[str, MaelstromWorkload] = {w.name: w for w in (
    MaelstromWorkload("echo", echo_workload, EchoCodec()),
    MaelstromWorkload("unique-ids", unique_ids_workload, UniqueIdsCodec()),
    MaelstromWorkload("g-set", gset_workload, GSetCodec()),
    MaelstromWorkload("broadcast", broadcast_workload, BroadcastCodec()),
    MaelstromWorkload("g-counter", g_counter_workload, CounterCodec()),
    MaelstromWorkload("pn-counter", pn_counter_workload, CounterCodec()),
    MaelstromWorkload("lin-kv", linkv_workload, LinKvCodec()),
)}


def maelstrom_workload(name: str, spec: TestSpec, call: Call, timeout: float | None = None) -> Workload:
    """Workload `name` for `spec`, its client sending every op through `call` (client.py)."""
    known = WORKLOADS.get(name)
    if known is None:
        raise BadInput(f"unknown Maelstrom workload {name!r} (known: {', '.join(WORKLOADS)})")
    return replace(known.factory(spec), client=MaelstromClient(known.codec, call, timeout))

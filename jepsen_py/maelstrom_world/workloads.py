"""The workloads `--backend maelstrom` serves, by Maelstrom's names: each one's Workload factory
(workloads/maelstrom/) and the codec its clients speak, so a name means one thing in both. The
services nodes lean on (lin-kv, seq-kv, lww-kv, lin-tso) are the router's
(jepsen_py/maelstrom/services.py), whatever the workload."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jepsen_py.errors import BadInput
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload
from jepsen_py.workloads.maelstrom.broadcast import BroadcastCodec, broadcast_workload
from jepsen_py.workloads.maelstrom.codec import Codec
from jepsen_py.workloads.maelstrom.counters import CounterCodec, g_counter_workload, pn_counter_workload
from jepsen_py.workloads.maelstrom.echo import EchoCodec, echo_workload
from jepsen_py.workloads.maelstrom.gset import GSetCodec, gset_workload
from jepsen_py.workloads.maelstrom.kafka import KafkaCodec, kafka_workload
from jepsen_py.workloads.maelstrom.linkv import LinKvCodec, linkv_workload
from jepsen_py.workloads.maelstrom.txn import (
    ListAppendCodec,
    RwRegisterCodec,
    txn_list_append_workload,
    txn_rw_register_workload,
)
from jepsen_py.workloads.maelstrom.unique_ids import UniqueIdsCodec, unique_ids_workload


@dataclass(frozen=True)
class MaelstromWorkload:
    """One of Maelstrom's workloads: its ops, generators and checkers, and its messages."""

    build: Callable[[TestSpec], Workload]
    codec: Callable[[], Codec]


WORKLOADS: dict[str, MaelstromWorkload] = {
    "echo": MaelstromWorkload(echo_workload, EchoCodec),
    "unique-ids": MaelstromWorkload(unique_ids_workload, UniqueIdsCodec),
    "g-set": MaelstromWorkload(gset_workload, GSetCodec),
    "broadcast": MaelstromWorkload(broadcast_workload, BroadcastCodec),
    "g-counter": MaelstromWorkload(g_counter_workload, CounterCodec),
    "pn-counter": MaelstromWorkload(pn_counter_workload, CounterCodec),
    "lin-kv": MaelstromWorkload(linkv_workload, LinKvCodec),
    "kafka": MaelstromWorkload(kafka_workload, KafkaCodec),
    "txn-list-append": MaelstromWorkload(txn_list_append_workload, ListAppendCodec),
    "txn-rw-register": MaelstromWorkload(txn_rw_register_workload, RwRegisterCodec),
}


def factories() -> dict[str, Callable[[TestSpec], Workload]]:
    """name -> factory(spec), what `--workload NAME` resolves to on this backend."""
    return {name: w.build for name, w in WORKLOADS.items()}


def codec_for(name: str) -> Codec:
    """The messages of workload `name`; one line (254) for a workload that has none here."""
    w = WORKLOADS.get(name)
    if w is None:
        raise BadInput(f"--workload {name}: no Maelstrom messages for it (--backend maelstrom serves "
                       f"{', '.join(WORKLOADS)})")
    return w.codec()

"""register: reads, writes and compare-and-set on independent keys, checked as a cas-register.

For any key-value or register system. The client contract (what `DB.client("register")` returns):

  f       key       invoke value   ok completion value
  read    "r<n>"    None           the key's current value, None when it was never written
  write   "r<n>"    int v          v (stored)
  cas     "r<n>"    [old, new]     [old, new]: the key held old and now holds new
                                   (a cas whose key did not hold old completes fail)

Any op may end fail (certainly not done: refused, no such key for cas) or info (unknown: a timeout
or a connection lost after sending). A read must never be fail or info for a value it saw. The
system needs no leader: nothing here asks the DB for primaries.

Every write and every cas writes a value never written before to its key, so a stale read names
the exact write it saw. Keys rotate (Jepsen's independent keys): `active_keys` are live at once,
each retired after `ops_per_key` ops, so each key's history stays small for the linearizability
search. After heal every key is read once more on every node.

Options (spec.options, `--workload-option KEY=VALUE`): active_keys, ops_per_key, read_fraction,
cas_fraction.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.workloads.common import KeyRotation, Linearizable, run_checkers

from jepsen_py.generator import Context, defer, fn
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

FS = frozenset({"read", "write", "cas"})


def key_name(key_id: int) -> str:
    return f"r{key_id}"


class RegisterGen:
    """Live keys, each key's next unique value and the value last handed to it (a cas's `old`)."""

    def __init__(self, active_keys: int, ops_per_key: int, read_fraction: float,
                 cas_fraction: float) -> None:
        self.keys = KeyRotation(active_keys, ops_per_key)
        self.next_value: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.read_fraction = read_fraction
        self.cas_fraction = cas_fraction

    def op(self, ctx: Context) -> dict[str, Any]:
        k = self.keys.pick(ctx)
        r = ctx.rng.random()
        if r < self.read_fraction:
            return {"f": "read", "key": key_name(k)}
        v = self.next_value.get(k, 0) + 1
        self.next_value[k] = v
        old = self.last.get(k)
        self.last[k] = v
        if old is not None and r < self.read_fraction + self.cas_fraction:
            return {"f": "cas", "key": key_name(k), "value": [old, v]}
        return {"f": "write", "key": key_name(k), "value": v}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        return [{"f": "read", "key": key_name(k), "node": n} for k in self.keys.used for n in nodes]


def register_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = RegisterGen(
        active_keys=int(o.get("active_keys", max(2, spec.concurrency // 3))),
        ops_per_key=int(o.get("ops_per_key", 150)),
        read_fraction=float(o.get("read_fraction", 0.5)),
        cas_fraction=float(o.get("cas_fraction", 0.2)),
    )
    # Lambdas, not bound methods: copies of the generator tree must keep sharing `state`.
    return Workload(
        name="register",
        fs=FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=defer(lambda ctx: state.final(ctx)),
        checkers=[Linearizable("cas-register", FS), *run_checkers(spec)],
        meta={"model": "cas-register", "active_keys": state.keys.active,
              "ops_per_key": state.keys.ops_per_key},
    )

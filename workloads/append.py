"""append: Jepsen's list-append, one op per key: append unique elements to lists, read whole lists.

The client contract (what `DB.client("append")` returns):

  f       key       invoke value   ok completion value
  append  "l<n>"    int element    the element (now at the end of the list)
  read    "l<n>"    None           the whole list, in order, as a list ([] when absent)

Any op may end fail (certainly not done) or info (unknown). The system needs no leader.

Keys rotate (`active_keys` at once, `ops_per_key` each); after heal every key is read on every
node. Checked by checkers.append: reads of a key are prefixes of one another, no element that was
acknowledged or seen is lost, nothing is duplicated, invented or read from a failed append, and
(unless `linearizable` is false) no read misses a completed append and the order respects real time;
lost data fails either way. Options: active_keys, ops_per_key,
read_fraction, final_delay (seconds before the final reads, default 1), linearizable.
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.append import AppendChecker
from jepsen_py.workloads.common import KeyRotation, bool_option, run_checkers

from jepsen_py.generator import Context, defer, fn, seq, sleep
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

# Final reads wait this long after heal, so a system that converges (rather than loses) is judged
# converged: Jepsen's quiet period before its final reads. Option final_delay.
FINAL_DELAY_S = 1.0


class AppendGen:
    def __init__(self, active_keys: int, ops_per_key: int, read_fraction: float) -> None:
        self.keys = KeyRotation(active_keys, ops_per_key)
        self.next_element: dict[int, int] = {}
        self.read_fraction = read_fraction

    def op(self, ctx: Context) -> dict[str, Any]:
        k = self.keys.pick(ctx)
        if ctx.rng.random() < self.read_fraction:
            return {"f": "read", "key": f"l{k}"}
        v = self.next_element.get(k, 0) + 1
        self.next_element[k] = v
        return {"f": "append", "key": f"l{k}", "value": v}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        return [{"f": "read", "key": f"l{k}", "node": n} for k in self.keys.used for n in nodes]


def append_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = AppendGen(active_keys=int(o.get("active_keys", max(2, spec.concurrency // 3))),
                      ops_per_key=int(o.get("ops_per_key", 300)),
                      read_fraction=float(o.get("read_fraction", 0.5)))
    return Workload(
        name="append",
        fs=frozenset({"append", "read"}),
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))),
                            defer(lambda ctx: state.final(ctx))),
        checkers=[AppendChecker(linearizable=bool_option(o, "linearizable", True)), *run_checkers(spec)],
        meta={"model": "list-append", "active_keys": state.keys.active,
              "ops_per_key": state.keys.ops_per_key},
    )

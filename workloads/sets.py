"""set: adds of unique elements to grow-only sets, and reads of whole sets (Jepsen's set).

The client contract (what `DB.client("set")` returns):

  f      key       invoke value   ok completion value
  add    "s<n>"    int element    the element (now in the set)
  read   "s<n>"    None           every element of the set, as a list (any order; [] when empty)

Any op may end fail (certainly not done) or info (unknown). The system needs no leader.

Keys rotate as in the register workload (`active_keys` at once, `ops_per_key` each); after heal
every key is read on every node, so an acknowledged add that no node kept, or one a read saw and
every later read missed, shows up as lost. Checked by checkers.sets (Jepsen's set-full: lost,
stale, duplicate, aborted and unexpected elements). Options: active_keys, ops_per_key,
read_fraction, final_delay (seconds before the final reads, default 1), linearizable (false: stale
reads are reported but do not fail; lost data fails either way).
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.sets import SetChecker
from jepsen_py.workloads.common import KeyRotation, bool_option, run_checkers

from jepsen_py.generator import Context, defer, fn, seq, sleep
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

# Final reads wait this long after heal, so a system that converges (rather than loses) is judged
# converged: Jepsen's quiet period before its final reads. Option final_delay.
FINAL_DELAY_S = 1.0


class SetGen:
    def __init__(self, active_keys: int, ops_per_key: int, read_fraction: float) -> None:
        self.keys = KeyRotation(active_keys, ops_per_key)
        self.next_element = 0
        self.read_fraction = read_fraction

    def op(self, ctx: Context) -> dict[str, Any]:
        k = f"s{self.keys.pick(ctx)}"
        if ctx.rng.random() < self.read_fraction:
            return {"f": "read", "key": k}
        self.next_element += 1
        return {"f": "add", "key": k, "value": self.next_element}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        return [{"f": "read", "key": f"s{k}", "node": n} for k in self.keys.used for n in nodes]


def set_workload(spec: TestSpec) -> Workload:
    o = spec.options
    state = SetGen(active_keys=int(o.get("active_keys", 2)),
                   ops_per_key=int(o.get("ops_per_key", 1000)),
                   read_fraction=float(o.get("read_fraction", 0.2)))
    return Workload(
        name="set",
        fs=frozenset({"add", "read"}),
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))),
                            defer(lambda ctx: state.final(ctx))),
        checkers=[SetChecker(linearizable=bool_option(o, "linearizable", True)), *run_checkers(spec)],
        meta={"model": "set", "active_keys": state.keys.active, "ops_per_key": state.keys.ops_per_key},
    )

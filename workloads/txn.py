"""list-append and rw-register: Elle's transactional workloads, checked by checkers.elle.

For any system with multi-key transactions. The client contract (what `DB.client("list-append")`
or `DB.client("rw-register")` returns): every op has f "txn", no key, and a value that is a list of
micro-ops [f, key, value], keys small whole numbers:

  workload     micro-op in the invoke    in the ok completion
  list-append  ["append", k, v]          ["append", k, v]     (v added at the end of list k)
               ["r", k, None]            ["r", k, [..]]       (list k, in order; [] or None when absent)
  rw-register  ["w", k, v]               ["w", k, v]          (register k now holds v)
               ["r", k, None]            ["r", k, v]          (k's value; None when never written)

The client completes ok with the same micro-ops in the same order, reads filled in with what
the transaction saw (after its own earlier writes in it); fail only when the whole transaction
certainly did not happen (refused, aborted); info when it may have (timeout, connection lost).
Partial effects are never acceptable: a transaction happens whole or not at all.

Generation after Elle's: `key_count` keys live at once; each transaction has between
`min_txn_length` and `max_txn_length` micro-ops, each on a live key drawn at random, a read with
probability `read_fraction`, else a write. A key retires after `max_writes_per_key` writes and a
fresh key takes its place, so version orders stay short. Written values are unique per key
(1, 2, 3, ...). After heal every key used is read on every node, a few keys per transaction.

Checked by ElleChecker against `consistency_models` (default strict-serializable, or none when
`anomalies` is given; give several as `consistency_models=serializable,snapshot-isolation`) and
`anomalies` (Elle's: anomalies that fail the run besides those the models prohibit), plus
availability, crash and stats. rw-register's version-order assumptions are Elle's, off by default:
`wfr_keys`, `sequential_keys`, `linearizable_keys` (true or false). `exact=true` decides
serializable, strict-serializable and snapshot-isolation exactly too (checkers/elle/exact.py).
Options: key_count, min_txn_length, max_txn_length, max_writes_per_key, read_fraction,
consistency_models, anomalies, wfr_keys, sequential_keys, linearizable_keys, exact, final_delay (seconds
before the final reads, default 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jepsen_py.workloads.common import run_checkers

from jepsen_py.errors import BadInput
from jepsen_py.generator import Context, defer, fn, seq, sleep
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

if TYPE_CHECKING:
    from jepsen_py.checkers.elle import Inference

FS = frozenset({"txn"})
# Final reads wait this long after heal (Jepsen's quiet period), as in workloads.append.
FINAL_DELAY_S = 1.0
# Keys read by one final transaction: small enough for any system's transaction limits.
FINAL_KEYS_PER_TXN = 4
# The write micro-op of each workload (reads are "r" in both).
WRITE_F = {"list-append": "append", "rw-register": "w"}


class TxnGen:
    """Elle's transaction generator: live keys, each key's writes so far, fresh keys on retirement.
    Deterministic under the context's rng."""

    def __init__(self, write_f: str, key_count: int, min_txn_length: int, max_txn_length: int,
                 max_writes_per_key: int, read_fraction: float) -> None:
        self.write_f = write_f
        self.key_count = max(1, key_count)
        self.min_len = max(1, min_txn_length)
        self.max_len = max(self.min_len, max_txn_length)
        self.max_writes = max(1, max_writes_per_key)
        self.read_fraction = read_fraction
        self.live: list[int] = []
        self.used: list[int] = []
        self.writes: dict[int, int] = {}
        self.next_key = 0

    def _fill(self) -> None:
        while len(self.live) < self.key_count:
            self.live.append(self.next_key)
            self.used.append(self.next_key)
            self.next_key += 1

    def txn(self, ctx: Context) -> list[list[Any]]:
        n = ctx.rng.randint(self.min_len, self.max_len)
        mops: list[list[Any]] = []
        for _ in range(n):
            self._fill()
            k = self.live[ctx.rng.randrange(len(self.live))]
            if ctx.rng.random() < self.read_fraction:
                mops.append(["r", k, None])
                continue
            v = self.writes.get(k, 0) + 1
            self.writes[k] = v
            mops.append([self.write_f, k, v])
            if v >= self.max_writes:
                self.live.remove(k)
        return mops

    def op(self, ctx: Context) -> dict[str, Any]:
        return {"f": "txn", "value": self.txn(ctx)}

    def final(self, ctx: Context) -> list[dict[str, Any]]:
        nodes = list(ctx.nodes) or [None]
        keys = list(self.used)
        chunks = [keys[i:i + FINAL_KEYS_PER_TXN] for i in range(0, len(keys), FINAL_KEYS_PER_TXN)]
        return [{"f": "txn", "value": [["r", k, None] for k in chunk], "node": n}
                for chunk in chunks for n in nodes]


# How a run's user gives the transactional check's models and anomalies (checkers/elle/wanted.py).
OPTION_LABELS = ("--workload-option consistency_models", "--workload-option anomalies")


def inference(name: str, options: dict[str, Any]) -> Inference:
    """rw-register's version-order assumptions; refused for list-append, which needs none."""
    from jepsen_py.checkers.elle import Inference

    flags = {k: bool(options.get(k, False)) for k in ("wfr_keys", "sequential_keys", "linearizable_keys")}
    if name != "rw-register" and any(flags.values()):
        on = ", ".join(k for k, v in flags.items() if v)
        raise BadInput(f"--workload-option {on}: applies to rw-register only")
    return Inference(**flags)


def txn_workload(name: str, spec: TestSpec) -> Workload:
    """The list-append or rw-register workload (`name`), knobs from spec.options."""
    from jepsen_py.checkers.elle import ElleChecker, parse_wanted

    o = spec.options
    state = TxnGen(WRITE_F[name],
                   key_count=int(o.get("key_count", 3 if name == "list-append" else 4)),
                   min_txn_length=int(o.get("min_txn_length", 1)),
                   max_txn_length=int(o.get("max_txn_length", 4)),
                   max_writes_per_key=int(o.get("max_writes_per_key", 32)),
                   read_fraction=float(o.get("read_fraction", 0.5)))
    if int(o.get("min_txn_length", 1)) > int(o.get("max_txn_length", 4)):
        raise BadInput("--workload-option min_txn_length: must not exceed max_txn_length")
    wanted, extra = parse_wanted(o.get("consistency_models"), o.get("anomalies"), labels=OPTION_LABELS)
    assume = inference(name, o)
    # Lambdas, not bound methods: copies of the generator tree must keep sharing `state`.
    return Workload(
        name=name,
        fs=FS,
        generator=fn(lambda ctx: state.op(ctx)),
        final_generator=seq(sleep(float(o.get("final_delay", FINAL_DELAY_S))),
                            defer(lambda ctx: state.final(ctx))),
        checkers=[ElleChecker(name, wanted, anomalies=extra, inference=assume,
                              exact=bool(o.get("exact", False))), *run_checkers(spec)],
        meta={"model": name, "consistency_models": wanted, "anomalies": extra, "key_count": state.key_count,
              "max_txn_length": state.max_len, "max_writes_per_key": state.max_writes},
    )


def list_append_workload(spec: TestSpec) -> Workload:
    return txn_workload("list-append", spec)


def rw_register_workload(spec: TestSpec) -> Workload:
    return txn_workload("rw-register", spec)

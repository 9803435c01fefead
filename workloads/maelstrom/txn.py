"""txn-list-append and txn-rw-register (Maelstrom's workloads.md, "Workload: Txn-list-append" and
"Workload: Txn-rw-register"): one transaction per request, its micro-ops executed in order.

  f     invoke value                      request body                 ok completion value
  txn   [[f, k, v], ...] (reads v None)   {"type": "txn", "txn": ...}  the reply's `txn`, reads filled in

  micro-op     txn-list-append              txn-rw-register
  read         ["r", k, None] -> [..]/None  ["r", k, None] -> v/None
  write        ["append", k, v]             ["w", k, v]

A txn_ok must carry the request's micro-ops, in order, with the same functions and keys and the
writes' values unchanged; a read of list-append must be a list or null (a key never appended). Any
other txn_ok is malformed, so info (it may have happened, and its reads are not believed). Errors
are the codec's: 30 (txn-conflict) and the other definite codes end the txn fail, any other info.

The ops, generator and Elle-style check are workloads.txn's list-append and rw-register, under
Maelstrom's names, with Maelstrom's defaults where they differ from ours: max_writes_per_key 16,
and txn-rw-register infers version orders from writes that follow reads in one transaction
(wfr_keys true, as Maelstrom's does). Options: workloads.txn's (key_count, max_txn_length,
consistency_models, ...); `jepsen-py maelstrom` sets them from --key-count, --max-txn-length,
--max-writes-per-key and --consistency-models.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field
from jepsen_py.workloads.txn import FS, WRITE_F, txn_workload

from jepsen_py.history import Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

#: Maelstrom's name -> ours.
NAMES = {"txn-list-append": "list-append", "txn-rw-register": "rw-register"}
#: Maelstrom's defaults (its core.clj and txn-rw-register.clj) where they differ from workloads.txn's.
MAELSTROM_DEFAULTS: dict[str, dict[str, Any]] = {
    "txn-list-append": {"max_writes_per_key": 16},
    "txn-rw-register": {"max_writes_per_key": 16, "wfr_keys": True},
}


class TxnCodec:
    """txn ops as Maelstrom's txn messages; `write_f` is the workload's write ("append" or "w")."""

    fs = FS
    write_f = "append"

    def request(self, op: Op) -> dict[str, Any]:
        return {"type": "txn", "txn": [list(m) for m in op.value]}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        return decode(reply, "txn_ok", lambda r: self.completed(op.value, field(r, "txn")))

    def completed(self, asked: list[list[Any]], got: Any) -> list[list[Any]]:
        """The completed micro-ops: `got`, checked against `asked`; ValueError (named "txn") when it
        is not the same transaction with its reads filled in."""
        if not isinstance(got, list) or len(got) != len(asked):
            n = len(got) if isinstance(got, list) else "not a list of"
            raise ValueError(f"txn ({n} micro-ops for {len(asked)})")
        out = []
        for i, (want, mop) in enumerate(zip(asked, got, strict=True)):
            bad = (not isinstance(mop, list) or len(mop) != 3 or mop[0] != want[0] or mop[1] != want[1]
                   or (mop[0] != "r" and mop[2] != want[2])
                   or (mop[0] == "r" and self.write_f == "append" and mop[2] is not None
                       and not isinstance(mop[2], list)))
            if bad:
                raise ValueError(f"txn (micro-op {i} is not the request's {want[0]} of key {want[1]!r})")
            out.append([mop[0], mop[1], mop[2]])
        return out


class ListAppendCodec(TxnCodec):
    write_f = WRITE_F["list-append"]


class RwRegisterCodec(TxnCodec):
    write_f = WRITE_F["rw-register"]


def maelstrom_txn_workload(name: str, spec: TestSpec) -> Workload:
    """workloads.txn's workload `NAMES[name]` under Maelstrom's `name`, with Maelstrom's defaults."""
    options = {**MAELSTROM_DEFAULTS[name], **spec.options}
    w = txn_workload(NAMES[name], replace(spec, options=options))
    return replace(w, name=name, meta={"maelstrom": name, **w.meta})


def txn_list_append_workload(spec: TestSpec) -> Workload:
    return maelstrom_txn_workload("txn-list-append", spec)


def txn_rw_register_workload(spec: TestSpec) -> Workload:
    return maelstrom_txn_workload("txn-rw-register", spec)

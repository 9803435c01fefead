"""lin-kv (Maelstrom's workloads.md, "Workload: Lin-kv"): reads, writes and compare-and-sets on
independent keys of a linearizable key-value store, each key checked as a cas-register.

  f       invoke value   request body                                       ok completion value
  read    None           {"type": "read", "key": k}                         the reply's `value`
  write   int v          {"type": "write", "key": k, "value": v}            v
  cas     [old, new]     {"type": "cas", "key": k, "from": old, "to": new}  [old, new]

Errors are the codec's (definite fail, else info): a cas answered 20 (key-does-not-exist) or 22
(precondition-failed) certainly did not happen. One reading is stricter than Maelstrom's: a read
answered 20 completes ok with the value None, since the store has said the key holds nothing (the
cas-register's empty register), so a node that forgets a written key is caught, not skipped.

The ops, keys and their rotation are the register workload's (`RegisterGen`: every write and cas
writes a value new to its key), checked by checkers.linearizable with the cas-register model
(Knossos's, searched as Porcupine does), every key on its own. Options: the register workload's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jepsen_py.workloads.maelstrom.codec import Outcome, decode, field
from jepsen_py.workloads.register import FS, register_workload

from jepsen_py.history import OK, Op
from jepsen_py.protocols import TestSpec
from jepsen_py.workload import Workload

#: Maelstrom's key-does-not-exist.
KEY_DOES_NOT_EXIST = 20


class LinKvCodec:
    """read, write and cas ops as Maelstrom's lin-kv messages."""

    fs = FS

    def request(self, op: Op) -> dict[str, Any]:
        if op.f == "read":
            return {"type": "read", "key": op.key}
        if op.f == "write":
            return {"type": "write", "key": op.key, "value": op.value}
        old, new = op.value
        return {"type": "cas", "key": op.key, "from": old, "to": new}

    def outcome(self, op: Op, reply: dict[str, Any]) -> Outcome:
        if op.f == "read":
            if reply.get("type") == "error" and reply.get("code") == KEY_DOES_NOT_EXIST:
                return Outcome(OK, None)
            return decode(reply, "read_ok", lambda r: field(r, "value"))
        return decode(reply, f"{op.f}_ok", lambda r: op.value)


def linkv_workload(spec: TestSpec) -> Workload:
    """The register workload (its ops, keys and checkers), under Maelstrom's name."""
    w = register_workload(spec)
    return replace(w, name="lin-kv", meta={"maelstrom": "lin-kv", **w.meta})

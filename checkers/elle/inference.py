"""What a transactional check may assume to order a register's versions: Elle's rw-register
options, with Elle's defaults (assume nothing beyond the initial state).

A register's read says nothing of earlier versions, so besides "the initial (nil) state precedes
every written version" its version order comes only from assumptions about the database:
  wfr_keys           writes follow reads inside a transaction (what it read precedes what it wrote)
  sequential_keys    each key is sequentially consistent: a process's transactions see its
                     versions in order
  linearizable_keys  each key is linearizable: real-time order orders its versions
  transaction_order  the database's own commit order, a position per transaction (by the history
                     index of its completion), for white-box tests
List-append needs none of them: every read shows the order itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Inference:
    wfr_keys: bool = False
    sequential_keys: bool = False
    linearizable_keys: bool = False
    transaction_order: Mapping[int, float] | None = None

    def sources(self) -> list[str]:
        """The version-order sources in use, in the order they are tried (Elle's names)."""
        out = ["initial-state"]
        if self.transaction_order is not None:
            out.append("transaction-order")
        if self.wfr_keys:
            out.append("wfr-keys")
        if self.sequential_keys:
            out.append("sequential-keys")
        if self.linearizable_keys:
            out.append("linearizable-keys")
        return out


NONE = Inference()

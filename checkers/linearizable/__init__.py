"""Linearizability checking: Knossos's models, Porcupine's algorithm, a polynomial fast path.

    from jepsen_py.checkers.linearizable import check, get_model, Budget
    result = check(ops, get_model("cas-register", 0), budget=Budget(time_s=60, memory_mb=2048))

Modules, one idea each: model (the Model protocol and Call), models (the models), calls (history
records to calls: Jepsen's rules for fail/info), search (Wing & Gong + Lowe's memo), fastpath
(unique-value registers in O(n log n)), partition (per-key split, parallel check, merge), budget,
report (why a history is not linearizable), checker (the Checker for workloads).

Semantics: ok ops took effect between invocation and completion; fail ops did not happen (dropped,
except where the model reads a failure as an observation, e.g. cas-register's failed_cas=
"mismatch"); info ops and invocations never completed may take effect at any time after their
invocation, or never; an info read constrains nothing.

Result of `check` / `merge_key_results` (plain JSON data)::

    {
      "valid": true | false | "unknown",
      "model": "cas-register",
      "keys_checked": 3,            # partitions checked
      "ops": 1234,                  # calls checked (after dropping fail ops and no-ops)
      "engines": {"fastpath": 2, "search": 1},
      "unknown_reasons": {"<key>": "time limit reached after ... steps ..."},
      "ignored": {"list": 12},                        # ops outside the model's operations, if any
      "invalid_keys": ["<key>", ...],                 # only when some key is invalid
      "failures": [                                   # one per invalid key, at most 100
        {
          "key": <key as JSON>,
          "op": {"index": 17, "complete_index": 21, "process": 3, "f": "read", "key": ...,
                 "value": 4, "type": "ok"},           # the first op that cannot be linearized
          "longest_linearization": [2, 5, 9, ...],    # invoke indices, in linearization order
          "state_before": <model state after that prefix, as JSON>,
          "candidates": [{"op": 12, "f": "write", "value": 3, "why": "..."}],
          "window": [indices of ops concurrent with the failing op and the prefix's last 5],
          "explanation": "op 17 (read 4 by process 3) cannot be linearized: ...",
          "fastpath": "..."                           # present when the fast path found it first
        }
      ],
      "anomalies": [{"kind": "nonlinearizable", "ops": [invoke index, completion index],
                     "key": <key>, "window": [...], "explanation": "..."}],
      "failures_truncated": 250,                      # only when more than 100 keys failed
      "anomaly_counts": {"nonlinearizable": 250},     # every invalid key, listed or not
      "failing_kinds": ["nonlinearizable"], "reported_kinds": [],
      "fastpath_disagreed": {...}                     # never expected: fast path vs search
    }

A failure found by the fast path alone (the detailed search was skipped or ran out of budget) has
"longest_linearization": [], "state_before": null, "candidates": [] and the fast path's reason in
"explanation". Every key is checked within the budget and each invalid one reported (Jepsen's
independent checker); `check(..., stop_at_first_failure=True)` stops searching after the first
invalid key instead, leaving keys that needed a search "unknown" with that reason.

Per-key results (`check_key`) are {"key", "model", "ops", "dropped": {"fail", "noop"}, "valid",
"engine": "fastpath" | "search" | "fastpath+search", "failure"?, "unknown_reason"?, "steps"?,
"memo"?}.
"""

from __future__ import annotations

from jepsen_py.checkers.linearizable.budget import Budget, BudgetExceeded
from jepsen_py.checkers.linearizable.checker import LinearizableChecker
from jepsen_py.checkers.linearizable.model import Call, Model
from jepsen_py.checkers.linearizable.models import MODELS, get_model
from jepsen_py.checkers.linearizable.partition import check, check_key, merge_key_results, split_by_key

__all__ = [
    "MODELS",
    "Budget",
    "BudgetExceeded",
    "Call",
    "LinearizableChecker",
    "Model",
    "check",
    "check_key",
    "get_model",
    "merge_key_results",
    "split_by_key",
]

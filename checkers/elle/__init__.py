"""Transactional isolation checking after Elle (Kingsbury & Alvaro): infer a dependency graph
from a history of transactions and name the anomalies it shows.

    from jepsen_py.checkers.elle import check, ElleChecker
    result = check(history, "list-append", ["serializable"], time_s=60)
    result = check(history, "rw-register", [], anomalies=["G2"],     # Elle's :anomalies
                   inference=Inference(wfr_keys=True))               # Elle's rw-register options
    ElleChecker("rw-register", ["snapshot-isolation"])     # in a workload's checker list

History: each client op with f "txn" is a transaction; its value a list of micro-ops
[f, key, value]: ["append", k, v] / ["r", k, [..]] for list-append, ["w", k, v] / ["r", k, v]
for rw-register. Written values are unique per key. ok transactions happened (their completion's
reads count), fail ones did not, info ones may or may not have: their writes count, their reads
never do. Elle's own tests are the spec (tests/checkers/elle/test_elle_*.py; docs/checkers.md
lists where the answers differ).

Modules, one idea each: txn (history -> transactions), listappend and rwregister (inference:
version orders, non-cycle anomalies, ww/wr/rw edges; inference: what rw-register may assume),
order (process and real-time edges), graph (edges, strongly connected components), cycles (the
shortest cycle of each kind), exists (a model's cycle proven by a component where the search gave
up), explain (sentences), models (consistency models and what they prohibit), budget, found,
checker (the check and the Checker), perkey (inference key by key, merged: for an engine that
spreads keys over machines, spark/distributed_txn.py).

Result (plain JSON data)::

    {
      "valid": true | false | "unknown",
      "workload": "list-append",
      "consistency_models": ["serializable"],        # the models checked
      "anomalies_asked": ["G2"],                     # and the anomalies asked for
      "anomaly_types": ["G-single-item", "G1a"],     # every kind found, prohibited or not
      "prohibited_anomaly_types": ["G-single-item", "G1a"],
      "failing_kinds": ["G-single-item", "G1a"],     # the same, as every summary reads it
      "anomaly_counts": {"G-single-item": 1, "G1a": 3},  # cycles: one per component and kind
      "anomalies": [                                 # examples of the prohibited kinds, at most
        {"kind": "G-single-item", "ops": [12, 15, 40, 44],  # 20 per kind; "ops": history indices
         "cycle": [txn, ...],
         "steps": [{"from": 12, "to": 40, "type": "rw", "key": "x",
                    "explanation": "T12 read x=[..3], and T40 appended 4, ..."}, ...],
         "explanation": "...: a cycle, so T12 would have to precede itself"},
        {"kind": "G1a", "ops": [...], "key": ..., "reader": txn, "writer": txn,
         "explanation": "..."}],
      "other_anomalies": [...],                      # examples of kinds the models allow
      "not": ["read-committed"],                     # Elle's :not, the weakest models ruled out
      "also_not": ["serializable", ...],             # the stronger models ruled out with them
      "txns": {"ok": 980, "fail": 12, "info": 8},
      "edges": {"ww": 1800, "wr": 2500, "rw": 2400, "process": 970, "realtime": 2940},
      "cyclic_components": 1,
      "unknown_reason": "time limit of 60 s reached during the cycle search"   # when unknown
    }

where txn is {"index", "complete_index", "process", "type", "value"}. The verdict is false when
a found anomaly is prohibited by the models checked (or asked for); unknown when the budget ran
out first, no transaction completed, no two transactions depend on each other
(empty-transaction-graph) or a search gave up (cycle-search-timeout); true otherwise. Anomalies
the models allow are still reported.
"""

from __future__ import annotations

from jepsen_py.checkers.elle.budget import Deadline, OutOfTime
from jepsen_py.checkers.elle.checker import WORKLOADS, ElleChecker, check
from jepsen_py.checkers.elle.inference import Inference
from jepsen_py.checkers.elle.models import MODELS, boundary, impossible, prohibited
from jepsen_py.checkers.elle.wanted import parse_wanted

__all__ = ["MODELS", "WORKLOADS", "Deadline", "ElleChecker", "Inference", "OutOfTime", "boundary", "check",
           "impossible", "parse_wanted", "prohibited"]

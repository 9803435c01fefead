"""Checkers for Maelstrom's workloads (jepsen-io/maelstrom's doc/workloads.md), one module each:
echo, unique_ids, converge (a grow-only set every node must converge on: g-set and broadcast) and
counters (g-counter and pn-counter). lin-kv is checked by checkers.linearizable's cas-register model,
so it has no module here."""

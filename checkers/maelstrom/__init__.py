"""Checkers for Maelstrom's workloads (jepsen-io/maelstrom's doc/workloads.md), one module each:
echo, unique_ids, broadcast, counters. The g-set is checked by checkers.sets and lin-kv by
checkers.linearizable's cas-register model, so neither has a module here."""

"""Maelstrom's workloads (jepsen-io/maelstrom's doc/workloads.md) for nodes in any language: each
module is one workload's codec (op to request body, reply body to outcome), generator and checkers.
The messages travel through jepsen_py/maelstrom/'s router; nothing here does I/O."""

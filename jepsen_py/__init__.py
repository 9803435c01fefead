"""jepsen-py: Jepsen-style fault-injection testing.

The controller: CLI, history, generators, runner, store.
"""

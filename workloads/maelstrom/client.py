"""The Client (jepsen_py.protocols) for every Maelstrom workload: a codec plus a way to call a node.

The way to call is passed in, `call(client, node, body, timeout) -> reply body | None` (None: no
reply in time), so the workloads need nothing of the network that carries the messages; the router
(jepsen_py/maelstrom/router.py) fits as `lambda c, n, b, t: router.call(c, n, b, t).body`. Each
process of the history is Maelstrom's client `c<process>`, as Maelstrom gives each of its processes
a client id of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jepsen_py.workloads.maelstrom.codec import Codec, timeout_outcome

from jepsen_py.history import Op
from jepsen_py.protocols import Test

Call = Callable[[str, str, dict[str, Any], float], "dict[str, Any] | None"]

#: The share of the run's op timeout a call may wait, so the reply's outcome (not the controller's
#: own timeout) ends the op.
CALL_SHARE = 0.9


class MaelstromClient:
    """One workload's ops sent to one node through `call`; the receiver is a template (`open`
    returns a copy bound to a node). Reusable after an info: a call leaves nothing behind."""

    def __init__(self, codec: Codec, call: Call, timeout: float | None = None,
                 node: str | None = None) -> None:
        self.codec = codec
        self.call = call
        self.timeout = timeout
        self.node = node

    def open(self, test: Test, node: str) -> MaelstromClient:
        return MaelstromClient(self.codec, self.call, self.timeout, node)

    def reusable(self, test: Test) -> bool:
        return True

    def invoke(self, test: Test, op: Op) -> Op:
        node = op.node or self.node
        if node is None:
            raise ValueError(f"op {op.f!r} names no node and the client is bound to none")
        timeout = self.timeout if self.timeout is not None else CALL_SHARE * test.spec.op_timeout
        reply = self.call(f"c{op.process}", node, self.codec.request(op), timeout)
        outcome = timeout_outcome() if reply is None else self.codec.outcome(op, reply)
        done = outcome.completion(op)
        done.node = node
        return done

    def close(self, test: Test) -> None: ...

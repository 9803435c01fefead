"""A Jepsen client as Maelstrom's: ops go through the router as requests from a client id of its
own, and replies come back as completions through the workload's codec."""

from __future__ import annotations

import itertools

from jepsen_py.history import Op
from jepsen_py.maelstrom.router import Router
from jepsen_py.protocols import Test
from jepsen_py.workloads.maelstrom.codec import Codec, timeout_outcome


class MaelstromClient:
    """The template is opened once per worker process and node; each open is a new client c1, c2,
    ... (c0 sends the inits), as Maelstrom opens a new client per Jepsen process. Not reusable: a
    new process gets a new id, so a late reply to an old request can never answer a new one."""

    def __init__(self, router: Router, codec: Codec, timeout_s: float, *,
                 ids: itertools.count[int] | None = None, node: str | None = None,
                 name: str | None = None) -> None:
        self.router = router
        self.codec = codec
        self.timeout_s = timeout_s
        self._ids = ids if ids is not None else itertools.count(1)
        self.node = node
        self.name = name

    def open(self, test: Test, node: str) -> MaelstromClient:
        return MaelstromClient(self.router, self.codec, self.timeout_s, ids=self._ids, node=node,
                               name=f"c{next(self._ids)}")

    def invoke(self, test: Test, op: Op) -> Op:
        assert self.node is not None and self.name is not None, "invoke on an opened client only"
        result = self.router.call(self.name, self.node, self.codec.request(op), self.timeout_s)
        if result.outcome == "timeout" or result.body is None:
            return timeout_outcome().completion(op)
        return self.codec.outcome(op, result.body).completion(op)

    def close(self, test: Test) -> None:
        return None  # nothing held: a reply still on its way is counted late by the router

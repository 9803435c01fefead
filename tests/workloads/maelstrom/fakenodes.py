"""In-process stand-ins for Maelstrom nodes: one shared state answering every workload's messages
correctly, and switches for the bugs the checkers must catch. `call` has the client's signature."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.workloads.maelstrom.codec import Codec, timeout_outcome

from jepsen_py.history import Op
from jepsen_py.protocols import Test


@dataclass
class FakeNodes:
    workload: str = ""  # whose read this is: g-set, broadcast or a counter
    duplicate_ids: bool = False  # every 5th generate returns the id before it
    isolated: str | None = None  # this node keeps only what it was sent itself (g-set, broadcast)
    stale_kv: bool = False  # lin-kv reads answer the key's previous value
    local_offsets: bool = False  # kafka: each node keeps logs of its own (an offset given out twice)
    split_txn: bool = False  # each node applies txns to a copy of its own, never shared
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: int = 0
    elements: list[Any] = field(default_factory=list)
    own: list[Any] = field(default_factory=list)
    counter: int = 0
    kv: dict[Any, Any] = field(default_factory=dict)
    previous: dict[Any, Any] = field(default_factory=dict)
    calls: int = 0
    kafka_logs: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    txn_stores: dict[str, dict[Any, Any]] = field(default_factory=dict)

    def call(self, client: str, node: str, body: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        with self.lock:
            self.calls += 1
            return self._answer(node, body)

    def _answer(self, node: str, b: dict[str, Any]) -> dict[str, Any] | None:
        t = b["type"]
        if t == "echo":
            return {"type": "echo_ok", "echo": b["echo"]}
        if t in ("send", "poll", "commit_offsets", "list_committed_offsets"):
            return self._kafka(node, b)
        if t == "txn":
            return {"type": "txn_ok", "txn": self._txn(node, b["txn"])}
        if t == "generate":
            self.ids += 1
            dup = self.duplicate_ids and self.ids % 5 == 0
            return {"type": "generate_ok", "id": self.ids - 1 if dup else self.ids}
        if t == "topology":
            return {"type": "topology_ok"}
        if t in ("broadcast", "add") and ("message" in b or "element" in b):
            x = b.get("message", b.get("element"))
            (self.own if node == self.isolated else self.elements).append(x)
            return {"type": f"{t}_ok"}
        if t == "add":
            self.counter += b["delta"]
            return {"type": "add_ok"}
        if t == "read" and "key" in b:
            if b["key"] not in self.kv:
                return {"type": "error", "code": 20, "text": "no such key"}
            return {"type": "read_ok", "value": (self.previous if self.stale_kv else self.kv).get(b["key"])}
        if t == "write":
            self.previous[b["key"]] = self.kv.get(b["key"])
            self.kv[b["key"]] = b["value"]
            return {"type": "write_ok"}
        if t == "cas":
            if b["key"] not in self.kv:
                return {"type": "error", "code": 20, "text": "no such key"}
            if self.kv[b["key"]] != b["from"]:
                return {"type": "error", "code": 22, "text": "mismatch"}
            self.previous[b["key"]] = self.kv[b["key"]]
            self.kv[b["key"]] = b["to"]
            return {"type": "cas_ok"}
        if t == "read":
            seen = sorted(self.own if node == self.isolated else self.elements + self.own)
            if self.workload == "broadcast":
                return {"type": "read_ok", "messages": seen}
            return {"type": "read_ok", "value": seen if self.workload == "g-set" else self.counter}
        return {"type": "error", "code": 10, "text": f"no {t}"}

    def _txn(self, node: str, txn: list[list[Any]]) -> list[list[Any]]:
        """A txn applied whole to the one store (or, split, to this node's own)."""
        store = self.txn_stores.setdefault(node if self.split_txn else "", {})
        out = []
        for f, k, v in txn:
            if f == "r":
                v = list(store[k]) if isinstance(store.get(k), list) else store.get(k)
            elif f == "append":
                store.setdefault(k, []).append(v)
            else:
                store[k] = v
            out.append([f, k, v])
        return out

    def _kafka(self, node: str, b: dict[str, Any]) -> dict[str, Any]:
        """One log per key, dense offsets (or, local_offsets, this node's own logs)."""
        logs = self.kafka_logs.setdefault(node if self.local_offsets else "", {})
        t = b["type"]
        if t == "send":
            logs.setdefault(b["key"], []).append(b["msg"])
            return {"type": "send_ok", "offset": len(logs[b["key"]]) - 1}
        if t == "poll":
            msgs = {k: [[o, logs[k][o]] for o in range(max(0, start), len(logs[k]))]
                    for k, start in b["offsets"].items() if start < len(logs.get(k, []))}
            return {"type": "poll_ok", "msgs": msgs}
        if t == "commit_offsets":
            for k, o in b["offsets"].items():
                self.committed[k] = max(o, self.committed.get(k, o))
            return {"type": "commit_offsets_ok"}
        return {"type": "list_committed_offsets_ok",
                "offsets": {k: self.committed[k] for k in b["keys"] if k in self.committed}}


@dataclass
class FakeClient:
    """A workload's codec talking to FakeNodes, as the maelstrom backend's client talks to the router
    (no reply is a timeout, an info)."""

    codec: Codec
    nodes: FakeNodes
    node: str | None = None

    def open(self, test: Test, node: str) -> FakeClient:
        return FakeClient(self.codec, self.nodes, node)

    def invoke(self, test: Test, op: Op) -> Op:
        node = op.node or self.node
        assert node is not None
        reply = self.nodes.call(f"c{op.process}", node, self.codec.request(op), 1.0)
        return (timeout_outcome() if reply is None else self.codec.outcome(op, reply)).completion(op)

    def close(self, test: Test) -> None: ...

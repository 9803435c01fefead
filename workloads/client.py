"""The workloads' client for OUR cluster: one ClusterClient per worker and node, outcomes classified.

Jepsen's three outcomes, decided by what the cluster can and cannot have done:
- ok: the node answered the op (the answer names node, role, term, leader: kept in the completion);
- fail: a definite refusal (not_leader, unavailable, already_exists, an invalid request, or a
  connection that could not even be opened): the op certainly did not take effect;
- info: a timeout or a connection lost after the request was sent: it may or may not have.

Op shapes (f, key, value of the invocation -> value of an ok completion):
  commit    "group/topic/partition", offset        -> the offset
  fetch     "group/topic/partition", None          -> the committed offset, None if none
  create    topic name, {"partitions": n, "rf": r} -> {"created": True}
  describe  topic name, None                       -> the topic's description, None if absent
  list      None, None                             -> sorted topic names
  txn       None, [[f, k, v], ...] micro-ops       -> the micro-ops, reads filled in (one Raft entry;
            the list-append and rw-register workloads: see workloads/txn.py)
An op whose invocation names a node (final reads) goes to that node; otherwise to the worker's node.

The op logic is written once, in OpClient and Exchange (which node, which fs, the request an op is, its
answer or refusal as the completion); MetadataClient makes its calls with the blocking ClusterClient and
the simulator's SimClient (jepsen_py/sim/client.py) awaits them on an AsyncClusterClient, the two sharing
jepsen_py.cluster.client's ClientCore.
"""

from __future__ import annotations

from dataclasses import replace
from types import TracebackType
from typing import Any

from jepsen_py.cluster.client import ClusterClient, ClusterError

from jepsen_py.errors import BadInput
from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.protocols import Test

FS = ("commit", "fetch", "create", "describe", "list", "txn")
DEFAULT_PORT = 9092


def split_key(key: Any) -> tuple[str, str, int]:
    """"group/topic/partition" -> (group, topic, partition); the group may itself contain '/'."""
    if isinstance(key, list | tuple) and len(key) == 3:
        return str(key[0]), str(key[1]), int(key[2])
    group, topic, part = str(key).rsplit("/", 2)
    return group, topic, int(part)


def offsets_key(group: str, topic: str, partition: int) -> str:
    return f"{group}/{topic}/{partition}"


class Exchange:
    """One op on its way: the node it goes to, the connection to that node, the request it is. Its
    completion is `answer`'s ok or, for the ClusterError its `with` body raised, the refusal."""

    def __init__(self, op: Op, node: str, conn: Any) -> None:
        self.op = op
        self.node = node
        self.conn = conn
        self.api, self.args = request(op)
        self.completion: Op | None = None

    def answer(self, resp: dict[str, Any]) -> None:
        self.completion = answered(self.op, self.node, resp)

    def __enter__(self) -> Exchange:
        return self

    def __exit__(self, typ: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if isinstance(e, ClusterError):
            self.completion = refused(self.op, self.node, e)
            return True
        return False


class OpClient:
    """The workload client bar its transport: `open` binds a copy to one node, `_exchange` readies an op
    on that node's connection (made once by `_new_conn`); a subclass makes the call (see `invoke`)."""

    def __init__(self, port: int, timeout: float | None, fs: frozenset[str]) -> None:
        self.port = port
        self.timeout = timeout
        self.fs = fs
        self.node: str | None = None
        self._conns: dict[str, Any] = {}

    def _copy(self) -> OpClient:
        raise NotImplementedError

    def _new_conn(self, test: Test, node: str) -> Any:
        raise NotImplementedError

    def open(self, test: Test, node: str) -> Any:
        c = self._copy()
        c.node = node
        return c

    def reusable(self, test: Test) -> bool:
        """True: a new process may keep this client. An op leaves each connection either closed
        (the client closes it on a timeout, a lost stream or, in the simulator, a cancelled call) or
        with no request outstanding (its answer was read), so nothing an earlier process sent can hold
        a later op behind it."""
        return True

    def _timeout(self, test: Test) -> float:
        if self.timeout is not None:
            return self.timeout
        # Answer before the runner's own op timeout fires, so the client classifies the outcome.
        return max(0.5, min(5.0, 0.8 * float(getattr(test.spec, "op_timeout", 10.0))))

    def _exchange(self, test: Test, op: Op) -> Exchange:
        """BadInput for an op this client cannot send; else the op bound to its node's connection."""
        node = op.node or self.node
        if node is None:
            raise BadInput("client used before open(): no node to talk to")
        if op.f not in self.fs:
            raise BadInput(f"workload client cannot perform {op.f!r} (knows {', '.join(sorted(self.fs))})")
        conn = self._conns.get(node)
        if conn is None:
            conn = self._conns[node] = self._new_conn(test, node)
        return Exchange(op, node, conn)

    def close(self, test: Test) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()


class MetadataClient(OpClient):
    """Client template for the metadata service; `open` binds a copy to one node."""

    def __init__(self, port: int = DEFAULT_PORT, timeout: float | None = None,
                 fs: frozenset[str] = frozenset(FS)) -> None:
        super().__init__(port, timeout, fs)

    def _copy(self) -> MetadataClient:
        return MetadataClient(self.port, self.timeout, self.fs)

    def _new_conn(self, test: Test, node: str) -> ClusterClient:
        if test.backend is None:
            raise BadInput("the cluster's client needs a backend that provisions nodes "
                           "(--backend docker, ssh or local), not 'none'")
        host, port = test.backend.client_endpoint(node, self.port)
        return ClusterClient(host, port, timeout=self._timeout(test))

    def invoke(self, test: Test, op: Op) -> Op:
        with self._exchange(test, op) as x:
            x.answer(x.conn.call(x.api, **x.args))
        assert x.completion is not None
        return x.completion


def request(op: Op) -> tuple[str, dict[str, Any]]:
    """The API call an op is: (request name, its arguments). Pure, so the blocking client here and
    the simulator's asynchronous one send the same requests for the same ops."""
    f = op.f
    if f == "commit":
        g, t, p = split_key(op.key)
        return "commit_offset", {"group": g, "topic": t, "partition": p, "offset": int(op.value)}
    if f == "fetch":
        g, t, p = split_key(op.key)
        return "fetch_offset", {"group": g, "topic": t, "partition": p, "local": False}
    if f == "create":
        v = op.value if isinstance(op.value, dict) else {}
        return "create_topic", {"name": str(op.key), "partitions": int(v.get("partitions", 1)),
                                "rf": int(v.get("rf", 1))}
    if f == "describe":
        return "describe_topic", {"name": str(op.key), "local": False}
    if f == "list":
        return "list_topics", {"local": False}
    if f == "txn":
        mops = op.value if isinstance(op.value, list) else []
        return "txn", {"mops": [list(m) if isinstance(m, list | tuple) else m for m in mops]}
    raise BadInput(f"workload client cannot perform {f!r} (knows {', '.join(FS)})")


def _value(op: Op, resp: dict[str, Any]) -> Any:
    f = op.f
    if f == "commit":
        return op.value
    if f == "fetch":
        return resp.get("offset")
    if f == "create":
        return {"created": bool(resp.get("created", True))}
    if f == "describe":
        return resp.get("topic")
    if f == "txn":
        return resp.get("mops")
    return list(resp.get("topics") or [])


def answered(op: Op, node: str, resp: dict[str, Any]) -> Op:
    """The ok completion of `op` from the server's answer (the answer's node, role, term, leader kept)."""
    return replace(op, type=OK, value=_value(op, resp), node=resp.get("node") or node, error=None,
                   meta={"role": resp.get("role"), "term": resp.get("term"), "leader": resp.get("leader")})


def refused(op: Op, node: str, e: ClusterError) -> Op:
    """The fail (definite) or info (maybe done) completion of `op` for a client error."""
    meta: dict[str, Any] = {"role": e.role, "term": e.term, "leader": e.leader}
    if getattr(e, "leader_hint", None) is not None:
        meta["leader_hint"] = e.leader_hint  # type: ignore[attr-defined]
    code = e.error or _code(e)
    return replace(op, type=FAIL if e.definite else INFO, node=e.node or node, error=code,
                   meta={k: v for k, v in meta.items() if v is not None} | {"message": e.message})


def _code(e: Exception) -> str:
    name = type(e).__name__
    return {"NotLeader": "not_leader", "Unavailable": "unavailable", "Timeout": "timeout",
            "AlreadyExists": "already_exists", "ProtocolError": "protocol"}.get(name, name.lower())


__all__ = ["FS", "Exchange", "MetadataClient", "OpClient", "answered", "offsets_key", "refused", "request",
           "split_key"]

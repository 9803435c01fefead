"""The client API over TCP: length-prefixed JSON requests in, JSON answers out (cluster/framing.py).

Request:  {"id": 7, "op": "commit_offset", "group": "g", "topic": "t", "partition": 0, "offset": 5,
           "timeout_ms": 4500}
Answer:   {"id": 7, "ok": true, "result": {...}, "node": "n2", "role": "follower", "term": 3,
           "leader": "n1"}
       or {"id": 7, "ok": false, "error": "not_leader" | "unavailable" | "timeout" | "already_exists"
           | "bad_request" | "unknown_op" | "invalid" | ..., "message": "...", "leader_hint": ..., ...}

A transaction {"op": "txn", "mops": [["append", k, 3], ["r", k, null], ["w", j, 4], ...]} is one
write: proposed as ONE entry and applied whole (state_machine.MetadataState._apply_txn), so its reads
are linearizable and see exactly the state at its entry plus its own earlier writes; the answer's
"mops" are the micro-ops with the reads filled in. A transaction of reads only is served like a
read: after the read barrier, from one applied state, with no entry.

Writes are proposed to the Raft core (a follower's proposal is forwarded to the leader by the core)
and answered when this node applies them. Reads wait for a ReadIndex (or lease) barrier and are then
served from this node's applied state, or served at once in local mode (or when the request says
"local": true, the explicit stale-allowed read a final-state check uses on every node).
`unavailable`, `not_leader` and the validation errors are definite (nothing was proposed); `timeout`
is indeterminate. Requests on one connection may be pipelined: each answer carries its request's id.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from .framing import MAX_CLIENT_FRAME, FrameError, encode, read_frame
from .io import Listener, StreamWriter
from .raft.errors import ProposalDropped
from .state_machine import CommandError, round_robin_leader, validate

if TYPE_CHECKING:
    from .node import Node

WRITE_OPS = ("create_topic", "commit_offset", "txn")
READ_OPS = ("describe_topic", "list_topics", "fetch_offset")
OPS = (*WRITE_OPS, *READ_OPS, "status")
MAX_IN_FLIGHT_PER_CONN = 256
MAX_TIMEOUT_MS = 60_000


def _read_only(req: dict[str, Any]) -> bool:
    """A transaction of reads only (it may take a read barrier instead of a log entry)."""
    mops = req.get("mops")
    return isinstance(mops, list) and bool(mops) and all(
        isinstance(m, list) and len(m) == 3 and m[0] == "r" for m in mops)


class RequestError(Exception):
    """A request that gets an error answer (code, message, extra fields)."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


def write_command(op: str, req: dict[str, Any]) -> dict[str, Any]:
    """The state-machine command for a client write, validated: a bad one is the caller's error."""
    if op == "create_topic":
        fields: tuple[str, ...] = ("name", "partitions", "rf")
    elif op == "txn":
        fields = ("mops",)
    else:
        fields = ("group", "topic", "partition", "offset")
    cmd = {"op": op, **{k: req.get(k) for k in fields}}
    try:
        validate(cmd)
    except CommandError as e:
        raise RequestError("bad_request", e.message) from None
    return cmd


class ClientServer:
    """Serves the client API for one node."""

    def __init__(self, node: Node, host: str, port: int) -> None:
        self.node = node
        self.host = host
        self.port = port
        self._server: Listener | None = None
        self._conns: set[StreamWriter] = set()
        self.requests = 0
        self.bad_requests = 0

    async def start(self) -> None:
        self._server = await self.node.env.net.start_server(self._handle, self.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._conns):
            w.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: StreamWriter) -> None:
        self._conns.add(writer)
        peer = writer.get_extra_info("peername")
        slots = asyncio.Semaphore(MAX_IN_FLIGHT_PER_CONN)
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    req = await read_frame(reader, MAX_CLIENT_FRAME)
                except FrameError as e:
                    self.bad_requests += 1
                    self._send(writer, self._error(None, "bad_request", str(e)))
                    if e.fatal:
                        self.node.log(f"client {peer}: closing connection: {e}")
                        break
                    continue
                if req is None:
                    break
                await slots.acquire()
                task = asyncio.ensure_future(self._serve_one(req, writer))
                tasks.add(task)
                task.add_done_callback(lambda t: (tasks.discard(t), slots.release()))
        except (OSError, ConnectionError):
            pass
        except Exception as e:  # whatever a client sends, the node keeps serving the others
            self.node.log(f"client {peer}: closing connection after unexpected error: {e!r}")
        finally:
            for t in tasks:
                t.cancel()
            self._conns.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _send(self, writer: StreamWriter, resp: dict[str, Any]) -> None:
        if not writer.is_closing():
            writer.write(encode(resp))

    async def _serve_one(self, req: dict[str, Any], writer: StreamWriter) -> None:
        rid = req.get("id")
        if not (rid is None or isinstance(rid, str | int)) or isinstance(rid, bool):
            rid = None
        self.requests += 1
        try:
            result = await self.dispatch(req)
            resp = {"id": rid, "ok": True, "result": result, **self.node.whoami()}
        except RequestError as e:
            if e.code in ("bad_request", "unknown_op", "invalid"):
                self.bad_requests += 1
            resp = self._error(rid, e.code, e.message, **e.extra)
        except Exception as e:  # never let one request take the node down; say so
            self.node.log(f"internal error serving {str(req)[:200]}: {e!r}")
            resp = self._error(rid, "timeout", f"internal error: {e!r}")
        self._send(writer, resp)

    def _error(self, rid: Any, code: str, message: str, **extra: Any) -> dict[str, Any]:
        return {"id": rid, "ok": False, "error": code, "message": message, **extra, **self.node.whoami()}

    async def dispatch(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op not in OPS:
            raise RequestError("unknown_op", f"unknown op {op!r}; known: {', '.join(OPS)}")
        timeout = self._timeout(req)
        if op == "status":
            return self.node.status()
        if self.node.cfg.bugs.split_brain_metadata:
            # topics and offsets live in a node-local store written before (and here instead of)
            # consensus, and reads come from it: each node has its own metadata
            return self._serve_split_brain(op, req)
        if op == "txn" and _read_only(req):
            return await self._read_txn(req, timeout)
        if op in WRITE_OPS:
            return await self._write(op, req, timeout)
        return await self._read(op, req, timeout)

    def _timeout(self, req: dict[str, Any]) -> float:
        t = req.get("timeout_ms")
        if t is None:
            return self.node.cfg.request_timeout
        if not isinstance(t, int) or isinstance(t, bool) or not 0 < t <= MAX_TIMEOUT_MS:
            raise RequestError("bad_request", f"timeout_ms must be an integer in (0, {MAX_TIMEOUT_MS}]")
        return t / 1000

    async def _write(self, op: str, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        cmd = write_command(op, req)
        if op == "commit_offset" and self.node.cfg.bugs.leader_on_follower:
            # the partition's leader proposes its writes, and partition leaders were
            # assigned round-robin; one that is not the Raft leader cannot propose, and nothing
            # forwards the write to the node that can
            nodes = sorted(self.node.cfg.peers)
            owner = round_robin_leader(self.node.state, cmd["topic"], cmd["partition"], nodes)
            raft_leader = self.node.leader()
            if owner != raft_leader:
                where = f"{cmd['topic']}/{cmd['partition']}"
                raise RequestError("unavailable", f"cannot propose: partition {where} is led by {owner}, "
                                   f"which is not the Raft leader ({raft_leader})", leader_hint=owner)
        if op == "txn" and self.node.cfg.bugs.txn_split_apply:
            return await self._txn_split(cmd, timeout)
        try:
            fut = self.node.propose(cmd)
        except ProposalDropped as e:
            raise self._not_served(str(e)) from None
        try:
            result = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise RequestError("timeout", f"{op} not applied within {timeout}s (it may still be)") from None
        if not result.get("ok"):
            raise RequestError(result.get("error", "invalid"), result.get("message", ""))
        return {k: v for k, v in result.items() if k != "ok"}

    async def _txn_split(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The txn-split-apply bug: each micro-op proposed as its own entry, one after another, so
        other transactions' entries interleave with this one's. Once a piece applied, a later
        failure is indeterminate (timeout), never a definite refusal."""
        out: list[list[Any]] = []

        async def pieces() -> None:
            for mop in cmd["mops"]:
                try:
                    fut = self.node.propose({"op": "txn", "mops": [mop]})
                except ProposalDropped as e:
                    if not out:
                        raise self._not_served(str(e)) from None
                    raise RequestError("timeout", f"txn partly applied: {e}") from None
                result = await fut
                if not result.get("ok"):
                    raise RequestError("timeout" if out else result.get("error", "invalid"),
                                       result.get("message", ""))
                out.extend(result["mops"])

        try:
            await asyncio.wait_for(pieces(), timeout)
        except TimeoutError:
            raise RequestError("timeout", f"txn not applied within {timeout}s (it may still be)") from None
        return {"mops": out}

    def _not_served(self, why: str) -> RequestError:
        """The core dropped the request: no leader (unavailable) or a known leader elsewhere."""
        leader = self.node.leader()
        if leader is not None and leader != self.node.cfg.id:
            return RequestError("not_leader", f"not accepted here: {why}", leader_hint=leader)
        return RequestError("unavailable", f"not accepted: {why}", leader_hint=leader)

    async def _barrier(self, op: str, req: dict[str, Any], timeout: float) -> int:
        """Waits for the read barrier (ReadIndex, lease, or none in local mode or for a local read)."""
        local = req.get("local", False)
        if not isinstance(local, bool):
            raise RequestError("bad_request", "local must be true or false")
        try:
            fut = self.node.read_barrier(local=local)
        except ProposalDropped as e:
            raise self._not_served(str(e)) from None
        try:
            return int(await asyncio.wait_for(fut, timeout))
        except TimeoutError:
            raise RequestError("timeout", f"{op}: no read index within {timeout}s") from None

    async def _read_txn(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        """A read-only transaction: no entry, every read from one applied state after the barrier,
        so as linearizable as any read here."""
        cmd = write_command("txn", req)
        read_index = await self._barrier("txn", req, timeout)
        state = self.node.state
        return {"mops": state.read_txn(cmd["mops"]), "read_index": read_index,
                "applied": state.applied_index}

    async def _read(self, op: str, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        args = self._read_args(op, req)
        read_index = await self._barrier(op, req, timeout)
        state = self.node.state
        out: dict[str, Any] = {"read_index": read_index, "applied": state.applied_index}
        if op == "describe_topic":
            out["topic"] = state.describe(args["name"])
        elif op == "list_topics":
            out["topics"] = state.list_topics()
        else:
            out["offset"] = state.fetch_offset(args["group"], args["topic"], args["partition"])
        return out

    def _serve_split_brain(self, op: str, req: dict[str, Any]) -> dict[str, Any]:
        """The split-brain-metadata bug's node-local store: applied here at once, never replicated."""
        local = self.node.local_meta
        if op in WRITE_OPS:
            cmd = write_command(op, req)
            if local.controller is None:
                # it leads every partition it creates, as one node's local metadata topic did in the
                # post-mortem
                local.brokers = sorted(self.node.cfg.peers)
                local.controller = self.node.cfg.id
            result = local.apply(local.applied_index + 1, 0, cmd)
            if not result.get("ok"):
                raise RequestError(result.get("error", "invalid"), result.get("message", ""))
            return {k: v for k, v in result.items() if k != "ok"}
        args = self._read_args(op, req)
        out: dict[str, Any] = {"read_index": local.applied_index, "applied": local.applied_index}
        if op == "describe_topic":
            out["topic"] = local.describe(args["name"])
        elif op == "list_topics":
            out["topics"] = local.list_topics()
        else:
            out["offset"] = local.fetch_offset(args["group"], args["topic"], args["partition"])
        return out

    @staticmethod
    def _read_args(op: str, req: dict[str, Any]) -> dict[str, Any]:
        """Validates a read's arguments with the same rules as the writes that create them."""
        if op == "list_topics":
            return {}
        if op == "describe_topic":
            probe = {"op": "create_topic", "name": req.get("name"), "partitions": 1, "rf": 1}
        else:
            probe = {"op": "commit_offset", **{k: req.get(k) for k in ("group", "topic", "partition")},
                     "offset": 0}
        try:
            validate(probe)
        except CommandError as e:
            raise RequestError("bad_request", e.message) from None
        return probe

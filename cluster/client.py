"""ClusterClient: the blocking Python client of the metadata service's API (what the workloads use).

One TCP connection to one node, one request at a time. Every answer is a dict naming the serving
node, its role, its term and the leader it knows, beside the op's own fields. Outcomes map onto
Jepsen's three kinds:

- a returned dict: the op took effect (ok);
- NotLeader, Unavailable, AlreadyExists, InvalidRequest: the op definitely did not take effect (fail);
- Timeout (and ProtocolError after a request was sent): it may or may not have (info).

The client is written once: ClientCore holds everything but the moving of bytes (the request frame with
its id and timeout_ms, the answer picked out by id past stale ones, the outcome it stands for, the exact
error a failed dial, send or wait is). ClusterClient here moves the bytes over a blocking socket; the
simulator's AsyncClusterClient (jepsen_py/sim/client.py) awaits them over the simulated network.

Standard library only, like the node (it lives beside the server it speaks to), so it also runs inside a
node container and the controller imports it without the DB.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import select
import socket
from collections.abc import Callable, Iterator
from typing import Any

from .framing import MAX_PEER_FRAME, FrameDecoder, FrameError, encode


class ClusterError(Exception):
    """Base of every client error; carries what the server said about itself when it answered."""

    #: True when the op certainly did not take effect.
    definite = True

    def __init__(self, message: str, response: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.response = response or {}
        self.error: str | None = self.response.get("error")
        self.node: str | None = self.response.get("node")
        self.role: str | None = self.response.get("role")
        self.term: int | None = self.response.get("term")
        self.leader: str | None = self.response.get("leader")


class NotLeader(ClusterError):
    """This node cannot serve the op; leader_hint names the leader it knows (maybe None)."""

    def __init__(self, message: str, response: dict[str, Any] | None = None) -> None:
        super().__init__(message, response)
        self.leader_hint: str | None = self.response.get("leader_hint")


class Unavailable(ClusterError):
    """No leader, the node is overloaded, or it could not be reached: nothing was done."""


class AlreadyExists(ClusterError):
    """create_topic of a name that exists (decided by the replicated log, so definite)."""


class InvalidRequest(ClusterError):
    """The server rejected the request's arguments (bad names, partition out of range, ...)."""


class Timeout(ClusterError):
    """No answer in time after the request was sent: the op may or may not have taken effect."""

    definite = False


class ProtocolError(ClusterError):
    """The server's answer is not a valid response. Sent requests count as indeterminate."""

    definite = False


ERRORS: dict[str, type[ClusterError]] = {
    "not_leader": NotLeader,
    "unavailable": Unavailable,
    "timeout": Timeout,
    "already_exists": AlreadyExists,
}


def outcome(resp: dict[str, Any]) -> dict[str, Any]:
    """One response frame as the answer dict, or the ClusterError it stands for. Pure, so every client
    of the API (this blocking one, the simulator's asynchronous one) reads answers alike."""
    if resp.get("ok") is True:
        result = resp.get("result")
        if not isinstance(result, dict):
            raise ProtocolError("response has no result object", resp)
        return {**result, "node": resp.get("node"), "role": resp.get("role"),
                "term": resp.get("term"), "leader": resp.get("leader")}
    error = resp.get("error")
    if not isinstance(error, str):
        raise ProtocolError(f"malformed response: {str(resp)[:200]}", resp)
    cls = ERRORS.get(error, InvalidRequest)
    raise cls(f"{error}: {resp.get('message', '')}", resp)


CLOSED = "server closed the connection"  # what a stream that ended before its answer is lost with


class ClientCore:
    """A client of the API apart from its transport (sans I/O): one node's address, one request at a
    time. A transport adds the connection (`close` and its own dial, send and read) and passes its
    steps through these, so every client sends the same frames and says the same things."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._ids = itertools.count(1)

    def close(self) -> None:
        raise NotImplementedError

    def _request(self, op: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The next request id and the request: the server gives up a little before we do."""
        rid = next(self._ids)
        return rid, {"id": rid, "op": op, **args, "timeout_ms": max(1, int(self.timeout * 1000 * 0.9))}

    def _match(self, resp: dict[str, Any], rid: int) -> dict[str, Any] | None:
        """The outcome of `resp` if it answers request `rid` (raising its ClusterError); None for an
        answer to an earlier request that timed out on our side: skip it."""
        return self._outcome(resp) if resp.get("id") == rid else None

    def _outcome(self, resp: dict[str, Any]) -> dict[str, Any]:
        return outcome(resp)

    @contextlib.contextmanager
    def _dialing(self) -> Iterator[None]:
        """A connection that cannot be opened is Unavailable: nothing was sent."""
        try:
            yield
        except OSError as e:
            raise Unavailable(f"cannot connect to {self.host}:{self.port}: {e}") from None

    def _send(self, write: Callable[[bytes], object], req: dict[str, Any]) -> None:
        """Writes the request's frame; a write that fails is Unavailable (and the connection closed)."""
        try:
            write(encode(req))
        except OSError as e:
            # the frame never arrived whole: the server cannot have acted on it
            self.close()
            raise Unavailable(f"{self.host}:{self.port}: send failed: {e}") from None

    @contextlib.contextmanager
    def _awaiting(self, op: str, close_on_any: bool = False) -> Iterator[None]:
        """Waiting for the answer to a sent request: no answer in time, or a lost stream, is Timeout
        (and the connection closed). close_on_any: close it whatever else ends the wait too."""
        try:
            yield
        except TimeoutError:
            self.close()
            raise Timeout(f"{self.host}:{self.port}: no answer to {op} within {self.timeout}s") from None
        except (OSError, FrameError) as e:
            self.close()
            raise Timeout(f"{self.host}:{self.port}: connection lost after sending {op}: {e}") from None
        except BaseException:
            if close_on_any:
                self.close()
            raise


class ClusterClient(ClientCore):
    """A connection to one node over a blocking socket. Not thread-safe: use one client per worker."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        super().__init__(host, port, timeout)
        self._sock: socket.socket | None = None
        self._decoder = FrameDecoder(MAX_PEER_FRAME)
        self._frames: collections.deque[dict[str, Any]] = collections.deque()

    # ---- the API ----------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, rf: int = 1) -> dict[str, Any]:
        """Creates a topic; the answer holds created=True and the topic's description."""
        return self.call("create_topic", name=name, partitions=partitions, rf=rf)

    def describe_topic(self, name: str, local: bool = False) -> dict[str, Any]:
        """Linearizable (in read-index mode) description; answer["topic"] is None when absent.

        local=True reads this node's applied state without a barrier (may be stale, by design).
        """
        return self.call("describe_topic", name=name, local=local)

    def list_topics(self, local: bool = False) -> dict[str, Any]:
        """answer["topics"]: the sorted topic names."""
        return self.call("list_topics", local=local)

    def commit_offset(self, group: str, topic: str, partition: int, offset: int) -> dict[str, Any]:
        return self.call("commit_offset", group=group, topic=topic, partition=partition, offset=offset)

    def fetch_offset(self, group: str, topic: str, partition: int, local: bool = False) -> dict[str, Any]:
        """answer["offset"]: the committed offset, or None if none was ever committed."""
        return self.call("fetch_offset", group=group, topic=topic, partition=partition, local=local)

    def txn(self, mops: list[list[Any]]) -> dict[str, Any]:
        """A multi-key transaction of [f, key, value] micro-ops (r / append / w), applied whole as
        one Raft entry; answer["mops"]: the micro-ops with the reads filled in."""
        return self.call("txn", mops=mops)

    def status(self) -> dict[str, Any]:
        """The node's own view: id, role, term, leader, commit, applied, last_index, read_mode, ..."""
        return self.call("status")

    # ---- plumbing ---------------------------------------------------------------------------------

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Sends one request and waits for its answer; raises the ClusterError for its outcome."""
        rid, req = self._request(op, args)
        sock = self._connect()
        self._send(sock.sendall, req)
        with self._awaiting(op):
            while True:
                answer = self._match(self._read_frame(sock), rid)
                if answer is not None:
                    return answer

    def _connect(self) -> socket.socket:
        if self._sock is not None and self._stale(self._sock):
            self.close()
        if self._sock is None:
            with self._dialing():
                s = socket.create_connection((self.host, self.port), timeout=self.timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(self.timeout)
            self._sock = s
            self._decoder = FrameDecoder(MAX_PEER_FRAME)
        return self._sock

    @staticmethod
    def _stale(sock: socket.socket) -> bool:
        """True if the server closed an idle connection (readable before we asked anything)."""
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _read_frame(self, sock: socket.socket) -> dict[str, Any]:
        while not self._frames:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError(CLOSED)
            self._frames.extend(self._decoder.feed(data))
        return self._frames.popleft()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
        self._frames.clear()

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ClusterClient({self.host!r}, {self.port})"

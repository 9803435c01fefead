"""The workload client in the simulator: the blocking ClusterClient and MetadataClient, as coroutines
over a simulated network.

Requests and answers go through the same pure functions as on Docker (workloads.client.request /
answered / refused, jepsen_py.cluster.client.outcome), so an op is sent as the same frame and its answer
classified by the same rules: a returned answer is ok; a refusal, or a node that cannot be reached,
is fail; no answer within the timeout, or a stream lost after sending, is info.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from jepsen_py.cluster.client import ClusterError, Timeout, Unavailable, outcome
from jepsen_py.cluster.framing import MAX_PEER_FRAME, FrameError, encode, read_frame
from jepsen_py.cluster.io import Network, StreamWriter
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.protocols import Test
from jepsen_py.workloads.client import FS, MetadataClient, answered, refused, request


class AsyncClusterClient:
    """One stream to one node, one request at a time (ClusterClient's rules, awaited)."""

    def __init__(self, net: Network, host: str, port: int, timeout: float = 5.0) -> None:
        self.net = net
        self.host = host
        self.port = port
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._stream: tuple[asyncio.StreamReader, StreamWriter] | None = None

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Sends one request and waits for its answer; raises the ClusterError for its outcome."""
        rid = next(self._ids)
        req = {"id": rid, "op": op, **args, "timeout_ms": max(1, int(self.timeout * 1000 * 0.9))}
        reader, writer = await self._connect()
        try:
            writer.write(encode(req))
        except OSError as e:
            # the frame never left whole: the server cannot have acted on it
            self.close()
            raise Unavailable(f"{self.host}:{self.port}: send failed: {e}") from None
        try:
            return await asyncio.wait_for(self._answer(reader, rid), self.timeout)
        except TimeoutError:
            self.close()
            raise Timeout(f"{self.host}:{self.port}: no answer to {op} within {self.timeout}s") from None
        except (OSError, FrameError) as e:
            self.close()
            raise Timeout(f"{self.host}:{self.port}: connection lost after sending {op}: {e}") from None
        except BaseException:
            self.close()  # cancelled by the op timeout: the stream may hold half an answer
            raise

    async def status(self) -> dict[str, Any]:
        return await self.call("status")

    async def _answer(self, reader: asyncio.StreamReader, rid: int) -> dict[str, Any]:
        while True:
            resp = await read_frame(reader, MAX_PEER_FRAME)
            if resp is None:
                raise ConnectionError("server closed the connection")
            if resp.get("id") == rid:
                return outcome(resp)
            # an answer to an earlier request that timed out on our side: skip it

    async def _connect(self) -> tuple[asyncio.StreamReader, StreamWriter]:
        if self._stream is not None and self._stale(*self._stream):
            self.close()
        if self._stream is None:
            try:
                self._stream = await asyncio.wait_for(self.net.open_connection(self.host, self.port),
                                                      self.timeout)
            except (OSError, TimeoutError) as e:
                raise Unavailable(f"cannot connect to {self.host}:{self.port}: "
                                  f"{e or type(e).__name__}") from None
        return self._stream

    @staticmethod
    def _stale(reader: asyncio.StreamReader, writer: StreamWriter) -> bool:
        """True if the server closed an idle stream (or it broke) before we asked anything."""
        return reader.at_eof() or reader.exception() is not None or writer.is_closing()

    def close(self) -> None:
        if self._stream is not None:
            _, writer = self._stream
            self._stream = None
            writer.close()


class SimClient:
    """MetadataClient's twin for the simulator: `open` binds a copy to one node; `invoke` is a
    coroutine returning the completion."""

    def __init__(self, net: Network, *, port: int, timeout: float | None = None,
                 fs: frozenset[str] = frozenset(FS)) -> None:
        self.net = net
        self.port = port
        self.timeout = timeout
        self.fs = fs
        self.node: str | None = None
        self._conns: dict[str, AsyncClusterClient] = {}

    @staticmethod
    def check(template: object) -> MetadataClient:
        """BadInput (exit 254) for a client that does not speak our cluster's API: the simulator
        runs nothing else."""
        if not isinstance(template, MetadataClient):
            raise BadInput(f"--backend sim: the simulator has no client like {type(template).__name__} "
                           "(it runs this project's cluster workloads only)")
        return template

    @classmethod
    def like(cls, template: object, net: Network) -> SimClient:
        """The simulator's client for a workload's client template (see `check`)."""
        t = cls.check(template)
        return cls(net, port=t.port, timeout=t.timeout, fs=t.fs)

    def open(self, test: Test, node: str) -> SimClient:
        c = SimClient(self.net, port=self.port, timeout=self.timeout, fs=self.fs)
        c.node = node
        return c

    def reusable(self, test: Test) -> bool:
        """True, as MetadataClient: an op leaves each stream closed (a timeout, a lost stream, a
        cancelled call) or with no request outstanding."""
        return True

    def _timeout(self, test: Test) -> float:
        if self.timeout is not None:
            return self.timeout
        # As MetadataClient: answer before the controller's op timeout fires.
        return max(0.5, min(5.0, 0.8 * float(getattr(test.spec, "op_timeout", 10.0))))

    async def invoke(self, test: Test, op: Op) -> Op:
        node = op.node or self.node
        if node is None:
            raise BadInput("client used before open(): no node to talk to")
        if op.f not in self.fs:
            raise BadInput(f"workload client cannot perform {op.f!r} (knows {', '.join(sorted(self.fs))})")
        conn = self._conns.get(node)
        if conn is None:
            conn = self._conns[node] = AsyncClusterClient(self.net, node, self.port, self._timeout(test))
        api, args = request(op)
        try:
            resp = await conn.call(api, **args)
        except ClusterError as e:
            return refused(op, node, e)
        return answered(op, node, resp)

    def close(self, test: Test) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

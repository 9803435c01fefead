"""The workload client in the simulator: the blocking ClusterClient and MetadataClient, as coroutines
over a simulated network.

Nothing but the transport is written here. AsyncClusterClient is jepsen_py.cluster.client's ClientCore
(the request frame, the answer matched by id, the outcome, the wording of every failure) with its bytes
awaited; SimClient is jepsen_py.workloads.client's OpClient (which node, the request an op is, its
answer or refusal as the completion) with its calls awaited. So an op is sent as the same frame and its
answer classified by the same rules as on Docker: a returned answer is ok; a refusal, or a node that
cannot be reached, is fail; no answer within the timeout, or a stream lost after sending, is info.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jepsen_py.cluster.client import CLOSED, ClientCore
from jepsen_py.cluster.framing import MAX_PEER_FRAME, read_frame
from jepsen_py.cluster.io import Network, StreamWriter
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.protocols import Test
from jepsen_py.workloads.client import FS, MetadataClient, OpClient


class AsyncClusterClient(ClientCore):
    """One stream to one node, one request at a time: ClusterClient's core, its bytes moved by awaits."""

    def __init__(self, net: Network, host: str, port: int, timeout: float = 5.0) -> None:
        super().__init__(host, port, timeout)
        self.net = net
        self._stream: tuple[asyncio.StreamReader, StreamWriter] | None = None

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Sends one request and waits for its answer; raises the ClusterError for its outcome."""
        rid, req = self._request(op, args)
        reader, writer = await self._connect()
        self._send(writer.write, req)
        # close_on_any: cancelled by the op timeout, the stream may hold half an answer
        with self._awaiting(op, close_on_any=True):
            return await asyncio.wait_for(self._answer(reader, rid), self.timeout)

    async def status(self) -> dict[str, Any]:
        return await self.call("status")

    async def _answer(self, reader: asyncio.StreamReader, rid: int) -> dict[str, Any]:
        while True:
            resp = await read_frame(reader, MAX_PEER_FRAME)
            if resp is None:
                raise ConnectionError(CLOSED)
            answer = self._match(resp, rid)
            if answer is not None:
                return answer

    async def _connect(self) -> tuple[asyncio.StreamReader, StreamWriter]:
        if self._stream is not None and self._stale(*self._stream):
            self.close()
        if self._stream is None:
            with self._dialing():
                self._stream = await asyncio.wait_for(self.net.open_connection(self.host, self.port),
                                                      self.timeout)
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


class SimClient(OpClient):
    """The workload client in the simulator: MetadataClient's op logic (OpClient), its calls awaited on
    an AsyncClusterClient per node. `open` binds a copy to one node; `invoke` is a coroutine returning
    the completion."""

    def __init__(self, net: Network, *, port: int, timeout: float | None = None,
                 fs: frozenset[str] = frozenset(FS)) -> None:
        super().__init__(port, timeout, fs)
        self.net = net

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

    def _copy(self) -> SimClient:
        return SimClient(self.net, port=self.port, timeout=self.timeout, fs=self.fs)

    def _new_conn(self, test: Test, node: str) -> AsyncClusterClient:
        return AsyncClusterClient(self.net, node, self.port, self._timeout(test))

    async def invoke(self, test: Test, op: Op) -> Op:
        with self._exchange(test, op) as x:
            x.answer(await x.conn.call(x.api, **x.args))
        assert x.completion is not None
        return x.completion

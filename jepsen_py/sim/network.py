"""The simulated network: ordered byte streams between simulated hosts, with latency and partitions.

One SimNetwork is the whole fabric; `for_host(name)` gives a host its cluster.io.Network. A stream is
two Pipes (one per direction) of chunks (each `write`) delivered in order, each after a latency drawn
from the seeded RNG for its link. Readers are real asyncio.StreamReaders fed by the fabric, so the
node's framing code reads exactly as it does from a socket.

What TCP does that the nodes can observe, and how it is modelled:
- A cut is a blocked directed pair (src, dst), as an iptables DROP rule makes it. Bytes on a cut
  direction are held (in flight ones too: the packets were dropped and will be retransmitted) and
  delivered in order after the heal. Data whose ACKs cannot come back (either direction cut) is
  unacknowledged; after UNACKED_TIMEOUT_S of that the sender's kernel aborts the stream
  (TCP_USER_TIMEOUT): its reader and drain raise TimeoutError, and the peer learns nothing.
- Dialling across a cut gets no answer: SYNs are retransmitted after 1, 2, 4 ... s, and the dial
  hangs until the path heals or the caller's own timeout gives up. Dialling a port nobody listens on
  (a killed node, a closed listener) is refused (ConnectionRefusedError) after a round trip.
- `close()` sends a FIN behind the data already queued; the peer's reader sees EOF. Data arriving
  at a stream whose owner closed it, crashed, or had it aborted is answered by a reset: the sender's
  drain and reader raise ConnectionResetError (a reset lost on a cut path leaves the sender's data
  unacknowledged instead, so its own timeout fires).
- A killed host's kernel closes its streams (a FIN after what it had queued) and stops listening. A
  paused host's kernel keeps receiving and acknowledging: its process just reads nothing meanwhile.
- `drain()` waits only while more than SEND_BUFFER bytes are unacknowledged, like a full socket
  buffer; bandwidth is not modelled.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import itertools
import math
import socket
import statistics
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jepsen_py.cluster.io import ConnectionHandler

from .loop import Scheduler, SimLoop

#: TCP_USER_TIMEOUT of every stream (the value cluster/io.py gives real sockets)
UNACKED_TIMEOUT_S = 2.0
#: intervals between SYN retransmissions (Linux: initial RTO 1 s, doubling)
SYN_RETRY_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: unacknowledged bytes past which drain() waits (socket send buffer)
SEND_BUFFER = 256 * 1024
#: hosts a listener may bind besides its own name
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "localhost", "127.0.0.1"})
FIRST_EPHEMERAL_PORT = 40_000

_EOF = b""  # the FIN marker in a pipe: an empty chunk (writes of b"" are never queued)


#: a latency is one of this many equally likely quantiles of its distribution (2**QUANTILE_BITS)
QUANTILE_BITS = 12


@dataclass(frozen=True)
class LinkProfile:
    """One-way latency of a link: lognormal with this median and shape (seconds).

    Drawn as one of 4096 equally likely quantiles (the midpoints of 4096 equal-probability bins, so
    the tails reach 3.5 sigma): one draw of 12 random bits per chunk sent instead of a Gaussian
    draw and an exp, which together were a tenth of the fabric's time."""

    median_s: float = 0.0005
    sigma: float = 0.3

    @functools.cached_property
    def _quantiles(self) -> tuple[float, ...]:
        n = 1 << QUANTILE_BITS
        z = statistics.NormalDist()
        return tuple(self.median_s * math.exp(self.sigma * z.inv_cdf((i + 0.5) / n)) for i in range(n))

    def draw(self, rng: Any) -> float:
        return self._quantiles[rng.getrandbits(QUANTILE_BITS)]


class Endpoint:
    """One end of a stream, owned by a host's process (its loop)."""

    def __init__(self, fabric: SimNetwork, conn_id: int, host: str, port: int, loop: SimLoop,
                 peer_host: str, peer_port: int, dialled: bool) -> None:
        self.fabric = fabric
        self.conn_id = conn_id
        #: a stable hash for the writer (sets of writers iterate the same way every run)
        self.hash = conn_id * 2 + (0 if dialled else 1)
        self.host = host
        self.port = port
        self.loop = loop
        self.peer_host = peer_host
        self.peer_port = peer_port
        self.reader = asyncio.StreamReader(loop=loop)
        self.writer = SimStreamWriter(self)
        self.out: Pipe | None = None
        self.closed = False
        self.error: BaseException | None = None

    @property
    def gone(self) -> bool:
        """No socket behind this end any more: data arriving here is answered by a reset."""
        return self.closed or self.error is not None or self.loop._dead

    def fail(self, exc: BaseException) -> None:
        """The stream broke under this end (reset, timeout): reader and drain raise `exc`."""
        if self.error is not None or self.closed:
            return
        self.error = exc
        if self.out is not None:
            self.out.drop_all()
        if not self.loop._dead:
            self.reader.set_exception(exc)
            self.writer._wake(exc)


class Pipe:
    """One direction of a stream: chunks in order, each in flight (a delivery event queued) or held."""

    def __init__(self, fabric: SimNetwork, src: Endpoint, dst: Endpoint) -> None:
        self.fabric = fabric
        self.src = src
        self.dst = dst
        self.pending: deque[bytes] = deque()
        self.pending_bytes = 0
        self.in_flight = 0  # the first `in_flight` chunks of `pending` have a delivery event queued
        self.gen = 0
        self.last_t = 0.0
        self.unacked_since: float | None = None

    def send(self, data: bytes, at: float) -> None:
        f = self.fabric
        self.pending.append(data)
        self.pending_bytes += len(data)
        cuts = f._cuts
        if cuts:
            src, dst = self.src.host, self.dst.host
            if (src, dst) in cuts:
                self._mark_unacked()
                return
            if (dst, src) in cuts:
                self._mark_unacked()
        if self.in_flight == len(self.pending) - 1:
            self._launch(at)

    def _launch(self, at: float) -> None:
        """Queues a delivery for the first pending chunk that has none."""
        f = self.fabric
        t = at + f.latency(self.src.host, self.dst.host)
        if t < self.last_t:
            t = self.last_t
        self.last_t = t
        self.in_flight += 1
        f.scheduler.call_at(t, self._deliver, self.gen)

    def _deliver(self, gen: int) -> None:
        if gen != self.gen:
            return
        chunk = self.pending.popleft()
        self.in_flight -= 1
        self.pending_bytes -= len(chunk)
        dst = self.dst
        f = self.fabric
        if f.on_deliver is not None:
            f.on_deliver(f.scheduler.now, self.src.host, dst.host, chunk)
        if dst.closed or dst.error is not None or dst.loop._dead:  # dst.gone
            if chunk:
                self.fabric._reset_back(self)
        elif chunk:
            dst.reader.feed_data(chunk)
        else:
            dst.reader.feed_eof()
        if self.src.writer._drain_waiter is not None and self.pending_bytes <= SEND_BUFFER // 2:
            self.src.writer._wake(None)

    def hold(self) -> None:
        """The data direction was cut: whatever was in flight is held (dropped, to be resent)."""
        if self.in_flight:
            self.gen += 1
            self.in_flight = 0

    def release(self, now: float) -> None:
        """The data direction is open again: send everything held, in order."""
        while self.in_flight < len(self.pending):
            self._launch(now)

    def drop_all(self) -> None:
        self.gen += 1
        self.pending.clear()
        self.pending_bytes = 0
        self.in_flight = 0
        self.unacked_since = None

    def _mark_unacked(self) -> None:
        if self.unacked_since is None:
            f = self.fabric
            self.unacked_since = since = f.scheduler.now
            f.scheduler.call_at(since + f.unacked_timeout, self._unacked_expired, since)

    def _unacked_expired(self, since: float) -> None:
        if self.unacked_since != since or self.src.gone:
            return
        self.fabric.trace(f"abort {self.src.host}:{self.src.port}->{self.dst.host}:{self.dst.port} unacked")
        self.src.fail(TimeoutError(errno.ETIMEDOUT, "Connection timed out"))


class SimStreamWriter:
    """cluster.io.StreamWriter over a Pipe, behaving as asyncio's StreamWriter does on a socket:
    writes after the stream broke are dropped, drain() raises why it broke."""

    def __init__(self, ep: Endpoint) -> None:
        self._ep = ep
        self._drain_waiter: asyncio.Future[None] | None = None

    def __hash__(self) -> int:
        return self._ep.hash

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        ep = self._ep
        return f"<SimStreamWriter {ep.host}:{ep.port}->{ep.peer_host}:{ep.peer_port}>"

    def write(self, data: bytes) -> None:
        ep = self._ep
        out = ep.out
        if not data or out is None or ep.closed or ep.error is not None or ep.loop._dead:  # ep.gone
            return
        out.send(bytes(data), ep.loop.global_now())

    async def drain(self) -> None:
        ep = self._ep
        if ep.error is not None:
            raise ep.error
        if ep.closed:
            await asyncio.sleep(0)
            return
        while ep.out is not None and ep.out.pending_bytes > SEND_BUFFER:
            self._drain_waiter = ep.loop.create_future()
            try:
                await self._drain_waiter
            finally:
                self._drain_waiter = None
        if ep.error is not None:
            raise ep.error

    def _wake(self, exc: BaseException | None) -> None:
        w = self._drain_waiter
        if w is not None and not w.done():
            if exc is None:
                w.set_result(None)
            else:
                w.set_exception(exc)

    def close(self) -> None:
        ep = self._ep
        if ep.closed:
            return
        ep.closed = True
        if ep.error is None and ep.out is not None and not ep.loop._dead:
            ep.out.send(_EOF, ep.loop.global_now())
        if not ep.loop._dead and ep.error is None:
            ep.reader.feed_eof()
        self._wake(ConnectionResetError(errno.ECONNRESET, "Connection closed"))

    async def wait_closed(self) -> None:
        await asyncio.sleep(0)

    def is_closing(self) -> bool:
        return self._ep.gone

    def can_write_eof(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        ep = self._ep
        if name == "peername":
            return (ep.peer_host, ep.peer_port)
        if name == "sockname":
            return (ep.host, ep.port)
        return default


class SimListener:
    """cluster.io.Listener: accepts streams on (host, port) until closed or its host dies."""

    def __init__(self, fabric: SimNetwork, host: str, port: int, loop: SimLoop,
                 handler: ConnectionHandler) -> None:
        self.fabric = fabric
        self.host = host
        self._port = port
        self.loop = loop
        self.handler = handler
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.fabric._listeners.get((self.host, self._port)) is self:
                del self.fabric._listeners[(self.host, self._port)]

    def port(self) -> int:
        return self._port


class HostNetwork:
    """One host's view of the fabric (cluster.io.Network): streams are opened and accepted by the
    process whose loop is running when it calls."""

    def __init__(self, fabric: SimNetwork, host: str) -> None:
        self.fabric = fabric
        self.host = host

    async def open_connection(self, host: str, port: int) -> tuple[asyncio.StreamReader, SimStreamWriter]:
        loop = asyncio.get_running_loop()
        if not isinstance(loop, SimLoop):
            raise RuntimeError("a simulated host's network is used from outside the simulation")
        return await self.fabric._dial(self.host, loop, host, port)

    async def start_server(self, handler: ConnectionHandler, host: str, port: int) -> SimListener:
        loop = asyncio.get_running_loop()
        if not isinstance(loop, SimLoop):
            raise RuntimeError("a simulated host's network is used from outside the simulation")
        return self.fabric._listen(self.host, loop, handler, host, port)


class SimNetwork:
    """The fabric every simulated host is plugged into."""

    def __init__(self, scheduler: Scheduler, default: LinkProfile | None = None,
                 unacked_timeout: float = UNACKED_TIMEOUT_S) -> None:
        self.scheduler = scheduler
        self.rng = scheduler.rng
        self.default = default or LinkProfile()
        self.links: dict[tuple[str, str], LinkProfile] = {}
        self.unacked_timeout = unacked_timeout
        self._hosts: dict[str, HostNetwork] = {}
        self._cuts: set[tuple[str, str]] = set()
        self._listeners: dict[tuple[str, int], SimListener] = {}
        self._pipes: dict[int, tuple[Pipe, Pipe]] = {}  # conn id -> (client->server, server->client)
        self._conn_ids = itertools.count(1)
        self._next_port: dict[str, int] = {}
        #: optional sink of one line per fabric event worth seeing in a trace (aborts, resets)
        self.tracer: Any = None
        #: optional tap called with (time, src host, dst host, chunk) for every chunk arriving (b"" is
        #: a FIN), e.g. to digest a whole run
        self.on_deliver: Callable[[float, str, str, bytes], None] | None = None
        #: counters for benchmarks and tests
        self.chunks_sent = 0
        self.dials = 0

    def trace(self, line: str) -> None:
        if self.tracer is not None:
            self.tracer(f"{self.scheduler.now:.6f} net {line}")

    # ---- hosts and links ----------------------------------------------------------------------------

    def for_host(self, name: str) -> HostNetwork:
        """The Network of host `name` (registered on first use; the name resolves from then on)."""
        hn = self._hosts.get(name)
        if hn is None:
            hn = self._hosts[name] = HostNetwork(self, name)
        return hn

    def latency(self, src: str, dst: str) -> float:
        if not self.links:
            return self.default.draw(self.rng)
        return (self.links.get((src, dst)) or self.default).draw(self.rng)

    # ---- partitions -------------------------------------------------------------------------------

    def cut(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Blocks each directed pair (src, dst): what src sends to dst is dropped."""
        self._cuts.update(pairs)
        self._recheck()

    def uncut(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._cuts.difference_update(pairs)
        self._recheck()

    def heal(self) -> None:
        self._cuts.clear()
        self._recheck()

    def cuts(self) -> set[tuple[str, str]]:
        return set(self._cuts)

    def blocked(self, src: str, dst: str) -> bool:
        return (src, dst) in self._cuts

    def _recheck(self) -> None:
        self.forget_closed()
        now = self.scheduler.now
        for pair in self._pipes.values():
            for p in pair:
                src, dst = p.src.host, p.dst.host
                fwd = (src, dst) in self._cuts
                back = (dst, src) in self._cuts
                if fwd:
                    p.hold()
                elif p.pending:
                    p.release(now)
                if (fwd or back) and p.pending:
                    p._mark_unacked()
                elif not fwd and not back:
                    p.unacked_since = None

    # ---- hosts going down ---------------------------------------------------------------------------

    def host_down(self, host: str) -> None:
        """The process on `host` died: its listeners close, its streams send a FIN behind what they
        had queued (the kernel closes a dead process's sockets); what arrives later is reset."""
        for key in [k for k in self._listeners if k[0] == host]:
            self._listeners.pop(key).closed = True
        for pair in self._pipes.values():
            for p in pair:
                ep = p.src
                if ep.host == host and not ep.closed and ep.error is None:
                    ep.closed = True
                    p.send(_EOF, self.scheduler.now)

    # ---- streams ------------------------------------------------------------------------------------

    def _ephemeral(self, host: str) -> int:
        port = self._next_port.get(host, FIRST_EPHEMERAL_PORT)
        self._next_port[host] = port + 1
        return port

    def _listen(self, host: str, loop: SimLoop, handler: ConnectionHandler, bind: str,
                port: int) -> SimListener:
        if bind != host and bind not in WILDCARD_HOSTS:
            raise OSError(errno.EADDRNOTAVAIL, f"cannot assign requested address {bind!r} on host {host}")
        if port == 0:
            port = self._ephemeral(host)
        if (host, port) in self._listeners:
            raise OSError(errno.EADDRINUSE, f"address already in use: {host}:{port}")
        lst = SimListener(self, host, port, loop, handler)
        self._listeners[(host, port)] = lst
        return lst

    async def _dial(self, src: str, loop: SimLoop, dst: str, port: int) -> tuple[asyncio.StreamReader,
                                                                              SimStreamWriter]:
        if dst not in self._hosts:
            raise socket.gaierror(socket.EAI_NONAME, f"Name or service not known: {dst!r}")
        self.dials += 1
        if self.dials % 64 == 0:
            self.forget_closed()
        fut: asyncio.Future[tuple[asyncio.StreamReader, SimStreamWriter]] = loop.create_future()
        self._syn(src, loop, dst, port, fut, 0, loop.global_now())
        return await fut

    def _syn(self, src: str, loop: SimLoop, dst: str, port: int, fut: asyncio.Future[Any], attempt: int,
             at: float) -> None:
        """One SYN leaves `src` at `at`; it is answered, refused, or lost and retried."""
        if fut.done() or loop._dead:
            return
        s = self.scheduler
        if (src, dst) in self._cuts or (dst, src) in self._cuts:
            if attempt < len(SYN_RETRY_S):
                s.call_at(at + SYN_RETRY_S[attempt], self._syn, src, loop, dst, port, fut, attempt + 1,
                          at + SYN_RETRY_S[attempt])
            else:
                s.call_at(at + 1.0, _fail, fut, TimeoutError(errno.ETIMEDOUT, "Connection timed out"))
            return
        arrive = at + self.latency(src, dst)
        s.call_at(arrive, self._syn_arrives, src, loop, dst, port, fut, attempt, at)

    def _syn_arrives(self, src: str, loop: SimLoop, dst: str, port: int, fut: asyncio.Future[Any],
                     attempt: int, sent: float) -> None:
        s = self.scheduler
        if (src, dst) in self._cuts or (dst, src) in self._cuts:
            # lost on the way (the cut began meanwhile): retransmitted as if it had never left
            retry = sent + SYN_RETRY_S[min(attempt, len(SYN_RETRY_S) - 1)]
            s.call_at(max(retry, s.now), self._syn, src, loop, dst, port, fut, attempt + 1, max(retry, s.now))
            return
        back = s.now + self.latency(dst, src)
        lst = self._listeners.get((dst, port))
        if lst is not None and lst.loop._dead:
            lst = None
        if lst is None:
            s.call_at(back, _fail, fut, ConnectionRefusedError(
                errno.ECONNREFUSED, f"Connect call failed ('{dst}', {port})"))
            return
        if fut.done() or loop._dead:
            return  # the dialler gave up or died: its kernel answers the SYN-ACK with a reset
        cid = next(self._conn_ids)
        cport = self._ephemeral(src)
        client = Endpoint(self, cid, src, cport, loop, dst, port, dialled=True)
        server = Endpoint(self, cid, dst, port, lst.loop, src, cport, dialled=False)
        c2s, s2c = Pipe(self, client, server), Pipe(self, server, client)
        client.out, server.out = c2s, s2c
        self._pipes[cid] = (c2s, s2c)
        lst.loop.create_task(lst.handler(server.reader, server.writer))
        s.call_at(back, self._established, fut, client)

    def _established(self, fut: asyncio.Future[Any], client: Endpoint) -> None:
        if fut.done():
            client.writer.close()  # the dial was abandoned (timed out): the stream is closed at once
            return
        fut.set_result((client.reader, client.writer))

    def _reset_back(self, p: Pipe) -> None:
        """Data reached an end with no socket: a reset goes back to the sender (unless the way back
        is cut: then the sender's data just stays unacknowledged)."""
        src, dst = p.src.host, p.dst.host
        if (dst, src) in self._cuts:
            p._mark_unacked()
            return
        self.scheduler.call_at(self.scheduler.now + self.latency(dst, src), self._reset_arrives, p.src)

    def _reset_arrives(self, ep: Endpoint) -> None:
        if not ep.gone:
            self.trace(f"reset {ep.host}:{ep.port}<-{ep.peer_host}:{ep.peer_port}")
            ep.fail(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"))

    def forget_closed(self) -> None:
        """Drops the bookkeeping of streams both of whose ends are gone and drained."""
        dead = [cid for cid, (a, b) in self._pipes.items()
                if a.src.gone and b.src.gone and not a.pending and not b.pending]
        for cid in dead:
            del self._pipes[cid]


def _fail(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)

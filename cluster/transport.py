"""Peer transport: one ordered, reconnecting TCP stream to each peer, asyncio, standard library only.

Each node dials every peer once and sends all its messages for that peer down that one connection,
in the order the core produced them; whatever is queued while a write is in flight goes out as one
batch frame (pipelining: the core keeps many MsgApp in flight, the transport never waits for replies).
Incoming connections (a peer's own outgoing stream) are only read.

Nothing is lost silently. A message that cannot be delivered, because the connection is down, broke,
or the peer is so slow that its bounded queue overflows, is dropped *and reported* to the core
(`on_unreachable`), which moves that peer's progress back to probing and retransmits from next_index;
a MsgSnap's fate is reported through `on_snapshot_status`. Raft itself tolerates the loss; what it
cannot tolerate is a loss it is told was a success. The transport's seed bugs (cluster/bugs.py) each
have one place: drop-unconnected in PeerSender._lost (drop while not connected, report it delivered),
unordered-send in Transport.send (each message on its own delayed task instead of the one ordered
queue).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from .bugs import NO_BUGS, Bugs
from .framing import MAX_PEER_FRAME, FrameError, encode, read_frame
from .io import UNACKED_TIMEOUT_MS, Listener, Network, StreamWriter
from .raft.messages import (
    LOCAL_MESSAGE_TYPES,
    MSG_APP,
    MSG_APP_RESP,
    MSG_SNAP,
    Message,
    MessageDecodeError,
)

__all__ = ["UNACKED_TIMEOUT_MS", "Transport", "TransportStats", "describe_stats"]

HELLO_TIMEOUT = 5.0
CONNECT_TIMEOUT = 1.0
BACKOFF_MIN = 0.02
BACKOFF_MAX = 0.5
#: unordered-send: how long spawned message tasks wait for the scheduler (mean, cap): Chronik's
#: spawned sends were delayed from milliseconds to seconds
UNORDERED_MEAN_STALL_S = 0.5
UNORDERED_MAX_STALL_S = 3.0


@dataclass
class TransportStats:
    """Counters for status() and the benchmark."""

    sent: int = 0
    received: int = 0
    frames_sent: int = 0
    dropped: int = 0
    connects: int = 0
    rejected_connections: int = 0
    per_peer_connected: dict[str, bool] = field(default_factory=dict)


class PeerSender:
    """The outgoing stream to one peer: a bounded queue drained by one writer task."""

    def __init__(self, transport: Transport, peer: str, host: str, port: int, max_queue: int) -> None:
        self.t = transport
        self.peer = peer
        self.host = host
        self.port = port
        self.max_queue = max_queue
        self.queue: collections.deque[Message] = collections.deque()
        #: what the sender awaits (an empty queue in the pump, a dial, a backoff): resolved by
        #: enqueue(), the peer closing the stream or the transport stopping (one plain future per
        #: wait, no task: the pump's wait happens once per frame sent)
        self._work: asyncio.Future[None] | None = None
        self.connected = False
        self.task: asyncio.Task[None] | None = None
        #: the stream while the pump waits for work with nothing queued: a message queued then is
        #: written by _flush, a plain callback queued where the pump's wake-up would have been,
        #: instead of waking the pump (a future, a task step and its coroutines per frame)
        self._idle: StreamWriter | None = None
        self._watcher: asyncio.Future[None] | None = None
        self._flush_handle: asyncio.Handle | None = None
        #: what _flush leaves the pump: a write that failed, or a drain that has to wait
        self._failure: BaseException | None = None
        self._draining: tuple[Coroutine[Any, Any, None], Any, list[Message]] | None = None

    def enqueue(self, msg: Message) -> None:
        """Queues `msg` for the ordered stream; on overflow drops it and tells the core."""
        if len(self.queue) >= self.max_queue:
            self._lost([msg], "send queue full")
            return
        self.queue.append(msg)
        if self._idle is not None:
            if self._flush_handle is None:
                self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)
            return
        self._wake()

    def _flush(self) -> None:
        """What the idle pump would do on waking: writes the queue as one frame and drains, at the
        same point of the loop's order. Whatever the pump does otherwise on waking (the peer closed
        the stream, the transport stops, the write failed, the drain must wait) is left to it."""
        self._flush_handle = None
        writer, watcher = self._idle, self._watcher
        if writer is None or not self.queue:
            return
        if self.t.closing or watcher is None or watcher.done():
            self._wake()
            return
        batch = self._take_all()
        writer.write(encode({"m": [m.to_wire() for m in batch]}))
        self.t.stats.sent += len(batch)
        self.t.stats.frames_sent += 1
        drain = writer.drain()
        try:
            waiting = drain.send(None)
        except StopIteration:
            self._sent(batch)
            if watcher.done():
                self._wake()
            return
        except BaseException as e:
            if isinstance(e, OSError | ConnectionError):
                self._lost(batch, "write failed")
            self._idle, self._failure = None, e
            self._wake()
            return
        self._idle, self._draining = None, (drain, waiting, batch)
        self._wake()

    def _sent(self, batch: list[Message]) -> None:
        for m in batch:
            if m.type == MSG_SNAP:
                self.t.on_snapshot_status(self.peer, False)

    def _wake(self, _watcher: object = None) -> None:
        w = self._work
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait_for_work(self, timeout: float | None = None, *also: asyncio.Future[Any]) -> None:
        """Waits until _wake() (a message queued, the stream closed, the transport stopping), one of
        `also` completes, or `timeout` seconds by the loop's clock pass."""
        self._work = asyncio.get_running_loop().create_future()
        try:
            if timeout is None and not also:
                await self._work
            else:
                await asyncio.wait({self._work, *also}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._work = None

    def _lost(self, msgs: Iterable[Message], why: str) -> None:
        msgs = list(msgs)
        if not msgs:
            return
        if self.t.bugs.drop_unconnected and not self.connected:
            # drop-unconnected: dropped with a warning, and the leader is told
            # nothing, so it counts the entries as delivered and never resends them
            self.t.stats.dropped += len(msgs)
            self.t.log_limited(self.peer, f"transport: failed to send {len(msgs)} messages to {self.peer} "
                                          f"({why}); dropped")
            for m in msgs:
                if m.type == MSG_APP and m.entries:
                    self.t.on_message(Message(type=MSG_APP_RESP, src=self.peer, dst=self.t.node_id,
                                              term=m.term, index=m.entries[-1].index))
            return
        self.t.stats.dropped += len(msgs)
        for m in msgs:
            if m.type == MSG_SNAP:
                self.t.on_snapshot_status(self.peer, True)
        self.t.on_unreachable(self.peer)
        self.t.log_limited(self.peer, f"transport: {len(msgs)} messages to {self.peer} not delivered ({why})")

    async def run(self) -> None:
        backoff = BACKOFF_MIN
        while not self.t.closing:
            try:
                reader, writer = await self._dial()
            except (TimeoutError, OSError) as e:
                self._lost(self._take_all(), f"cannot connect to {self.host}:{self.port}: {e or 'timeout'}")
                await self._sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            self.connected = True
            self.t.stats.connects += 1
            self.t.stats.per_peer_connected[self.peer] = True
            self.t.log(f"transport: connected to {self.peer} at {self.host}:{self.port}")
            backoff = BACKOFF_MIN
            watcher = asyncio.ensure_future(self._watch_eof(reader))
            watcher.add_done_callback(self._wake)
            self._watcher = watcher
            try:
                writer.write(encode({"hello": {"node": self.t.node_id, "cluster_id": self.t.cluster_id}}))
                await self._pump(writer, watcher)
            except (OSError, ConnectionError) as e:
                self.t.log(f"transport: stream to {self.peer} broke: {e}")
            finally:
                self._idle = self._watcher = None
                self.connected = False
                self.t.stats.per_peer_connected[self.peer] = False
                watcher.cancel()
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
                self._lost(self._take_all(), "stream closed")
            await self._sleep(BACKOFF_MIN)

    async def _dial(self) -> tuple[asyncio.StreamReader, StreamWriter]:
        """Dials the peer; TimeoutError after CONNECT_TIMEOUT by the loop's clock.

        Like a backoff (see _sleep), a dial's timeout set before the clock stepped back waits the
        size of the step on top, and meanwhile a dial across a cut that has healed completes only at
        the kernel's next SYN retransmission, seconds later the longer the cut lasted. So once the
        clock reads earlier than when the dial began, a message queued for the peer ends the dial: a
        fresh one goes through as soon as the network does.
        """
        loop = asyncio.get_running_loop()
        start = loop.time()
        end = start + CONNECT_TIMEOUT
        dial = asyncio.ensure_future(self.t.net.open_connection(self.host, self.port))
        try:
            while True:
                now = loop.time()
                if now >= end:
                    raise TimeoutError()
                if now < start and self.queue:
                    raise TimeoutError("the clock stepped back during the dial")
                await self._wait_for_work(end - now, dial)
                if dial.done():
                    return dial.result()
        finally:
            if not dial.done():
                dial.cancel()

    async def _pump(self, writer: StreamWriter, watcher: asyncio.Future[None]) -> None:
        while not self.t.closing:
            if not self.queue:
                if watcher.done():
                    raise ConnectionError("peer closed the stream")
                self._idle = writer
                try:
                    await self._wait_for_work()
                finally:
                    self._idle = None
                failure, self._failure = self._failure, None
                if failure is not None:
                    raise failure
                if self._draining is not None:
                    drain, waiting, batch = self._draining
                    self._draining = None
                    try:
                        await _resume(drain, waiting)
                    except (OSError, ConnectionError):
                        self._lost(batch, "write failed")
                        raise
                    self._sent(batch)
                if watcher.done():
                    raise ConnectionError("peer closed the stream")
                continue
            batch = self._take_all()
            writer.write(encode({"m": [m.to_wire() for m in batch]}))
            self.t.stats.sent += len(batch)
            self.t.stats.frames_sent += 1
            try:
                await writer.drain()
            except (OSError, ConnectionError):
                # the batch may or may not have arrived: report it lost, the core re-probes
                self._lost(batch, "write failed")
                raise
            self._sent(batch)
            if watcher.done():
                raise ConnectionError("peer closed the stream")

    async def _watch_eof(self, reader: asyncio.StreamReader) -> None:
        """The peer never writes on our outgoing stream: any read completing means it closed."""
        with contextlib.suppress(Exception):
            await reader.read(1)

    def _take_all(self) -> list[Message]:
        batch = list(self.queue)
        self.queue.clear()
        return batch

    async def _sleep(self, s: float) -> None:
        """Backs off for `s` seconds by the loop's clock, or until the transport closes.

        The loop's clock is the node's monotonic clock, which a clock fault moves (libfaketime on
        Docker, an offset in the simulator). After it steps back, a timer set before the step waits
        the size of the step on top, up to minutes, and the peer would not be redialled meanwhile.
        So once the clock reads earlier than when the backoff began, a message queued for the peer
        ends it: how much time really passed is unknown, and the stream is needed now.
        """
        loop = asyncio.get_running_loop()
        start = loop.time()
        end = start + s
        while not self.t.closing:
            now = loop.time()
            if now >= end or (now < start and self.queue):
                return
            await self._wait_for_work(end - now)


async def _resume(coro: Coroutine[Any, Any, None], waiting: Any) -> None:
    """Runs to its end a coroutine already stepped once (by send(None)) that yielded `waiting`:
    awaits what it waits for and resumes it, as the task that awaited it would have."""
    while True:
        try:
            if waiting is None:  # a bare yield (asyncio.sleep(0))
                await asyncio.sleep(0)
            else:
                # what a Task does with a future its coroutine yields (a future still marked as
                # blocking refuses a second await)
                waiting._asyncio_future_blocking = False
                await waiting
        except BaseException as e:
            try:
                waiting = coro.throw(e)
            except StopIteration:
                return
            continue
        try:
            waiting = coro.send(None)
        except StopIteration:
            return


class Transport:
    """All peer streams of one node. Callbacks run on the event loop, in arrival order."""

    def __init__(
        self,
        node_id: str,
        cluster_id: str,
        peers: dict[str, tuple[str, int]],
        on_message: Callable[[Message], None],
        on_unreachable: Callable[[str], None],
        on_snapshot_status: Callable[[str, bool], None],
        log: Callable[[str], None],
        *,
        net: Network,
        seed: int,
        max_queue: int = 4096,
        listen_host: str | None = None,
        bugs: Bugs = NO_BUGS,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.peers = peers
        self.on_message = on_message
        self.on_unreachable = on_unreachable
        self.on_snapshot_status = on_snapshot_status
        self.log = log
        self.max_queue = max_queue
        self.listen_host = listen_host
        self.bugs = bugs
        self.net = net
        #: unordered-send's stalls and shuffles; seeded by the caller so a simulated run repeats
        self._rng = random.Random(seed)
        self._spawned: list[tuple[PeerSender, Message]] = []
        self._turn: asyncio.TimerHandle | None = None
        self.stats = TransportStats()
        self.closing = False
        self.senders: dict[str, PeerSender] = {}
        self._server: Listener | None = None
        self._incoming: dict[str, StreamWriter] = {}
        self._last_log: dict[str, float] = {}

    def log_limited(self, key: str, line: str, every: float = 5.0) -> None:
        """Logs at most one line per `every` seconds per key: a dead peer must not flood the log."""
        now = asyncio.get_running_loop().time()
        if now - self._last_log.get(key, -1e9) >= every:
            self._last_log[key] = now
            self.log(line)

    async def start(self) -> None:
        host, port = self.peers[self.node_id]
        self._server = await self.net.start_server(self._handle_incoming, self.listen_host or host, port)
        for peer, (h, p) in self.peers.items():
            if peer == self.node_id:
                continue
            s = PeerSender(self, peer, h, p, self.max_queue)
            s.task = asyncio.ensure_future(s.run())
            self.senders[peer] = s

    def send(self, msgs: Iterable[Message]) -> None:
        for m in msgs:
            s = self.senders.get(m.dst)
            if s is None:
                self.log_limited("unknown-dst", f"transport: no peer {m.dst!r} for a {m.type}; dropped")
                continue
            if self.bugs.unordered_send:
                self._spawn(s, m)
                continue
            s.enqueue(m)

    def _spawn(self, s: PeerSender, m: Message) -> None:
        """unordered-send: each message becomes its own task (tokio::spawn), run whenever
        the scheduler gets to it. Spawned tasks wait for the scheduler's next turn, which comes after
        a random stall (milliseconds, sometimes seconds, as in Chronik's busy runtime), and the tasks
        of one turn run in no particular order: nothing keeps the order the core produced."""
        self._spawned.append((s, m))
        if self._turn is None:
            delay = min(self._rng.expovariate(1 / UNORDERED_MEAN_STALL_S), UNORDERED_MAX_STALL_S)
            self._turn = asyncio.get_running_loop().call_later(delay, self._run_spawned)

    def _run_spawned(self) -> None:
        self._turn = None
        batch, self._spawned = self._spawned, []
        self._rng.shuffle(batch)
        for s, m in batch:
            s.enqueue(m)

    async def _handle_incoming(self, reader: asyncio.StreamReader, writer: StreamWriter) -> None:
        addr = writer.get_extra_info("peername")
        peer = "?"
        try:
            hello = await asyncio.wait_for(read_frame(reader, MAX_PEER_FRAME), HELLO_TIMEOUT)
            info = hello.get("hello") if hello else None
            if not isinstance(info, dict):
                raise FrameError("first frame is not a hello")
            if info.get("cluster_id") != self.cluster_id:
                raise FrameError(f"peer is from cluster {info.get('cluster_id')!r}, not {self.cluster_id!r}")
            peer = info.get("node")
            if peer not in self.peers or peer == self.node_id:
                raise FrameError(f"hello names unknown node {peer!r}")
            old = self._incoming.get(peer)
            if old is not None:
                old.close()  # a reconnect: the newest stream is the one stream from this peer
            self._incoming[peer] = writer
            while not self.closing:
                frame = await read_frame(reader, MAX_PEER_FRAME)
                if frame is None:
                    break
                batch = frame.get("m")
                if not isinstance(batch, list):
                    raise FrameError("peer frame has no message list")
                for d in batch:
                    msg = Message.from_wire(d)
                    if msg.src != peer or msg.dst != self.node_id or msg.type in LOCAL_MESSAGE_TYPES:
                        raise FrameError(f"{msg.type} from {msg.src} to {msg.dst} on {peer}'s stream")
                    self.stats.received += 1
                    self.on_message(msg)
        except (TimeoutError, FrameError, MessageDecodeError) as e:
            self.stats.rejected_connections += 1
            self.log_limited(f"bad-{addr}", f"transport: closing connection from {peer} at {addr}: {e}")
        except (OSError, ConnectionError):
            pass
        except Exception as e:  # a peer speaking garbage must never take the node down
            self.stats.rejected_connections += 1
            self.log_limited(f"bad-{addr}", f"transport: closing connection from {peer} at {addr}: {e!r}")
        finally:
            if self._incoming.get(peer) is writer:
                del self._incoming[peer]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def connected(self) -> dict[str, bool]:
        return {p: s.connected for p, s in self.senders.items()}

    async def stop(self) -> None:
        self.closing = True
        if self._server is not None:
            self._server.close()
        for s in self.senders.values():
            s._wake()
            if s.task is not None:
                s.task.cancel()
        for w in list(self._incoming.values()):
            w.close()
        await asyncio.gather(*(s.task for s in self.senders.values() if s.task), return_exceptions=True)


def describe_stats(t: Transport) -> dict[str, Any]:
    s = t.stats
    return {
        "sent": s.sent,
        "received": s.received,
        "frames_sent": s.frames_sent,
        "dropped": s.dropped,
        "connects": s.connects,
        "rejected_connections": s.rejected_connections,
        "connected": t.connected(),
    }

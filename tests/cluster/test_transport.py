"""The peer transport on loopback: ordered delivery, batching, loss always reported, reconnects."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket

from jepsen_py.cluster import transport
from jepsen_py.cluster.bugs import NO_BUGS, Bugs
from jepsen_py.cluster.raft.messages import MSG_APP, MSG_HEARTBEAT, MSG_SNAP, Entry, Message, Snapshot
from jepsen_py.cluster.realio import TCPNetwork
from jepsen_py.cluster.transport import Transport

from jepsen_py.raftdb.local import HOST, free_ports
from jepsen_py.sim.loop import Scheduler, SimLoop
from jepsen_py.sim.network import SEND_BUFFER, SimNetwork


class Endpoint:
    """One Transport with recording callbacks."""

    def __init__(self, nid: str, peers: dict[str, tuple[str, int]], max_queue: int = 4096,
                 bugs: Bugs = NO_BUGS) -> None:
        self.got: list[Message] = []
        self.unreachable: list[str] = []
        self.snap_status: list[tuple[str, bool]] = []
        self.logs: list[str] = []
        self.t = Transport(nid, "cid", peers, self.got.append, self.unreachable.append,
                           lambda p, failed: self.snap_status.append((p, failed)), self.logs.append,
                           net=TCPNetwork(), seed=0, max_queue=max_queue, bugs=bugs)


def peers(n: int) -> dict[str, tuple[str, int]]:
    return {f"n{i + 1}": (HOST, p) for i, p in enumerate(free_ports(n))}


async def until(cond, timeout: float = 30.0) -> None:
    """Polls `cond` until it holds; the timeout only bounds a hang (a loaded machine is slow)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def app(i: int, src: str = "n1", dst: str = "n2") -> Message:
    return Message(type=MSG_APP, src=src, dst=dst, term=1, log_term=1, index=i - 1,
                   entries=(Entry(1, i, {"op": "noop", "i": i}),), commit=i - 1)


def test_messages_arrive_in_order_and_batched():
    async def main():
        ps = peers(2)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        try:
            await until(lambda: a.t.connected()["n2"])
            for i in range(1, 2001):
                a.t.send([app(i)])
                if i % 500 == 0:
                    await asyncio.sleep(0)
            await until(lambda: len(b.got) == 2000)
            assert [m.entries[0].index for m in b.got] == list(range(1, 2001))
            assert b.got[5] == app(6)  # decoded exactly as sent
            assert a.t.stats.frames_sent < 2000  # queued messages went out in batches
            assert a.unreachable == []
        finally:
            await a.t.stop()
            await b.t.stop()

    asyncio.run(main())


def test_messages_to_a_down_peer_are_reported_unreachable_then_delivered_after_it_starts():
    async def main():
        ps = peers(2)
        a = Endpoint("n1", ps)
        await a.t.start()
        try:
            a.t.send([app(1)])
            await until(lambda: a.unreachable)
            assert a.unreachable[0] == "n2" and a.t.stats.dropped >= 1
            # snapshots to an unreachable peer are reported failed
            a.t.send([Message(type=MSG_SNAP, src="n1", dst="n2", term=1,
                              snapshot=Snapshot(index=5, term=1, peers=("n1", "n2"), data={}))])
            await until(lambda: ("n2", True) in a.snap_status)
            b = Endpoint("n2", ps)
            await b.t.start()
            try:
                await until(lambda: a.t.connected()["n2"])
                a.t.send([app(2), app(3)])
                await until(lambda: len(b.got) == 2)
                assert [m.entries[0].index for m in b.got] == [2, 3]
            finally:
                await b.t.stop()
        finally:
            await a.t.stop()

    asyncio.run(main())


def test_peer_restart_is_detected_and_the_stream_reconnects():
    async def main():
        ps = peers(2)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        await until(lambda: a.t.connected()["n2"])
        a.t.send([app(1)])
        await until(lambda: len(b.got) == 1)
        await b.t.stop()  # the peer dies
        await until(lambda: not a.t.connected()["n2"])
        a.t.send([app(2)])
        await until(lambda: "n2" in a.unreachable)
        b2 = Endpoint("n2", ps)
        await b2.t.start()
        try:
            await until(lambda: a.t.connected()["n2"])
            a.t.send([app(3)])
            await until(lambda: len(b2.got) == 1)
            assert b2.got[0].entries[0].index == 3
            assert a.t.stats.connects >= 2
        finally:
            await a.t.stop()
            await b2.t.stop()

    asyncio.run(main())


def test_queue_overflow_drops_and_reports_never_silently():
    async def main():
        ps = peers(2)
        a = Endpoint("n1", ps, max_queue=10)
        await a.t.start()
        try:
            # n2 is not listening: the queue fills while the first connect attempt runs
            a.t.send([app(i) for i in range(1, 50)])
            assert a.t.stats.dropped >= 39
            assert a.unreachable.count("n2") >= 1
            await until(lambda: a.t.stats.dropped == 49)
        finally:
            await a.t.stop()

    asyncio.run(main())


def test_a_message_claiming_another_sender_closes_the_stream():
    async def main():
        ps = peers(3)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        try:
            await until(lambda: a.t.connected()["n2"])
            # n1's stream carrying a message that says it is from n3: rejected, logged, not delivered
            a.t.send([Message(type=MSG_HEARTBEAT, src="n3", dst="n2", term=1)])
            await until(lambda: any("closing connection" in m for m in b.logs))
            assert b.got == []
            assert "n2" in a.unreachable or a.t.stats.connects >= 1
            # the stream comes back and honest traffic flows again
            await until(lambda: a.t.connected()["n2"])
            await asyncio.sleep(0.1)
            a.t.send([app(1)])
            await until(lambda: len(b.got) == 1)
        finally:
            await a.t.stop()
            await b.t.stop()

    asyncio.run(main())


def test_a_stream_whose_data_goes_unacknowledged_is_aborted_and_redialled():
    # A peer whose kernel stops acknowledging (here: it accepts and never reads, so its window
    # closes; a partition drops the acks outright) must not hold the stream forever. Without
    # TCP_USER_TIMEOUT the sender waits on TCP's retransmission backoff, which was measured to keep
    # a healed node cut off for up to 14 s; with it, the stream is aborted and dialled again.
    async def main():
        ps = peers(2)
        host, port = ps["n2"]
        mute = socket.create_server((host, port))
        mute.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        a = Endpoint("n1", ps, max_queue=1_000_000)
        await a.t.start()
        accepted = []
        loop = asyncio.get_running_loop()
        mute.setblocking(False)
        try:
            conn, _ = await loop.sock_accept(mute)
            accepted.append(conn)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            big = Message(type=MSG_APP, src="n1", dst="n2", term=1, log_term=1, index=0,
                          entries=tuple(Entry(1, i, {"pad": "x" * 1000}) for i in range(1, 200)), commit=0)
            t0 = loop.time()
            while a.t.stats.connects < 2 and loop.time() - t0 < 20:
                a.t.send([big])
                await asyncio.sleep(0.05)
                with contextlib.suppress(BlockingIOError):
                    conn2, _ = mute.accept()
                    accepted.append(conn2)
            assert a.t.stats.connects >= 2, "the stuck stream was never aborted"
            assert loop.time() - t0 < transport.UNACKED_TIMEOUT_MS / 1000 + 8
            assert "n2" in a.unreachable  # what was queued on the dead stream was reported lost
        finally:
            await a.t.stop()
            for c in accepted:
                c.close()
            mute.close()

    asyncio.run(asyncio.wait_for(main(), 60))  # without the bound, the sender hangs on the dead stream


class SteppedLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock a test can step, as libfaketime steps a node's monotonic clock
    (the clock asyncio's timers run on) under a clock fault."""

    offset = 0.0

    def time(self) -> float:
        return super().time() + self.offset


def test_a_backoff_begun_before_the_clock_stepped_back_ends_when_a_message_is_queued():
    # A backoff timer set before the clock steps back waits the size of the step on top: a
    # simulated replica whose clock was reset from +45 s stayed unconnected to its leader, and
    # behind it, long after the heal. A message queued for the peer must end such a backoff.
    step = 60.0

    async def main():
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SteppedLoop)
        ps = peers(2)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        stepped = loop.create_future()

        def step_back() -> None:
            loop.offset = 0.0
            stepped.set_result(None)

        def unreachable(peer: str) -> None:
            a.unreachable.append(peer)
            if len(a.unreachable) == 1:
                loop.call_soon(step_back)  # the sender is in its backoff by then

        a.t.on_unreachable = unreachable
        loop.offset = step
        await a.t.start()
        a.t.send([app(1)])  # n2 is down: the dial is refused, app(1) reported lost, the sender backs off
        try:
            await stepped
            await b.t.start()
            a.t.send([app(2)])
            await until(lambda: len(b.got) == 1, timeout=step / 2)  # a backoff that waits the step: 60 s
            assert b.got[0].entries[0].index == 2
            assert a.t.connected()["n2"]
        finally:
            await a.t.stop()
            await b.t.stop()

    with asyncio.Runner(loop_factory=SteppedLoop) as runner:
        runner.run(main())


def test_sending_frames_on_an_open_stream_creates_no_task_per_frame():
    """The pump waits for work on one plain future: a task per frame sent costs every message an
    extra round of the event loop (and a simulated cluster most of its time)."""

    async def main():
        ps = peers(2)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        loop = asyncio.get_running_loop()
        created = []

        def factory(lp, coro, **kw):
            created.append(coro)
            return asyncio.Task(coro, loop=lp, **kw)

        try:
            await until(lambda: a.t.connected()["n2"] and "n1" in b.t._incoming)
            loop.set_task_factory(factory)
            for i in range(1, 51):
                a.t.send([app(i)])
                await until(lambda: len(b.got) == i)  # noqa: B023
            assert [m.entries[0].index for m in b.got] == list(range(1, 51))
            assert a.t.stats.frames_sent >= 50
            assert created == []
        finally:
            loop.set_task_factory(None)
            await a.t.stop()
            await b.t.stop()

    asyncio.run(main())


def test_a_frame_for_an_idle_stream_is_written_without_waking_the_pump():
    """A message queued while the pump waits with nothing to send is written by one plain callback
    where the pump's wake-up would have been: the pump itself waits once, not once per frame."""

    async def main():
        ps = peers(2)
        a, b = Endpoint("n1", ps), Endpoint("n2", ps)
        await a.t.start()
        await b.t.start()
        try:
            await until(lambda: a.t.connected()["n2"] and "n1" in b.t._incoming)
            sender = a.t.senders["n2"]
            waits = []
            wait = sender._wait_for_work

            async def counted(*args):
                waits.append(args)
                await wait(*args)

            sender._wait_for_work = counted
            await until(lambda: sender._idle is not None)
            for i in range(1, 51):
                a.t.send([app(i)])
                await until(lambda: len(b.got) == i)  # noqa: B023
            assert [m.entries[0].index for m in b.got] == list(range(1, 51))
            assert a.t.stats.frames_sent >= 50 and a.t.stats.sent == 50
            assert waits == []
        finally:
            await a.t.stop()
            await b.t.stop()

    asyncio.run(main())


@contextlib.contextmanager
def _sim_pair(seed: int = 1):
    """Two transports, n1 and n2, on the simulated network, started and connected (the simulation
    closed after, so that no coroutine of it is finalised later)."""
    s = Scheduler(seed)
    net = SimNetwork(s)
    ps = {"n1": ("n1", 9093), "n2": ("n2", 9093)}
    ends = {}
    for nid in ps:
        e = Endpoint.__new__(Endpoint)
        e.got, e.unreachable, e.snap_status, e.logs = [], [], [], []
        e.t = Transport(nid, "cid", ps, e.got.append, e.unreachable.append,
                        lambda p, failed, e=e: e.snap_status.append((p, failed)), e.logs.append,
                        net=net.for_host(nid), seed=0, max_queue=1_000_000)
        ends[nid] = (e, SimLoop(s, nid))
        s.run_until_complete(e.t.start(), ends[nid][1])
    s.run_until(1.0)
    (a, la), (b, _) = ends["n1"], ends["n2"]
    assert a.t.connected()["n2"]
    try:
        yield s, net, a, la, b
    finally:
        s.close()


def test_a_drain_that_must_wait_is_finished_by_the_pump_and_later_frames_follow_in_order():
    with _sim_pair() as (s, net, a, la, b):
        sender = a.t.senders["n2"]
        assert sender._idle is not None
        net.cut([("n1", "n2")])
        big = [Message(type=MSG_APP, src="n1", dst="n2", term=1, log_term=1, index=i - 1,
                       entries=(Entry(1, i, {"pad": "x" * 1000}),), commit=0) for i in range(1, 401)]
        snap = Message(type=MSG_SNAP, src="n1", dst="n2", term=1, snapshot=Snapshot(index=400, term=1))
        la.call_soon(a.t.send, big)  # > SEND_BUFFER in one frame: its drain has to wait
        s.run_until(s.now + 0.01)
        assert sender._idle is None and sender.queue == collections.deque()
        assert net._pipes and sum(p.pending_bytes for p, _ in net._pipes.values()) > SEND_BUFFER
        la.call_soon(a.t.send, [snap, app(401)])  # queued behind the waiting drain
        s.run_until(s.now + 0.01)
        assert len(sender.queue) == 2 and a.snap_status == []
        s.call_at(s.now + 0.5, net.heal)
        s.run_until(s.now + 1.0)
        assert [m.type for m in b.got] == [MSG_APP] * 400 + [MSG_SNAP, MSG_APP]
        assert a.snap_status == [("n2", False)] and a.unreachable == []
        assert sender._idle is not None


def test_a_write_that_fails_in_the_callback_is_reported_lost_and_the_stream_redialled():
    with _sim_pair() as (s, net, a, la, b):
        sender = a.t.senders["n2"]
        [(c2s, _)] = [p for p in net._pipes.values() if p[0].src.host == "n1"]
        # the stream broke, and the writer's drain is the first to tell (its reader does not know yet)
        c2s.src.error = ConnectionResetError("reset by the test")
        la.call_soon(a.t.send, [app(1)])
        s.run_until(s.now + 1.0)
        assert a.unreachable == ["n2"]
        assert any("1 messages to n2 not delivered (write failed)" in line for line in a.logs), a.logs
        assert any("stream to n2 broke: reset by the test" in line for line in a.logs), a.logs
        assert a.t.stats.connects == 2 and a.t.connected()["n2"]
        la.call_soon(a.t.send, [app(2)])
        s.run_until(s.now + 1.0)
        assert [m.entries[0].index for m in b.got] == [2]
        assert sender._idle is not None

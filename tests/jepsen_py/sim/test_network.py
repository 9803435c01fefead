"""The simulated network: latency, ordering, cuts and the unacknowledged-data abort, refusals, resets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jepsen_py.sim.loop import Scheduler, SimLoop
from jepsen_py.sim.network import SimNetwork, SimStreamWriter


class World:
    """Two hosts, a and b, each with one process; b listens on 9000 and records what it reads."""

    def __init__(self, seed: int = 1) -> None:
        self.s = Scheduler(seed)
        self.net = SimNetwork(self.s)
        self.a = SimLoop(self.s, "a")
        self.b = SimLoop(self.s, "b")
        self.got: list[tuple[float, bytes]] = []
        self.server_writers: list[SimStreamWriter] = []
        self.server_end: list[tuple[float, str]] = []
        self.net.for_host("a")
        hb = self.net.for_host("b")

        async def handler(reader: asyncio.StreamReader, writer: Any) -> None:
            self.server_writers.append(writer)
            try:
                while True:
                    data = await reader.read(1 << 16)
                    if not data:
                        self.server_end.append((self.s.now, "eof"))
                        return
                    self.got.append((self.s.now, data))
            except OSError as e:
                self.server_end.append((self.s.now, type(e).__name__))

        self.listener = self.s.run_until_complete(hb.start_server(handler, "b", 9000), self.b)

    def dial(self, timeout: float = 10.0) -> tuple[asyncio.StreamReader, SimStreamWriter]:
        ha = self.net.for_host("a")
        return self.s.run_until_complete(asyncio.wait_for(ha.open_connection("b", 9000), timeout), self.a)

    def run(self, coro: Any) -> Any:
        return self.s.run_until_complete(coro, self.a)


def test_bytes_arrive_in_order_after_a_latency() -> None:
    w = World()
    _reader, writer = w.dial()
    t0 = w.s.now
    assert 0 < t0 < 0.01  # a round trip of about a millisecond
    assert writer.get_extra_info("peername") == ("b", 9000)

    async def send() -> None:
        for i in range(200):
            writer.write(b"%d," % i)
        await writer.drain()

    w.run(send())
    w.s.run_until(w.s.now + 1)
    data = b"".join(d for _, d in w.got)
    assert data == b"".join(b"%d," % i for i in range(200))
    assert all(t > t0 for t, _ in w.got)


def test_no_listener_is_refused_unknown_host_fails() -> None:
    w = World()
    ha = w.net.for_host("a")
    with pytest.raises(ConnectionRefusedError):
        w.run(ha.open_connection("b", 9999))
    with pytest.raises(OSError):
        w.run(ha.open_connection("nowhere", 9000))
    w.listener.close()
    with pytest.raises(ConnectionRefusedError):
        w.run(ha.open_connection("b", 9000))


def test_dial_across_a_cut_gets_no_answer_and_connects_after_the_heal() -> None:
    w = World()
    w.net.cut([("b", "a")])  # even one direction: the SYN-ACK is lost
    with pytest.raises(TimeoutError):
        w.dial(timeout=1.5)
    w.net.heal()
    _reader, writer = w.dial()
    assert not writer.is_closing()


def test_short_cut_holds_data_and_delivers_it_in_order_after_the_heal() -> None:
    w = World()
    _, writer = w.dial()
    w.net.cut([("a", "b")])
    writer.write(b"one")
    writer.write(b"two")
    w.s.run_until(w.s.now + 1.0)
    assert w.got == []
    w.net.heal()
    healed = w.s.now
    w.s.run_until(healed + 1.0)
    assert b"".join(d for _, d in w.got) == b"onetwo"
    assert all(t > healed for t, _ in w.got)
    w.run(writer.drain())  # no error: the data was acknowledged in time


def test_data_unacknowledged_past_the_timeout_aborts_the_senders_stream_only() -> None:
    w = World()
    reader, writer = w.dial()
    w.net.cut([("a", "b"), ("b", "a")])
    cut_at = w.s.now
    writer.write(b"lost")
    w.s.run_until(cut_at + 1.9)
    w.run(writer.drain())
    w.s.run_until(cut_at + 2.1)
    with pytest.raises(TimeoutError):
        w.run(writer.drain())
    with pytest.raises(TimeoutError):
        w.run(reader.read(1))
    assert writer.is_closing()
    assert w.server_end == []  # the peer learns nothing across the cut
    w.net.heal()
    w.s.run_until(w.s.now + 1)
    assert w.got == []  # the aborted stream's data never arrives


def test_acks_lost_on_the_way_back_abort_the_sender_too() -> None:
    w = World()
    _, writer = w.dial()
    w.net.cut([("b", "a")])
    writer.write(b"delivered")
    w.s.run_until(w.s.now + 2.5)
    assert b"".join(d for _, d in w.got) == b"delivered"
    with pytest.raises(TimeoutError):
        w.run(writer.drain())


def test_close_gives_the_peer_eof_and_writes_to_a_closed_end_are_reset() -> None:
    w = World()
    _reader, writer = w.dial()
    writer.write(b"bye")
    writer.close()
    w.s.run_until(w.s.now + 0.1)
    assert [d for _, d in w.got] == [b"bye"]
    assert [e for _, e in w.server_end] == ["eof"]
    (sw,) = w.server_writers
    sw.write(b"anyone?")
    w.s.run_until(w.s.now + 0.1)
    with pytest.raises(ConnectionResetError):
        w.s.run_until_complete(sw.drain(), w.b)


def test_a_dead_host_closes_its_streams_and_refuses_new_ones() -> None:
    w = World()
    reader, writer = w.dial()
    w.s.kill(w.b)
    w.net.host_down("b")
    w.s.run_until(w.s.now + 0.1)
    assert w.run(reader.read(10)) == b""  # the dead host's kernel sent a FIN
    writer.write(b"late")
    w.s.run_until(w.s.now + 0.1)
    with pytest.raises(ConnectionResetError):
        w.run(writer.drain())
    ha = w.net.for_host("a")
    with pytest.raises(ConnectionRefusedError):
        w.run(ha.open_connection("b", 9000))


def test_a_paused_receiver_gets_its_data_on_resume_without_any_abort() -> None:
    w = World()
    _, writer = w.dial()
    w.s.pause(w.b)
    writer.write(b"wait for me")
    w.s.run_until(w.s.now + 5)
    assert w.got == []
    w.run(writer.drain())
    w.s.resume(w.b)
    w.s.run_until(w.s.now + 0.01)
    assert [d for _, d in w.got] == [b"wait for me"]


def test_drain_waits_while_the_send_buffer_is_full() -> None:
    w = World()
    _, writer = w.dial()
    w.net.cut([("a", "b")])
    writer.write(b"x" * (512 * 1024))

    async def drained() -> float:
        await writer.drain()
        return w.s.now

    w.s.call_at(w.s.now + 1.0, w.net.heal)
    at = w.run(drained())
    assert at >= 1.0


def test_same_seed_same_latencies() -> None:
    def arrivals(seed: int) -> list[float]:
        w = World(seed)
        _, writer = w.dial()
        for i in range(20):
            writer.write(b"%d" % i)
        w.s.run_until(w.s.now + 1)
        return [t for t, _ in w.got]

    assert arrivals(5) == arrivals(5)
    assert arrivals(5) != arrivals(6)


def test_link_latency_is_lognormal_around_its_median_and_seeded() -> None:
    import math
    import random
    import statistics

    from jepsen_py.sim.network import LinkProfile

    p = LinkProfile(median_s=0.002, sigma=0.5)
    rng = random.Random(3)
    xs = [p.draw(rng) for _ in range(40_000)]
    assert xs[:100] == [p.draw(r) for r in [random.Random(3)] for _ in range(100)]  # seeded
    logs = [math.log(x / 0.002) for x in xs]
    assert abs(statistics.median(xs) / 0.002 - 1) < 0.03
    assert abs(statistics.pstdev(logs) - 0.5) < 0.02
    assert 3.0 < max(logs) / 0.5 < 4.0 and 3.0 < -min(logs) / 0.5 < 4.0  # tails of about 3.5 sigma


def test_a_link_with_a_profile_of_its_own_delays_by_it_in_one_direction_only() -> None:
    from jepsen_py.sim.network import LinkProfile

    w = World()
    reader, writer = w.dial()
    w.net.links[("a", "b")] = LinkProfile(median_s=0.25, sigma=0.0)
    sent = w.s.now
    writer.write(b"slow")
    w.s.run_until(sent + 1.0)
    assert w.got == [(pytest.approx(sent + 0.25), b"slow")]
    w.server_writers[0].write(b"fast")
    back = w.s.now
    got = w.run(reader.read(4))
    assert got == b"fast" and w.s.now - back < 0.01

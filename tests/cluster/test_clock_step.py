"""A node whose clock steps back (libfaketime moves time.monotonic and so asyncio's timers) keeps
ticking, and only a leader gives up an election timeout for it (its lease); followers do not all
campaign at once."""

from __future__ import annotations

import asyncio

import pytest
from jepsen_py.cluster.node import Node, NodeConfig, ReadRound
from jepsen_py.cluster.raft.messages import LEADER, MSG_HEARTBEAT, Message
from jepsen_py.cluster.realio import real_env

ELECTION_TICK = NodeConfig(id="n1", peers={"n1": ("127.0.0.1", 1)}, data_dir="/unused",
                           client_port=9).election_tick


class SteppedLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock a test can step, as libfaketime steps a node's monotonic clock (the
    clock asyncio's timers run on) under a clock fault."""

    offset = 0.0

    def time(self) -> float:
        return super().time() + self.offset


class LoopClock:
    """The node's clock readings from the same stepped loop (both move under a clock fault)."""

    def __init__(self, loop: SteppedLoop) -> None:
        self.loop = loop

    def monotonic(self) -> float:
        return self.loop.time()

    def wall(self) -> float:
        return 1_700_000_000.0 + self.loop.time()


async def until(cond, timeout: float) -> None:
    """Polls `cond` every 10 ms until it holds; fails after `timeout` seconds of real time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("first_input", ["read", "status"])
def test_a_node_keeps_ticking_after_its_clock_steps_back(tmp_path, first_input):
    # A tick timer set before the clock stepped back fired the size of the step late: a node then
    # ticked only when some input came in, so a leader sent no heartbeats and, on Docker, every node
    # of a cluster whose clocks were reset from +27 s campaigned together at each client request.
    step = 60.0
    loop = SteppedLoop()
    loop.offset = step
    env = real_env()
    env = type(env)(net=env.net, disk=env.disk, clock=LoopClock(loop), entropy=env.entropy, exit=env.exit,
                    pid=env.pid)
    logs: list[str] = []
    node = Node(NodeConfig(id="n1", peers={"n1": ("127.0.0.1", 0)}, data_dir=str(tmp_path / "d"),
                           client_port=0, client_host="127.0.0.1"), logs.append, env=env)

    async def main() -> None:
        running = asyncio.ensure_future(node.run())
        try:
            # bounds, not expectations: a loaded machine is slow, and a tick timer that waits out
            # the 60 s step would still miss the 30 s bound below
            await until(lambda: node.raw.soft_state().role == LEADER, timeout=30.0)
            loop.offset = 0.0  # the clock steps back a minute
            # one input (a read, or the controller asking who leads): the node sees the clock went back
            if first_input == "read":
                await node.read_barrier()
            else:
                node.status()
            ticks = node.raw.raft.ticks
            # no input from here on: only the tick timer can move the core
            await until(lambda: node.raw.raft.ticks >= ticks + 5, timeout=30.0)
            assert node.raw.soft_state().role == LEADER
        finally:
            node.stopping.set()
            await running

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert any("clock went back 59.9" in line and "lease given up" in line for line in logs), logs


def _node(tmp_path, peers: dict[str, tuple[str, int]]) -> Node:
    node = Node(NodeConfig(id="n1", peers=peers, data_dir=str(tmp_path), client_port=9, read_mode="lease"),
                log=lambda _m: None, env=real_env())
    node.schedule_ready = lambda: None  # no event loop here: the Ready is not needed
    return node


def test_a_clock_going_back_spends_an_election_timeout_on_a_leader_only(tmp_path):
    three = {"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)}
    follower = _node(tmp_path / "f", three)
    before = follower.raw.raft.ticks
    follower._last_tick += 5.0  # the clock now reads 5 s earlier than at the last tick
    follower.catch_up_ticks()
    # a follower waits longer instead: spending a timeout made every node whose clock went back
    # campaign at the same instant and split the vote
    assert follower.raw.raft.ticks == before and follower.raw.soft_state().role != "pre-candidate"
    follower.wal.close()

    leader = _node(tmp_path / "l", {"n1": ("127.0.0.1", 1)})
    leader.raw.campaign()
    assert leader.raw.soft_state().role == LEADER
    before = leader.raw.raft.ticks
    leader._last_tick += 5.0
    leader.catch_up_ticks()
    assert leader.raw.raft.ticks == before + ELECTION_TICK  # its lease is given up
    leader.wal.close()


def test_a_jump_forward_spends_a_quarter_timeout_on_a_follower_and_a_timeout_on_a_leader(tmp_path):
    # A stall cannot be told from the clock stepping forward. Two election timeouts at once made
    # every node whose clock jumped campaign at the same instant, and a leader judge CheckQuorum twice
    # in one burst (the second time on silence, as no message arrives within a burst) and step down.
    three = {"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)}
    follower = _node(tmp_path / "f", three)
    follower.raw.step(Message(type=MSG_HEARTBEAT, src="n2", dst="n1", term=1))
    assert follower.raw.soft_state().leader == "n2"
    before = follower.raw.raft.ticks
    follower._last_tick -= 30.0  # the clock now reads 30 s later than at the last tick
    follower.catch_up_ticks()
    assert follower.raw.raft.ticks == before + ELECTION_TICK // 4
    assert follower.raw.soft_state().role == "follower" and follower.raw.soft_state().leader == "n2"
    follower.wal.close()

    leader = _node(tmp_path / "l", {"n1": ("127.0.0.1", 1)})
    leader.raw.campaign()
    before = leader.raw.raft.ticks
    leader._last_tick -= 30.0
    leader.catch_up_ticks()
    assert leader.raw.raft.ticks == before + ELECTION_TICK
    assert leader.raw.soft_state().role == LEADER
    leader.wal.close()


def test_a_read_round_started_before_the_clock_went_back_is_asked_again(tmp_path):
    # A round's age is read off the clock: one started while the clock was 39 s ahead looked younger
    # than an election timeout (its age negative) until the clock caught up, so a round lost in a
    # leader change held every read on the node for 39 s after the clock was reset (explore found it
    # on the correct build; tests/jepsen_py/explore/test_found_on_the_correct_build.py replays it).
    three = {"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)}
    node = _node(tmp_path, three)
    node.raw.step(Message(type=MSG_HEARTBEAT, src="n2", dst="n1", term=1))
    loop = asyncio.new_event_loop()
    try:
        read = loop.create_future()
        node.read_round = ReadRound("n1.lost", node.clock.monotonic() + 39.0, [read])
        node.tick()
        assert node.read_round is not None and node.read_round.context != "n1.lost"
        assert node.read_round.waiters == [read] and node.read_round.started <= node.clock.monotonic()
    finally:
        loop.close()
        node.wal.close()

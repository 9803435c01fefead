"""The peer transport on loopback under a clock that steps back (libfaketime moves asyncio's timers):
a dial begun before the step does not wait the size of the step for its timeout."""

from __future__ import annotations

import asyncio
import contextlib
import socket

from jepsen_py.cluster.realio import TCPNetwork
from jepsen_py.cluster.transport import CONNECT_TIMEOUT, Transport

from tests.cluster.test_clock_step import SteppedLoop
from tests.cluster.test_transport import HOST, app, until


def test_a_dial_begun_before_the_clock_stepped_back_ends_when_a_message_is_queued():
    # A dial across a cut hangs (its SYNs are dropped) until its timeout; set before the clock
    # stepped back, that timeout came the size of the step late, and a real dial that outlives a
    # cut connects only at the kernel's next SYN retransmission, seconds after the heal.
    step = 60.0
    # A listener whose accept queue is full and never drained: the kernel drops further SYNs, so a
    # dial to it hangs as one across a cut does.
    hole = socket.socket()
    hole.bind((HOST, 0))
    hole.listen(0)
    filler = socket.create_connection(hole.getsockname(), timeout=2.0)
    peers = {"n1": (HOST, 0), "n2": hole.getsockname()}
    unreachable: list[str] = []
    logs: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, SteppedLoop)
        t = Transport("n1", "cid", peers, lambda _m: None, unreachable.append, lambda _p, _f: None,
                      logs.append, net=TCPNetwork(), seed=0)
        loop.offset = step
        await t.start()
        try:
            t.send([app(1)])  # the dial to n2 starts and hangs
            await asyncio.sleep(CONNECT_TIMEOUT / 4)
            assert unreachable == []
            loop.offset = 0.0  # the clock steps back a minute, well within the dial's timeout
            t.send([app(2)])
            # given up at once (not 61 s later): both messages are reported lost, the peer redialled
            # bounded well inside the step (a dial that waited it out would end 60 s on), not at a
            # fraction of a second a loaded machine can miss; the log line says which path ended it
            await until(lambda: unreachable, timeout=step / 2)
            assert any("clock stepped back during the dial" in line for line in logs), logs
        finally:
            await t.stop()

    try:
        with asyncio.Runner(loop_factory=SteppedLoop) as runner:
            runner.run(main())
    finally:
        with contextlib.suppress(OSError):
            filler.close()
        hole.close()

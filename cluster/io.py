"""The node's only ways to touch the world: network, disk, clock, entropy and process exit.

Everything above these interfaces (the Raft core, the Ready loop, the transport's queueing and
reconnect logic, the WAL's record format and recovery, the client server, every seed bug) is shared
by the two implementations: `real_env()` in cluster/realio.py, which a node process uses on a real
machine, and the deterministic simulator's, which runs many nodes in one process in virtual time. So
a bug that lives in the transport or the WAL behaves the same under both: only bytes, files and time
are swapped.

Timers and sleeping stay asyncio's (`asyncio.sleep`, `loop.call_later`, `asyncio.wait_for`): the
simulator gives every node an event loop whose `time()` is that node's virtual clock, so the node
code schedules through the loop it runs on in both worlds. `Clock` is for *reading* time: the
monotonic reading ticks and leases are measured with, and the wall reading logs are stamped with.
Both are what a clock fault moves (libfaketime on Docker, an offset in the simulator).

Streams keep asyncio's shape: a reader is an `asyncio.StreamReader` (pure Python, fed by whichever
network delivers the bytes) and a writer is anything with the `StreamWriter` methods below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

#: How long sent data may stay unacknowledged before a stream breaks (TCP_USER_TIMEOUT on a real
#: machine). Without it, a stream that outlives a partition resumes only at TCP's next
#: retransmission, whose backoff has grown to several seconds by the heal (a healed node was measured
#: stalling 3-14 s); breaking lets the sender redial, and a fresh stream goes through as soon as the
#: network does.
UNACKED_TIMEOUT_MS = 2000


class StreamWriter(Protocol):
    """The sending half of one ordered byte stream (a TCP connection on a real machine)."""

    def write(self, data: bytes) -> None:
        """Queues bytes; never blocks. Raises ConnectionError once the stream is known broken."""

    async def drain(self) -> None:
        """Waits until queued bytes were handed to the network; raises ConnectionError/OSError if the
        stream broke (reset, or data unacknowledged for too long)."""

    def close(self) -> None:
        """Closes the stream; the peer's reader sees EOF (or a reset)."""

    async def wait_closed(self) -> None: ...

    def is_closing(self) -> bool: ...

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """'peername' at least (a description of the remote end, for logs)."""


ConnectionHandler = Callable[[asyncio.StreamReader, StreamWriter], Awaitable[None]]


class Listener(Protocol):
    """A listening endpoint; closing it stops accepting (open streams live on)."""

    def close(self) -> None: ...

    def port(self) -> int:
        """The port actually bound (the one asked for, or the kernel's choice for port 0)."""


class Network(Protocol):
    """Ordered, reliable-until-broken byte streams between nodes and clients."""

    async def open_connection(self, host: str, port: int) -> tuple[asyncio.StreamReader, StreamWriter]:
        """Dials host:port. Raises ConnectionRefusedError when nothing listens there, OSError (or
        TimeoutError under the caller's wait_for) when the path is cut. A stream that outlives a cut
        breaks when its data stays unacknowledged for about UNACKED_TIMEOUT_MS (TCP_USER_TIMEOUT on
        a real machine) instead of stalling until the cut heals."""

    async def start_server(self, handler: ConnectionHandler, host: str, port: int) -> Listener:
        """Listens on host:port and runs `handler` as a task per accepted stream."""


class AppendFile(Protocol):
    """A file open for appending (the WAL). Data is durable only after `sync()` returns."""

    def write(self, data: bytes) -> None:
        """Appends all of `data` (may be torn by a crash before the next sync)."""

    def sync(self) -> None:
        """fdatasync: everything written so far survives a crash."""

    def close(self) -> None: ...


class Disk(Protocol):
    """The node's data directory. Paths are plain strings; the simulator keeps one Disk per node.

    Crash semantics the node relies on: data written but not synced may be lost (from the tail:
    appends are never reordered), a rename is durable once the directory is synced, and
    `write_file(..., sync=True)` then `rename` then `sync_dir` is an atomic durable replace."""

    def makedirs(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def listdir(self, path: str) -> list[str]: ...

    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError if absent."""

    def write_file(self, path: str, data: bytes, sync: bool) -> None:
        """Creates or overwrites `path` with `data`, synced if asked."""

    def open_append(self, path: str) -> AppendFile: ...

    def truncate(self, path: str, size: int, sync: bool) -> None: ...

    def rename(self, src: str, dst: str) -> None:
        """Atomically replaces dst by src (os.replace)."""

    def remove(self, path: str) -> None: ...

    def sync_dir(self, path: str) -> None:
        """Makes creates, renames and removes in directory `path` durable."""

    def lock(self, path: str) -> bool:
        """Takes an exclusive lock on `path` (created if absent) for the life of the process;
        False if another process holds it."""

    def open_log(self, path: str) -> Callable[[str], None]:
        """An appender of text lines, each flushed at once (a kill -9 loses nothing already written).
        If the appender has a `close()` method, the node calls it when it stops."""


class Clock(Protocol):
    """Time as the node reads it; both readings move under a clock fault."""

    def monotonic(self) -> float:
        """Seconds, never decreasing except under a clock fault (libfaketime moves it too)."""

    def wall(self) -> float:
        """Seconds since the epoch, for log stamps and uptime."""


@dataclass(frozen=True)
class NodeEnv:
    """Everything a node gets from its surroundings, passed to Node explicitly."""

    net: Network
    disk: Disk
    clock: Clock
    #: random bytes (boot ids, RNG seeds); deterministic under the simulator
    entropy: Callable[[int], bytes]
    #: ends the node's process at once (fail-stop after a fatal error); the simulator crashes the node
    exit: Callable[[int], NoReturn]
    #: the process id the node reports in its log and status (any stable number in the simulator)
    pid: int = 0

"""The real machine behind the node's interfaces (cluster/io.py): TCP, the file system, the OS clock.

This is the only module of the node that touches sockets, files, time readings, os.urandom and
os._exit. Everything it does is what the node did inline before the interfaces existed, so a node
on Docker behaves exactly as before: streams are asyncio's, every dialled stream gets
TCP_USER_TIMEOUT, files are written with os/fcntl and fsync'd as the caller asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable
from typing import NoReturn

from .io import UNACKED_TIMEOUT_MS, ConnectionHandler, Listener, NodeEnv, StreamWriter


def bound_unacked_time(writer: asyncio.StreamWriter) -> None:
    """Sets TCP_USER_TIMEOUT on a stream's socket, where the platform has it (Linux)."""
    sock = writer.get_extra_info("socket")
    opt = getattr(socket, "TCP_USER_TIMEOUT", None)
    if sock is not None and opt is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, opt, UNACKED_TIMEOUT_MS)


class TCPListener:
    """An asyncio server as a Listener."""

    def __init__(self, server: asyncio.base_events.Server, asked: int) -> None:
        self._server = server
        self._asked = asked

    def close(self) -> None:
        self._server.close()

    def port(self) -> int:
        socks = self._server.sockets
        return int(socks[0].getsockname()[1]) if socks else self._asked


class TCPNetwork:
    """Streams over the machine's TCP/IP stack."""

    async def open_connection(self, host: str, port: int) -> tuple[asyncio.StreamReader, StreamWriter]:
        reader, writer = await asyncio.open_connection(host, port)
        bound_unacked_time(writer)
        return reader, writer

    async def start_server(self, handler: ConnectionHandler, host: str, port: int) -> Listener:
        server = await asyncio.start_server(handler, host, port, reuse_address=True)
        return TCPListener(server, port)


class OSAppendFile:
    """A file descriptor opened O_APPEND."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def sync(self) -> None:
        os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class LineLog:
    """Text lines appended to a file, flushed per line; callable, and closable when the node stops."""

    def __init__(self, path: str) -> None:
        self._f = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the node

    def __call__(self, line: str) -> None:
        self._f.write(line + "\n")

    def close(self) -> None:
        self._f.close()


class OSDisk:
    """The local file system."""

    def __init__(self) -> None:
        self._locks: list[int] = []

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write_file(self, path: str, data: bytes, sync: bool) -> None:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())

    def open_append(self, path: str) -> OSAppendFile:
        return OSAppendFile(path)

    def truncate(self, path: str, size: int, sync: bool) -> None:
        with open(path, "r+b") as f:
            f.truncate(size)
            f.flush()
            if sync:
                os.fsync(f.fileno())

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        os.remove(path)

    def sync_dir(self, path: str) -> None:
        fd = os.open(path or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def lock(self, path: str) -> bool:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._locks.append(fd)  # held until the process ends (or unlock_all)
        return True

    def unlock_all(self) -> None:
        """Releases every lock taken through this disk: a node reopened in the same process."""
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()

    def open_log(self, path: str) -> Callable[[str], None]:
        return LineLog(path)


class OSClock:
    """time.monotonic and time.time (both moved by libfaketime under a clock fault)."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


def _exit(code: int) -> NoReturn:
    os._exit(code)


def real_env() -> NodeEnv:
    """The environment of a node process on a real machine."""
    return NodeEnv(net=TCPNetwork(), disk=OSDisk(), clock=OSClock(), entropy=os.urandom, exit=_exit,
                   pid=os.getpid())

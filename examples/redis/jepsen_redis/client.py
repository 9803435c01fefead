"""A register client for Redis over RESP (Redis's wire protocol), standard library only.

Writes and compare-and-set always go to the primary (a replica refuses them: READONLY). Reads go to
the primary, or with `reads=replica` to the node the client is bound to, which serves them from
its own copy: asynchronous replication makes that copy stale whenever it lags the primary.

Outcomes follow Jepsen's rules: a request that never reached Redis (connection refused, or a new
connection that did not answer PING) fails; a
write or cas that may have been sent and got no answer is info; a read that got no answer fails (it
changed nothing); an error reply (READONLY, LOADING, MASTERDOWN) certainly did nothing and fails.
"""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.protocols import Test

PORT = 6379
KEY_PREFIX = "jepsen:"
# compare-and-set as one atomic script: Redis runs a script with nothing interleaved
CAS = ("local v = redis.call('GET', KEYS[1]) "
       "if v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 else return 0 end")


class RedisUnreachable(Exception):
    """The request certainly did not reach Redis."""


class RedisError(Exception):
    """An error reply: Redis refused the command, so it did nothing."""


def encode(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Connection:
    """One TCP connection speaking RESP2; any socket trouble closes it, the next call reconnects."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.sock: socket.socket | None = None
        self.buf = b""

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.buf = None, b""

    def call(self, *args: str) -> Any:
        """Sends one command and returns its reply. RedisUnreachable when the connection could not
        be made (nothing sent), TimeoutError / ConnectionError once something may have been sent."""
        if self.sock is None:
            self._connect()
        try:
            self.sock.sendall(encode(*args))
            return self._reply()
        except (OSError, ValueError) as e:
            self.close()
            if isinstance(e, TimeoutError | socket.timeout):
                raise TimeoutError("timed out") from None
            raise ConnectionError(f"{type(e).__name__}: {e}") from None

    def _connect(self) -> None:
        """A new connection, proven with a PING before any command goes on it: through Docker's
        published port the connect itself succeeds even when nothing listens behind it (the proxy
        accepts, then resets), and a write sent there would be wrongly reported as maybe done."""
        try:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            self.sock.sendall(encode("PING"))
            if self._reply() != "PONG":
                raise ConnectionError("no PONG")
        except (OSError, ValueError, RedisError) as e:
            self.close()
            raise RedisUnreachable(f"{type(e).__name__}: {e}") from None

    def _line(self) -> bytes:
        assert self.sock is not None
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("connection closed by Redis")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        assert self.sock is not None
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("connection closed by Redis")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:].decode()
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RedisError(rest)
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ValueError(f"unexpected RESP reply {line[:40]!r}")


class RedisRegisterClient:
    """The `register` workload's contract: read, write, cas on integer values."""

    def __init__(self, *, primary: str, replica_reads: bool, timeout: float, node: str | None = None,
                 test: Test | None = None) -> None:
        self.primary = primary
        self.replica_reads = replica_reads
        self.timeout = timeout
        self.node = node
        self.writes: Connection | None = None
        self.reads: Connection | None = None
        if test is not None and node is not None:
            self.writes = self._connect(test, primary)
            self.reads = self._connect(test, node) if replica_reads and node != primary else self.writes

    def _connect(self, test: Test, node: str) -> Connection:
        assert test.backend is not None
        host, port = test.backend.client_endpoint(node, PORT)
        return Connection(host, port, self.timeout)

    def open(self, test: Test, node: str) -> RedisRegisterClient:
        return RedisRegisterClient(primary=self.primary, replica_reads=self.replica_reads,
                                   timeout=self.timeout, node=node, test=test)

    def close(self, test: Test) -> None:
        for c in {id(c): c for c in (self.writes, self.reads) if c is not None}.values():
            c.close()

    def invoke(self, test: Test, op: Op) -> Op:
        assert self.writes is not None and self.reads is not None
        key = KEY_PREFIX + str(op.key)
        served = self.primary if op.f != "read" or self.reads is self.writes else self.node
        done = {"node": served}
        try:
            if op.f == "read":
                v = self.reads.call("GET", key)
                return dataclasses.replace(op, type=OK, value=None if v is None else int(v), **done)
            if op.f == "write":
                self.writes.call("SET", key, str(op.value))
                return dataclasses.replace(op, type=OK, **done)
            if op.f == "cas":
                old, new = op.value
                if self.writes.call("EVAL", CAS, "1", key, str(old), str(new)) == 1:
                    return dataclasses.replace(op, type=OK, **done)
                return dataclasses.replace(op, type=FAIL, error="mismatch", **done)
        except (RedisUnreachable, RedisError) as e:
            return dataclasses.replace(op, type=FAIL, error=str(e)[:200], **done)
        except (TimeoutError, ConnectionError) as e:
            typ = FAIL if op.f == "read" else INFO
            return dataclasses.replace(op, type=typ, error=str(e)[:200], **done)
        return dataclasses.replace(op, type=FAIL, error=f"unknown op {op.f!r}", **done)

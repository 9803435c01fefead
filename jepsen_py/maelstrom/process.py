"""One Maelstrom node: the user's binary as a process whose stdin and stdout are its network link.

Each run of the process (an incarnation: start, then each restart) has a reader thread that turns
stdout into messages and a writer thread that feeds stdin from a queue. The writer is what lets a
paused node (SIGSTOP) fill its pipe without stalling anyone else: only its own writer blocks. stderr
goes straight to the node's log file, by the kernel, so a chatty node costs us nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from jepsen_py.maelstrom.protocol import BadMessage, Message, parse_line

#: How many of a dead node's last stderr lines its exit report carries.
TAIL_LINES = 5
_READ_SIZE = 1 << 16
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something a node did that breaks the protocol; str() is one line naming the node."""

    node: str
    text: str

    def __str__(self) -> str:
        return f"node {self.node} {self.text}"


@dataclass(frozen=True, slots=True)
class Exit:
    """A node's process ended. `expected`: we killed or stopped it; otherwise it died on its own."""

    node: str
    code: int
    stderr_tail: tuple[str, ...]
    expected: bool

    def describe(self, when: str = "") -> str:
        """One line: the node, how it ended (`when`, e.g. "before answering init"), its last stderr."""
        how = f"exited with code {self.code}"
        if self.code < 0:
            try:
                how = f"was killed by {signal.Signals(-self.code).name}"
            except ValueError:
                how = f"was killed by signal {-self.code}"
        tail = f"; its last stderr: {' | '.join(self.stderr_tail)}" if self.stderr_tail else "; no stderr"
        return f"node {self.node} {how}{' ' + when if when else ''}{tail}"


Batch = list[tuple[Message, bytes]]


class _Incarnation:
    """One run of the process, with its two threads."""

    def __init__(self, owner: NodeProcess) -> None:
        self.owner = owner
        self.log_offset = owner.log_path.stat().st_size if owner.log_path.exists() else 0
        with open(owner.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                list(owner.argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                bufsize=0, cwd=owner.cwd, env=None if owner.env is None else dict(owner.env),
                start_new_session=True)  # its own group: a wrapper script's children get the signals too
        self.outbox: deque[bytes] = deque()
        self.cond = threading.Condition()
        self.closing = False  # drain the outbox, then close stdin (EOF)
        self.expected = False  # an exit now is ours (kill, stop), not the node's own
        self.reader = threading.Thread(target=self._read, name=f"maelstrom-{owner.name}-out", daemon=True)
        self.writer = threading.Thread(target=self._write, name=f"maelstrom-{owner.name}-in", daemon=True)
        self.reader.start()
        self.writer.start()

    def signal(self, sig: int) -> None:
        if self.proc.returncode is None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def send(self, lines: Sequence[bytes]) -> None:
        with self.cond:
            if self.closing:
                return
            self.outbox.extend(lines)
            self.cond.notify()

    def close_stdin(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify()

    def _write(self) -> None:
        fd = self.proc.stdin.fileno()  # type: ignore[union-attr]
        try:
            while True:
                with self.cond:
                    while not self.outbox and not self.closing:
                        self.cond.wait()
                    if not self.outbox:
                        return  # closing and drained
                    data = b"".join(self.outbox)
                    self.outbox.clear()
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
        except OSError:
            pass  # the process is gone (EPIPE): what was queued for it is lost, as on a real network
        finally:
            with self.cond:
                self.closing = True
                self.outbox.clear()
            with suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]

    def _read(self) -> None:
        owner = self.owner
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        rest: list[bytes] = []  # the start of a line not yet ended, in pieces: a long line costs no copies
        try:
            while True:
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                if b"\n" not in chunk:
                    rest.append(chunk)
                    continue
                lines = (b"".join(rest) + chunk if rest else chunk).split(b"\n")
                last = lines.pop()
                rest = [last] if last else []
                self._hand(lines)
            if rest:
                self._hand([b"".join(rest)])  # a last line without its newline, printed before exiting
        finally:
            with suppress(OSError):
                self.proc.stdout.close()  # type: ignore[union-attr]
            code = self.proc.wait()
            self.close_stdin()
            owner.on_exit(Exit(owner.name, code, tuple(self.stderr_tail()), self.expected))

    def _hand(self, lines: list[bytes]) -> None:
        owner = self.owner
        batch: Batch = []
        for line in lines:
            if not line.strip():
                continue
            try:
                batch.append((parse_line(line), line + b"\n"))
            except BadMessage as e:
                owner.on_problem(Problem(owner.name, f"printed a line that is not a Maelstrom message: {e}"))
        if batch:
            try:
                owner.on_messages(batch)
            except Exception:  # our bug, not the node's: keep reading, or its stdout pipe fills and it hangs
                _log.exception("node %s: handling its messages failed", owner.name)

    def stderr_tail(self, n: int = TAIL_LINES) -> list[str]:
        """The last `n` non-empty lines this incarnation wrote to stderr."""
        try:
            with open(self.owner.log_path, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                start = max(self.log_offset, size - 8192)
                log.seek(start)
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        lines = [line.strip()[:200] for line in text.splitlines() if line.strip()]
        return lines[-n:]

    def finish(self, timeout: float) -> None:
        """Waits for both threads; SIGKILLs the process if it outlives `timeout`."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.expected = True
            self.signal(signal.SIGKILL)
        self.reader.join()
        self.writer.join()


class NodeProcess:
    """The user's binary as node `name`: argv (never a shell string), stdin and stdout piped, stderr
    appended to `log_path`. Messages it prints go to `on_messages` (in batches, from its reader
    thread), lines that are not messages to `on_problem`, its end to `on_exit`."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, *,
                 on_messages: Callable[[Batch], None], on_problem: Callable[[Problem], None],
                 on_exit: Callable[[Exit], None], cwd: str | Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        if not argv:
            raise ValueError(f"node {name}: empty argv")
        self.name = name
        self.argv = tuple(str(a) for a in argv)
        self.log_path = Path(log_path)
        self.on_messages = on_messages
        self.on_problem = on_problem
        self.on_exit = on_exit
        self.cwd = cwd
        self.env = env
        self.paused = False
        self._life: _Incarnation | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        life = self._life
        return None if life is None else life.proc.pid

    @property
    def running(self) -> bool:
        life = self._life
        return life is not None and life.proc.poll() is None and not life.closing

    def start(self) -> None:
        """Starts the process; a node already running is left alone."""
        with self._lock:
            if self._life is not None and self._life.proc.poll() is None:
                return
            if self._life is not None:
                self._life.finish(1.0)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.paused = False
            self._life = _Incarnation(self)

    def send(self, lines: Sequence[bytes]) -> bool:
        """Queues encoded lines for the node's stdin; False (nothing queued) when it is not running."""
        life = self._life
        if life is None or life.closing:
            return False
        life.send(lines)
        return True

    def kill(self) -> None:
        """SIGKILL, as a crash: whatever it had not written is lost. Returns once it is reaped."""
        with self._lock:
            life = self._life
            if life is None:
                return
            life.expected = True
            life.signal(signal.SIGKILL)
            life.finish(5.0)
            self.paused = False

    def restart(self) -> None:
        self.kill()
        self.start()

    def pause(self) -> None:
        """SIGSTOP: it stays alive and deaf; messages for it wait in its pipe and queue."""
        with self._lock:
            if self._life is not None:
                self._life.signal(signal.SIGSTOP)
                self.paused = True

    def resume(self) -> None:
        with self._lock:
            if self._life is not None:
                self._life.signal(signal.SIGCONT)
            self.paused = False

    def close_input(self) -> None:
        """Closes its stdin once what is queued is written: a Maelstrom node exits on EOF. Stopping
        many nodes, close every input first and then `stop` each, so their graces overlap."""
        life = self._life
        if life is not None:
            life.expected = True
            life.close_stdin()

    def stop(self, grace: float = 1.0) -> None:
        """Closes its stdin (a Maelstrom node exits on EOF), waits up to `grace` seconds, then
        SIGKILLs; returns with both threads joined."""
        with self._lock:
            life = self._life
            if life is None:
                return
            life.expected = True
            if self.paused:
                life.signal(signal.SIGCONT)
                self.paused = False
            life.close_stdin()
            life.finish(grace)

    def stderr_tail(self, n: int = TAIL_LINES) -> list[str]:
        life = self._life
        return [] if life is None else life.stderr_tail(n)

"""The history: every operation a test performed, as plain records (DESIGN.md section 3).

A history is JSON Lines, one op per line, appended and flushed as it happens so that a crash of the
controller loses at most the op in flight. Everything downstream (checkers, plots, Spark) reads these
records and nothing else.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from jepsen_py.errors import BadInput

INVOKE = "invoke"
OK = "ok"
FAIL = "fail"
INFO = "info"
TYPES = frozenset({INVOKE, OK, FAIL, INFO})
COMPLETIONS = frozenset({OK, FAIL, INFO})

NEMESIS = "nemesis"
OBSERVER = "observer"
# Processes whose records are standalone samples (no invoke/completion pairing).
SAMPLE_PROCESSES = frozenset({OBSERVER})

Process = int | str


@dataclass(slots=True)
class Op:
    """One history record. `time` is nanoseconds since the test started (controller's monotonic clock).

    Completions of reads carry what the serving node said of itself: `node` at top level, and
    `role`, `term` and `leader` in `meta`. Observer samples are standalone records with
    process "observer", f "status" and the node's status in `value`.
    """

    index: int
    time: int
    type: str
    process: Process
    f: str
    key: Any = None
    value: Any = None
    node: str | None = None
    error: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        index = self.index if type(self.index) is int else _ENCODER.encode(self.index)
        return f'{{"index":{index},{self._json_tail()}'

    def _json_tail(self) -> str:
        """Everything after the index: encoded outside the writer's lock, which then only numbers
        and writes the line."""
        return _ENCODER.encode(
            {
                "time": self.time,
                "type": self.type,
                "process": self.process,
                "f": self.f,
                "key": self.key,
                "value": self.value,
                "node": self.node,
                "error": self.error,
                "meta": self.meta,
            }
        )[1:]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Op:
        return cls(
            index=d["index"],
            time=d["time"],
            type=d["type"],
            process=d["process"],
            f=d["f"],
            key=d.get("key"),
            value=d.get("value"),
            node=d.get("node"),
            error=d.get("error"),
            meta=d.get("meta") or {},
        )

    @property
    def is_invoke(self) -> bool:
        return self.type == INVOKE

    @property
    def is_client(self) -> bool:
        return isinstance(self.process, int)


def _json_default(o: Any) -> Any:
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


# One encoder for every line: json.dumps would build a new one per call when given options.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_json_default)


class HistoryWriter:
    """Appends ops to history.jsonl, one flushed line each; safe to call from many threads.

    `flush` hands every line to the OS before `append` returns, so a kill -9 of the controller keeps
    every op already recorded. `fsync=True` also survives a crash of the machine, at a cost per op.
    """

    def __init__(self, path: Path | str, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._file: TextIO = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived
        self._fsync = fsync
        self._lock = threading.Lock()
        self._next_index = 0
        self._closed = False

    def append(self, op: Op, *, tail: str | None = None) -> Op:
        """Assigns the op its index, writes and flushes it; returns the op.

        `tail`: op._json_tail() computed earlier by the caller, outside any lock it holds.
        """
        if tail is None:
            tail = op._json_tail()
        with self._lock:
            if self._closed:
                raise RuntimeError("history writer is closed")
            op.index = self._next_index
            self._next_index += 1
            self._file.write(f'{{"index":{op.index},{tail}\n')
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
        return op

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._file.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_REQUIRED = ("index", "time", "type", "process", "f")


def parse_line(line: str, *, where: str) -> Op:
    """One JSON line into an Op, or BadInput naming `where` (file:line)."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise BadInput(f"{where}: not a JSON object ({e.msg})") from None
    if not isinstance(d, dict):
        raise BadInput(f"{where}: expected a JSON object, got {type(d).__name__}")
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        raise BadInput(f"{where}: op is missing {', '.join(missing)}")
    if d["type"] not in TYPES:
        raise BadInput(f"{where}: unknown op type {d['type']!r} (expected invoke, ok, fail or info)")
    if not isinstance(d["process"], int | str) or isinstance(d["process"], bool):
        raise BadInput(f"{where}: process must be an integer or a name, got {d['process']!r}")
    if not isinstance(d["time"], int) or isinstance(d["time"], bool):
        raise BadInput(f"{where}: time must be integer nanoseconds, got {d['time']!r}")
    return Op.from_dict(d)


def iter_history(path: Path | str) -> Iterator[Op]:
    """Streams a history.jsonl. A torn last line (no newline: the writer died mid-write) is skipped;
    any other bad line raises BadInput naming the file and line."""
    path = Path(path)
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise BadInput(f"{path}: no such history file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a history file") from None
    with f:
        lineno = 0
        for raw in f:
            lineno += 1
            if not raw.strip():
                continue
            if not raw.endswith("\n"):
                try:
                    yield parse_line(raw, where=f"{path}:{lineno}")
                except BadInput:
                    return  # torn tail from a crash mid-write: everything before it is intact
                return
            yield parse_line(raw, where=f"{path}:{lineno}")


def read_history(path: Path | str) -> list[Op]:
    return list(iter_history(path))


@dataclass(slots=True)
class Pair:
    """An invocation and its completion (None when the op never completed: indeterminate)."""

    invoke: Op
    complete: Op | None

    @property
    def type(self) -> str:
        """ok / fail / info; an op that never completed counts as info."""
        return self.complete.type if self.complete is not None else INFO


def validate(
    ops: Iterable[Op], *, source: str = "history", locate: Callable[[Op], str] | None = None
) -> None:
    """Checks Jepsen's rules; raises BadInput naming the first op that breaks one.

    `locate(op)` names where an op came from (e.g. "history.jsonl:17"); default "<source>: op N".

    - a completion needs an invocation in flight on the same process;
    - a process has at most one invocation in flight;
    - a process that completed with info never invokes again (its worker takes a new process id).
    Nemesis ops follow the first two rules; observer samples stand alone.
    """
    in_flight: dict[Process, Op] = {}
    crashed: set[Process] = set()
    for op in ops:
        if op.process in SAMPLE_PROCESSES:
            continue
        where = locate(op) if locate is not None else f"{source}: op {op.index}"
        if op.type == INVOKE:
            if op.process in in_flight:
                raise BadInput(
                    f"{where}: process {op.process!r} invokes {op.f!r} while op "
                    f"{in_flight[op.process].index} is still in flight"
                )
            if op.process in crashed and op.process != NEMESIS:
                raise BadInput(
                    f"{where}: process {op.process!r} invokes again after an info completion"
                )
            in_flight[op.process] = op
        else:
            inv = in_flight.pop(op.process, None)
            if inv is None:
                raise BadInput(f"{where}: {op.type} for process {op.process!r} without an invocation")
            if op.type == INFO:
                crashed.add(op.process)


def pairs(ops: Iterable[Op]) -> list[Pair]:
    """Invocation/completion pairs in invocation order (observer samples left out).

    Assumes a validated history; ops still in flight at the end get complete=None.
    """
    out: list[Pair] = []
    open_: dict[Process, Pair] = {}
    for op in ops:
        if op.process in SAMPLE_PROCESSES:
            continue
        if op.type == INVOKE:
            p = Pair(op, None)
            open_[op.process] = p
            out.append(p)
        else:
            p2 = open_.pop(op.process, None)
            if p2 is not None:
                p2.complete = op
    return out

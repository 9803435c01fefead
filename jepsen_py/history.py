"""The history: every operation a test performed, as plain records.

A history is JSON Lines, one op per line, appended and flushed as it happens so that a crash of the
controller loses at most the op in flight. Everything downstream (checkers, plots, Spark) reads these
records and nothing else.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from jepsen_py import inputfile
from jepsen_py.errors import BadInput
from jepsen_py.files import create_file
from jepsen_py.numbers import finite_json

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
        and writes the line. A non-finite float (a client that returned NaN) is written as a
        string: bare NaN is not JSON, and the history would not read back."""
        d = {
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
        try:
            return _ENCODER.encode(d)[1:]
        except ValueError:
            return _ENCODER.encode(finite_json(d))[1:]

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
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_json_default, allow_nan=False)


class HistoryWriter:
    """Appends ops to history.jsonl, one flushed line each; safe to call from many threads.

    `flush` hands every line to the OS before `append` returns, so a kill -9 of the controller keeps
    every op already recorded. `fsync=True` also survives a crash of the machine, at a cost per op.
    """

    def __init__(self, path: Path | str, *, fsync: bool = False) -> None:
        self.path = Path(path)
        # long-lived; made with the store's file mode, whatever the umask
        self._file: TextIO = os.fdopen(create_file(self.path, append=True), "a", encoding="utf-8")
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
        """Closes the file, fsync'd: a history that ended is on disk whatever `fsync` said."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._file.flush()
                    os.fsync(self._file.fileno())
                except OSError:
                    pass
                self._file.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_REQUIRED = ("index", "time", "type", "process", "f")

# Op times are nanoseconds since the test began. 10^5 s (27.8 hours) is past any run `run` accepts
# framework runs; beyond it a time is damage, and per-second views of it would not fit in memory.
MAX_TIME_NS = 10**14
# Deeper values than this are not data a client returned: refused before any recursive code sees them.
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON number that a float can hold: 1e999 would read as infinity, which no client returned."""
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text[:40]} is beyond a float's range")
    return x


# One decoder for every line: json.loads with hooks would build a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def depth_ok(v: Any, limit: int = MAX_DEPTH) -> bool:
    """Is `v` nested at most `limit` deep (lists and objects)? Iterative: a deep value must not
    overflow the stack that measures it. A scalar answers at once, and only containers are stacked:
    most fields of most ops are scalars, and every line of a history is measured."""
    if not isinstance(v, list | dict):
        return True
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        if d >= limit:
            return False
        for y in (x.values() if isinstance(x, dict) else x):
            if isinstance(y, list | dict):
                stack.append((y, d + 1))
    return True


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_fields(d: dict[str, Any], *, where: str, nested: bool = True) -> None:
    """The field types and ranges every reader of ops relies on; BadInput naming `where`.
    `nested=False`: the caller knows no field can be nested deeper than MAX_DEPTH (parse_line, from
    the text's brackets), so the depths are not measured."""
    typ = d["type"]
    if not isinstance(typ, str) or typ not in TYPES:
        raise BadInput(f"{where}: unknown op type {_short(typ)} (expected invoke, ok, fail or info)")
    if not (_is_int(d["process"]) or isinstance(d["process"], str)):
        raise BadInput(f"{where}: process must be an integer or a name, got {_short(d['process'])}")
    if not isinstance(d["f"], str) or not d["f"]:
        raise BadInput(f"{where}: f must be a name, got {_short(d['f'])}")
    if not _is_int(d["index"]) or d["index"] < 0:
        raise BadInput(f"{where}: index must be a non-negative integer, got {_short(d['index'])}")
    t = d["time"]
    if not _is_int(t):
        raise BadInput(f"{where}: time must be integer nanoseconds, got {_short(t)}")
    if not 0 <= t <= MAX_TIME_NS:
        raise BadInput(f"{where}: time {_short(t)} ns is outside 0..{MAX_TIME_NS} (0 to 10^5 s "
                       "since the test began)")
    node = d.get("node")
    if node is not None and not isinstance(node, str):
        raise BadInput(f"{where}: node must be a name, got {_short(node)}")
    meta = d.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise BadInput(f"{where}: meta must be an object, got {_short(meta)}")
    if not nested:
        return
    for k in ("key", "value", "error", "meta"):
        if not depth_ok(d.get(k)):
            raise BadInput(f"{where}: {k} is nested more than {MAX_DEPTH} deep")


def _short(v: Any) -> str:
    """A value for an error line: its repr, cut short (a bad field may be megabytes)."""
    if _is_int(v) and v.bit_length() > 200:
        return f"<an integer of {len(str(v)) if v.bit_length() < 13000 else 'thousands of'} digits>"
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def parse_line(line: str, *, where: str) -> Op:
    """One JSON line into an Op, or BadInput naming `where` (file:line)."""
    try:
        if line.startswith("\ufeff"):  # what json.loads refuses before decoding
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", line, 0)
        d = _DECODER.decode(line)
    except json.JSONDecodeError as e:
        raise BadInput(f"{where}: not a JSON object ({e.msg})") from None
    except RecursionError:
        raise BadInput(f"{where}: value nested too deep") from None
    except ValueError as e:  # NaN / Infinity, or an integer beyond Python's digit limit
        raise BadInput(f"{where}: not usable JSON ({str(e).split(';')[0][:80]})") from None
    if not isinstance(d, dict):
        raise BadInput(f"{where}: expected a JSON object, got {type(d).__name__}")
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        raise BadInput(f"{where}: op is missing {', '.join(missing)}")
    # a field nested deeper than MAX_DEPTH needs more brackets than that: most lines have a few
    check_fields(d, where=where, nested=line.count("[") + line.count("{") > MAX_DEPTH)
    return Op.from_dict(d)


@dataclass(slots=True)
class Loaded:
    """A history file as read: its ops, each op's line, and the line of a torn tail if one was left
    out (the writer stopped mid-line)."""

    ops: list[Op]
    lines: list[int]
    torn: int | None = None


def load_jsonl(path: Path | str, *, allow_truncated: bool = True) -> Loaded:
    """Reads a history.jsonl strictly: every bad line is BadInput naming file:line.

    A last line without its newline that does not parse is what a writer killed mid-write leaves:
    with `allow_truncated` it is left out (Loaded.torn says where), else it is BadInput too.
    Indices must increase line by line (the writer numbers ops as it writes them): a repeated or
    decreasing index is a damaged or spliced file. Only a regular file is read, and no line longer
    than MAX_LINE_BYTES (jepsen_py.inputfile)."""
    path = Path(path)
    out = Loaded([], [])
    with inputfile.open_input(path) as f:
        lineno = 0
        last_index = -1
        try:
            while True:
                cap = inputfile.MAX_LINE_BYTES
                raw = f.readline(cap + 1)
                if not raw:
                    break
                lineno += 1
                where = f"{path}:{lineno}"
                if len(raw) > cap:
                    raise BadInput(f"{where}: line longer than {inputfile.size(cap)}: not an op")
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    if not raw.endswith(b"\n") and allow_truncated:
                        out.torn = lineno
                        break
                    if not raw.endswith(b"\n"):
                        raise BadInput(torn_message(where, len(out.ops))) from None
                    raise BadInput(f"{where}: not UTF-8 text (byte {e.start + 1} of the line)") from None
                if not text.strip():
                    continue
                if not text.endswith("\n"):
                    try:
                        op = parse_line(text, where=where)
                    except BadInput:
                        if not allow_truncated:
                            raise BadInput(torn_message(where, len(out.ops))) from None
                        out.torn = lineno
                        break
                else:
                    op = parse_line(text, where=where)
                if op.index <= last_index:
                    raise BadInput(f"{where}: index {op.index} after index {last_index}: indices must "
                                   "increase line by line (a repeated or reordered line)")
                last_index = op.index
                out.ops.append(op)
                out.lines.append(lineno)
        except OSError as e:
            raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
    return out


def torn_message(where: str, intact: int) -> str:
    """Also the importers' words (jepsen_py.importers.text.torn): one message for every format."""
    return (f"{where}: history truncated mid-line (the writer stopped mid-write); the {intact} ops "
            "before it are intact: pass --allow-truncated to check them")


def iter_history(path: Path | str) -> Iterator[Op]:
    """Streams a history.jsonl. A torn last line (no newline: the writer died mid-write) is skipped;
    any other bad line raises BadInput naming the file and line."""
    yield from load_jsonl(path, allow_truncated=True).ops


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
    - a process that completed with info never invokes again (its worker takes a new process id);
    - a completion matches its invocation (`mismatch`: same f, same key, not timed before it).
    Nemesis ops follow the first two rules and the last; observer samples stand alone.
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
            why = mismatch(inv, op)
            if why is not None:
                at = f"line {locate(inv).rsplit(':', 1)[-1]}" if locate is not None else f"op {inv.index}"
                raise BadInput(f"{where}: {why} (its invocation: {at})")
            if op.type == INFO:
                crashed.add(op.process)


def mismatch(invoke: Op, completion: Op) -> str | None:
    """Why `completion` cannot complete `invoke`, or None. Checkers pair by process and then
    group by f and key, so a completion whose f or key differs would be dropped and its
    invocation left open (indeterminate), and a damaged history could pass. A completion may omit
    the key; one that carries a key carries its invocation's. It cannot end before it began."""
    if completion.f != invoke.f:
        return (f"{completion.type} {completion.f!r} for process {invoke.process!r} completes an "
                f"invocation of {invoke.f!r}")
    if completion.key is not None and invoke.key is not None and completion.key != invoke.key:
        return (f"{completion.type} of key {_short(completion.key)} for process {invoke.process!r} "
                f"completes an invocation on key {_short(invoke.key)}")
    if completion.time < invoke.time:
        return (f"{completion.type} at time {completion.time} for process {invoke.process!r} is "
                f"before its invocation at time {invoke.time}")
    return None


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

"""A small EDN reader, and Jepsen's history.edn as history records.

EDN covers what Jepsen writes: maps, vectors, lists, sets, keywords, strings, numbers, nil,
booleans, symbols, chars, comments, `#_` discards and tagged literals (`#inst "..."`,
`#jepsen.history.Op{...}`: the tag is dropped, the form kept). Keywords become plain strings
without the colon (`:read` -> "read"), as in our JSONL histories.

How Jepsen's history reads here (Knossos's rules):
- `:type :invoke/:ok/:fail/:info` map to the same types; `:fail` did not happen and `:info` may
  have happened at any time after its invocation;
- `:process :nemesis` ops are kept as process "nemesis" (checkers skip them);
- `:index` and `:time` are used when present, else the position in the file and 0;
- `:key` is kept when present; a `:value` is converted as it stands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.history import TYPES, Op, check_fields
from jepsen_py.importers.text import read_text, torn


class Keyword(str):
    """An EDN keyword; a str subclass so it compares equal to its name ("read")."""

    __slots__ = ()


class Symbol(str):
    __slots__ = ()


class Tagged:
    """A tagged literal we do not interpret (kept for whoever reads the value)."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value


class EDNError(ValueError):
    """A syntax error at `line`; `at_end` when the text ended inside a form (what a writer
    stopped mid-write leaves), as opposed to text that is wrong where it stands."""

    def __init__(self, msg: str, line: int, *, at_end: bool = False) -> None:
        super().__init__(msg)
        self.line = line
        self.at_end = at_end


_WS = re.compile(r"(?:[\s,]|;[^\n]*)*")
_TOKEN = re.compile(r"[^\s,()\[\]{}\"\\;]+")
_INT = re.compile(r"[+-]?\d+N?$")
_FLOAT = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?M?$")
_RATIO = re.compile(r"[+-]?\d+/\d+$")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f", "/": "/"}
MAX_NESTING = 200
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r", "backspace": "\b", "formfeed": "\f"}


class Reader:
    """Reads EDN forms one by one from a string; `line` tracks where we are for errors."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        self._line_pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        """Line of `pos`; incremental, since positions asked for mostly grow."""
        if pos < self._line_pos:
            self._line_pos, self._line = 0, 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def _ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at_end(self) -> bool:
        self._ws()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        self._ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def read(self) -> Any:
        """The next form; nesting is bounded so a hostile file cannot exhaust the stack."""
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise EDNError(f"forms nested more than {MAX_NESTING} deep", self.line_at(self.pos))
            return self._read()
        finally:
            self.depth -= 1

    def _read(self) -> Any:
        self._ws()
        t = self.text
        if self.pos >= len(t):
            raise EDNError("unexpected end of input", self.line_at(self.pos), at_end=True)
        ch = t[self.pos]
        if ch in "([{":
            self.pos += 1
            items = self._read_until(_CLOSE[ch])
            if ch == "{":
                return self._map(items)
            return items if ch == "[" else tuple(items)
        if ch in ")]}":
            raise EDNError(f"unexpected {ch!r}", self.line_at(self.pos))
        if ch == '"':
            return self._string()
        if ch == "\\":
            return self._char()
        if ch == "#":
            return self._dispatch()
        m = _TOKEN.match(t, self.pos)
        if m is None:
            raise EDNError(f"unexpected {ch!r}", self.line_at(self.pos))
        self.pos = m.end()
        return _atom(m.group(0), self.line_at(m.start()))

    def _read_until(self, close: str) -> list[Any]:
        items: list[Any] = []
        start = self.pos
        while True:
            self._ws()
            if self.pos >= len(self.text):
                raise EDNError(f"missing {close!r}", self.line_at(start), at_end=True)
            if self.text[self.pos] == close:
                self.pos += 1
                return items
            if self.text.startswith("#_", self.pos):
                self.pos += 2
                self.read()
                continue
            items.append(self.read())

    def _map(self, items: list[Any]) -> dict[Any, Any]:
        if len(items) % 2:
            raise EDNError("a map needs an even number of forms", self.line_at(self.pos))
        out: dict[Any, Any] = {}
        for i in range(0, len(items), 2):
            out[_hashable(items[i])] = items[i + 1]
        return out

    def _string(self) -> str:
        t = self.text
        i = self.pos + 1
        parts: list[str] = []
        while True:
            j = i
            while j < len(t) and t[j] not in '"\\':
                j += 1
            if j >= len(t):
                raise EDNError("unterminated string", self.line_at(self.pos), at_end=True)
            parts.append(t[i:j])
            if t[j] == '"':
                self.pos = j + 1
                return "".join(parts)
            esc = t[j + 1 : j + 2]
            if esc == "u":
                hexits = t[j + 2 : j + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", hexits):
                    raise EDNError(f"bad \\u escape {hexits!r} in a string", self.line_at(j))
                parts.append(chr(int(hexits, 16)))
                i = j + 6
            else:
                parts.append(_ESCAPES.get(esc, esc))
                i = j + 2

    def _char(self) -> str:
        m = re.compile(r"\\(newline|space|tab|return|backspace|formfeed|u[0-9a-fA-F]{4}|.)").match(
            self.text, self.pos
        )
        if m is None:
            raise EDNError("bad character literal", self.line_at(self.pos))
        self.pos = m.end()
        name = m.group(1)
        if name in _CHARS:
            return _CHARS[name]
        if len(name) == 5 and name[0] == "u":
            return chr(int(name[1:], 16))
        return name

    def _dispatch(self) -> Any:
        t = self.text
        nxt = t[self.pos + 1 : self.pos + 2]
        if nxt == "{":
            self.pos += 2
            return frozenset(_hashable(x) for x in self._read_until("}"))
        if nxt == "_":
            self.pos += 2
            self.read()
            return self.read()
        if nxt == "#":  # ##Inf ##NaN
            m = _TOKEN.match(t, self.pos + 2)
            if m is None:
                raise EDNError("bad ## literal", self.line_at(self.pos))
            # ##Inf, ##-Inf and ##NaN are not values a client returned: a checker comparing them would
            # answer nonsense (NaN equals nothing), so they are refused like JSON's NaN.
            raise EDNError(f"##{m.group(0)[:20]} is not a usable number", self.line_at(self.pos))
        m = re.compile(r"#([A-Za-z][^\s,()\[\]{}\"\\;]*)").match(t, self.pos)
        if m is None:
            raise EDNError("bad # dispatch", self.line_at(self.pos))
        self.pos = m.end()
        value = self.read()
        if isinstance(value, dict) and "." in m.group(1):
            return value  # a record literal such as #jepsen.history.Op{...}: the map is the data
        return Tagged(m.group(1), value) if m.group(1) not in ("inst", "uuid") else value


def _atom(tok: str, line: int) -> Any:
    if tok == "nil":
        return None
    if tok == "true":
        return True
    if tok == "false":
        return False
    if tok[0] == ":":
        return Keyword(tok[1:])
    if tok[0].isdigit() or (len(tok) > 1 and tok[0] in "+-" and tok[1].isdigit()):
        try:
            if _INT.match(tok):
                return int(tok.rstrip("N"))
            if _FLOAT.match(tok):
                x = float(tok.rstrip("M"))
                if math.isfinite(x):
                    return x
                raise OverflowError("beyond a float's range")
            if _RATIO.match(tok):
                a, b = tok.split("/")
                return int(a) / int(b)
        except (ValueError, ZeroDivisionError, OverflowError) as e:
            raise EDNError(f"bad number {tok[:40]!r} ({str(e)[:60]})", line) from None
        raise EDNError(f"bad number {tok[:40]!r}", line)
    return Symbol(tok)


def _hashable(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted(((str(k), _hashable(x)) for k, x in v.items()), key=repr))
    return v


def loads(text: str) -> Any:
    """The single EDN form in `text`."""
    r = Reader(text)
    v = r.read()
    if not r.at_end():
        raise EDNError("more than one form", r.line_at(r.pos))
    return v


def iter_forms(text: str) -> Iterator[tuple[int, Any]]:
    """Every top-level form, with the line it starts on."""
    r = Reader(text)
    while not r.at_end():
        if r.text.startswith("#_", r.pos):
            r.pos += 2
            r.read()
            continue
        line = r.line_at(r.pos)
        yield line, r.read()


def to_plain(v: Any) -> Any:
    """EDN data as JSON-like data: symbols become strings, sets become lists. Keywords stay
    Keyword, a str that equals its name everywhere a string would, so a checker that must tell
    :x from "x" (the transactional one: Jepsen's Elle does) still can."""
    if isinstance(v, Keyword):
        return v
    if isinstance(v, Symbol):
        return str(v)
    if isinstance(v, list | tuple):
        return [to_plain(x) for x in v]
    if isinstance(v, frozenset | set):
        return [to_plain(x) for x in v]
    if isinstance(v, dict):
        return {_plain_key(k): to_plain(x) for k, x in v.items()}
    if isinstance(v, Tagged):
        return to_plain(v.value)
    return v


def _plain_key(k: Any) -> Any:
    if isinstance(k, Keyword | Symbol):
        return str(k)
    p = to_plain(k)
    return p if isinstance(p, str | int | float | bool) or p is None else str(p)


def _plain_number(v: Any) -> Any:
    """An EDN keyword or symbol as text, so check_fields names it; anything else as read."""
    return f":{v}" if isinstance(v, Keyword) else to_plain(v)


def op_from_map(m: Any, *, position: int, where: str) -> Op:
    """One Jepsen op map into an Op; BadInput naming `where` when it is not one."""
    if not isinstance(m, dict):
        raise BadInput(f"{where}: expected an op map, got {type(m).__name__}")
    typ = m.get(Keyword("type"))
    if typ is None:
        raise BadInput(f"{where}: op has no :type")
    typ = str(typ)
    if typ not in TYPES:
        raise BadInput(f"{where}: unknown op type :{typ} (expected :invoke, :ok, :fail or :info)")
    if Keyword("process") not in m:
        raise BadInput(f"{where}: op has no :process")
    process = m[Keyword("process")]
    if isinstance(process, Keyword | Symbol):
        process = str(process)
    elif not isinstance(process, int) or isinstance(process, bool):
        raise BadInput(f"{where}: :process must be an integer or a keyword, got {process!r}")
    f = m.get(Keyword("f"))
    if f is None:
        raise BadInput(f"{where}: op has no :f")
    if not isinstance(f, str):
        raise BadInput(f"{where}: :f must be a keyword or a name, got {type(f).__name__}")
    # Absent :index and :time are the position and 0; present ones are used as they stand, and
    # check_fields refuses a wrong one (a NaN time, an :index :foo) rather than replace it.
    index = m.get(Keyword("index"), position)
    time_ = m.get(Keyword("time"), 0)
    node = m.get(Keyword("node"))
    check_fields({"type": typ, "process": process, "f": str(f), "index": _plain_number(index),
                  "time": _plain_number(time_),
                  "node": str(node) if node is not None else None,
                  "key": m.get(Keyword("key")), "value": m.get(Keyword("value")),
                  "error": m.get(Keyword("error"))}, where=where)
    meta = {
        str(k): to_plain(v)
        for k, v in m.items()
        if str(k) not in ("type", "process", "f", "value", "key", "index", "time", "error", "node")
    }
    return Op(
        index=index,
        time=time_,
        type=typ,
        process=process,
        f=str(f),
        key=to_plain(m.get(Keyword("key"))),
        value=to_plain(m.get(Keyword("value"))),
        node=str(node) if node is not None else None,
        error=to_plain(m.get(Keyword("error"))),
        meta=meta,
    )


def read_edn_history(path: Path | str, lines: list[int] | None = None, *,
                     allow_truncated: bool = False, dropped: list[int] | None = None) -> list[Op]:
    """A Jepsen history.edn: one vector or list of op maps, or one op map per line (all are written).
    `lines`, when given, receives each op's line number.

    File order is the history's order: :index, where given, must increase op by op (an op without
    one takes the next number). A file that ends inside a form was cut off mid-write: BadInput
    naming where the unfinished op starts, unless `allow_truncated`; then the ops before it are
    returned and that line is appended to `dropped`."""
    path = Path(path)
    text = read_text(path)
    at: list[int] = [] if lines is None else lines
    ops: list[Op] = []
    r = Reader(text)
    cut = 1  # where an unfinished form would start: the next op, or the vector's missing bracket

    def add(m: Any, line: int) -> None:
        where = f"{path}:{line}"
        nxt = ops[-1].index + 1 if ops else 0
        op = op_from_map(m, position=nxt, where=where)
        if ops and op.index <= ops[-1].index:
            raise BadInput(f"{where}: :index {op.index} after :index {ops[-1].index}: indices must "
                           "increase op by op (a repeated or reordered op)")
        ops.append(op)
        at.append(line)

    try:
        opener = r.peek()
        if opener in ("[", "("):  # one vector (or list) of maps
            close = _CLOSE[opener]
            r.pos += 1
            while r.peek() != close:
                if r.at_end():
                    cut = r.line_at(len(text.rstrip()))
                    raise EDNError(f"missing {close!r}", cut, at_end=True)
                cut = r.line_at(r.pos)
                if r.text.startswith("#_", r.pos):
                    r.pos += 2
                    r.read()
                    continue
                add(r.read(), cut)
            r.pos += 1
            if not r.at_end():
                raise EDNError("text after the history vector", r.line_at(r.pos))
            return ops
        while not r.at_end():
            cut = r.line_at(r.pos)
            if r.text.startswith("#_", r.pos):
                r.pos += 2
                r.read()
                continue
            add(r.read(), cut)
    except EDNError as e:
        if not e.at_end:
            raise BadInput(f"{path}:{e.line}: not valid EDN ({e})") from None
        # The text ended inside a form: the op that starts at `cut` (or the vector's closing
        # bracket, after the last whole op) was cut off.
        if not allow_truncated:
            raise torn(f"{path}:{cut}", len(ops)) from None
        if dropped is not None:
            dropped.append(cut)
    return ops

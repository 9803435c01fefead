"""Maelstrom's wire format: one JSON object per line, `{"src", "dest", "body"}`, and its error codes.

A node of any language talks to us only through these lines, so every line is checked here once and
anything that is not a message becomes one precise sentence (what was wrong, what was printed), never
a traceback: the person reading it is debugging their own node, not jepsen-py.

jepsen_py/maelstrom/ tests a node of any language that speaks this protocol (jepsen-io/maelstrom's
doc/protocol.md): this module is the wire format and the error codes, process.py one node's process,
router.py the network every message goes through (latency, partitions, init, client calls, stats).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: How much of a bad line an error quotes: enough to recognise it, never a flood.
QUOTE_LIMIT = 160


class BadMessage(ValueError):
    """A line that is not a Maelstrom message; str() is the one-line reason."""


@dataclass(frozen=True, slots=True)
class Message:
    """One message on the network. `body["type"]` is always a string (parse checks it)."""

    src: str
    dest: str
    body: dict[str, Any]

    @property
    def type(self) -> str:
        return self.body["type"]

    @property
    def msg_id(self) -> int | None:
        return self.body.get("msg_id")

    @property
    def in_reply_to(self) -> int | None:
        return self.body.get("in_reply_to")


def quote(text: str | bytes, limit: int = QUOTE_LIMIT) -> str:
    """`text` as a printable one-line quotation, cut at `limit` characters, so an error can show what
    a node printed without a megabyte of it or a raw control character."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = text.rstrip("\r\n")
    cut = len(text) > limit
    shown = json.dumps(text[:limit], ensure_ascii=False)
    return f"{shown}... ({len(text)} chars)" if cut else shown


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_line(line: str | bytes) -> Message:
    """One stdout line of a node as a message; BadMessage saying exactly what is wrong otherwise."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        reason = getattr(e, "msg", None) or str(e)
        raise BadMessage(f"not JSON ({reason}): {quote(line)}") from None
    if not isinstance(data, dict):
        raise BadMessage(f"not a JSON object but a {type(data).__name__}: {quote(line)}")
    missing = [k for k in ("src", "dest", "body") if k not in data]
    if missing:
        raise BadMessage(f"no {', '.join(missing)} field: {quote(line)}")
    src, dest, body = data["src"], data["dest"], data["body"]
    for name, value in (("src", src), ("dest", dest)):
        if not isinstance(value, str) or not value:
            raise BadMessage(f"{name} is not a non-empty string: {quote(line)}")
    if not isinstance(body, dict):
        raise BadMessage(f"body is not a JSON object: {quote(line)}")
    if not isinstance(body.get("type"), str):
        raise BadMessage(f"body has no string type: {quote(line)}")
    for key in ("msg_id", "in_reply_to"):
        if key in body and body[key] is not None and not _is_int(body[key]):
            raise BadMessage(f"body's {key} is not an integer: {quote(line)}")
    return Message(src, dest, body)


def encode(msg: Message) -> bytes:
    """The message as one line, newline included, ready for a node's stdin."""
    line = json.dumps({"src": msg.src, "dest": msg.dest, "body": msg.body}, separators=(",", ":"))
    return line.encode() + b"\n"


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One of Maelstrom's error codes. Definite: the operation did not and never will happen (a fail
    in the history); indefinite: it may have (an info)."""

    code: int
    name: str
    definite: bool


#: Maelstrom's defined errors (doc/protocol.md); codes 1000 and up are the user's own.
ERRORS: dict[int, ErrorCode] = {e.code: e for e in (
    ErrorCode(0, "timeout", False),
    ErrorCode(1, "node-not-found", True),
    ErrorCode(10, "not-supported", True),
    ErrorCode(11, "temporarily-unavailable", True),
    ErrorCode(12, "malformed-request", True),
    ErrorCode(13, "crash", False),
    ErrorCode(14, "abort", True),
    ErrorCode(20, "key-does-not-exist", True),
    ErrorCode(21, "key-already-exists", True),
    ErrorCode(22, "precondition-failed", True),
    ErrorCode(30, "txn-conflict", True),
)}


def error_code(code: int) -> ErrorCode:
    """The code's meaning; any code Maelstrom does not define is custom, and custom codes are always
    indefinite (the protocol's rule: when in doubt, the op may have happened)."""
    known = ERRORS.get(code)
    return known if known is not None else ErrorCode(code, "custom" if code >= 1000 else "unknown", False)

"""Reading a history file as text, with the one-line errors every importer gives, and the one
message every reader gives for a history cut off mid-write."""

from __future__ import annotations

from pathlib import Path

from jepsen_py.errors import BadInput
from jepsen_py.history import torn_message
from jepsen_py.inputfile import read_bounded


def read_text(path: Path) -> str:
    """The file as UTF-8 text; only a regular file of bounded size (jepsen_py.inputfile) is read."""
    data = read_bounded(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if not data.endswith(b"\n") and b"\n" not in data[e.start:]:
            # A tear inside a multi-byte character: the unfinished last line is torn whatever it
            # holds, and the reader refuses it (or drops it under --allow-truncated) as such.
            return data.decode("utf-8", errors="replace")
        line = data[: e.start].count(b"\n") + 1
        raise BadInput(f"{path}:{line}: not UTF-8 text ({e.reason})") from None


def torn(where: str, intact: int) -> BadInput:
    """The refusal of a history whose tail was cut off mid-write (the JSONL reader's words): the
    ops before it could be checked, but only when asked for."""
    return BadInput(torn_message(where, intact))

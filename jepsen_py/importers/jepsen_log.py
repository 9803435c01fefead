"""Jepsen text logs (the `INFO  jepsen.util - 3	:invoke	:cas	[1 4]` lines) as history records.

Only jepsen.util op lines are ops; every other log line is skipped. Each line is process, type, f
and an EDN value. How outcomes read (the etcd logs in Porcupine's test data, and Jepsen's rules):
- a completion whose value is a keyword (`:fail :read :timed-out`, `:info :write :timed-out`) carries
  an error, not a result: the error is that keyword and the value stays the invocation's;
- `:fail :read :timed-out` stays a fail (the process goes on invoking, so it cannot be info); a
  read with no result constrains nothing, so either reading gives the same verdict;
- `:info` may have happened at any time after its invocation; an invoke with no completion by the
  end of the file is the same;
- `:fail :cas [a b]` stays a fail with no error: Porcupine reads it as a definite "the compare did
  not match"; check with the cas-register option failed_cas="mismatch" (the CLI's default for this
  format) to get Porcupine's verdicts, or the default "drop" for Knossos's.
Ops get index = their order in the file and time = 0 (the log has no op clock).

A log line ends in a newline; a last line without one was cut off mid-write, and a cut op line can
still read as an op (`:read 12` cut to `:read 1`, or to `:read` with no value), so it is refused
whatever it holds, unless the caller allows a torn tail: then it is left out and reported.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jepsen_py import inputfile
from jepsen_py.errors import BadInput
from jepsen_py.history import INVOKE, TYPES, Op
from jepsen_py.importers.edn import EDNError, Keyword, loads, to_plain
from jepsen_py.importers.text import read_text, torn

_OP_LINE = re.compile(r"^\S+\s+jepsen\.util\s+-\s+(\S+)\s+:(\S+)\s+:(\S+)(?:\s+(.*?))?\s*$")
_PROCESS_NUMBER = re.compile(r"-?[0-9]{1,18}")
_UTIL = re.compile(r"^\S+\s+jepsen\.util\s+-\s")


def read_jepsen_log(path: Path | str, lines_out: list[int] | None = None, *,
                    allow_truncated: bool = False, dropped: list[int] | None = None) -> list[Op]:
    """The log's ops in file order; `lines_out`, when given, receives each op's line number and
    `dropped` the line of a torn tail left out under `allow_truncated`."""
    path = Path(path)
    text = read_text(path)
    lines = text.splitlines()
    torn_at = len(lines) if text and not text.endswith("\n") else None
    ops: list[Op] = []
    invoked: dict[object, object] = {}
    for lineno, line in enumerate(lines, start=1):
        where = f"{path}:{lineno}"
        if lineno == torn_at:
            if not allow_truncated:
                raise torn(where, len(ops))
            if dropped is not None:
                dropped.append(lineno)
            break
        if len(line) > inputfile.MAX_LINE_BYTES:
            raise BadInput(f"{where}: line longer than {inputfile.size(inputfile.MAX_LINE_BYTES)}: "
                           "not a log line")
        if not _UTIL.match(line):
            continue
        m = _OP_LINE.match(line)
        if m is None:
            raise BadInput(f"{where}: not a jepsen.util op line (process :type :f value)")
        proc_s, typ, f, value_s = m.groups()
        if typ not in TYPES:
            raise BadInput(f"{where}: unknown op type :{typ} (expected :invoke, :ok, :fail or :info)")
        process: int | str
        if _PROCESS_NUMBER.fullmatch(proc_s):
            process = int(proc_s)
        elif proc_s.startswith(":"):
            process = proc_s[1:]
        else:
            raise BadInput(f"{where}: process must be a number or a keyword, got {proc_s!r}")
        try:
            raw = _parse_value(value_s) if value_s else None
        except EDNError as e:
            raise BadInput(f"{where}: value {value_s!r} is not EDN ({e})") from None
        error = None
        if typ == INVOKE:
            value = to_plain(raw)  # a fresh copy: the parse is cached and shared
            invoked[process] = value
        else:
            if isinstance(raw, Keyword):
                error = str(raw)
                value = invoked.get(process)
            else:
                value = to_plain(raw)
            invoked.pop(process, None)
        ops.append(Op(index=len(ops), time=0, type=typ, process=process, f=f, value=value, error=error))
        if lines_out is not None:
            lines_out.append(lineno)
    return ops


@lru_cache(maxsize=4096)
def _parse_value(text: str) -> Any:
    """Values repeat a lot in these logs (nil, small ints, [a b]): parse each spelling once."""
    return loads(text)

"""Readers for histories written by others: Jepsen's history.edn and text logs, Porcupine's kv
logs. Each turns a file into our history records (jepsen_py.history.Op) and says in its docstring
how it reads fail and info. `load_history(path, fmt)` picks one by format name or by sniffing and
`check_rules` reports the first op breaking Jepsen's rules as file:line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jepsen_py.errors import BadInput
from jepsen_py.history import INFO, INVOKE, NEMESIS, SAMPLE_PROCESSES, Op, load_jsonl, mismatch
from jepsen_py.importers.edn import read_edn_history
from jepsen_py.importers.jepsen_log import read_jepsen_log
from jepsen_py.importers.porcupine_kv import read_porcupine_kv
from jepsen_py.inputfile import open_input

FORMATS = ("auto", "jsonl", "edn", "jepsen-log", "porcupine-kv")


def detect_format(path: Path | str) -> str:
    """jsonl, edn, jepsen-log or porcupine-kv, from the name and the first lines."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return "jsonl"
    with open_input(path) as f:
        try:
            head = f.read(65536).decode("utf-8", errors="replace")
        except OSError as e:
            raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
    if "jepsen.util" in head or path.suffix == ".log":
        return "jepsen-log"
    first = next((ln.strip() for ln in head.splitlines() if ln.strip() and not ln.startswith(";")), "")
    if first.startswith("{") and first.endswith("}") and '"type"' in first:
        return "jsonl"
    if first.startswith("{:") and ":key" in first and any(
        f":f :{x}" in head for x in ("get", "put", "append")
    ):
        return "porcupine-kv"
    if first.startswith(("{", "[", "(", "#")) or path.suffix == ".edn":
        return "edn"
    if not first:
        return "jsonl"  # empty: any reader gives an empty history
    raise BadInput(f"{path}: cannot tell the history format; give --format")


def load_history(path: Path | str, fmt: str = "auto", *, allow_truncated: bool = False,
                 dropped: list[int] | None = None) -> tuple[list[Op], str, list[int]]:
    """The file's ops, the format it was read as, and each op's line number.

    A file with no operation in it is BadInput: whatever it is, it is not a history to pass. A
    history whose tail was torn mid-write (in any format) is BadInput unless `allow_truncated`;
    then the torn line is left out and its number appended to `dropped`."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    path = Path(path)
    if fmt == "auto":
        fmt = detect_format(path)
    lines: list[int] = []
    if fmt == "jsonl":
        loaded = load_jsonl(path, allow_truncated=allow_truncated)
        if loaded.torn is not None and dropped is not None:
            dropped.append(loaded.torn)
        ops, lines = loaded.ops, loaded.lines
    elif fmt == "edn":
        ops = read_edn_history(path, lines, allow_truncated=allow_truncated, dropped=dropped)
    elif fmt == "jepsen-log":
        ops = read_jepsen_log(path, lines, allow_truncated=allow_truncated, dropped=dropped)
    else:
        ops = read_porcupine_kv(path, lines, allow_truncated=allow_truncated, dropped=dropped)
    if not ops:
        raise BadInput(f"{path}: no operations found (read as {fmt}): not a history")
    return ops, fmt, lines


def check_rules(ops: Sequence[Op], lines: Sequence[int], path: Path | str) -> None:
    """Jepsen's rules for client ops (as jepsen_py.history.validate), with the error naming
    file:line: a completion needs an invocation in flight on its process and matches it (same f,
    same key, not before it), a process has one invocation in flight, and a process that got info
    does not invoke again."""
    in_flight: dict[object, int] = {}
    crashed: set[object] = set()
    for i, op in enumerate(ops):
        p = op.process
        if p == NEMESIS or p in SAMPLE_PROCESSES:
            continue
        where = f"{path}:{lines[i] if i < len(lines) else '?'}"
        if op.type == INVOKE:
            if p in in_flight:
                raise BadInput(
                    f"{where}: process {p!r} invokes {op.f!r} while its op from line "
                    f"{lines[in_flight[p]] if in_flight[p] < len(lines) else '?'} is still in flight"
                )
            if p in crashed:
                raise BadInput(f"{where}: process {p!r} invokes again after an info completion")
            in_flight[p] = i
        else:
            at = in_flight.pop(p, None)
            if at is None:
                raise BadInput(f"{where}: {op.type} for process {p!r} without an invocation")
            why = mismatch(ops[at], op)
            if why is not None:
                inv_line = lines[at] if at < len(lines) else "?"
                raise BadInput(f"{where}: {why} (its invocation: line {inv_line})")
            if op.type == INFO:
                crashed.add(p)


def is_independent(ops: Sequence[Op]) -> bool:
    """Does this look like a jepsen.independent history (every client op's value a [key value]
    pair, the key also set on reads whose value is unknown: [k nil])?"""
    client = [o for o in ops if o.process != NEMESIS and o.process not in SAMPLE_PROCESSES]
    if not client or any(o.key is not None for o in client):
        return False
    return all(isinstance(o.value, list) and len(o.value) == 2 for o in client) and any(
        o.value[1] is None for o in client if o.type == INVOKE
    )


def unwrap_independent(ops: Sequence[Op]) -> list[Op]:
    """jepsen.independent's [key value] values into our records' key and value."""
    out: list[Op] = []
    for o in ops:
        if o.process != NEMESIS and o.process not in SAMPLE_PROCESSES and isinstance(o.value, list) \
                and len(o.value) == 2:
            k, v = o.value
            o = Op(o.index, o.time, o.type, o.process, o.f, k, v, o.node, o.error, dict(o.meta))
        out.append(o)
    return out

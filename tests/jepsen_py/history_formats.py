"""Writing one list of ops in each history format the readers take (JSONL, Jepsen EDN, Jepsen text
log), for tests that convert a history and expect the same reading, or damage one field of it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jepsen_py.history import Op


def to_jsonl(ops: Sequence[Op], *, sort_keys: bool = False, spaced: bool = False,
             newline: str = "\n") -> str:
    """Our history.jsonl; `sort_keys`/`spaced` reformat it without changing a value."""
    seps = (", ", ": ") if spaced else (",", ":")
    return "".join(json.dumps(o.to_dict(), sort_keys=sort_keys, separators=seps) + newline
                   for o in ops)


def edn_value(x: Any) -> str:
    """A JSON-like value as EDN (strings stay strings: a keyword would read back the same)."""
    if x is None:
        return "nil"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, list | tuple):
        return "[" + " ".join(edn_value(y) for y in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{edn_value(k)} {edn_value(y)}" for k, y in x.items()) + "}"
    return json.dumps(x)


def edn_op(o: Op, *, order: Sequence[str] | None = None) -> str:
    fields = {"index": str(o.index), "time": str(o.time), "type": f":{o.type}",
              "process": f":{o.process}" if isinstance(o.process, str) else str(o.process),
              "f": f":{o.f}", "value": edn_value(o.value)}
    if o.key is not None:
        fields["key"] = edn_value(o.key)
    if o.error is not None:
        fields["error"] = edn_value(o.error)
    keys = [k for k in (order or fields) if k in fields] + [k for k in fields if order and k not in order]
    return "{" + ", ".join(f":{k} {fields[k]}" for k in keys) + "}"


def to_edn(ops: Sequence[Op], *, vector: bool = True, order: Sequence[str] | None = None,
           newline: str = "\n") -> str:
    """Jepsen's history.edn: one vector of op maps, one per line, or (`vector=False`) one map a line."""
    maps = [edn_op(o, order=order) for o in ops]
    if not vector:
        return "".join(m + newline for m in maps)
    return "[" + (newline + " ").join(maps) + "]" + newline


def to_jepsen_log(ops: Sequence[Op], *, sep: str = "\t", newline: str = "\n") -> str:
    """Jepsen's text log lines (no index, time or key: only histories without them convert)."""
    out = []
    for o in ops:
        proc = f":{o.process}" if isinstance(o.process, str) else str(o.process)
        value = f":{o.error}" if o.error is not None and o.type != "invoke" else edn_value(o.value)
        out.append(f"INFO  jepsen.util - {proc}{sep}:{o.type}{sep}:{o.f}{sep}{value}{newline}")
    return "".join(out)

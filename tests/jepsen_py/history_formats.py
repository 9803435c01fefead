"""Writing one list of ops in each history format the readers take (our JSONL, Jepsen's EDN and
text log, Porcupine's kv lines), field by field, so a test can convert a history and expect the same
verdict, or replace one field of one line by a damaged token and expect a refusal."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jepsen_py.history import Op

JSONL = "jsonl"
EDN = "edn"  # one vector of op maps, one a line, with :index and :time
EDN_LINES = "edn-lines"  # one map a line, no :index or :time (Porcupine's kv files)
LOG = "jepsen-log"  # no index, time or key: only histories without them convert
FORMATS = (JSONL, EDN, EDN_LINES, LOG)


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


def fields(o: Op, fmt: str) -> dict[str, str]:
    """The op's fields as tokens of `fmt`, in the order its writer puts them."""
    if fmt == JSONL:
        return {k: json.dumps(v) for k, v in o.to_dict().items()}
    proc = f":{o.process}" if isinstance(o.process, str) else str(o.process)
    if fmt == LOG:
        value = f":{o.error}" if o.error is not None and o.type != "invoke" else edn_value(o.value)
        return {"process": proc, "type": f":{o.type}", "f": f":{o.f}", "value": value}
    out = {"index": str(o.index), "time": str(o.time)} if fmt == EDN else {}
    out.update({"process": proc, "type": f":{o.type}", "f": f":{o.f}"})
    if o.key is not None:
        out["key"] = edn_value(o.key)
    out["value"] = edn_value(o.value)
    if o.error is not None:
        out["error"] = edn_value(o.error)
    return out


def line(toks: Mapping[str, str], fmt: str, *, order: Sequence[str] | None = None,
         spaced: bool = True, sep: str = "\t") -> str:
    """One op's line (no newline) from its tokens; `order` reorders the fields where the format
    allows, `spaced`/`sep` reformat without changing a value."""
    keys = list(toks)
    if order is not None and fmt != LOG:
        keys = [k for k in order if k in toks] + [k for k in keys if k not in order]
    if fmt == JSONL:
        kv, between = (": ", ", ") if spaced else (":", ",")
        return "{" + between.join(f'"{k}"{kv}{toks[k]}' for k in keys) + "}"
    if fmt == LOG:
        return "INFO  jepsen.util - " + sep.join(toks[k] for k in ("process", "type", "f", "value"))
    between = ", " if spaced else " "
    return "{" + between.join(f":{k} {toks[k]}" for k in keys) + "}"


def render(ops: Sequence[Op], fmt: str, *, damage: Mapping[int, Mapping[str, str]] | None = None,
           newline: str = "\n", **style: Any) -> str:
    """The whole file; `damage` maps an op's position to field tokens that replace (or add) its own."""
    lines = []
    for i, o in enumerate(ops):
        toks = fields(o, fmt)
        toks.update((damage or {}).get(i, {}))
        lines.append(line(toks, fmt, **style))
    if fmt == EDN:
        return "[" + (newline + " ").join(lines) + "]" + newline
    return "".join(ln + newline for ln in lines)


def to_jsonl(ops: Sequence[Op]) -> str:
    return render(ops, JSONL)


def to_edn(ops: Sequence[Op]) -> str:
    return render(ops, EDN)

"""Porcupine's kv test logs: one EDN op map per line, with :key, f get / put / append.

They are Jepsen EDN histories (edn.py reads them); this adds the checks that make a wrong file
fail loudly. Reading of outcomes: `:ok` took effect; `:fail` did not (none occur in Porcupine's
files); `:info` or a missing completion may have taken effect at any time after the invocation.
`:ok :get` carries the whole string; nil means "" (the key is absent), which the kv model assumes.
"""

from __future__ import annotations

from pathlib import Path

from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.importers.edn import read_edn_history

KV_FS = frozenset({"get", "put", "append"})


def read_porcupine_kv(path: Path | str, lines: list[int] | None = None, *,
                      allow_truncated: bool = False, dropped: list[int] | None = None) -> list[Op]:
    at: list[int] = [] if lines is None else lines
    ops = read_edn_history(path, at, allow_truncated=allow_truncated, dropped=dropped)
    for i, op in enumerate(ops):
        if op.process == "nemesis":
            continue
        where = f"{path}:{at[i] if i < len(at) else '?'}"
        if op.f not in KV_FS:
            raise BadInput(f"{where}: f {op.f!r} is not a kv operation (get, put, append)")
        if op.key is None:
            raise BadInput(f"{where}: kv op without :key")
        if op.f in ("put", "append") and op.type == "invoke" and not isinstance(op.value, str):
            raise BadInput(f"{where}: {op.f} of {type(op.value).__name__}: kv values are strings")
    return ops

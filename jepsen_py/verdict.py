"""Verdicts: true, false or "unknown", merged as Jepsen merges them (false beats unknown beats true)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from jepsen_py.errors import EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID

Valid = bool | Literal["unknown"]

_RANK = {True: 0, "unknown": 1, False: 2}


def merge(verdicts: Iterable[Valid]) -> Valid:
    """The worst of the verdicts; no verdicts at all is valid (nothing was wrong)."""
    worst: Valid = True
    for v in verdicts:
        if v not in _RANK:
            raise ValueError(f"not a verdict: {v!r}")
        if _RANK[v] > _RANK[worst]:
            worst = v
    return worst


def exit_code(valid: Valid) -> int:
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN


#: What a transactional checker's `valid` rests on (its result's "verdict"), in words.
BASIS = {"exact": "decided exactly", "elle-style and exact": "exact where it can be, else Elle-style",
         "elle-style": "evidence: Elle-style"}


def basis(result: object) -> str | None:
    """The words for what a checker result's verdict rests on, or None where it does not say."""
    kind = result.get("verdict") if isinstance(result, dict) else None
    return BASIS.get(kind) if isinstance(kind, str) else None

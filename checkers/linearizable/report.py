"""An invalid result a person can act on: which op cannot be linearized, after which prefix, in
which state, and why each op that could come next does not fit.

The search's longest partial linearization is the furthest any order got. After it, the op with
the earliest completion among those left is the one that has to come next and cannot: that is
"the first op that cannot be linearized". Every op invoked before that completion is a candidate
for the next place; each gets the model's reason, or "fits, but leads to a dead end later".
"""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.linearizable.model import INF, Call, Model, thaw

MAX_CANDIDATES = 25
WINDOW_BEFORE = 5


def explain(key: Any, calls: list[Call], model: Model, best: list[int], best_state: Any) -> dict[str, Any]:
    """The failure record for one key (shape documented in the package docstring)."""
    done = set(best)
    left = [c for c in calls if c.id not in done]
    finite = [c for c in left if c.end != INF]
    blocked = min(finite, key=lambda c: c.end) if finite else (left[0] if left else None)
    if blocked is None:  # cannot happen for an invalid search; keep the report total anyway
        return {"key": thaw(key), "op": None, "longest_linearization": [calls[i].index for i in best],
                "state_before": model.describe_state(best_state), "candidates": [], "window": [],
                "explanation": "no op left to blame"}
    candidates: list[dict[str, Any]] = []
    for c in sorted((c for c in left if c.start < blocked.end), key=lambda c: c.start)[:MAX_CANDIDATES]:
        ok, out = model.step(best_state, c)
        if ok:
            why = (f"fits (state would become {model.describe_state(out)!r}), but no order of the "
                   f"remaining ops works after it")
        else:
            why = str(out) if out is not None else "the model rejects it in this state"
        candidates.append({"op": c.index, "f": c.f, "value": thaw(c.value), "why": why})
    ok, out = model.step(best_state, blocked)
    blocked_why = (str(out) if not ok and out is not None else
                   "it fits this state, but every order that fits it breaks another op first")
    window = sorted(
        {c.index for c in calls if c.start <= blocked.end and c.end >= blocked.start}
        | {calls[i].index for i in best[-WINDOW_BEFORE:]}
    )
    op = blocked.to_json()
    return {
        "key": thaw(key),
        "op": op,
        "longest_linearization": [calls[i].index for i in best],
        "state_before": model.describe_state(best_state),
        "candidates": candidates,
        "window": window,
        "explanation": (
            f"op {blocked.index} ({blocked.f} {thaw(blocked.value)!r} by process {blocked.process!r}) "
            f"cannot be linearized: after the longest order found ({len(best)} ops) the state is "
            f"{model.describe_state(best_state)!r} and {blocked_why}"
        ),
    }


def anomaly(failure: dict[str, Any]) -> dict[str, Any]:
    """The failure as a timeline anomaly (highlights the op, its completion and its window)."""
    op = failure.get("op") or {}
    ops = [i for i in (op.get("index"), op.get("complete_index")) if i is not None]
    return {"kind": "nonlinearizable", "ops": ops, "key": failure.get("key"),
            "window": failure.get("window", []), "explanation": failure.get("explanation", "")}

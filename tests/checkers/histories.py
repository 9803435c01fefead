"""Hand-written histories for checker tests: ops placed at explicit times (milliseconds), so each test
reads like a timeline. Indices are assigned in time order, as the HistoryWriter would."""

from __future__ import annotations

from typing import Any

from jepsen_py.history import Op, validate

MS = 1_000_000


class H:
    def __init__(self) -> None:
        self.events: list[tuple[float, int, dict[str, Any]]] = []
        self._seq = 0

    def _add(self, t_ms: float, **kw: Any) -> None:
        self._seq += 1
        self.events.append((t_ms, self._seq, kw))

    def op(self, process: int | str, f: str, key: Any, value: Any, start: float, end: float | None,
           kind: str = "ok", result: Any = None, node: str | None = None, role: str | None = None,
           term: int | None = None, error: Any = None) -> None:
        """An invoke at `start` and its completion at `end` (None: never completes)."""
        self._add(start, type="invoke", process=process, f=f, key=key, value=value)
        if end is None:
            return
        meta: dict[str, Any] = {}
        if role is not None:
            meta["role"] = role
        if term is not None:
            meta["term"] = term
        self._add(end, type=kind, process=process, f=f, key=key,
                  value=value if result is None and f not in ("fetch", "describe", "list") else result,
                  node=node, meta=meta, error=error)

    def sample(self, t_ms: float, node: str, role: str | None, term: int | None,
               leader: str | None = None, answered: bool = True, **extra: Any) -> None:
        value = {"role": role, "term": term, "leader": leader, **extra} if answered else None
        self._add(t_ms, type="ok" if answered else "fail", process="observer", f="status",
                  node=node, value=value)

    def nemesis(self, f: str, start: float, end: float, value: Any = None,
                meta: dict[str, Any] | None = None) -> None:
        self._add(start, type="invoke", process="nemesis", f=f, value=None, meta=dict(meta or {}))
        self._add(end, type="info", process="nemesis", f=f, value=value, meta=dict(meta or {}))

    def build(self) -> list[Op]:
        ops = []
        for i, (t, _, kw) in enumerate(sorted(self.events, key=lambda e: (e[0], e[1]))):
            ops.append(Op(index=i, time=int(t * MS), type=kw["type"], process=kw["process"], f=kw["f"],
                          key=kw.get("key"), value=kw.get("value"), node=kw.get("node"),
                          error=kw.get("error"), meta=kw.get("meta") or {}))
        validate(ops)
        return ops

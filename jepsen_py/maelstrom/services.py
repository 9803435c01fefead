"""Maelstrom's services (its doc/services.md): nodes the harness runs itself, named lin-kv, seq-kv,
lww-kv and lin-tso, that a user's node sends requests to as to any other node. Each gives the
consistency Maelstrom's does, so a node built on one misbehaves here where it would there.

  lin-kv   linearizable key-value store: read, write, cas (`from`/`to`, `create_if_not_exists`)
  seq-kv   the same API, sequentially consistent: each caller sees the states in order, never going
           back, but an op that changes nothing (a read, a failed cas, a write of the value already
           there) may be served from any state between the caller's last one and the newest, so
           stale reads happen; an op that changes the store is applied to the newest state
  lww-kv   the same API, eventually consistent: several replicas, each request served by a random
           one; a write is stamped (Lamport clock, replica) and reaches the others by gossip, one
           random replica merged into another at each request, the highest stamp winning
  lin-tso  `ts` -> `ts_ok` with `ts`: 0, 1, 2, ... strictly increasing

Each class is pure of the network: `handle(src, body)` takes the request's sender and body and
returns the reply body (no in_reply_to: the router adds it) or None for a message that is no request
(a reply or an error sent to the service: answering it could loop). Errors are Maelstrom's codes:
10 not-supported (an unknown type), 12 malformed-request (a field missing or of no usable kind),
20 key-does-not-exist, 22 precondition-failed. The randomness of seq-kv and lww-kv is the
`random.Random` they are given, so a seed replays their choices for the same requests. Not thread
safe: the router calls them under one lock.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from jepsen_py.seeds import derive

Body = dict[str, Any]

#: How many past states seq-kv keeps to serve stale reads from (Maelstrom keeps 32).
SEQ_WINDOW = 32
#: lww-kv's replicas (Maelstrom's doc/services.md: 5 by default).
LWW_REPLICAS = 5


def error(code: int, text: str) -> Body:
    return {"type": "error", "code": code, "text": text}


def not_supported(kind: str, name: str) -> Body:
    return error(10, f"{name} does not support {kind!r} requests")


class Malformed(Exception):
    """A request missing a field, or with one no service can use; str() is the reply's text."""


def _key(body: Mapping[str, Any]) -> Any:
    """The request's key as a dict key: JSON scalars as they are, arrays as tuples."""
    if "key" not in body:
        raise Malformed("no key")
    return _hashable(body["key"])


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        raise Malformed(f"a key cannot be an object: {json.dumps(value)[:80]}")
    return value


def _field(body: Mapping[str, Any], name: str) -> Any:
    if name not in body:
        raise Malformed(f"no {name}")
    return body[name]


def same(a: Any, b: Any) -> bool:
    """JSON equality as Maelstrom's (Clojure's) `=`: 1 is not 1.0 and true is not 1."""
    if a is b:
        return True
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return a == b


def _is_request(body: Mapping[str, Any]) -> bool:
    return body.get("in_reply_to") is None and body.get("type") != "error"


def kv_apply(state: Mapping[Any, Any], body: Mapping[str, Any], name: str) -> tuple[Body, Any, Any]:
    """One kv request against `state` (key -> value): (reply, key, new value), the key None when
    the request changes nothing. Malformed for a request missing a field."""
    kind = body["type"]
    if kind == "read":
        k = _key(body)
        if k not in state:
            return error(20, "key does not exist"), None, None
        return {"type": "read_ok", "value": state[k]}, None, None
    if kind == "write":
        k = _key(body)
        value = _field(body, "value")
        changed = k not in state or not same(state[k], value)
        return {"type": "write_ok"}, (k if changed else None), value
    if kind == "cas":
        k = _key(body)
        from_, to = _field(body, "from"), _field(body, "to")
        if k not in state:
            if body.get("create_if_not_exists") is True:
                return {"type": "cas_ok"}, k, to
            return error(20, "key does not exist"), None, None
        if not same(state[k], from_):
            return error(22, f"current value {json.dumps(state[k])[:80]} is not {json.dumps(from_)[:80]}"), \
                None, None
        changed = not same(state[k], to)
        return {"type": "cas_ok"}, (k if changed else None), to
    return not_supported(kind, name), None, None


class LinKV:
    """lin-kv: one store, every request applied to it in the order it arrives."""

    name = "lin-kv"

    def __init__(self, rng: random.Random | None = None) -> None:
        self.state: dict[Any, Any] = {}

    def handle(self, src: str, body: Mapping[str, Any]) -> Body | None:
        if not _is_request(body):
            return None
        try:
            reply, k, value = kv_apply(self.state, body, self.name)
        except Malformed as e:
            return error(12, str(e))
        if k is not None:
            self.state[k] = value
        return reply


class SeqKV:
    """seq-kv: the store's states in order (the last SEQ_WINDOW of them) and, for each caller (the
    node that sent the request), the index of the last state it saw. An op is first judged against a
    state drawn uniformly from the caller's index to the newest: if it changes nothing there (a read,
    a failed cas, a write of the same value) that is its answer and the caller moves to that state;
    otherwise it is applied to the newest state, making a new one, and the caller moves to it.
    Every op thus takes its place in one total order of states that agrees with each caller's own
    order: sequential consistency, never more stale than the caller's last view. (Maelstrom's
    seq-kv does the same; it could in principle also apply an update to a past state when no one
    could tell, which we never do: our updates are always at the newest state.)"""

    name = "seq-kv"

    def __init__(self, rng: random.Random | None = None, window: int = SEQ_WINDOW) -> None:
        self.rng = rng or random.Random(0)
        self.states: deque[dict[Any, Any]] = deque([{}], maxlen=max(1, window))
        self.newest = 0  # the index of states[-1]
        self.seen: dict[str, int] = {}  # caller -> index of the last state it saw

    def handle(self, src: str, body: Mapping[str, Any]) -> Body | None:
        if not _is_request(body):
            return None
        oldest = self.newest - len(self.states) + 1
        low = max(self.seen.get(src, 0), oldest)
        index = self.rng.randint(low, self.newest)
        try:
            reply, k, value = kv_apply(self.states[index - oldest], body, self.name)
            if k is not None and index != self.newest:
                reply, k, value = kv_apply(self.states[-1], body, self.name)
                index = self.newest
        except Malformed as e:
            return error(12, str(e))
        if k is not None:
            state = dict(self.states[-1])
            state[k] = value
            self.states.append(state)
            self.newest += 1
            index = self.newest
        self.seen[src] = index
        return reply


class LwwKV:
    """lww-kv: `replicas` independent stores of key -> (stamp, value), each with a Lamport clock.
    Before each request one random replica's state is merged into another's (gossip: the higher
    stamp wins per key); the request is then served by a random replica alone, a write or a
    successful cas stamping its value (clock, replica) and advancing that replica's clock. With no
    requests there is no gossip: replicas converge only as requests keep coming, as Maelstrom's."""

    name = "lww-kv"

    def __init__(self, rng: random.Random | None = None, replicas: int = LWW_REPLICAS) -> None:
        self.rng = rng or random.Random(0)
        self.clocks = [0] * max(1, replicas)
        self.replicas: list[dict[Any, tuple[tuple[int, int], Any]]] = [{} for _ in self.clocks]

    def gossip(self, source: int, dest: int) -> None:
        """Merges replica `source` into replica `dest`: per key the higher stamp wins."""
        if source == dest:
            return
        into = self.replicas[dest]
        for k, (stamp, value) in self.replicas[source].items():
            mine = into.get(k)
            if mine is None or mine[0] < stamp:
                into[k] = (stamp, value)
        self.clocks[dest] = max(self.clocks[dest], self.clocks[source])

    def handle(self, src: str, body: Mapping[str, Any]) -> Body | None:
        if not _is_request(body):
            return None
        n = len(self.replicas)
        self.gossip(self.rng.randrange(n), self.rng.randrange(n))
        i = self.rng.randrange(n)
        replica = self.replicas[i]
        view = {k: value for k, (_, value) in replica.items()}
        try:
            reply, k, value = kv_apply(view, body, self.name)
        except Malformed as e:
            return error(12, str(e))
        if body["type"] in ("write", "cas") and reply["type"] != "error":
            k = _key(body)  # an update of the same value is stamped too: it is a write
            replica[k] = ((self.clocks[i], i), value)
            self.clocks[i] += 1
        return reply


class LinTSO:
    """lin-tso: a timestamp oracle, 0, 1, 2, ... one per `ts` request."""

    name = "lin-tso"

    def __init__(self, rng: random.Random | None = None) -> None:
        self.next = 0

    def handle(self, src: str, body: Mapping[str, Any]) -> Body | None:
        if not _is_request(body):
            return None
        if body["type"] != "ts":
            return not_supported(body["type"], self.name)
        ts, self.next = self.next, self.next + 1
        return {"type": "ts_ok", "ts": ts}


#: Maelstrom's services by the node id a node sends to; each takes its random.Random.
SERVICES: dict[str, Callable[[random.Random], LinKV | SeqKV | LwwKV | LinTSO]] = {
    "lin-kv": LinKV,
    "seq-kv": SeqKV,
    "lww-kv": LwwKV,
    "lin-tso": LinTSO,
}


def start_services(seed: int) -> dict[str, LinKV | SeqKV | LwwKV | LinTSO]:
    """A fresh instance of every service, each with its own random.Random derived from `seed`."""
    return {name: make(derive(seed, f"maelstrom-service-{name}")) for name, make in SERVICES.items()}

"""A Kafka-style log checker (Jepsen's kafka workload, as Maelstrom's kafka workload checks it):
append-only logs by key, each offset holding one message, read by consumers that poll onward from
their own position and commit what they processed.

The history (ops f and values; keys are strings, offsets whole numbers, messages any JSON value,
unique per key; the workload sends increasing integers):

  f                        invoke key  invoke value          ok completion value
  send                     key         the message           the offset the message was given
  poll                     None        {key: offset, ...}    {key: [[offset, message], ...], ...}
                                       (start from there)    (a key with nothing new may be left out)
  commit_offsets           None        {key: offset, ...}    anything (ignored)
  list_committed_offsets   None        [key, ...]            {key: committed offset, ...}

Any op may end fail (certainly not done) or info (unknown): an info send may or may not be in the
log, and is never counted lost. What is known of each key's log: every offset an ok send was given
and every [offset, message] an ok poll returned. Anomalies (Jepsen's names where it has them), each
record with `kind`, `key`, the `ops` (history indices) showing it and an `explanation`:

  inconsistent-offsets   one offset of a key holding two different messages
  duplicate              one message at two offsets of a key
  unexpected             a polled message no send ever sent to that key
  aborted-read           a polled message whose every send to that key failed (Jepsen's G1a)
  lost-write             an acknowledged send at offset o that no poll ever returned, although some
                         poll returned a message first known at an offset >= o of that key
  unseen                 an acknowledged send no poll ever returned, above every polled offset;
                         fails only when the history has final polls (invokes with meta
                         `final: true`: the workload's catch-up reads after the quiet period),
                         otherwise reported only (no recency is promised while the test runs)
  poll-skip              one consumer's (process's) successive polls of a key jump over an offset
                         known to exist; for its first poll of a key, offsets known to exist from
                         the requested offset up to the first returned one
  nonmonotonic-poll      one consumer's poll of a key starts at or below the last offset its
                         previous poll of that key returned, or below the offset it asked for
  int-poll-skip          within one poll, two successive offsets of a key with a known offset between
  int-nonmonotonic-poll  within one poll, offsets of a key not strictly increasing
  nonmonotonic-send      one process's successive acknowledged sends to a key given offsets that do
                         not increase
  committed-beyond-log   a listed committed offset above every offset known to exist for that key
  unexpected-committed-offset   a listed committed offset no commit_offsets (not failed, invoked
                         before the list ended) asked for
  nonmonotonic-committed a process's listed committed offset of a key below one it listed before, or
                         below what its own acknowledged commit set (committed offsets only advance),
                         or the key left out after it had one

All of them fail the check except `unseen` without final polls. With no ok send and no ok poll the
verdict is unknown.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report, hashable, shown

from jepsen_py.history import FAIL, OK, Op, Pair, pairs
from jepsen_py.protocols import Test

FS = frozenset({"send", "poll", "commit_offsets", "list_committed_offsets"})

ALWAYS_FAILING = frozenset({
    "inconsistent-offsets", "duplicate", "unexpected", "aborted-read", "lost-write", "poll-skip",
    "nonmonotonic-poll", "int-poll-skip", "int-nonmonotonic-poll", "nonmonotonic-send",
    "committed-beyond-log", "unexpected-committed-offset", "nonmonotonic-committed",
})


def is_offset(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def poll_pairs(value: Any) -> dict[str, list[tuple[int, Any]]]:
    """An ok poll's {key: [(offset, message), ...]}, keys as strings; malformed entries left out."""
    out: dict[str, list[tuple[int, Any]]] = {}
    if not isinstance(value, dict):
        return out
    for k, prs in value.items():
        if not isinstance(prs, list):
            continue
        good = [(pr[0], pr[1]) for pr in prs
                if isinstance(pr, list | tuple) and len(pr) == 2 and is_offset(pr[0])]
        if good:
            out[str(k)] = good
    return out


def offsets_map(value: Any) -> dict[str, int]:
    """{key: offset} of a commit's invoke or a list's completion; malformed entries left out."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if is_offset(v)}


class _Log:
    """What is known of one key's log."""

    def __init__(self) -> None:
        self.at: dict[int, dict[Hashable, list[int]]] = defaultdict(dict)  # offset -> msg -> op indices
        self.where: dict[Hashable, set[int]] = defaultdict(set)  # msg -> offsets
        self.shown: dict[Hashable, Any] = {}  # msg -> the message as given
        self.sorted: list[int] = []

    def add(self, offset: int, msg: Any, index: int) -> None:
        h = hashable(msg)
        self.at[offset].setdefault(h, []).append(index)
        self.where[h].add(offset)
        self.shown.setdefault(h, msg)

    def seal(self) -> None:
        self.sorted = sorted(self.at)

    def between(self, lo: int, hi: int) -> list[int]:
        """Known offsets o with lo < o < hi."""
        i = bisect.bisect_right(self.sorted, lo)
        j = bisect.bisect_left(self.sorted, hi)
        return self.sorted[i:j]


class KafkaChecker:
    """Jepsen's kafka anomalies over send / poll / commit_offsets / list_committed_offsets ops."""

    def __init__(self, *, name: str = "kafka") -> None:
        self.name = name

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ps = pairs(op for op in history if op.is_client and op.f in FS)
        logs: dict[str, _Log] = defaultdict(_Log)
        tried: dict[str, dict[Hashable, list[Pair]]] = defaultdict(lambda: defaultdict(list))
        acked: list[tuple[str, int, Any, Pair]] = []
        polled: dict[str, dict[Hashable, int]] = defaultdict(dict)  # key -> msg -> first poll index
        ok_polls: list[Pair] = []
        final_polls = 0
        for p in ps:
            c = p.complete
            f = p.invoke.f
            if f == "send":
                k = str(p.invoke.key)
                tried[k][hashable(p.invoke.value)].append(p)
                if c is not None and c.type == OK and is_offset(c.value):
                    logs[k].add(c.value, p.invoke.value, c.index)
                    acked.append((k, c.value, p.invoke.value, p))
            elif f == "poll":
                if p.invoke.meta.get("final") is True and c is not None and c.type == OK:
                    final_polls += 1
                if c is None or c.type != OK:
                    continue
                ok_polls.append(p)
                for k, prs in poll_pairs(c.value).items():
                    for o, m in prs:
                        logs[k].add(o, m, c.index)
                        polled[k].setdefault(hashable(m), c.index)
        for log in logs.values():
            log.seal()
        anomalies: list[dict[str, Any]] = []
        anomalies += self._log_shape(logs)
        anomalies += self._unexpected(polled, tried, logs)
        lost, unseen = self._lost(logs, acked, polled, final_polls > 0)
        anomalies += lost + unseen
        anomalies += self._polls(ok_polls, logs)
        anomalies += self._sends(acked)
        anomalies += self._committed(ps, logs)
        failing = set(ALWAYS_FAILING) | ({"unseen"} if final_polls else set())
        report = anomaly_report(anomalies, failing)
        sends = [p for p in ps if p.invoke.f == "send"]
        out: dict[str, Any] = {
            "valid": not report["failing_kinds"],
            "keys": len(set(logs) | set(tried)),
            "sends_attempted": len(sends),
            "sends_acknowledged": len(acked),
            "polls_ok": len(ok_polls),
            "final_polls": final_polls,
            "messages_polled": sum(len(v) for v in polled.values()),
            "lost_count": len(lost),
            "unseen_count": len(unseen),
            **report,
        }
        if not acked and not ok_polls and out["valid"]:
            out.update(valid="unknown", unknown_reason="no ok send and no ok poll: nothing to check")
        return out

    @staticmethod
    def _log_shape(logs: dict[str, _Log]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k, log in sorted(logs.items()):
            for o in log.sorted:
                msgs = log.at[o]
                if len(msgs) > 1:
                    shown_msgs = [log.shown[h] for h in msgs]
                    ops = sorted({i for idx in msgs.values() for i in idx})
                    out.append({"kind": "inconsistent-offsets", "key": k, "offset": o,
                                "messages": shown_msgs[:10], "ops": ops[:10],
                                "explanation": f"offset {o} of key {k!r} holds {len(msgs)} different "
                                               f"messages: {shown(shown_msgs)}"})
            for h, where in log.where.items():
                if len(where) > 1:
                    offs = sorted(where)
                    ops = sorted({i for o in offs for i in log.at[o].get(h, [])})
                    out.append({"kind": "duplicate", "key": k, "message": log.shown[h], "offsets": offs[:20],
                                "ops": ops[:10],
                                "explanation": f"message {log.shown[h]!r} of key {k!r} is at {len(offs)} "
                                               f"offsets: {shown(offs)}"})
        return out

    @staticmethod
    def _unexpected(polled: dict[str, dict[Hashable, int]], tried: dict[str, dict[Hashable, list[Pair]]],
                    logs: dict[str, _Log]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k, msgs in sorted(polled.items()):
            for h, index in msgs.items():
                m = logs[k].shown[h]
                senders = tried.get(k, {}).get(h, [])
                if not senders:
                    out.append({"kind": "unexpected", "key": k, "message": m, "ops": [index],
                                "explanation": f"poll (op {index}) returned message {m!r} on key {k!r}, "
                                               f"which no send sent to that key"})
                elif all(s.complete is not None and s.complete.type == FAIL for s in senders):
                    ops = [index, *(s.complete.index for s in senders if s.complete is not None)]
                    out.append({"kind": "aborted-read", "key": k, "message": m, "ops": ops[:10],
                                "explanation": f"poll (op {index}) returned message {m!r} on key {k!r}, "
                                               f"whose send failed"})
        return out

    @staticmethod
    def _lost(logs: dict[str, _Log], acked: list[tuple[str, int, Any, Pair]],
              polled: dict[str, dict[Hashable, int]], finals: bool
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Jepsen's bound: the highest offset at which some polled message is first known; every
        acknowledged message at or below it must have been polled by someone."""
        bound: dict[str, tuple[int, int]] = {}  # key -> (offset, index of a poll showing it)
        for k, msgs in polled.items():
            log = logs[k]
            for h, index in msgs.items():
                first = min(log.where[h])
                if k not in bound or first > bound[k][0]:
                    bound[k] = (first, index)
        lost: list[dict[str, Any]] = []
        unseen: list[dict[str, Any]] = []
        for k, o, m, p in acked:
            if hashable(m) in polled.get(k, {}):
                continue
            assert p.complete is not None
            b = bound.get(k)
            if b is not None and o <= b[0]:
                lost.append({"kind": "lost-write", "key": k, "offset": o, "message": m,
                             "ops": [p.complete.index, b[1]],
                             "explanation": f"send of {m!r} to key {k!r} was acknowledged at offset {o} "
                                            f"(op {p.complete.index}), no poll ever returned it, yet a poll "
                                            f"(op {b[1]}) read up to offset {b[0]}"})
            else:
                unseen.append({"kind": "unseen", "key": k, "offset": o, "message": m,
                               "ops": [p.complete.index],
                               "explanation": f"send of {m!r} to key {k!r} was acknowledged at offset {o} "
                                              f"(op {p.complete.index}) and no poll ever returned it"
                                              + ("" if finals else " (no final polls: reported only)")})
        return lost, unseen

    @staticmethod
    def _polls(ok_polls: list[Pair], logs: dict[str, _Log]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        last: dict[Any, dict[str, tuple[int, int]]] = defaultdict(dict)  # process -> key -> (offset, op)
        for p in ok_polls:
            assert p.complete is not None
            c = p.complete
            asked = offsets_map(p.invoke.value)
            mine = last[p.invoke.process]
            for k, prs in poll_pairs(c.value).items():
                log = logs[k]
                offs = [o for o, _ in prs]
                for o1, o2 in itertools.pairwise(offs):
                    if o2 <= o1:
                        out.append({"kind": "int-nonmonotonic-poll", "key": k, "offsets": [o1, o2],
                                    "ops": [c.index],
                                    "explanation": f"poll (op {c.index}) of key {k!r} returned offset {o2} "
                                                   f"after {o1}"})
                    elif skipped := log.between(o1, o2):
                        out.append({"kind": "int-poll-skip", "key": k, "offsets": [o1, o2],
                                    "skipped": skipped[:20], "ops": [c.index],
                                    "explanation": f"poll (op {c.index}) of key {k!r} went from offset {o1} "
                                                   f"to {o2}, skipping {shown(skipped)}, which exist"})
                first = offs[0]
                if k in mine:
                    prev, prev_op = mine[k]
                    if first <= prev:
                        out.append({"kind": "nonmonotonic-poll", "key": k, "offsets": [prev, first],
                                    "process": p.invoke.process, "ops": [prev_op, c.index],
                                    "explanation": f"process {p.invoke.process} polled key {k!r} up to "
                                                   f"offset {prev} (op {prev_op}), then from {first} "
                                                   f"(op {c.index})"})
                    elif skipped := log.between(prev, first):
                        out.append({"kind": "poll-skip", "key": k, "offsets": [prev, first],
                                    "skipped": skipped[:20], "process": p.invoke.process,
                                    "ops": [prev_op, c.index],
                                    "explanation": f"process {p.invoke.process} polled key {k!r} up to "
                                                   f"offset {prev} (op {prev_op}), then from {first} "
                                                   f"(op {c.index}), skipping {shown(skipped)}, which exist"})
                elif k in asked:
                    want = asked[k]
                    if first < want:
                        out.append({"kind": "nonmonotonic-poll", "key": k, "offsets": [want, first],
                                    "process": p.invoke.process, "ops": [c.index],
                                    "explanation": f"poll (op {c.index}) asked for key {k!r} from offset "
                                                   f"{want} and was given offset {first}"})
                    elif skipped := log.between(want - 1, first):
                        out.append({"kind": "poll-skip", "key": k, "offsets": [want, first],
                                    "skipped": skipped[:20], "process": p.invoke.process,
                                    "ops": [c.index],
                                    "explanation": f"poll (op {c.index}) asked for key {k!r} from offset "
                                                   f"{want} and was given {first} first, skipping "
                                                   f"{shown(skipped)}, which exist"})
                mine[k] = (offs[-1], c.index)
        return out

    @staticmethod
    def _sends(acked: list[tuple[str, int, Any, Pair]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        last: dict[tuple[Any, str], tuple[int, int]] = {}
        for k, o, _m, p in acked:
            assert p.complete is not None
            who = (p.invoke.process, k)
            if who in last and o <= last[who][0]:
                prev, prev_op = last[who]
                out.append({"kind": "nonmonotonic-send", "key": k, "offsets": [prev, o],
                            "process": p.invoke.process, "ops": [prev_op, p.complete.index],
                            "explanation": f"process {p.invoke.process}'s send to key {k!r} got offset {o} "
                                           f"(op {p.complete.index}) after its earlier send got {prev} "
                                           f"(op {prev_op})"})
            last[who] = (o, p.complete.index)
        return out

    @staticmethod
    def _committed(ps: list[Pair], logs: dict[str, _Log]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        asked: dict[str, dict[int, int]] = defaultdict(dict)  # key -> offset -> first invoke asking it
        for p in ps:
            if p.invoke.f == "commit_offsets" and p.type != FAIL:
                for k, v in offsets_map(p.invoke.value).items():
                    asked[k].setdefault(v, p.invoke.index)
        # process -> key -> (the offset it may not go below, the op that set it, which op that was)
        floor: dict[Any, dict[str, tuple[int, int, str]]] = defaultdict(dict)
        for p in ps:
            c = p.complete
            if c is None or c.type != OK:
                continue
            mine = floor[p.invoke.process]
            if p.invoke.f == "commit_offsets":
                for k, v in offsets_map(p.invoke.value).items():
                    if k not in mine or v > mine[k][0]:
                        mine[k] = (v, c.index, "its own commit")
                continue
            if p.invoke.f != "list_committed_offsets":
                continue
            listed = offsets_map(c.value)
            wanted = [str(k) for k in p.invoke.value] if isinstance(p.invoke.value, list) else list(listed)
            for k in wanted:
                v = listed.get(k)
                if v is None:
                    if k in mine:
                        was, op, why = mine[k]
                        out.append({"kind": "nonmonotonic-committed", "key": k, "offsets": [was, None],
                                    "process": p.invoke.process, "ops": [op, c.index],
                                    "explanation": f"list (op {c.index}) left out key {k!r}, whose committed "
                                                   f"offset was already {was} ({why}, op {op})"})
                    continue
                known = logs[k].sorted if k in logs else []
                if not known or v > known[-1]:
                    top = known[-1] if known else None
                    out.append({"kind": "committed-beyond-log", "key": k, "offset": v, "ops": [c.index],
                                "explanation": f"list (op {c.index}) says key {k!r} is committed up to "
                                               f"offset {v}, above every offset known to exist ({top})"})
                elif asked.get(k, {}).get(v, c.index) >= c.index:
                    out.append({"kind": "unexpected-committed-offset", "key": k, "offset": v,
                                "ops": [c.index],
                                "explanation": f"list (op {c.index}) says key {k!r} is committed up to "
                                               f"offset {v}, which no commit_offsets asked for"})
                if k in mine and v < mine[k][0]:
                    was, op, why = mine[k]
                    out.append({"kind": "nonmonotonic-committed", "key": k, "offsets": [was, v],
                                "process": p.invoke.process, "ops": [op, c.index],
                                "explanation": f"list (op {c.index}) says key {k!r} is committed up to "
                                               f"offset {v}, below {was} ({why}, op {op})"})
                if k not in mine or v > mine[k][0]:
                    mine[k] = (v, c.index, "an earlier list")
        return out


__all__ = ["ALWAYS_FAILING", "FS", "KafkaChecker", "offsets_map", "poll_pairs"]

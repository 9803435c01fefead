"""The router's optional message journal: for each message, when it was sent, from whom to whom, what it
said, and when it was delivered or that it was dropped by a partition or lost (its destination's
process was not running). What checkers/pictures/messages.py draws as messages.html, as Maelstrom's
messages.svg.

Only the first `limit` messages are kept (a long run sends millions); the rest are counted. Recording
costs a tuple and a dict entry per message while under the limit, one addition per batch after it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jepsen_py.maelstrom.process import Batch
    from jepsen_py.maelstrom.protocol import Message

#: The journal's file in a run directory (MaelstromEngine writes it; messages.html is drawn from it).
MESSAGES_FILE = "messages.json"
#: How many messages a journal keeps by default.
JOURNAL_LIMIT = 20_000
#: How many characters of a message's body a dumped entry quotes.
BODY_CHARS = 300

DELIVERED, DROPPED, LOST, IN_FLIGHT = "delivered", "dropped", "lost", "in-flight"


class MessageJournal:
    """Sent and landed messages, in send order. Thread-safe: the router's reader threads, client
    threads and delivery thread all record."""

    def __init__(self, limit: int = JOURNAL_LIMIT) -> None:
        self.limit = limit
        self.unrecorded = 0  # messages sent after the journal was full
        self._entries: list[list[Any]] = []  # [sent, msg, landed time | None, outcome]
        self._open: dict[int, list[Any]] = {}  # id(msg) -> its entry, until it lands
        self._lock = threading.Lock()

    def sent(self, batch: Batch, now: float) -> None:
        with self._lock:
            room = self.limit - len(self._entries)
            if room < len(batch):
                self.unrecorded += len(batch) - max(room, 0)
            for msg, _ in batch[:max(room, 0)]:
                entry = [now, msg, None, IN_FLIGHT]
                self._entries.append(entry)
                self._open[id(msg)] = entry

    def landed(self, batch: Batch, dropped: Iterable[Message], lost: Iterable[str], now: float) -> None:
        """`batch` reached the router's delivery at `now`: the `dropped` ones were cut by a
        partition, those to a dest in `lost` found its process taking nothing, the rest delivered
        (the router's own decisions, not made again here)."""
        if not self._open:
            return
        cut = {id(m) for m in dropped}
        lost = set(lost)
        with self._lock:
            for msg, _ in batch:
                entry = self._open.pop(id(msg), None)
                if entry is None:
                    continue
                entry[2] = now
                if id(msg) in cut:
                    entry[3] = DROPPED
                elif msg.dest in lost:
                    entry[3] = LOST
                else:
                    entry[3] = DELIVERED

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self, t0: float = 0.0) -> list[dict[str, Any]]:
        """Each kept message as JSON-ready fields, times in seconds since `t0` (monotonic); a message
        still in flight when the router closed has no landed time."""
        with self._lock:
            rows = [list(e) for e in self._entries]
        return [_row(sent, msg, landed, outcome, t0) for sent, msg, landed, outcome in rows]

    def to_json(self, t0: float = 0.0) -> dict[str, Any]:
        return {"limit": self.limit, "unrecorded": self.unrecorded, "messages": self.entries(t0)}


def _row(sent: float, msg: Message, landed: float | None, outcome: str, t0: float) -> dict[str, Any]:
    body = msg.body
    try:
        text = json.dumps(body, separators=(",", ":"), default=str)
    except (ValueError, RecursionError):  # a body nested too deep to print
        text = str(body)
    if len(text) > BODY_CHARS:
        text = text[:BODY_CHARS] + "…"
    return {"sent": round(sent - t0, 6), "landed": None if landed is None else round(landed - t0, 6),
            "outcome": outcome, "src": msg.src, "dest": msg.dest, "type": str(body.get("type")),
            "msg_id": body.get("msg_id"), "in_reply_to": body.get("in_reply_to"), "body": text}

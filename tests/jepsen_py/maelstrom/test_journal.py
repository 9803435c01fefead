"""The router's message journal (what messages.html draws): each message's send, and its delivery, its
drop across a partition or its loss to a dead node; only the first `limit` kept, the rest counted."""

from __future__ import annotations

import json

from jepsen_py.maelstrom.journal import MessageJournal
from jepsen_py.maelstrom.protocol import Message
from jepsen_py.maelstrom.router import Router
from tests.jepsen_py.maelstrom.conftest import demo_argv


def test_the_journal_records_delivered_dropped_and_lost_messages_up_to_its_limit(tmp_path):
    journal = MessageJournal(limit=8)
    with Router(demo_argv("python", "echo.py"), 2, tmp_path, journal=journal) as r:
        r.start()  # 4 messages: two inits, two init_oks
        assert r.call("c1", "n1", {"type": "echo", "echo": "one"}, 3).outcome == "ok"  # 2 more
        r.partition({"n2": ["c1"]})
        assert r.call("c1", "n2", {"type": "echo", "echo": "cut"}, 0.3).outcome == "timeout"
        r.heal()
        r.kill("n2")
        assert r.call("c1", "n2", {"type": "echo", "echo": "dead"}, 0.3).outcome == "timeout"
        assert r.call("c1", "n1", {"type": "echo", "echo": "late"}, 3).outcome == "ok"  # past the limit
    rows = journal.entries(t0=0.0)
    assert len(rows) == 8 and journal.unrecorded == 2
    assert sorted((m["src"], m["dest"], m["type"]) for m in rows[:4]) == [
        ("c0", "n1", "init"), ("c0", "n2", "init"), ("n1", "c0", "init_ok"), ("n2", "c0", "init_ok")]
    assert all(m["outcome"] == "delivered" and m["landed"] >= m["sent"] for m in rows[:4])
    echo, reply, cut, dead = rows[4:]
    assert (echo["src"], echo["dest"], echo["outcome"]) == ("c1", "n1", "delivered")
    said = {"type": "echo", "echo": "one", "msg_id": echo["msg_id"]}
    assert echo["body"] == json.dumps(said, separators=(",", ":"))
    assert (reply["type"], reply["in_reply_to"], reply["outcome"]) == ("echo_ok", echo["msg_id"], "delivered")
    assert echo["sent"] <= echo["landed"] <= reply["sent"] <= reply["landed"]
    assert (cut["dest"], cut["outcome"], cut["landed"] is not None) == ("n2", "dropped", True)
    assert (dead["dest"], dead["outcome"]) == ("n2", "lost")
    assert '"echo":"dead"' in dead["body"]


def test_a_long_body_is_cut_and_times_are_relative():
    journal = MessageJournal(limit=2)
    msg = Message("c1", "n1", {"type": "write", "value": "x" * 1000, "msg_id": 1})
    journal.sent([(msg, b"")], now=10.0)
    journal.landed([(msg, b"")], [], [], now=10.5)
    (row,) = journal.to_json(t0=9.0)["messages"]
    assert (row["sent"], row["landed"], row["outcome"]) == (1.0, 1.5, "delivered")
    assert len(row["body"]) == 301 and row["body"].endswith("…")

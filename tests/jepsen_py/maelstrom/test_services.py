"""Maelstrom's services (lin-kv, seq-kv, lww-kv, lin-tso): each one's consistency on its own, a node
talking to them through the router, and g-counter nodes built on them, end to end: one on seq-kv
with a cas loop passes, one keeping the counter in lww-kv with blind writes loses increments."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.commands import run as run_command
from jepsen_py.maelstrom.latency import Latency
from jepsen_py.maelstrom.router import Router
from jepsen_py.maelstrom.services import SERVICES, LinKV, LinTSO, LwwKV, SeqKV
from tests.jepsen_py.maelstrom.conftest import write_node


def test_the_registry_names_maelstroms_four_services() -> None:
    assert set(SERVICES) == {"lin-kv", "seq-kv", "lww-kv", "lin-tso"}


def test_lin_kv_reads_writes_cas_and_its_errors() -> None:
    kv = LinKV()
    assert kv.handle("n1", {"type": "read", "key": "x"})["code"] == 20
    assert kv.handle("n1", {"type": "cas", "key": "x", "from": 1, "to": 2})["code"] == 20
    assert kv.handle("n1", {"type": "cas", "key": "x", "from": 9, "to": 2, "create_if_not_exists": True}) \
        == {"type": "cas_ok"}
    assert kv.handle("n2", {"type": "read", "key": "x"}) == {"type": "read_ok", "value": 2}
    assert kv.handle("n2", {"type": "write", "key": "x", "value": 1}) == {"type": "write_ok"}
    failed = kv.handle("n1", {"type": "cas", "key": "x", "from": 2, "to": 3})
    assert failed["type"] == "error" and failed["code"] == 22
    assert kv.handle("n1", {"type": "cas", "key": "x", "from": 1.0, "to": 3})["code"] == 22  # 1.0 is not 1
    assert kv.handle("n1", {"type": "cas", "key": "x", "from": 1, "to": [3]}) == {"type": "cas_ok"}
    assert kv.handle("n1", {"type": "read", "key": "x"})["value"] == [3]
    assert kv.handle("n1", {"type": "write", "key": ["a", 1], "value": None}) == {"type": "write_ok"}
    assert kv.handle("n1", {"type": "read", "key": ["a", 1]}) == {"type": "read_ok", "value": None}
    assert kv.handle("n1", {"type": "append", "key": "x"})["code"] == 10
    assert kv.handle("n1", {"type": "write", "key": "x"})["code"] == 12
    assert kv.handle("n1", {"type": "read"})["code"] == 12
    assert kv.handle("n1", {"type": "read", "key": {"a": 1}})["code"] == 12
    assert kv.handle("n1", {"type": "read_ok", "in_reply_to": 3}) is None  # a reply: not answered
    assert kv.handle("n1", {"type": "error", "code": 10}) is None


def test_seq_kv_never_goes_back_for_a_caller_yet_serves_others_stale_reads() -> None:
    kv = SeqKV(random.Random(5))
    seen: dict[str, list[int]] = {"n1": [], "n2": []}
    stale = 0
    for i in range(1, 301):
        assert kv.handle("n3", {"type": "write", "key": "x", "value": i}) == {"type": "write_ok"}
        for reader in seen:
            value = kv.handle(reader, {"type": "read", "key": "x"}).get("value", 0)
            assert value <= i
            stale += value < i
            seen[reader].append(value)
        # the writer always sees its own write
        assert kv.handle("n3", {"type": "read", "key": "x"}) == {"type": "read_ok", "value": i}
    for values in seen.values():
        assert values == sorted(values)  # each caller's view only moves forward
    assert stale > 100  # ... and stale reads do happen, often
    # a caller that writes is at the newest state from then on: its next read sees the newest value
    assert kv.handle("n1", {"type": "write", "key": "y", "value": 0}) == {"type": "write_ok"}
    assert kv.handle("n1", {"type": "read", "key": "x"})["value"] == 300


def test_seq_kv_cas_applies_to_the_newest_state_only() -> None:
    kv = SeqKV(random.Random(1))
    for i in range(20):
        kv.handle("n1", {"type": "write", "key": "x", "value": i})
    for _ in range(50):  # n2 may read any of the 20 values, but only cas from 19 succeeds
        old = kv.handle("n2", {"type": "read", "key": "x"}).get("value")
        reply = kv.handle("n2", {"type": "cas", "key": "x", "from": old, "to": 100})
        assert (reply["type"] == "cas_ok") == (old == 19), (old, reply)
        if reply["type"] == "cas_ok":
            break
    else:
        pytest.fail("n2 never caught up with the newest state")
    assert kv.handle("n1", {"type": "cas", "key": "x", "from": 19, "to": 5})["code"] == 22


def test_lww_kv_loses_a_blind_write_and_converges_to_the_highest_stamp() -> None:
    kv = LwwKV(random.Random(3))
    for i in range(10):
        kv.handle(f"n{i % 3}", {"type": "write", "key": "x", "value": i})
    winner = max(r["x"] for r in kv.replicas if "x" in r)[1]
    reads = [kv.handle("n1", {"type": "read", "key": "x"}) for _ in range(200)]
    assert len({json.dumps(r) for r in reads[:10]}) > 1  # replicas disagree at first
    assert all(r == {"type": "read_ok", "value": winner} for r in reads[-50:])  # then agree
    assert all(r["x"][1] == winner for r in kv.replicas)
    # the same store loses updates: a read-then-write counter on it ends below its sum
    kv = LwwKV(random.Random(4))
    for _ in range(100):
        value = kv.handle("n1", {"type": "read", "key": "c"}).get("value", 0)
        kv.handle("n1", {"type": "write", "key": "c", "value": value + 1})
    for _ in range(200):
        kv.handle("n1", {"type": "read", "key": "nothing"})
    assert kv.handle("n1", {"type": "read", "key": "c"})["value"] < 100


def test_lin_tso_gives_strictly_increasing_timestamps() -> None:
    tso = LinTSO()
    stamps = [tso.handle(f"n{i % 3}", {"type": "ts"})["ts"] for i in range(50)]
    assert stamps == list(range(50))
    assert tso.handle("n1", {"type": "read", "key": "x"})["code"] == 10


#: A node relaying a request: echo {"dest", "body"} sends body to dest, answers with the reply.
PROXY_NODE = """
import json, sys

me, waiting, ids = None, {}, 0
for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    if body.get("in_reply_to") in waiting:
        client, msg_id = waiting.pop(body["in_reply_to"])
        out = {"type": "echo_ok", "echo": msg, "in_reply_to": msg_id}
        print(json.dumps({"src": me, "dest": client, "body": out}), flush=True)
    elif body["type"] == "init":
        me = body["node_id"]
        print(json.dumps({"src": me, "dest": msg["src"],
                          "body": {"type": "init_ok", "in_reply_to": body["msg_id"]}}), flush=True)
    elif body["type"] == "echo":
        ids += 1
        waiting[ids] = (msg["src"], body["msg_id"])
        req = {**body["echo"]["body"], "msg_id": ids}
        print(json.dumps({"src": me, "dest": body["echo"]["dest"], "body": req}), flush=True)
"""


@pytest.mark.parametrize("latency_ms", [0, 20])
def test_a_node_talks_to_the_services_through_the_router(tmp_path: Path, latency_ms: int) -> None:
    argv = write_node(tmp_path, "proxy", PROXY_NODE)
    with Router(argv, 2, tmp_path, latency=Latency(latency_ms)) as r:
        r.start()

        def ask(node: str, dest: str, body: dict) -> dict:
            res = r.call("c1", node, {"type": "echo", "echo": {"dest": dest, "body": body}}, 3.0)
            assert res.outcome == "ok", res
            return res.body["echo"]

        began = time.monotonic()
        reply = ask("n1", "lin-kv", {"type": "write", "key": "k", "value": 7})
        assert time.monotonic() - began >= 4 * latency_ms / 1000  # the service's reply is delayed too
        assert reply["src"] == "lin-kv" and reply["dest"] == "n1"
        assert reply["body"] == {"type": "write_ok", "in_reply_to": 1}
        assert ask("n2", "lin-kv", {"type": "read", "key": "k"})["body"]["value"] == 7
        assert ask("n2", "lin-tso", {"type": "ts"})["body"]["ts"] == 0
        assert ask("n1", "seq-kv", {"type": "read", "key": "k"})["body"]["code"] == 20
        assert ask("n1", "lww-kv", {"type": "frobnicate"})["body"]["code"] == 10
        stats = r.stats()
    assert r.problems == []
    assert stats.servers.sent == stats.servers.delivered == 10  # 5 requests and 5 replies, node <-> service
    assert stats.clients.sent == 4 + 10  # the inits and the echoes, requests and replies


#: A g-counter node keeping its counter in a service (Maelstrom's "Gossip Glomers" challenge 4).
#: MODE cas: read, then cas from what it read (create_if_not_exists), again until the cas holds; a
#: read first writes a fresh value of its own, which moves it to seq-kv's newest state.
#: MODE blind: read, then write what it read plus the delta: concurrent adds lose increments.
COUNTER_NODE = """
import json, sys

KV, MODE = "SERVICE", "THE_MODE"
me, callbacks, ids = None, {}, [0]


def send(dest, body):
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)


def rpc(body, then):
    ids[0] += 1
    callbacks[ids[0]] = then
    send(KV, {**body, "msg_id": ids[0]})


def reply(req, body):
    send(req["src"], {**body, "in_reply_to": req["body"]["msg_id"]})


def add(req, delta):
    def got(r):
        cur = r.get("value", 0)
        if MODE == "blind":
            rpc({"type": "write", "key": "counter", "value": cur + delta},
                lambda r: reply(req, {"type": "add_ok"}))
        else:
            rpc({"type": "cas", "key": "counter", "from": cur, "to": cur + delta,
                 "create_if_not_exists": True}, done)

    def done(r):
        if r["type"] == "cas_ok":
            reply(req, {"type": "add_ok"})
        else:
            add(req, delta)

    rpc({"type": "read", "key": "counter"}, got)


def read(req):
    def answer(r):
        reply(req, {"type": "read_ok", "value": r.get("value", 0)})

    if MODE == "blind":
        rpc({"type": "read", "key": "counter"}, answer)
    else:
        rpc({"type": "write", "key": "sync-" + me, "value": ids[0]},
            lambda r: rpc({"type": "read", "key": "counter"}, answer))


for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    if body.get("in_reply_to") in callbacks:
        callbacks.pop(body["in_reply_to"])(body)
    elif body["type"] == "init":
        me = body["node_id"]
        reply(msg, {"type": "init_ok"})
    elif body["type"] == "add":
        add(msg, body["delta"])
    elif body["type"] == "read":
        read(msg)
"""


@pytest.fixture
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())


def counter_run(tmp_path: Path, service: str, mode: str, *flags: str) -> tuple[int, dict]:
    source = COUNTER_NODE.replace("SERVICE", service).replace("THE_MODE", mode)
    python, path = write_node(tmp_path, f"counter_{mode}", source)
    code = cli.main(["maelstrom", "--bin", python, "--bin-arg", path, "--workload", "g-counter",
                     "--node-count", "3", "--time-limit", "3", "--results-dir", str(tmp_path / "results"),
                     "--no-progress", "--recovery-wait", "2", *flags])
    return code, json.loads((tmp_path / "results" / "latest" / "results.json").read_text())


@pytest.mark.usefixtures("no_pictures")
def test_a_g_counter_on_seq_kv_with_a_cas_loop_passes(tmp_path: Path) -> None:
    code, results = counter_run(tmp_path, "seq-kv", "cas", "--rate", "20", "--seed", "11")
    assert code == 0, results["checkers"]["g-counter"]
    net = results["stats"]["net"]
    assert results["stats"]["ok"] > 20 and net["servers"]["sent"] > 2 * results["stats"]["ok"]
    assert net.get("problems", []) == []


@pytest.mark.usefixtures("no_pictures")
def test_a_g_counter_with_blind_writes_to_lww_kv_loses_increments(tmp_path: Path) -> None:
    code, results = counter_run(tmp_path, "lww-kv", "blind", "--rate", "40", "--concurrency", "2n",
                                "--seed", "11")
    counter = results["checkers"]["g-counter"]
    assert code == 1 and counter["valid"] is False, counter
    assert "wrong-final-read" in counter["failing_kinds"], counter

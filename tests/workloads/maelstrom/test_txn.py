"""txn-list-append and txn-rw-register: the codec's round trip and its malformed replies, Maelstrom's
defaults, and real node programs through `jepsen-py maelstrom`: a node that runs every transaction
in one place passes both; nodes that each apply transactions to a copy of their own and replicate
the writes afterwards fail with the anomalies Elle names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jepsen_py.workloads.maelstrom.txn import (
    ListAppendCodec,
    RwRegisterCodec,
    txn_list_append_workload,
    txn_rw_register_workload,
)

from jepsen_py import cli
from jepsen_py.commands import run as run_command
from jepsen_py.history import Op
from tests.jepsen_py.fakes import make_spec
from tests.jepsen_py.maelstrom.conftest import no_leaks, write_node  # noqa: F401 (no_leaks: autouse)
from tests.workloads.maelstrom.hist import drive

APPEND = Op(0, 0, "invoke", 0, "txn", None, [["r", 1, None], ["append", 1, 6], ["append", 2, 9]])
RW = Op(0, 0, "invoke", 0, "txn", None, [["r", 1, None], ["w", 1, 6], ["w", 2, 9]])


def test_codec_round_trip() -> None:
    c = ListAppendCodec()
    assert c.request(APPEND) == {"type": "txn", "txn": [["r", 1, None], ["append", 1, 6], ["append", 2, 9]]}
    done = c.outcome(APPEND, {"type": "txn_ok", "txn": [["r", 1, [8]], ["append", 1, 6], ["append", 2, 9]]})
    assert (done.type, done.value) == ("ok", [["r", 1, [8]], ["append", 1, 6], ["append", 2, 9]])
    assert c.outcome(APPEND, {"type": "txn_ok", "txn": [["r", 1, None], *APPEND.value[1:]]}).type == "ok"
    r = RwRegisterCodec()
    done = r.outcome(RW, {"type": "txn_ok", "txn": [["r", 1, 8], ["w", 1, 6], ["w", 2, 9]]})
    assert (done.type, done.value[0]) == ("ok", ["r", 1, 8])
    comp = done.completion(RW)
    assert (comp.type, comp.f, comp.value[0]) == ("ok", "txn", ["r", 1, 8])


@pytest.mark.parametrize("txn", [
    None, "x", [["r", 1, [8]]],  # not the request's length
    [["r", 1, [8]], ["append", 1, 7], ["append", 2, 9]],  # a write's value changed
    [["r", 2, [8]], ["append", 1, 6], ["append", 2, 9]],  # another key
    [["append", 1, 6], ["r", 1, [8]], ["append", 2, 9]],  # reordered
    [["r", 1, 8], ["append", 1, 6], ["append", 2, 9]],  # a list-append read that is not a list
    [["r", 1], ["append", 1, 6], ["append", 2, 9]],
])
def test_a_txn_ok_that_is_not_the_request_completed_is_info(txn: object) -> None:
    body = {"type": "txn_ok"} if txn is None else {"type": "txn_ok", "txn": txn}
    out = ListAppendCodec().outcome(APPEND, body)
    assert out.type == "info" and out.error["name"] == "malformed-reply", out


def test_codec_errors() -> None:
    c = RwRegisterCodec()
    conflict = c.outcome(RW, {"type": "error", "code": 30, "text": "txn-conflict"})
    assert conflict.type == "fail" and conflict.error["name"] == "txn-conflict"
    assert c.outcome(RW, {"type": "error", "code": 11}).type == "fail"
    assert c.outcome(RW, {"type": "error", "code": 13}).type == "info"
    assert c.outcome(RW, {"type": "error", "code": 1000}).type == "info"
    assert c.outcome(RW, {"type": "read_ok"}).type == "info"


def test_maelstrom_names_and_defaults(tmp_path: Path) -> None:
    la = txn_list_append_workload(make_spec(tmp_path, options={"key_count": 2, "max_txn_length": 2}))
    assert la.name == "txn-list-append" and la.meta["maelstrom"] == "txn-list-append"
    assert (la.meta["key_count"], la.meta["max_txn_length"], la.meta["max_writes_per_key"]) == (2, 2, 16)
    assert la.meta["consistency_models"] == ["strict-serializable"]
    ops = [o.template for o in drive(la.generator, 100)]
    assert {t.f for t in ops} == {"txn"}
    assert all(1 <= len(t.value) <= 2 and {m[1] for m in t.value} <= set(range(100)) for t in ops)
    assert {m[0] for t in ops for m in t.value} == {"r", "append"}
    rw = txn_rw_register_workload(make_spec(tmp_path, options={"consistency_models": "serializable",
                                                                "max_writes_per_key": 3}))
    assert rw.name == "txn-rw-register" and rw.meta["max_writes_per_key"] == 3
    assert rw.meta["consistency_models"] == ["serializable"]
    elle = next(c for c in rw.checkers if getattr(c, "name", "") == "elle")
    assert elle.workload == "rw-register" and elle.inference.wfr_keys is True  # Maelstrom's


#: What every node here shares: Maelstrom's init, replies, one store and a transaction run on it.
NODE = """
import json, sys

me, others, store, next_id, pending = None, [], {}, 0, {}

def send(dest, body):
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)

def apply(txn):
    out = []
    for f, k, v in txn:
        if f == "r":
            v = list(store[k]) if isinstance(store.get(k), list) else store.get(k)
        elif f == "append":
            store.setdefault(k, []).append(v)
        else:
            store[k] = v
        out.append([f, k, v])
    return out

for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    if body["type"] == "init":
        me = body["node_id"]
        others = [n for n in body["node_ids"] if n != me]
        send(msg["src"], {"type": "init_ok", "in_reply_to": body["msg_id"]})
    else:
        handle(msg["src"], body)
"""

#: Correct: n1 runs every transaction whole; any other node forwards it there and relays the answer.
FORWARDING = """
def handle(src, body):
    global next_id
    if body["type"] == "txn" and me == "n1":
        send(src, {"type": "txn_ok", "in_reply_to": body["msg_id"], "txn": apply(body["txn"])})
    elif body["type"] == "txn":
        next_id += 1
        pending[next_id] = (src, body["msg_id"])
        send("n1", {"type": "txn", "msg_id": next_id, "txn": body["txn"]})
    elif body["type"] == "txn_ok":
        client, msg_id = pending.pop(body["in_reply_to"])
        send(client, {"type": "txn_ok", "in_reply_to": msg_id, "txn": body["txn"]})
"""

#: Buggy: every node runs transactions on its own copy, answers, and only then sends the writes on.
LOCAL_THEN_REPLICATE = """
def handle(src, body):
    if body["type"] == "txn":
        done = apply(body["txn"])
        send(src, {"type": "txn_ok", "in_reply_to": body["msg_id"], "txn": done})
        writes = [m for m in done if m[0] != "r"]
        for n in others:
            if writes:
                send(n, {"type": "replicate", "writes": writes})
    elif body["type"] == "replicate":
        apply(body["writes"])
"""


@pytest.fixture(autouse=True)
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())


def maelstrom(tmp_path: Path, handler: str, name: str, *flags: str) -> int:
    python, path = write_node(tmp_path, name, handler + NODE)
    return cli.main(["maelstrom", "--bin", python, "--bin-arg", path, *flags, "--node-count", "2",
                     "--time-limit", "3", "--results-dir", str(tmp_path / "results"), "--no-progress",
                     "--seed", "7"])


def elle(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "results" / "latest" / "results.json").read_text())["checkers"]["elle"]


@pytest.mark.parametrize("workload", ["txn-list-append", "txn-rw-register"])
def test_a_node_running_every_txn_in_one_place_passes(tmp_path: Path, workload: str) -> None:
    assert maelstrom(tmp_path, FORWARDING, "forwarding", "--workload", workload, "--rate", "100",
                     "--concurrency", "2n") == 0
    r = elle(tmp_path)
    assert r["valid"] is True and r["txns"]["ok"] > 150, r
    assert r["consistency_models"] == ["strict-serializable"]


@pytest.mark.parametrize("workload, anomaly", [
    ("txn-list-append", "incompatible-order"),  # two nodes' lists of one key, appended in other orders
    ("txn-rw-register", "lost-update"),  # two txns read the same version and both wrote over it
])
def test_local_copies_replicated_afterwards_fail_with_an_anomaly(
        tmp_path: Path, workload: str, anomaly: str) -> None:
    """10 ms between nodes is the window in which both copies take writes to one key: about 600
    transactions in 3 s, 2 keys, find 40-50 incompatible orders and 5 lost updates by seed (with
    no latency, a run of rw-register sometimes found none)."""
    assert maelstrom(tmp_path, LOCAL_THEN_REPLICATE, "local", "--workload", workload, "--rate", "200",
                     "--concurrency", "4n", "--latency", "10", "--consistency-models", "serializable",
                     "--key-count", "2") == 1
    r = elle(tmp_path)
    assert r["valid"] is False and r["consistency_models"] == ["serializable"], r
    assert anomaly in r["failing_kinds"] and any(a["kind"] == anomaly for a in r["anomalies"]), r

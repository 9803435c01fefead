"""Maelstrom's kafka workload with real node processes: examples/maelstrom/kafka.py (one node keeps
every log, the others forward to it) passes; the same node with every node keeping its own logs
(offsets given out without coordination, so two messages share an offset) fails, named. Plus the
codec's messages and the generator's consumer discipline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from jepsen_py.workloads.kafka import KafkaState
from jepsen_py.workloads.maelstrom.kafka import KafkaCodec

from jepsen_py import cli
from jepsen_py.commands import run as run_command
from jepsen_py.generator import Context, Template
from jepsen_py.history import FAIL, INFO, OK, Op
from tests.jepsen_py.fakes import make_spec
from tests.jepsen_py.maelstrom.conftest import no_leaks  # noqa: F401  (no node outlives its test)

NODE = Path(__file__).resolve().parents[3] / "examples" / "maelstrom" / "kafka.py"


@pytest.fixture(autouse=True)
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())


def maelstrom(tmp_path: Path, node: Path, *flags: str) -> tuple[int, dict]:
    rc = cli.main(["maelstrom", "--bin", sys.executable, "--bin-arg", str(node), "--workload", "kafka",
                   "--node-count", "2", "--time-limit", "3", "--results-dir", str(tmp_path / "results"),
                   "--no-progress", "--seed", "5", "--recovery-wait", "1", *flags])
    return rc, json.loads((tmp_path / "results" / "latest" / "results.json").read_text())


def test_the_example_node_passes(tmp_path: Path) -> None:
    rc, r = maelstrom(tmp_path, NODE, "--rate", "20")
    k = r["checkers"]["kafka"]
    assert rc == 0 and k["valid"] is True, k
    assert k["sends_acknowledged"] > 5 and k["polls_ok"] > 5 and k["final_polls"] >= 2
    assert k["messages_polled"] == k["sends_acknowledged"]


def test_nodes_giving_out_offsets_on_their_own_fail_with_inconsistent_offsets(tmp_path: Path) -> None:
    source = NODE.read_text()
    assert source.count("        return self.node_ids[0]\n") == 1
    buggy = tmp_path / "kafka_local_offsets.py"
    buggy.write_text(source.replace("        return self.node_ids[0]\n", "        return self.me\n"))
    rc, r = maelstrom(tmp_path, buggy, "--rate", "30")
    k = r["checkers"]["kafka"]
    assert rc == 1 and k["valid"] is False
    assert "inconsistent-offsets" in k["failing_kinds"], k["anomaly_counts"]


def op(f: str, value, key=None, process: int = 0) -> Op:
    return Op(0, 0, "invoke", process, f, key, value)


def test_the_codec_speaks_maelstroms_kafka_messages() -> None:
    c = KafkaCodec()
    send = op("send", 7, key="3")
    assert c.request(send) == {"type": "send", "key": "3", "msg": 7}
    assert c.outcome(send, {"type": "send_ok", "offset": 4}).value == 4
    assert c.outcome(send, {"type": "send_ok", "offset": "4"}).type == INFO  # malformed: may have happened
    poll = op("poll", {"3": 0})
    assert c.request(poll) == {"type": "poll", "offsets": {"3": 0}}
    got = c.outcome(poll, {"type": "poll_ok", "msgs": {"3": [[0, 7]]}})
    assert (got.type, got.value) == (OK, {"3": [[0, 7]]})
    assert c.outcome(poll, {"type": "poll_ok", "msgs": {"3": [7]}}).type == INFO
    commit = op("commit_offsets", {"3": 0})
    assert c.request(commit) == {"type": "commit_offsets", "offsets": {"3": 0}}
    assert c.outcome(commit, {"type": "commit_offsets_ok"}).type == OK
    listed = op("list_committed_offsets", ["3"])
    assert c.request(listed) == {"type": "list_committed_offsets", "keys": ["3"]}
    assert c.outcome(listed, {"type": "list_committed_offsets_ok", "offsets": {"3": 0}}).value == {"3": 0}
    assert c.outcome(listed, {"type": "error", "code": 11, "text": "busy"}).type == FAIL


class _Rng:
    def __init__(self, r: float) -> None:
        self.r = r

    def random(self) -> float:
        return self.r

    def choice(self, xs):
        return xs[0]


def ctx(process: int, r: float) -> Context:
    return Context(0.0, 0, process, _Rng(r), (0,))  # type: ignore[arg-type]


def test_a_consumer_starts_at_the_committed_offset_polls_onward_and_commits_what_it_read() -> None:
    s = KafkaState(key_count=2, send_fraction=0.5)
    first = s.op(ctx(0, 0.9))
    assert isinstance(first, Template) and first.f == "list_committed_offsets" and first.value == ["0", "1"]
    s.update(op("list_committed_offsets", ["0", "1"]), Op(1, 0, OK, 0, "list_committed_offsets", None,
                                                          {"0": 4}))
    poll = s.op(ctx(0, 0.9))
    assert isinstance(poll, Template) and poll.f == "poll" and poll.value == {"0": 5, "1": 0}
    assert s.update(op("poll", poll.value), Op(2, 0, OK, 0, "poll", None, {"0": [[5, 1], [6, 2]]}))
    commit = s.op(ctx(0, 0.9))
    assert isinstance(commit, Template) and (commit.f, commit.value) == ("commit_offsets", {"0": 6})
    again = s.op(ctx(0, 0.9))
    assert isinstance(again, Template) and again.value == {"0": 7, "1": 0}
    send = s.op(ctx(0, 0.1))
    assert isinstance(send, Template) and (send.f, send.key, send.value) == ("send", "0", 1)


def test_the_generic_workload_is_the_same_for_plugin_dbs(tmp_path: Path) -> None:
    from jepsen_py.workloads import WORKLOADS

    w = WORKLOADS["kafka"](make_spec(tmp_path, workload="kafka", options={"key_count": 3}))
    assert w.name == "kafka" and w.fs == KafkaCodec.fs and w.meta["key_count"] == 3
    assert w.checkers[0].name == "kafka"

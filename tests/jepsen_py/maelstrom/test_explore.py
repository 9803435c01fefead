"""`jepsen-py explore --backend maelstrom`: the search over a node program's own world (Maelstrom's
workloads, the faults the router and the node processes take, the network's latency), in real
time. A broadcast node that gossips each message once and never again loses the messages a
partition drops: the search finds it, shrinks it to a schedule of a few fault ops, and `run
--schedule` on the same node fails again. Maelstrom's echo node, correct, explores clean."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.commands import explore as explore_command
from jepsen_py.commands import run as run_command
from jepsen_py.explore import corpus
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.plan import PlanRequest, plan
from jepsen_py.maelstrom_world.workloads import WORKLOADS
from jepsen_py.spec import DEFAULT_DB
from tests.jepsen_py.maelstrom.conftest import write_node

ROOT = Path(__file__).resolve().parents[3]

#: Broadcast with one gossip per message to every other node, never retried: a message sent across
#: a partition is lost for good, and the final reads miss it.
GOSSIP_ONCE = """
import json, sys

me, nodes, seen, n = None, [], set(), 0
def send(dest, body):
    print(json.dumps({"src": me, "dest": dest, "body": body}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    t = body["type"]
    if t == "init":
        me, nodes = body["node_id"], body["node_ids"]
        send(msg["src"], {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif t == "topology":
        send(msg["src"], {"type": "topology_ok", "in_reply_to": body["msg_id"]})
    elif t == "broadcast":
        m = body["message"]
        if m not in seen:
            seen.add(m)
            for peer in nodes:
                if peer != me:
                    n += 1
                    send(peer, {"type": "gossip", "message": m, "msg_id": n})
        send(msg["src"], {"type": "broadcast_ok", "in_reply_to": body["msg_id"]})
    elif t == "gossip":
        seen.add(body["message"])
    elif t == "read":
        send(msg["src"], {"type": "read_ok", "in_reply_to": body["msg_id"], "messages": sorted(seen)})
"""


@pytest.fixture(autouse=True)
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pictures and Parquet are the CLI's post-run steps, the same for every backend: not here."""
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())
    monkeypatch.setattr(explore_command, "CLI_POST_RUN", ())


def test_the_space_is_the_worlds_own() -> None:
    """Maelstrom's workloads, the faults the world carries out (no clock, no leader targets), the
    latency drawn unless --latency fixes it; the drawn options are not the trials' fixed ones."""
    req = PlanRequest(backend="maelstrom", db=DEFAULT_DB, results_dir="results",
                      backend_options={"maelstrom_bin": "node", "maelstrom_latency": 0.0,
                                       "maelstrom_latency_dist": "uniform"},
                      given_backend_options=("maelstrom_bin", "maelstrom_latency_dist"))
    p = plan(req)
    assert set(p.space.workloads) == set(WORKLOADS) and p.space.families == ("partition", "kill", "pause")
    assert "leader" not in p.space.shapes and "leader" not in p.space.targets
    drawn = dict(p.space.backend_option_values)
    assert drawn["maelstrom_latency_dist"] == ("uniform",) and len(drawn["maelstrom_latency"]) > 1
    assert p.backend_options == {"maelstrom_bin": "node"} and not p.simulated


ECHO = ["--bin", str(ROOT / "examples/maelstrom/echo.py")]


@pytest.mark.parametrize("flags, says", [
    ([*ECHO, "--nemesis", "clock"], "--nemesis: 'clock': --backend maelstrom carries out partition, kill"),
    ([*ECHO, "--workload", "register"], "--workload: --backend maelstrom serves"),
    ([*ECHO, "--read-mode", "lease"], "--read-mode: not for --backend maelstrom"),
    (["--workload", "echo"], "--bin: required with --backend maelstrom"),
])
def test_what_the_world_cannot_do_is_one_line_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str) -> None:
    code = cli.main(["explore", "--backend", "maelstrom", *flags, "--results-dir", str(tmp_path / "r"),
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254 and says in err, err
    assert not (tmp_path / "r").exists()


def test_a_node_that_never_retries_its_gossip_is_found_shrunk_and_replayed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    python, node = write_node(tmp_path, "gossip_once", GOSSIP_ONCE)
    flags = ["--backend", "maelstrom", "--bin", python, "--bin-arg", node]
    code = cli.main(["explore", *flags, "--workload", "broadcast", "--nemesis", "partition", "--node-count",
                     "3", "--time-limit", "2", "--budget", "25", "--shrink-budget", "8", "--reproduce", "1/1",
                     "--seed", "1", "--results-dir", str(tmp_path / "explore"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [summary] = [json.loads(p.read_text()) for p in (tmp_path / "explore").glob("explore/*/explore.json")]
    [finding] = summary["findings"]
    s = sched.load(finding["schedule_file"])
    assert s.recorded_on == "maelstrom" and s.workload == "broadcast"
    assert {e.f for e in s.nemesis_events} <= {"start-partition", "stop-partition"} and s.fault_count >= 1
    assert {"maelstrom_latency", "maelstrom_latency_dist"} <= set(s.options)  # the latency it ran with
    assert finding["reproduction"] == "1/1"
    code = cli.main(["run", *flags, "--schedule", finding["schedule_file"], "--results-dir",
                     str(tmp_path / "replay"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and f"schedule anomaly {s.anomaly}: reproduced" in out, out


def test_the_schedule_decides_the_latency_it_carries(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    s = sched.Schedule(workload="echo", nodes=["n1"], seed=1, time_limit=1.0, concurrency=1, events=[],
                       read_mode=None, options={"rate": 10.0, "maelstrom_latency": 5.0},
                       recorded_on="maelstrom")
    path = tmp_path / "s.json"
    sched.save(s, path)
    code = cli.main(["run", "--backend", "maelstrom", *ECHO, "--latency", "3", "--schedule", str(path),
                     "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 254 and "--latency: the schedule file decides this" in err, err


def test_a_correct_echo_node_explores_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["explore", "--backend", "maelstrom", *ECHO, "--workload", "echo", "--nemesis",
                     "partition,pause", "--node-count", "3", "--time-limit", "2", "--budget", "8", "--seed",
                     "1", "--results-dir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    [summary] = [json.loads(p.read_text()) for p in tmp_path.glob("explore/*/explore.json")]
    assert summary["schedules_tried"] >= 1 and summary["findings"] == [] and summary["errors"] == 0


def test_a_corpus_entry_keeps_the_latency_it_was_drawn_with() -> None:
    req = PlanRequest(backend="maelstrom", db=DEFAULT_DB, results_dir="results",
                      backend_options={"maelstrom_bin": "node"}, given_backend_options=("maelstrom_bin",))
    space = plan(req).space
    cfg = space.sample(random.Random(3))
    assert {k for k, _ in cfg.backend_options} == {"maelstrom_latency", "maelstrom_latency_dist"}
    again = corpus.config_from_json(json.loads(json.dumps(corpus.config_json(cfg))))
    assert again == cfg and corpus.in_space(again, space)
    assert not corpus.in_space(replace(cfg, backend_options=(("maelstrom_latency", 7.0),)), space)

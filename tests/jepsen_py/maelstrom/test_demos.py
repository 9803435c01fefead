"""`--backend maelstrom` against real node processes under faults: Maelstrom's own demo nodes,
unchanged, with the verdicts Maelstrom's guide gives them (doc/03-broadcast, doc/04-crdts), and
small nodes of ours (nodes/) with one bug each (most of them exposed only by a partition), beside
their correct variants."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py.commands import run as run_command
from tests.jepsen_py.maelstrom.conftest import demo_argv

NODES = Path(__file__).resolve().parent / "nodes"
#: Maelstrom's partitions (random halves), one every half second: two or three in a short run.
PARTITIONS = ("--nemesis", "partition", "--nemesis-interval", "0.5")


@pytest.fixture(autouse=True)
def no_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pictures and Parquet are the CLI's post-run steps, the same for every backend: not here."""
    monkeypatch.setattr(run_command, "CLI_POST_RUN", ())


def ours(name: str, *args: str) -> list[str]:
    return [sys.executable, str(NODES / name), *args]


def bin_flags(argv: list[str]) -> list[str]:
    return ["--bin", argv[0], *(f"--bin-arg={a}" for a in argv[1:])]


def maelstrom(tmp_path: Path, argv: list[str], workload: str, *flags: str, time_limit: str = "2",
              recovery_wait: str = "2") -> int:
    """`jepsen-py maelstrom`, Maelstrom's flags, a short run with a fixed seed (and a 2 s wait for
    recovery before final reads instead of Maelstrom's 10 s)."""
    return cli.main(["maelstrom", *bin_flags(argv), "--workload", workload, "--recovery-wait", recovery_wait,
                     *flags, "--time-limit",
                     time_limit, "--results-dir", str(tmp_path / "results"), "--no-progress", "--seed", "7"])


def results(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "results" / "latest" / "results.json").read_text())


def history(tmp_path: Path) -> list[dict]:
    text = (tmp_path / "results" / "latest" / "history.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def partitioned(tmp_path: Path) -> bool:
    return any(op["f"] == "start-partition" and op["type"] == "info" for op in history(tmp_path))


@pytest.mark.parametrize("lang, script, flags", [
    ("python", "broadcast.py", ("--topology", "tree2", *PARTITIONS)),  # gossips until acknowledged
    ("js", "gossip.js", PARTITIONS),  # retryRPC: resends until acknowledged
    ("ruby", "broadcast.rb", ()),  # sends once: fine while nothing is lost
])
def test_broadcast_demos_pass(tmp_path: Path, lang: str, script: str, flags: tuple[str, ...]) -> None:
    assert maelstrom(tmp_path, demo_argv(lang, script), "broadcast", "--node-count", "5", "--rate", "30",
                     *flags) == 0
    assert partitioned(tmp_path) == bool(flags and "partition" in flags)


def test_ruby_broadcast_demo_loses_messages_under_partitions(tmp_path: Path) -> None:
    """The guide's "Dealing with Failure": broadcast.rb never retries ("Eh, whatever"), so a message
    gossiped across a partition is lost."""
    assert maelstrom(tmp_path, demo_argv("ruby", "broadcast.rb"), "broadcast", "--node-count", "5",
                     "--rate", "30", *PARTITIONS) == 1
    assert "lost" in results(tmp_path)["checkers"]["broadcast"]["failing_kinds"]


@pytest.mark.parametrize("lang, script, workload", [
    ("ruby", "g_set.rb", "g-set"),
    ("js", "crdt_gset.js", "g-set"),
    ("ruby", "pn_counter.rb", "pn-counter"),
    ("js", "crdt_pn_counter.js", "pn-counter"),
])
def test_crdt_demos_pass_under_partitions(tmp_path: Path, lang: str, script: str, workload: str) -> None:
    """The guide (doc/04-crdts): g-set and pn-counter stay valid under partitions. These demos send
    their whole state every 5 s, so the final reads wait 5.5 s (Maelstrom's --recovery-wait is 10 s;
    a wait under 5 s can miss the last exchange)."""
    code = maelstrom(tmp_path, demo_argv(lang, script), workload, "--node-count", "3", "--rate", "20",
                     "--nemesis", "partition", "--nemesis-interval", "0.5", time_limit="1.5",
                     recovery_wait="5.5")
    assert code == 0
    assert partitioned(tmp_path)


@pytest.mark.parametrize("flag, code", [("--once", 1), ("--retry", 0)])
def test_our_broadcast_node_loses_messages_under_partitions_unless_it_retries(
        tmp_path: Path, flag: str, code: int) -> None:
    assert maelstrom(tmp_path, ours("broadcast_gossip.py", flag), "broadcast", "--node-count", "5",
                     "--rate", "30", *PARTITIONS) == code
    assert partitioned(tmp_path)
    checked = results(tmp_path)["checkers"]["broadcast"]
    assert ("lost" in checked["failing_kinds"]) == (code == 1)


@pytest.mark.parametrize("flag, code", [("--local-reads", 1), ("--forward", 0)])
def test_our_lin_kv_node_is_nonlinearizable_under_partitions_when_it_reads_locally(
        tmp_path: Path, flag: str, code: int) -> None:
    """Reads answered from a copy n1 updates asynchronously are stale once a partition drops an
    update; forwarding every op to n1 stays linearizable (ops n1 cannot be asked about are info)."""
    assert maelstrom(tmp_path, ours("kv_primary.py", flag), "lin-kv", "--node-count", "3", "--rate", "50",
                     "--concurrency", "2n", *PARTITIONS) == code
    assert partitioned(tmp_path)
    checked = results(tmp_path)["checkers"]["linearizable"]
    assert checked["failing_kinds"] == (["nonlinearizable"] if code else [])
    if code == 0:
        assert any(op["type"] == "info" and op["process"] != "nemesis" for op in history(tmp_path))


@pytest.mark.parametrize("flag, code", [("--periodic", 0), ("--once", 1)])
def test_our_g_set_node_does_not_converge_under_partitions_unless_it_gossips_its_set(
        tmp_path: Path, flag: str, code: int) -> None:
    """An element sent to the other nodes once, when added, is never seen by a node a partition cut
    off then; sending the whole set every 0.1 s converges once the partition heals."""
    assert maelstrom(tmp_path, ours("g_set.py", flag), "g-set", "--node-count", "3", "--rate", "20",
                     *PARTITIONS, recovery_wait="1") == code
    assert partitioned(tmp_path)
    checked = results(tmp_path)["checkers"]["g-set"]
    assert ("not-converged" in checked["failing_kinds"]) == (code == 1)  # set-full's "lost" too
    assert bool(checked["failing_kinds"]) == (code == 1)
    assert checked["final_reads"] == 3


@pytest.mark.parametrize("flag, code", [("--pn", 0), ("--net-max", 1)])
def test_our_pn_counter_node_reads_wrong_finals_when_it_merges_net_counts_by_max(
        tmp_path: Path, flag: str, code: int) -> None:
    """Per-node net counts merged by max (a g-counter's merge) lose the decrements, partition or not
    (a partition only delays the counts); per-node P and N counts (a PN-counter) converge on the sum
    once the partition heals."""
    assert maelstrom(tmp_path, ours("pn_counter.py", flag), "pn-counter", "--node-count", "3",
                     "--rate", "20", *PARTITIONS, recovery_wait="1") == code
    assert partitioned(tmp_path)
    checked = results(tmp_path)["checkers"]["pn-counter"]
    assert checked["failing_kinds"] == (["wrong-final-read"] if code else [])
    assert checked["final_reads"] == 3

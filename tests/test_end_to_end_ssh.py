"""End to end on the SSH backend (Jepsen's classic mode: hosts that exist already). The hosts are three
containers running sshd (tests/sshd.py), reached on published loopback ports with host keys checked;
`jepsen-py` reaches them only through the `--ssh-host`, `--ssh-key` and `--ssh-known-hosts` flags,
as it would a lab's machines: it installs our cluster's node code over SSH, partitions with iptables
on the hosts, checks, and leaves the hosts as it found them. Then `explore --backend ssh` searches
those hosts (its nodes are the hosts named) and `run --schedule` replays what it found on them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jepsen_py.explore import schedule as sched
from tests.sshd import SSHHosts, sshd_hosts

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NODES = ["n1", "n2", "n3"]
# no --node-count: the three hosts named are the nodes
RUN = ("--workload", "offsets", "--nemesis", "partition-leader", "--time-limit", "15",
       "--nemesis-interval", "5")


@pytest.fixture(scope="module")
def hosts(node_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    with sshd_hosts(node_image, tmp_path_factory.mktemp("hosts"), NODES) as made:
        yield made


def jepsen(hosts: SSHHosts, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`jepsen-py ARGV --backend ssh` and the hosts' flags, as a user types it."""
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv, "--backend", "ssh", "--no-progress",
                           *hosts.flags()], capture_output=True, text=True, timeout=timeout)


def run_dir_of(results: Path) -> tuple[Path, dict[str, Any]]:
    [latest] = list(results.glob("*/latest"))
    run_dir = latest.resolve()
    return run_dir, json.loads((run_dir / "results.json").read_text())


def assert_hosts_clean(hosts: SSHHosts) -> None:
    """No node process left running, no iptables rule and no daemon record of ours on any host."""
    for node, remote in hosts.backend.remotes.items():
        procs = remote.exec(["pgrep", "-af", "cluster.node"], check=False)
        assert procs.exit_code == 1, f"{node}: {procs.stdout}"
        rules = remote.exec(["iptables", "-S"]).stdout
        assert "JEPSEN-PY" not in rules and "jepsen-py" not in rules, f"{node}: {rules}"
        records = remote.exec(["ls", "-R", "/var/lib/jepsen-py"], check=False)
        assert records.exit_code != 0, f"{node}: daemon records left: {records.stdout}"


def test_run_over_ssh_is_valid_on_the_correct_build(hosts: SSHHosts, tmp_path: Path) -> None:
    proc = jepsen(hosts, "run", *RUN, "--results-dir", str(tmp_path))
    run_dir, results = run_dir_of(tmp_path)
    assert proc.returncode == 0 and results["valid"] is True, proc.stdout[-3000:] + proc.stderr[-3000:]
    spec = json.loads((run_dir / "test.json").read_text())
    assert spec["nodes"] == NODES and spec["backend"] == "ssh", "the hosts named are the nodes"
    hist = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    partitions = [op for op in hist if op["process"] == "nemesis" and op["f"] == "start-partition"
                  and op["type"] == "info" and isinstance(op["value"], dict)]
    assert partitions, "the nemesis never partitioned the hosts"
    checkers = results["checkers"]
    assert checkers["stats"]["ok"] > 50
    assert checkers["crash"]["logs_scanned"] >= 3  # every host's log came back over SSH
    assert sorted(p.name for p in (run_dir / "nodes").iterdir()) == NODES
    assert_hosts_clean(hosts)


def test_run_over_ssh_catches_a_seed_bug(hosts: SSHHosts, tmp_path: Path) -> None:
    # offsets kept in each node's own store, no Raft: a read on one node misses a commit made on
    # another from the first seconds on, whatever the faults do (leader-on-follower, which fails only
    # when a partition's round-robin leader is a Raft follower, was caught in one 15 s run of two)
    proc = jepsen(hosts, "run", *RUN, "--bug", "split-brain-metadata", "--results-dir", str(tmp_path))
    _, results = run_dir_of(tmp_path)
    assert proc.returncode == 1 and results["valid"] is False, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert results["checkers"]["staleness"]["stale_count"] > 0
    assert_hosts_clean(hosts)


def test_explore_over_ssh_finds_a_bug_and_run_schedule_replays_it_on_the_same_hosts(
        hosts: SSHHosts, tmp_path: Path) -> None:
    # offsets and topics in each node's own store: lost on the first trial, whatever it draws; one
    # replay for the rate, no shrinking (each is an ordinary run of tens of seconds here)
    proc = jepsen(hosts, "explore", "--bug", "split-brain-metadata", "--seed", "1", "--budget", "120",
                  "--time-limit", "10", "--shrink-budget", "0", "--reproduce", "1/1",
                  "--results-dir", str(tmp_path / "explore"), timeout=400)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    [summary_path] = list((tmp_path / "explore").glob("explore/*/explore.json"))
    summary = json.loads(summary_path.read_text())
    assert summary["backend"] == "ssh" and summary["space"]["node_counts"] == [3]
    [finding] = summary["findings"]
    found = sched.load(Path(finding["schedule_file"]))
    assert found.nodes == NODES and found.recorded_on == "ssh" and found.bugs == ["split-brain-metadata"]
    assert_hosts_clean(hosts)

    proc = jepsen(hosts, "run", "--schedule", finding["schedule_file"],
                  "--results-dir", str(tmp_path / "replay"))
    out = proc.stdout + proc.stderr
    assert "replaying on ssh as recorded on ssh" in out, out[-3000:]
    run_dir, results = run_dir_of(tmp_path / "replay")
    spec = json.loads((run_dir / "test.json").read_text())
    # the replay ran on the hosts named, not on hosts called n1, n2, n3 at port 22
    assert spec["options"]["ssh_host"] == list(hosts.hosts), spec["options"]
    # the same bug on the same hosts: the replay fails too (its kind may differ from the one found)
    assert proc.returncode == 1 and results["valid"] is False, out[-3000:]
    assert f"schedule anomaly {found.anomaly}:" in out
    assert_hosts_clean(hosts)

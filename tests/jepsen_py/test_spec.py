"""Options -> TestSpec: Jepsen's notations and one-line errors for every value a user can get wrong."""

from __future__ import annotations

import argparse
import re

import pytest

from jepsen_py import spec as specmod
from jepsen_py.backends import docker_reachable
from jepsen_py.errors import BadInput


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    specmod.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize(("text", "nodes", "expected"), [
    ("10", 5, 10), ("3n", 5, 15), ("1n", 3, 3), (" 2N ", 4, 8), (7, 5, 7),
])
def test_concurrency(text: str, nodes: int, expected: int) -> None:
    assert specmod.parse_concurrency(text, nodes) == expected


@pytest.mark.parametrize("text", ["", "n", "3x", "-1", "0", "0n", "2.5"])
def test_bad_concurrency(text: str) -> None:
    with pytest.raises(BadInput, match="--concurrency"):
        specmod.parse_concurrency(text, 5)


def test_nodes() -> None:
    assert specmod.parse_nodes(None, None) == ["n1", "n2", "n3", "n4", "n5"]
    assert specmod.parse_nodes(None, 3) == ["n1", "n2", "n3"]
    assert specmod.parse_nodes("a,b, c", None) == ["a", "b", "c"]
    with pytest.raises(BadInput, match="--node-count"):
        specmod.parse_nodes(None, 0)
    with pytest.raises(BadInput, match="not a usable node name"):
        specmod.parse_nodes("n1,$(rm -rf)", None)
    with pytest.raises(BadInput, match="names 2 nodes but --node-count says 3"):
        specmod.parse_nodes("a,b", 3)


def test_defaults_are_jepsen_like() -> None:
    s = specmod.from_args(parse())
    assert s.nodes == ["n1", "n2", "n3", "n4", "n5"]
    assert s.concurrency == 10 and s.time_limit == 60 and s.nemesis == []
    assert s.backend == ("docker" if docker_reachable() else "local")
    assert s.name == "offsets-none" and s.db == "jepsen_py.raftdb:RaftMetadataDB"
    assert 0 <= s.seed < 2**31


def test_lists_and_names() -> None:
    s = specmod.from_args(parse("--workload", "topics", "--nemesis", "partition-leader,kill",
                                "--nemesis", "clock", "--bug", "zombie-leader", "--bug", "a,b",
                                "--concurrency", "3n", "--node-count", "3", "--seed", "42"))
    assert s.nemesis == ["partition-leader", "kill", "clock"]
    assert s.bugs == ["zombie-leader", "a", "b"]
    assert s.concurrency == 9 and s.seed == 42
    assert s.name == "topics-partition-leader+kill+clock-zombie-leader-a-b"
    assert specmod.from_args(parse("--nemesis", "none")).nemesis == []


def test_fault_targets_and_schedule() -> None:
    s = specmod.from_args(parse("--nemesis", "partition-leader,kill", "--fault-targets", "all,majority",
                                "--nemesis-schedule", "cycle"))
    assert s.fault_targets == ["all", "majority"] and s.nemesis_schedule == "cycle"
    s = specmod.from_args(parse())
    assert s.fault_targets == [] and s.nemesis_schedule == "random"


@pytest.mark.parametrize(("argv", "message"), [
    (["--time-limit", "0"], "--time-limit: must be > 0"),
    (["--time-limit", "-5"], "--time-limit: must be > 0"),
    (["--time-limit", "nan"], "--time-limit"),
    (["--rate", "-1"], "--rate: must be >= 0"),
    (["--nemesis-interval", "0"], "--nemesis-interval"),
    (["--test-count", "0"], "--test-count"),
    (["--op-timeout", "0"], "--op-timeout"),
    (["--name", "../escape"], "--name"),
    (["--fault-targets", "leader,everyone"], "--fault-targets: unknown target 'everyone'"),
])
def test_bad_values_are_one_line(argv: list[str], message: str, capsys) -> None:
    """Refused by the parser (exit 254, the flag named) or by from_args (BadInput)."""
    try:
        specmod.from_args(parse_cli(*argv))
    except BadInput as e:
        assert re.search(message, str(e))
    except SystemExit as e:
        assert e.code == 254
        err = capsys.readouterr().err
        assert re.search(message.replace(": ", ": .*"), err) or message.split(":")[0] in err
    else:
        pytest.fail(f"{argv} accepted")


def parse_cli(*argv: str) -> argparse.Namespace:
    from jepsen_py.cli import _Parser

    p = _Parser()
    specmod.add_arguments(p)
    return p.parse_args(list(argv))


def test_json_round_trip_ignores_unknown_keys() -> None:
    s = specmod.from_args(parse("--seed", "1"), {"image_base": "debian"})
    d = specmod.to_json(s)
    d["from_a_newer_version"] = 1
    assert specmod.from_json(d) == s


def test_without_a_docker_engine_the_default_backend_is_local(tmp_path, monkeypatch) -> None:
    # An engine address where nothing listens: the SDK's own environment rules, no mock.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    assert not docker_reachable()
    assert specmod.from_args(parse()).backend == "local"
    assert specmod.from_args(parse("--backend", "docker")).backend == "docker"  # explicit wins



def test_the_spec_takes_the_read_modes_without_the_node_daemon():
    import subprocess
    import sys

    code = ("import sys, jepsen_py.spec\n"
            "print(sorted(m for m in sys.modules if m.startswith('jepsen_py.cluster')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "jepsen_py.cluster.readmodes" in out and "jepsen_py.cluster.node'" not in out

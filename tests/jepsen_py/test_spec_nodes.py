"""Jepsen's ways to name nodes: -n/--node (repeatable), --nodes-file, and --nodes, together."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from jepsen_py import cli
from jepsen_py import spec as specmod
from jepsen_py.errors import BadInput
from jepsen_py.runflags import collect_options


def parse(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["run", *argv])


def test_repeated_node_flags_name_the_nodes() -> None:
    s = specmod.from_args(parse("-n", "db1", "--node", "db2", "-n", "db3", "--seed", "1"))
    assert s.nodes == ["db1", "db2", "db3"]
    assert s.concurrency == 6  # 2n counts the named nodes


def test_nodes_file_with_comments_and_blank_lines(tmp_path: Path) -> None:
    f = tmp_path / "nodes"
    f.write_text("# the lab\nhost-a\n\n  host-b   # rack 2\nhost-c\n")
    assert specmod.from_args(parse("--nodes-file", str(f))).nodes == ["host-a", "host-b", "host-c"]
    # the sources add up, file first
    s = specmod.from_args(parse("--nodes-file", str(f), "--nodes", "x1,x2", "-n", "x3"))
    assert s.nodes == ["host-a", "host-b", "host-c", "x1", "x2", "x3"]


@pytest.mark.parametrize(("content", "message"), [
    ("a\nb;rm -rf /\n", r":2: 'b;rm -rf /' is not a usable node name"),
    ("# nothing\n\n", "names no nodes"),
    ("a\na\n", "named more than once"),
])
def test_bad_nodes_files_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "nodes"
    f.write_text(content)
    with pytest.raises(BadInput, match=message):
        specmod.from_args(parse("--nodes-file", str(f)))


def test_missing_nodes_file_and_clashing_counts(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"--nodes-file: .*no such file"):
        specmod.from_args(parse("--nodes-file", str(tmp_path / "absent")))
    with pytest.raises(BadInput, match="--node-count says 3"):
        specmod.from_args(parse("-n", "a", "-n", "b", "--node-count", "3"))


def test_on_ssh_the_hosts_named_are_the_nodes_unless_nodes_are_given() -> None:
    """Jepsen's classic mode: the hosts are the nodes. --ssh-host names them, so a run given no
    --nodes or --node-count runs on exactly those (it took n1..n5 whatever hosts were named)."""
    hosts = ["--ssh-host", "db1=127.0.0.1:2201", "--ssh-host", "db2=127.0.0.1:2202", "--ssh-host", "db3=h3"]
    args = parse("--backend", "ssh", *hosts)
    assert specmod.from_args(args, collect_options(args)).nodes == ["db1", "db2", "db3"]
    args = parse("--backend", "ssh", *hosts, "--node-count", "2")
    assert specmod.from_args(args, collect_options(args)).nodes == ["n1", "n2"]
    args = parse("--backend", "docker", *hosts)  # a backend that makes its nodes takes no hosts
    assert len(specmod.from_args(args, collect_options(args)).nodes) == 5

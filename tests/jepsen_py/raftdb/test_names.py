"""Our cluster's adapter lives on the controller's side; its older name and the node's constants hold."""

from __future__ import annotations

import argparse
import subprocess
import sys

from jepsen_py.cluster import bugs as cluster_bugs
from jepsen_py.cluster import node as cluster_node

from jepsen_py import spec as specmod
from jepsen_py.plugins import load_object
from jepsen_py.raftdb import RaftMetadataDB


def _spec(*argv: str):
    p = argparse.ArgumentParser()
    specmod.add_arguments(p)
    return specmod.from_args(p.parse_args(list(argv)))


def test_the_default_db_is_the_controller_side_adapter():
    assert specmod.DEFAULT_DB == "jepsen_py.raftdb:RaftMetadataDB"
    assert load_object(specmod.DEFAULT_DB) is RaftMetadataDB


def test_the_old_name_still_loads_and_is_recorded_under_the_new_one():
    assert load_object("cluster.db:RaftMetadataDB", option="--db") is RaftMetadataDB
    assert _spec("--db", "cluster.db:RaftMetadataDB").db == specmod.DEFAULT_DB


def test_read_modes_and_bug_names_are_the_nodes_own():
    assert specmod.READ_MODES is cluster_node.READ_MODES
    assert RaftMetadataDB.known_bugs() == cluster_bugs.NAMES


def test_an_unknown_bug_is_refused_before_anything_is_provisioned(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--bug", "zombie-leadr",
                        "--backend", "docker", "--results-dir", str(tmp_path), "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 254 and len(lines) == 1 and "zombie-leadr" in lines[0], r.stderr
    assert "zombie-leader" in lines[0]  # the known names are listed
    assert list(tmp_path.iterdir()) == []

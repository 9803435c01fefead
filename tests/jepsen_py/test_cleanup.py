"""`jepsen-py cleanup` after a controller was killed with SIGKILL mid-test: nothing labelled is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from jepsen_py.nemeses.net import CHAIN, labelled_rules

from jepsen_py.backends.common import LABEL, RUN_LABEL
from jepsen_py.commands.cleanup import host_iptables

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _labelled(client, run):
    flt = {"label": [LABEL, f"{RUN_LABEL}={run}"]}
    return client.containers.list(all=True, filters=flt), client.networks.list(filters=flt)


@pytest.mark.docker
def test_cleanup_after_kill_9_of_the_controller(node_image):
    from jepsen_py.backends.docker import docker_client

    client = docker_client()
    proc = subprocess.Popen([sys.executable, str(HERE / "cleanup_controller.py"), node_image],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = proc.stdout.readline()
        assert line, "the controller died before provisioning"
        info = json.loads(line)
        run = info["run"]
        containers, networks = _labelled(client, run)
        assert len(containers) == 3 and len(networks) == 1
        # The partition is really in force inside the containers.
        drops = [r for c in containers for r in labelled_rules(c.exec_run(["iptables", "-S"]).output.decode())
                 if r[-1] == "DROP"]
        assert len(drops) == sum(len(v) for v in info["grudge"].values()) > 0
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    # The crash left everything in place.
    containers, networks = _labelled(client, run)
    assert len(containers) == 3 and len(networks) == 1

    out = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "cleanup", "--run", run],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"removed network: {info['network']}" in out.stdout
    assert out.stdout.count("removed container:") == 3
    containers, networks = _labelled(client, run)
    assert containers == [] and networks == []


@pytest.mark.docker
def test_cleanup_leaves_unlabelled_containers_alone(node_image):
    from jepsen_py.backends.docker import docker_client

    client = docker_client()
    bystander = client.containers.run(node_image, ["sleep", "300"], detach=True, init=True,
                                      labels={"jepsen-py-test-bystander": "1"})
    try:
        out = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "cleanup", "--run", "no-such-run"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert out.returncode == 0
        bystander.reload()
        assert bystander.status == "running"
    finally:
        bystander.remove(force=True)


def test_host_iptables_cleanup_removes_only_labelled_rules():
    if os.geteuid() != 0 or subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True).returncode:
        from tests.conftest import require

        require("iptables as root", False)
    chain = "JEPSEN_PY_TEST"
    subprocess.run(["iptables", "-w", "5", "-N", chain], check=True)
    try:
        subprocess.run(["iptables", "-w", "5", "-A", chain, "-s", "192.0.2.1", "-m", "comment",
                        "--comment", LABEL, "-j", "DROP"], check=True)
        subprocess.run(["iptables", "-w", "5", "-A", chain, "-s", "192.0.2.2", "-j", "DROP"], check=True)
        # Our own chain, as the partition nemesis makes it (never jumped to from INPUT here).
        subprocess.run(["iptables", "-w", "5", "-N", CHAIN], check=True)
        subprocess.run(["iptables", "-w", "5", "-A", CHAIN, "-s", "192.0.2.3", "-m", "comment",
                        "--comment", LABEL, "-j", "DROP"], check=True)
        removed = host_iptables()
        assert any("192.0.2.1" in r for r in removed) and any("192.0.2.3" in r for r in removed)
        left = subprocess.run(["iptables", "-w", "5", "-S", chain], capture_output=True, text=True).stdout
        assert "192.0.2.2" in left and "192.0.2.1" not in left
        everything = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True).stdout
        assert CHAIN not in everything
    finally:
        subprocess.run(["iptables", "-w", "5", "-F", chain])
        subprocess.run(["iptables", "-w", "5", "-X", chain])

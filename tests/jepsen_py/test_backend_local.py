"""The Local backend: nodes as processes in network namespaces on this host, faults for real."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.kill import KillNemesis
from jepsen_py.nemeses.partition import PartitionNemesis
from jepsen_py.nemeses.pause import PauseNemesis

from jepsen_py.backends.local import LocalBackend, _namespaces, cleanup_local
from jepsen_py.commands.cleanup import host_iptables
from jepsen_py.history import Op
from jepsen_py.raftdb import RaftMetadataDB
from tests.conftest import require
from tests.nemeses.support import ProbeDB, make_spec, make_test, peer_can_reach, read_clock

ROOT = Path(__file__).resolve().parent.parent.parent
NODES = ["n1", "n2", "n3"]


def local_available() -> bool:
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "iptables", "start-stop-daemon")):
        return False
    probe = subprocess.run(["ip", "netns", "add", "jepsen-py-probe-ns"], capture_output=True)
    subprocess.run(["ip", "netns", "delete", "jepsen-py-probe-ns"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def local_env():
    require("root with network namespaces and iptables", local_available())


def labelled_links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "alias jepsen-py" in line]


@pytest.fixture(scope="module")
def probe_local(local_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("local")
    spec = make_spec(NODES, tmp, backend="local")
    test = make_test(spec, tmp)
    test.db = ProbeDB(spec)
    test.backend = LocalBackend(spec)
    try:
        test.remotes = test.backend.setup(test)
        for n in NODES:
            test.db.setup(test, n)
        yield test
    finally:
        test.backend.teardown(test)


def test_nodes_have_their_own_namespace_address_and_directory(probe_local):
    test = probe_local
    for n in NODES:
        r = test.remotes[n]
        addr = test.backend.peer_address(n)
        assert f"inet {addr}/24" in r.exec(["ip", "-4", "addr", "show", "eth0"]).stdout
        assert Path(r.workdir).is_dir() and n in r.workdir
    assert len({test.backend.peer_address(n) for n in NODES}) == 3
    st = test.db.status(test, "n2")
    assert st["node"] == "n2", "the controller reaches each node at its own address"


def test_partition_in_namespaces_cuts_peers_not_the_controller(probe_local):
    test = probe_local
    test.db.leader = "n2"
    nem = PartitionNemesis(["leader"])
    assert peer_can_reach(test, "n1", "n2")
    try:
        nem.invoke(test, Op(0, 0, "invoke", "nemesis", "start-partition", value="leader"))
        assert not peer_can_reach(test, "n1", "n2") and not peer_can_reach(test, "n2", "n3")
        assert peer_can_reach(test, "n1", "n3")
        assert test.db.status(test, "n2") is not None
        host_rules = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True).stdout
        assert "10.251." not in host_rules, "partition rules live in the namespaces, not on the host"
    finally:
        nem.heal(test)
    assert peer_can_reach(test, "n1", "n2")


def test_pause_kill_restart_and_clock(probe_local):
    test = probe_local
    test.db.leader = "n3"
    pause = PauseNemesis()
    pause.invoke(test, Op(0, 0, "invoke", "nemesis", "pause", value="leader"))
    assert test.db.status(test, "n3", timeout=1.0) is None  # a live probe is given 10 s
    pause.heal(test)
    before = test.db.status(test, "n3")
    assert before is not None

    kill = KillNemesis()
    kill.invoke(test, Op(1, 1, "invoke", "nemesis", "kill", value="leader"))
    assert test.db.status(test, "n3", timeout=1.0) is None
    kill.heal(test)
    after = test.db.status(test, "n3")
    assert after["boots"] == before["boots"] + 1 and after["pid"] != before["pid"]

    clock = ClockNemesis()
    try:
        clock.invoke(test, Op(2, 2, "invoke", "nemesis", "bump-clock", value={"n1": -20_000}))
        # against the controller's clock at the middle of the round trip, not before the bump's exec
        assert -21.5 < read_clock(test, "n1").skew < -18.5
    finally:
        clock.heal(test)
    assert abs(read_clock(test, "n1").skew) < 2


# before the cleanup test below: that one removes every namespace jepsen-py made, this module's
# probe cluster's too
def test_write_file_creates_parents_replaces_and_sets_the_mode(probe_local):
    r = probe_local.remotes["n1"]
    path = Path(r.workdir) / "etc" / "deep" / "conf.txt"
    r.write_file(str(path), "port 1\n")
    assert r.exec(["cat", str(path)]).stdout == "port 1\n"
    r.write_file(str(path), b"\x00bytes\n", mode=0o600)
    assert path.read_bytes() == b"\x00bytes\n"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in path.parent.iterdir()) == ["conf.txt"]  # no temporary left


def test_raft_cluster_on_local_backend(local_env, tmp_path):
    spec = make_spec(NODES, tmp_path, backend="local")
    test = make_test(spec, tmp_path)
    test.db = RaftMetadataDB(spec)
    test.backend = LocalBackend(spec)
    try:
        test.remotes = test.backend.setup(test)
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda n: test.db.setup(test, n), NODES))
        leaders = test.db.primaries(test)
        assert len(leaders) == 1
        assert test.db.status(test, leaders[0])["pid"] > 0
        files = test.db.log_files(test, leaders[0])
        assert all(f.startswith(test.remotes[leaders[0]].workdir) for f in files)
        test.remotes[leaders[0]].download(files[0], tmp_path / "node.log")
        assert "started:" in (tmp_path / "node.log").read_text()
    finally:
        test.backend.teardown(test)
    assert _namespaces(f"jepsen-py-{test.backend.run_id}-") == []


def test_cleanup_after_kill_9_of_a_local_controller(local_env, tmp_path):
    code = (
        "import json, sys, time\n"
        "from tests.nemeses.support import ProbeDB, make_spec, make_test\n"
        "from jepsen_py.backends.local import LocalBackend\n"
        "from jepsen_py.history import Op\n"
        "from jepsen_py.nemeses.partition import PartitionNemesis\n"
        "from pathlib import Path\n"
        "spec = make_spec(['n1', 'n2', 'n3'], Path(sys.argv[1]), backend='local')\n"
        "test = make_test(spec, Path(sys.argv[1]))\n"
        "test.db = ProbeDB(spec); test.backend = LocalBackend(spec)\n"
        "test.remotes = test.backend.setup(test)\n"
        "[test.db.setup(test, n) for n in spec.nodes]\n"
        "PartitionNemesis(['one']).invoke(test, Op(0, 0, 'invoke', 'nemesis', 'start-partition'))\n"
        "pids = [int(open(test.db.pidfile(test, n)).read()) for n in spec.nodes]\n"
        "print(json.dumps({'run': test.backend.run_id, 'pids': pids}), flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = proc.stdout.readline()
        assert line, "the controller died before provisioning"
        info = json.loads(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert len(_namespaces(f"jepsen-py-{info['run']}-")) == 3
    assert all(os.path.exists(f"/proc/{p}") for p in info["pids"]), "the crash left the nodes running"
    assert "jepsen-py" in subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout

    removed = cleanup_local()
    host_iptables()
    assert len(removed["namespaces"]) >= 3 and len(removed["processes"]) >= 3
    assert _namespaces("jepsen-py-") == []
    assert labelled_links() == []
    assert "jepsen-py" not in subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    for p in info["pids"]:
        stat = Path(f"/proc/{p}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


"""RaftMetadataDB on real containers: the cluster comes up with a leader, survives faults, recovers
from disk after SIGKILL, and teardown wipes it."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from jepsen_py.cluster.client import ClusterClient
from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.partition import PartitionNemesis

from jepsen_py.backends.docker import DockerBackend
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from jepsen_py.raftdb import RaftMetadataDB
from tests.nemeses.support import make_spec, make_test

NODES = ["n1", "n2", "n3"]


def test_bad_read_mode_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="--read-mode"):
        RaftMetadataDB(make_spec(NODES, tmp_path, read_mode="eventual"))


@pytest.fixture(scope="module")
def raft(node_image, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raft")
    spec = make_spec(NODES, tmp, options={"docker_image": node_image}, bugs=[])
    test = make_test(spec, tmp)
    test.db = RaftMetadataDB(spec)
    # the tests' status checks expect an answer: a live node is given 10 s (a loaded machine is
    # slow); a killed or wiped node refuses the connection at once whatever the timeout
    test.db.status_timeout = 10.0
    test.backend = DockerBackend(spec)
    try:
        test.remotes = test.backend.setup(test)
        with ThreadPoolExecutor(len(NODES)) as pool:
            list(pool.map(lambda n: test.db.setup(test, n), NODES))
        yield test
    finally:
        test.backend.teardown(test)


def wait_leader(test, timeout=30.0, exclude=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leaders = [n for n in test.db.primaries(test) if n not in exclude]
        if len(leaders) == 1:
            return leaders[0]
        time.sleep(0.1)
    raise AssertionError(f"no single leader (excluding {exclude}) within {timeout} s")


def client_for(test, node):
    host, port = test.backend.client_endpoint(node, RaftMetadataDB.CLIENT_PORT)
    return ClusterClient(host, port, timeout=5)


def commit(test, leader, offset):
    with client_for(test, leader) as c:
        return c.commit_offset("g", "t", 0, offset)


@pytest.mark.docker
def test_setup_elects_one_leader_and_status_names_it(raft):
    leader = wait_leader(raft)
    st = raft.db.status(raft, leader)
    assert st["role"] == "leader" and st["leader"] == leader and st["term"] >= 1
    followers = [raft.db.status(raft, n) for n in NODES if n != leader]
    assert all(f["leader"] == leader for f in followers)
    assert raft.db.log_files(raft, leader) == ["/opt/jepsen-py/node.log", "/opt/jepsen-py/node.out"]


@pytest.mark.docker
def test_killed_leader_restarts_from_disk_with_its_data(raft):
    leader = wait_leader(raft)
    commit(raft, leader, 41)
    term_before = raft.db.status(raft, leader)["term"]
    raft.db.kill(raft, leader)
    assert raft.db.status(raft, leader) is None
    new = wait_leader(raft, exclude=(leader,))
    assert new != leader
    raft.db.start(raft, leader)
    deadline = time.monotonic() + 30
    while True:
        st = raft.db.status(raft, leader)
        if st and st.get("leader") and st["term"] >= term_before:
            break
        assert time.monotonic() < deadline, f"{leader} did not rejoin: {st}"
        time.sleep(0.1)
    out = raft.remotes[leader].exec(["cat", "/opt/jepsen-py/node.log"]).stdout
    assert out.count(" started: ") == 2, "the restart must be a second start of the same node"
    with client_for(raft, wait_leader(raft)) as c:
        assert c.fetch_offset("g", "t", 0)["offset"] == 41


@pytest.mark.docker
def test_partitioned_leader_is_replaced_and_heal_reunites(raft):
    leader = wait_leader(raft)
    nem = PartitionNemesis(["leader"])
    done = nem.invoke(raft, Op(0, 0, "invoke", "nemesis", "start-partition", value="leader"))
    try:
        assert done.value["leader"] == leader
        majority = [n for n in NODES if n != leader]
        deadline = time.monotonic() + 30
        while True:
            sts = {n: raft.db.status(raft, n) for n in majority}
            leaders = {s["leader"] for s in sts.values() if s}
            if len(leaders) == 1 and None not in leaders and leader not in leaders:
                break
            assert time.monotonic() < deadline, f"majority never elected a new leader: {sts}"
            time.sleep(0.1)
        # CheckQuorum: the isolated old leader steps down; the controller still reaches it.
        deadline = time.monotonic() + 30
        while (raft.db.status(raft, leader) or {}).get("role") == "leader":
            assert time.monotonic() < deadline, "the cut-off leader never stepped down"
            time.sleep(0.1)
    finally:
        nem.heal(raft)
    new = wait_leader(raft)
    deadline = time.monotonic() + 30
    while (raft.db.status(raft, leader) or {}).get("leader") != new:
        assert time.monotonic() < deadline, "the old leader never learned the new one after heal"
        time.sleep(0.1)


@pytest.mark.docker
def test_clock_bump_reaches_the_node_process(raft):
    node = NODES[0]
    nem = ClockNemesis()
    def uptime() -> tuple[float, float]:
        """The node's time.time() - start time, and the controller's monotonic clock at the middle
        of the round trip (a slow answer is not clock movement)."""
        m0 = time.monotonic()
        up = raft.db.status(raft, node)["uptime_s"]
        return up, (m0 + time.monotonic()) / 2

    before, t0 = uptime()

    def skew() -> float:
        """How far the node's clock moved beyond the real time that passed."""
        up, t = uptime()
        return up - before - (t - t0)

    try:
        nem.invoke(raft, Op(0, 0, "invoke", "nemesis", "bump-clock", value={node: 90_000}))
        assert 88 < skew() < 92, "the node's time.time() jumps with the bump"
    finally:
        nem.heal(raft)
    assert abs(skew()) < 2, "heal puts the clock back"
    assert wait_leader(raft)


@pytest.mark.docker
def test_teardown_wipes_the_node(raft):
    node = NODES[-1]
    raft.db.teardown(raft, node)
    assert raft.remotes[node].exec(["test", "-e", "/opt/jepsen-py"], check=False).exit_code == 1
    assert raft.db.status(raft, node) is None

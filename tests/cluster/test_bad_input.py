"""Bad input never crashes a node nor gets a silently wrong answer: a clear error, or a refusal to start."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time

import pytest
from jepsen_py.cluster.client import ClusterClient, InvalidRequest
from jepsen_py.cluster.framing import MAX_CLIENT_FRAME, FrameDecoder, encode
from jepsen_py.cluster.realio import OSDisk
from jepsen_py.cluster.wal import WAL_NAME

from jepsen_py.raftdb.local import HOST, REPO_ROOT, LocalCluster

DISK = OSDisk()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(3, str(tmp_path_factory.mktemp("bad"))) as c:
        c.start_all()
        c.wait_for_leader(20)
        yield c


def raw_exchange(port: int, payloads: list[bytes], want: int, timeout: float = 30.0) -> list[dict]:
    """Sends raw bytes, returns the first `want` answers (fewer if the server closes)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        for p in payloads:
            s.sendall(p)
        dec = FrameDecoder(1 << 20)
        out: list[dict] = []
        while len(out) < want:
            data = s.recv(65536)
            if not data:
                break
            out.extend(dec.feed(data))
        return out


def frame_bytes(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def wait_logged(c: LocalCluster, nid: str, text: str, timeout: float = 30.0) -> None:
    """Waits until the node's log holds `text`: a node writes it when it gets to it, which on a
    loaded machine is not within a fixed pause; the timeout only bounds a hang."""
    deadline = time.monotonic() + timeout
    while text not in c.log_text(nid):
        assert time.monotonic() < deadline, f"{nid} never logged {text!r}"
        time.sleep(0.05)


def assert_alive(c: LocalCluster) -> None:
    for nid in c.nodes:
        assert c.alive(nid), f"{nid} died"
        st = c.status(nid, 10.0)  # alive and answering; LocalCluster's 1 s is short under load
        assert st is not None and st["id"] == nid


@pytest.mark.parametrize(
    "payload,code",
    [
        (frame_bytes(b"{not json"), "bad_request"),
        (frame_bytes(b"[1, 2, 3]"), "bad_request"),
        (frame_bytes(b"\xff\xfe\x00garbage"), "bad_request"),
        (frame_bytes(b"[" * 100_000 + b"]" * 100_000), "bad_request"),
        (frame_bytes(b'{"id": 1, "op": "status", "x": ' + b"9" * 5000 + b"}"), "bad_request"),
        (encode({"id": 1}), "unknown_op"),
        (encode({"id": 1, "op": "drop_all_topics"}), "unknown_op"),
        (encode({"id": 1, "op": 17}), "unknown_op"),
        (encode({"id": 1, "op": "create_topic", "name": "x"}), "bad_request"),
        (encode({"id": 1, "op": "create_topic", "name": "a b", "partitions": 1, "rf": 1}), "bad_request"),
        (encode({"id": 1, "op": "create_topic", "name": "t", "partitions": -3, "rf": 1}), "bad_request"),
        (encode({"id": 1, "op": "commit_offset", "group": "g", "topic": "t", "partition": "0",
                 "offset": 1}), "bad_request"),
        (encode({"id": 1, "op": "commit_offset", "group": "g", "topic": "t", "partition": 0,
                 "offset": 1.5}), "bad_request"),
        (encode({"id": 1, "op": "fetch_offset", "group": "g", "topic": None, "partition": 0}), "bad_request"),
        (encode({"id": 1, "op": "describe_topic", "name": ["x"]}), "bad_request"),
        (encode({"id": 1, "op": "list_topics", "timeout_ms": "soon"}), "bad_request"),
        (encode({"id": 1, "op": "list_topics", "local": "yes"}), "bad_request"),
    ],
)
def test_malformed_requests_get_a_clear_error(cluster, payload, code):
    nid = next(iter(cluster.nodes))
    port = cluster.nodes[nid].client_port
    # the bad request, then a good one on the same connection: the connection survives it
    answers = raw_exchange(port, [payload, encode({"id": 2, "op": "status"})], want=2)
    assert len(answers) == 2
    bad, good = answers
    assert bad["ok"] is False and bad["error"] == code and bad["message"]
    assert bad["node"] == nid and "term" in bad and "role" in bad
    assert good["id"] == 2 and good["ok"] is True


def test_oversized_frame_is_refused_and_the_connection_closed(cluster):
    port = cluster.nodes["n1"].client_port
    header = struct.pack(">I", MAX_CLIENT_FRAME + 1)
    answers = raw_exchange(port, [header + b"x" * 100], want=2)
    assert len(answers) == 1
    assert answers[0]["error"] == "bad_request" and "exceeds" in answers[0]["message"]
    assert_alive(cluster)
    wait_logged(cluster, "n1", "closing connection")


def test_client_reports_server_side_rejections(cluster):
    with ClusterClient(HOST, cluster.nodes["n2"].client_port) as cl:
        with pytest.raises(InvalidRequest) as e:
            cl.commit_offset("g", "t", -1, 1)
        assert e.value.definite and e.value.error == "bad_request" and e.value.node == "n2"
        with pytest.raises(InvalidRequest):
            cl.call("no_such_op")
        assert cl.status()["id"] == "n2"  # same client, still usable


def test_peer_port_speaking_garbage_is_logged_and_ignored(cluster):
    port = cluster.nodes["n3"].peer_port
    garbage = [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        frame_bytes(b"not json at all"),
        encode({"hello": {"node": "n1", "cluster_id": "some-other-cluster"}}),
        encode({"hello": {"node": "n9", "cluster_id": "x"}}),
    ]
    for g in garbage:
        with socket.create_connection((HOST, port), timeout=5) as s:
            s.sendall(g)
            s.settimeout(5)
            try:
                while s.recv(1024):
                    pass
            except OSError:
                pass
    # a well-formed hello followed by a malformed Raft message
    from jepsen_py.cluster.node import default_cluster_id

    cid = default_cluster_id({n: (HOST, cluster.nodes[n].peer_port) for n in cluster.nodes})
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(encode({"hello": {"node": "n1", "cluster_id": cid}}))
        s.sendall(encode({"m": [{"type": "MsgApp", "src": "n1", "dst": "n3", "term": -5}]}))
        s.sendall(encode({"m": [{"type": "MsgHup", "src": "n1", "dst": "n3", "term": 1}]}))
        time.sleep(0.3)
    wait_logged(cluster, "n3", "transport: closing connection")
    assert_alive(cluster)
    # and the cluster still commits
    leader = cluster.wait_for_leader(20)
    with cluster.client(leader) as cl:
        assert cl.commit_offset("g", "after-garbage", 0, 9)["offset"] == 9


def run_node(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cluster.node", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def node_args(data_dir: str, peers: str = "n1=127.0.0.1:1", nid: str = "n1") -> list[str]:
    return ["--id", nid, "--peers", peers, "--data-dir", data_dir, "--client-port", "2"]


@pytest.mark.parametrize(
    "args,expect",
    [
        (["--id", "n4", "--peers", "n1=127.0.0.1:1", "--data-dir", "D", "--client-port", "2"],
         "is not one of"),
        (["--id", "n1", "--peers", "n1=127.0.0.1", "--data-dir", "D", "--client-port", "2"],
         "id=host:port"),
        (["--id", "n1", "--peers", "n1=h:1,n1=h:2", "--data-dir", "D", "--client-port", "2"], "listed twice"),
        (["--id", "n1", "--peers", "n1=h:99999", "--data-dir", "D", "--client-port", "2"], "id=host:port"),
        ([*node_args("D"), "--election-tick", "1"], "--election-tick"),
    ],
)
def test_bad_flags_refuse_with_one_line(tmp_path, args, expect):
    args = [str(tmp_path / "d") if a == "D" else a for a in args]
    r = run_node(args)
    assert r.returncode == 2
    assert expect in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_data_dir_of_another_cluster_refuses_to_start(tmp_path):
    d = str(tmp_path / "n1")
    # the first run creates the data dir for cluster "alpha" and stops on its own (port in use is fine:
    # the WAL header is written before listening)
    r = run_node([*node_args(d), "--cluster-id", "alpha", "--client-port", "1"])
    assert os.path.exists(os.path.join(d, WAL_NAME)), r.stderr
    r = run_node([*node_args(d), "--cluster-id", "beta"])
    assert r.returncode == 2
    assert "belongs to cluster 'alpha'" in r.stderr and "refusing to start" in r.stderr
    assert "Traceback" not in r.stderr
    with open(os.path.join(d, "node.log")) as f:
        assert "refusing to start" in f.read()


def test_corrupt_wal_record_refuses_to_start(tmp_path):
    from jepsen_py.cluster.raft.messages import Entry, HardState
    from jepsen_py.cluster.wal import WAL

    d = str(tmp_path / "n1")
    wal, _ = WAL.open(DISK, d, "alpha", "n1")
    for i in range(1, 6):
        wal.save(HardState(term=1, vote="n1", commit=i - 1), [Entry(1, i, {"op": "noop"})])
    wal.close()
    path = os.path.join(d, WAL_NAME)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\x00\x13\x37")
    r = run_node([*node_args(d), "--cluster-id", "alpha"])
    assert r.returncode == 2
    assert "corrupt record at offset" in r.stderr and "Traceback" not in r.stderr


def test_second_process_on_the_same_data_dir_refuses(cluster):
    n = cluster.nodes["n1"]
    r = run_node(["--id", "n1", "--peers", cluster.peers_arg, "--data-dir", n.data_dir,
                  "--client-port", "1", "--log-file", os.path.join(n.data_dir, "second.log")])
    assert r.returncode == 2 and "in use by another node process" in r.stderr
    assert_alive(cluster)


def test_wal_records_are_json_with_crc(tmp_path):
    """The on-disk format is what the docs say: a reader can decode it with the standard library."""
    from jepsen_py.cluster.raft.messages import Entry, HardState
    from jepsen_py.cluster.wal import WAL, _record_at

    wal, _ = WAL.open(DISK, str(tmp_path), "c", "n1")
    wal.save(HardState(term=2, vote="n1"), [Entry(2, 1, {"op": "noop"})])
    wal.close()
    buf = (tmp_path / WAL_NAME).read_bytes()
    off, bodies = 0, []
    while off < len(buf):
        rtype, payload, off = _record_at(buf, off)
        bodies.append((rtype, json.loads(payload)))
    assert bodies[0] == (1, {"cluster_id": "c", "node_id": "n1"})
    assert bodies[1] == (3, [[2, 1, {"op": "noop"}]])
    assert bodies[2] == (2, {"term": 2, "vote": "n1", "commit": 0})


def test_an_unknown_bug_flag_is_refused_not_ignored(tmp_path):
    r = run_node([*node_args(str(tmp_path / "d")), "--bug", "no-such-bug"])
    assert r.returncode == 2
    assert "invalid choice: 'no-such-bug'" in r.stderr and "zombie-leader" in r.stderr

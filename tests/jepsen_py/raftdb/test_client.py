"""ClusterClient outcome classes against servers that misbehave on purpose (real sockets, loopback)."""

from __future__ import annotations

import socket
import threading

import pytest
from jepsen_py.cluster.client import ClusterClient, NotLeader, ProtocolError, Timeout, Unavailable
from jepsen_py.cluster.framing import FrameDecoder, encode

from jepsen_py.raftdb.local import HOST, free_ports


class FakeServer:
    """Accepts one connection and answers each request with `behave(request)` bytes (None: silence)."""

    def __init__(self, behave) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.behave = behave
        self.requests: list[dict] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn, _ = self.sock.accept()
        dec = FrameDecoder(1 << 20)
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                for req in dec.feed(data):
                    self.requests.append(req)
                    out = self.behave(req)
                    if out == b"close":
                        return
                    if out:
                        conn.sendall(out)

    def close(self) -> None:
        self.sock.close()


def test_no_answer_is_an_indeterminate_timeout():
    srv = FakeServer(lambda req: None)
    with ClusterClient(HOST, srv.port, timeout=0.3) as cl, pytest.raises(Timeout) as e:
        cl.commit_offset("g", "t", 0, 1)
    assert not e.value.definite
    assert srv.requests[0]["op"] == "commit_offset" and srv.requests[0]["timeout_ms"] == 270
    srv.close()


def test_connection_closed_after_sending_is_indeterminate():
    srv = FakeServer(lambda req: b"close")
    with ClusterClient(HOST, srv.port, timeout=2) as cl, pytest.raises(Timeout) as e:
        cl.commit_offset("g", "t", 0, 1)
    assert not e.value.definite
    srv.close()


def test_nobody_listening_is_a_definite_unavailable():
    (port,) = free_ports(1)
    with ClusterClient(HOST, port, timeout=1) as cl, pytest.raises(Unavailable) as e:
        cl.fetch_offset("g", "t", 0)
    assert e.value.definite


def test_not_leader_carries_the_hint_and_the_servers_view():
    def answer(req):
        return encode({"id": req["id"], "ok": False, "error": "not_leader", "message": "go away",
                       "leader_hint": "n3", "node": "n1", "role": "follower", "term": 7, "leader": "n3"})

    srv = FakeServer(answer)
    with ClusterClient(HOST, srv.port) as cl, pytest.raises(NotLeader) as e:
        cl.commit_offset("g", "t", 0, 1)
    assert e.value.leader_hint == "n3" and e.value.term == 7 and e.value.node == "n1" and e.value.definite
    srv.close()


def test_garbage_answers_are_protocol_errors_and_stale_answers_are_skipped():
    answers = iter([
        # an answer to an older request first (skipped), then the real one, malformed
        lambda req: encode({"id": req["id"] - 1, "ok": True, "result": {}})
        + encode({"id": req["id"], "ok": True, "result": "not an object"}),
    ])
    srv = FakeServer(lambda req: next(answers)(req))
    with ClusterClient(HOST, srv.port) as cl, pytest.raises(ProtocolError) as e:
        cl.status()
    assert not e.value.definite
    srv.close()


def test_answers_carry_node_role_term_leader():
    srv = FakeServer(lambda req: encode({"id": req["id"], "ok": True, "result": {"offset": 5},
                                         "node": "n2", "role": "follower", "term": 4, "leader": "n1"}))
    with ClusterClient(HOST, srv.port) as cl:
        assert cl.fetch_offset("g", "t", 0) == {"offset": 5, "node": "n2", "role": "follower", "term": 4,
                                                "leader": "n1"}
    srv.close()

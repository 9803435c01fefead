"""The router as the network: the init handshake, client calls, node-to-node traffic, partitions,
latency, net stats, and one clear line for every way a node can break the protocol. Real processes:
Maelstrom's own demo nodes, unchanged, and tiny nodes written here."""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jepsen_py.errors import BadInput
from jepsen_py.maelstrom.router import Latency, MaelstromNet, NodeFailed, Router
from tests.jepsen_py.maelstrom.conftest import demo_argv, write_node

#: A node that misbehaves as argv[1] says, and otherwise answers init and echo.
ODD_NODE = """
import json, sys

mode = sys.argv[1]
me = None


def send(dest, body, src=None):
    print(json.dumps({"src": src or me, "dest": dest, "body": body}), flush=True)


if mode == "exit":
    print("no config file given", file=sys.stderr, flush=True)
    sys.exit(3)
for line in sys.stdin:
    msg = json.loads(line)
    body = msg["body"]
    if body["type"] == "init":
        me = body["node_id"]
        if mode == "garbage":
            print("Listening on port 8080", flush=True)
        elif mode == "silent":
            print("waiting for my peers", file=sys.stderr, flush=True)
        elif mode == "init-error":
            send(msg["src"], {"type": "error", "code": 10, "text": "init?", "in_reply_to": body["msg_id"]})
        else:
            send(msg["src"], {"type": "init_ok", "in_reply_to": body["msg_id"]})
    elif body["type"] == "echo":
        if mode == "errors":
            send(msg["src"], {"type": "error", "code": body["echo"], "text": "no luck",
                              "in_reply_to": body["msg_id"]})
        elif mode == "nobody":
            send(msg["src"], {"type": "echo_ok", "in_reply_to": 999999})
        elif mode == "stranger":
            send("n9", {"type": "gossip"})
            send(msg["src"], {"type": "gossip"})
            send(msg["src"], {"type": "echo_ok", "in_reply_to": body["msg_id"]}, src="n2")
        elif mode == "dies":
            print("out of memory", file=sys.stderr, flush=True)
            sys.exit(4)
"""


@pytest.fixture
def odd(tmp_path: Path) -> Callable[[str], list[str]]:
    path = write_node(tmp_path, "odd", ODD_NODE)
    return lambda mode: [*path, mode]


def echo(r: Router, node: str = "n1", value: object = "hi", timeout: float = 3.0, client: str = "c1"):
    return r.call(client, node, {"type": "echo", "echo": value}, timeout)


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def balanced(r: Router) -> None:
    """Every message counted once: delivered, dropped or lost (nothing is in flight after close)."""
    s = r.stats()
    for c in (s.all, s.clients, s.servers):
        assert c.sent == c.delivered + c.dropped + c.lost
    assert s.all.sent == s.clients.sent + s.servers.sent


@pytest.mark.parametrize("count", [1, 3])
def test_the_init_handshake_with_every_node(tmp_path, count):
    with Router(demo_argv("python", "echo.py"), count, tmp_path) as r:
        r.start(init_timeout=5)
        assert r.nodes == [f"n{i}" for i in range(1, count + 1)]
        s = r.stats()
        assert (s.clients.sent, s.clients.delivered, s.servers.sent) == (2 * count, 2 * count, 0)
        assert r.problems == [] and r.crashes() == []
    balanced(r)


@pytest.mark.parametrize(("lang", "script"), [("python", "echo.py"), ("js", "echo.js"), ("ruby", "echo.rb")])
def test_an_echo_round_trip_with_maelstroms_demo_nodes(tmp_path, lang, script):
    with Router(demo_argv(lang, script), 2, tmp_path) as r:
        r.start()
        result = echo(r, "n2", {"nested": [1, 2]})
        assert result.outcome == "ok" and result.error is None
        assert result.body is not None and result.body["type"] == "echo_ok"
        assert result.body["echo"] == {"nested": [1, 2]}
        assert r.stats().to_dict(ops=1)["clients"]["msgs_per_op"] == 6  # 2 inits, 2 init_oks, the call
        assert r.problems == []


def test_an_error_reply_is_a_result_with_its_code_and_whether_it_is_definite(tmp_path, odd):
    with Router(odd("errors"), 1, tmp_path) as r:
        r.start()
        unavailable, crash, custom = (echo(r, value=code) for code in (11, 13, 1000))
    assert (unavailable.outcome, unavailable.error.name, unavailable.definite) == (
        "error", "temporarily-unavailable", True)
    assert unavailable.text == "no luck" and unavailable.body["code"] == 11
    assert (crash.error.name, crash.definite) == ("crash", False)
    assert (custom.error.name, custom.definite) == ("custom", False)


def test_the_python_demo_refuses_an_unknown_type_with_a_definite_error(tmp_path):
    with Router(demo_argv("python", "echo.py"), 1, tmp_path) as r:
        r.start()
        result = r.call("c1", "n1", {"type": "frobnicate"}, 3)
    assert (result.outcome, result.error.code, result.error.name, result.definite) == (
        "error", 10, "not-supported", True)


def test_a_call_times_out_cleanly_and_its_late_reply_is_no_problem(tmp_path):
    with Router(demo_argv("python", "echo.py"), 1, tmp_path) as r:
        r.start()
        r.pause("n1")
        started = time.monotonic()
        result = echo(r, timeout=0.3)
        assert result.outcome == "timeout" and result.body is None and not result.definite
        assert result.error.name == "timeout" and time.monotonic() - started >= 0.3
        r.resume("n1")
        assert wait_for(lambda: r.late_replies == 1)
        assert echo(r).outcome == "ok"
        assert r.problems == []


def broadcast_cluster(r: Router) -> None:
    """Starts the demo broadcast nodes on a line n1 - n2 - n3."""
    r.start()
    topology = {"n1": ["n2"], "n2": ["n1", "n3"], "n3": ["n2"]}
    for n in r.nodes:
        assert r.call("c1", n, {"type": "topology", "topology": topology}, 3).outcome == "ok"


def has(r: Router, node: str, value: int) -> bool:
    result = r.call("c2", node, {"type": "read"}, 2)
    return result.outcome == "ok" and value in result.body["messages"]


def test_broadcast_flows_node_to_node_through_the_router(tmp_path):
    with Router(demo_argv("python", "broadcast.py"), 3, tmp_path) as r:
        broadcast_cluster(r)
        assert r.call("c1", "n1", {"type": "broadcast", "message": 42}, 3).outcome == "ok"
        assert wait_for(lambda: has(r, "n3", 42))  # two hops away: n1 -> n2 -> n3
        servers = r.stats().servers
        assert servers.sent >= 2 and servers.delivered >= 2 and servers.dropped == 0
        assert r.problems == []
    balanced(r)


def test_a_partition_drops_node_to_node_messages_and_heal_restores_them(tmp_path):
    with Router(demo_argv("python", "broadcast.py"), 3, tmp_path) as r:
        broadcast_cluster(r)
        net = MaelstromNet(r)
        net.ready(None)
        net.drop_all(None, {"n3": ["n2"], "n2": ["n3"]})
        assert r.grudge() == {"n3": frozenset({"n2"}), "n2": frozenset({"n3"})}
        assert r.call("c1", "n1", {"type": "broadcast", "message": 7}, 3).outcome == "ok"
        assert wait_for(lambda: has(r, "n2", 7))
        assert wait_for(lambda: r.stats().servers.dropped > 0)
        assert not has(r, "n3", 7)  # clients still reach n3: the grudge cuts n2 and n3 only
        net.heal(None)
        assert r.grudge() == {}
        assert wait_for(lambda: has(r, "n3", 7))  # the demo's gossip retries after its 1 s timeout
        net.drop_all(None, {"n1": ["n2"]})
        net.remove(None)
        assert r.grudge() == {}
    balanced(r)


def test_latency_delays_every_message(tmp_path):
    with Router(demo_argv("python", "echo.py"), 1, tmp_path, latency=Latency(100, "constant")) as r:
        started = time.monotonic()
        r.start()
        assert time.monotonic() - started >= 0.19  # init and init_ok, 100 ms each
        for _ in range(2):
            started = time.monotonic()
            assert echo(r).outcome == "ok"
            assert time.monotonic() - started >= 0.19  # c1 -> n1 -> c1
    balanced(r)


def test_latency_distributions_are_seeded_and_keep_their_mean():
    constant = Latency(50, "constant")
    assert constant.sample(random.Random(1)) == 0.05
    for dist in ("uniform", "exponential"):
        latency = Latency(50, dist)
        a = [latency.sample(random.Random(3)) for _ in range(3)]
        assert a == [latency.sample(random.Random(3)) for _ in range(3)]
        rng = random.Random(9)
        samples = [latency.sample(rng) for _ in range(4000)]
        assert min(samples) >= 0 and 0.045 < sum(samples) / len(samples) < 0.055
    assert max(Latency(50, "uniform").sample(random.Random(i)) for i in range(200)) <= 0.1
    assert Latency().sample(random.Random(1)) == 0
    with pytest.raises(ValueError, match="one of constant, uniform, exponential"):
        Latency(5, "normal")  # type: ignore[arg-type]


@pytest.mark.parametrize(("mode", "bound", "says"), [
    ("garbage", 2, 'node n1 did not answer init within 2 s; it printed a line that is not a Maelstrom '
                   'message: not JSON (Expecting value): "Listening on port 8080"'),
    ("silent", 2, "node n1 did not answer init within 2 s; it printed nothing on stdout; its last "
                  "stderr: waiting for my peers"),
    # these two fail as soon as the node speaks or dies: the bound only has to cover a slow start
    ("exit", 20, "node n1 exited with code 3 before answering init; its last stderr: no config file given"),
    ("init-error", 20, 'node n1 answered init with error 10 (not-supported): "init?"'),
])
def test_a_node_that_does_not_come_up_fails_in_one_line_naming_it(tmp_path, odd, mode, bound, says):
    r = Router(odd(mode), 1, tmp_path)
    with pytest.raises(NodeFailed) as e:
        r.start(init_timeout=bound)
    assert str(e.value) == says and isinstance(e.value, BadInput)
    assert all(not p.running for p in r.processes.values())  # start cleaned up after itself


def test_a_node_that_exits_at_once_or_cannot_start_fails_in_one_line(tmp_path):
    false = shutil.which("false")
    assert false is not None
    with pytest.raises(NodeFailed) as e:
        Router([false], 1, tmp_path).start(init_timeout=20)
    assert str(e.value) == "node n1 exited with code 1 before answering init; no stderr"  # not waited out
    with pytest.raises(NodeFailed) as e:
        Router([str(tmp_path / "no-such-node")], 1, tmp_path).start()
    assert str(e.value) == (f"node n1 could not be started ({tmp_path / 'no-such-node'}): "
                            "No such file or directory")


def test_a_bad_init_among_several_nodes_names_the_first_and_counts_the_rest(tmp_path, odd):
    with pytest.raises(NodeFailed, match=r"^node n1 exited with code 3 .* \(and 1 more node\(s\) failed\)$"):
        Router(odd("exit"), 2, tmp_path).start(init_timeout=20)


def test_replies_to_nobody_are_problems_naming_the_node(tmp_path, odd):
    with Router(odd("nobody"), 1, tmp_path) as r:
        r.start()
        assert echo(r, timeout=0.3).outcome == "timeout"
        assert wait_for(lambda: len(r.problems) == 1)
        assert str(r.problems[0]).startswith(
            "node n1 replied to msg_id 999999 of client c1, which it never sent: ")


def test_messages_to_no_one_or_with_a_false_src_are_problems_naming_the_node(tmp_path, odd):
    with Router(odd("stranger"), 1, tmp_path) as r:
        r.start()
        assert echo(r, timeout=0.3).outcome == "timeout"
        assert wait_for(lambda: len(r.problems) == 3)
        lines = sorted(str(p) for p in r.problems)  # their order depends on how stdout was read
    assert lines[0].startswith("node n1 sent a message to 'n9', which is no node and no client: ")
    assert lines[1].startswith("node n1 sent a message with src 'n2', not its own id: ")
    assert lines[2] == "node n1 sent client c1 a 'gossip' message that is not a reply (no in_reply_to)"


def test_a_node_that_dies_on_its_own_is_a_crash_with_its_code_and_stderr(tmp_path, odd):
    with Router(odd("dies"), 2, tmp_path) as r:
        r.start()
        assert echo(r, "n2", timeout=0.3).outcome == "timeout"
        assert wait_for(lambda: len(r.crashes()) == 1)
        assert r.crashes()[0].describe() == "node n2 exited with code 4; its last stderr: out of memory"
        assert echo(r, "n2", timeout=0.2).outcome == "timeout"
        assert r.stats().clients.lost >= 1  # sent to a process no longer there


def test_kill_and_restart_through_the_router(tmp_path):
    with Router(demo_argv("python", "echo.py"), 2, tmp_path) as r:
        r.start()
        r.kill("n2")
        assert echo(r, "n2", timeout=0.2).outcome == "timeout"
        assert r.stats().clients.lost == 1
        assert echo(r, "n1").outcome == "ok"
        r.restart("n2")  # a fresh process, initialised again
        assert echo(r, "n2").outcome == "ok"
        assert r.crashes() == [] and r.problems == []
    balanced(r)


def test_a_call_to_a_dead_node_stops_waiting_soon_and_stays_indefinite(tmp_path):
    """A killed node answers nobody: its callers give up within a fraction of a second, not at the
    end of their timeout (which held up the end of a run's main phase), and the op stays unknown."""
    with Router(demo_argv("python", "echo.py"), 2, tmp_path) as r:
        r.start()
        r.pause("n2")  # the request is delivered, then the node dies before it answers
        started = time.monotonic()
        threading.Timer(0.2, r.kill, args=("n2",)).start()
        result = echo(r, "n2", timeout=10.0)
        assert result.outcome == "timeout" and not result.definite and "n2 was not running" in result.text
        assert time.monotonic() - started < 2.0
        started = time.monotonic()
        assert echo(r, "n2", timeout=10.0).outcome == "timeout"  # sent to a dead node: lost
        assert time.monotonic() - started < 2.0
        assert echo(r, "n1").outcome == "ok"
    balanced(r)


def test_closing_gives_every_node_one_grace_at_once(tmp_path):
    argv = write_node(tmp_path, "stubborn", "import json, sys, time\n"
                      "body = json.loads(sys.stdin.readline())['body']\n"
                      "print(json.dumps({'src': body['node_id'], 'dest': 'c0', "
                      "'body': {'type': 'init_ok', 'in_reply_to': body['msg_id']}}), flush=True)\n"
                      "time.sleep(120)\n")  # deaf to EOF: only SIGKILL ends it
    r = Router(argv, 8, tmp_path)
    r.start(init_timeout=20)
    started = time.monotonic()
    r.close()
    assert time.monotonic() - started < 6  # one second of grace for all, not one each
    assert [e.code for e in r.exits] == [-9] * 8 and r.crashes() == []


def test_a_call_names_only_real_nodes_and_clients(tmp_path):
    with Router(demo_argv("python", "echo.py"), 1, tmp_path) as r:
        r.start()
        with pytest.raises(ValueError, match="node 'n5': not one of n1"):
            echo(r, "n5")
        with pytest.raises(ValueError, match="clients are named c0, c1"):
            echo(r, client="n1")
    with pytest.raises(RuntimeError, match="the router is closed"):
        echo(r)

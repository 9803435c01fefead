"""The node reaches sockets, files, clock readings, randomness and exit only through its NodeEnv."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import socket
from pathlib import Path

from jepsen_py.cluster.io import UNACKED_TIMEOUT_MS, NodeEnv
from jepsen_py.cluster.node import Node, NodeConfig, NodeLog
from jepsen_py.cluster.realio import OSDisk, TCPNetwork, real_env

CLUSTER = Path(__file__).resolve().parents[2] / "cluster"
#: the modules above the interfaces: shared by the real node and the simulator
ABOVE_THE_SEAM = ("node.py", "transport.py", "wal.py", "snapshots.py", "server.py")
#: modules whose every use means touching the world directly
FORBIDDEN_MODULES = {"os", "socket", "fcntl", "select", "selectors", "subprocess", "shutil", "io"}
#: attribute reads that are I/O or time readings (module.attribute)
FORBIDDEN_CALLS = {("time", "time"), ("time", "monotonic"), ("time", "perf_counter"),
                   ("time", "sleep"), ("asyncio", "open_connection"), ("asyncio", "start_server"),
                   ("os", "urandom"), ("os", "_exit"), ("random", "random"), ("random", "randrange")}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in FORBIDDEN_MODULES:
                out.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in FORBIDDEN_CALLS:
                out.append(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            out.append("open(...)")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "Random" and not node.args):
            out.append("random.Random() without a seed")
    return [f"{path.name}:{v}" for v in out]


def test_node_code_touches_the_world_only_through_its_env():
    bad = [v for name in ABOVE_THE_SEAM for v in _violations(CLUSTER / name)]
    assert bad == []


def test_the_checker_sees_direct_io(tmp_path):
    # the rule above would catch the node's old ways of touching the world
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nimport time\nimport random\nt = time.monotonic()\nr = random.Random()\n"
                      "f = open('x')\n")
    assert sorted(_violations(sample)) == ["sample.py:import os", "sample.py:open(...)",
                                           "sample.py:random.Random() without a seed",
                                           "sample.py:time.monotonic"]


def test_entropy_decides_boot_id_and_election_seed(tmp_path):
    """Two nodes given the same entropy start identically: what a seeded simulation needs."""
    fixed = dataclasses.replace(real_env(), entropy=lambda n: bytes(range(n)))
    peers = {"n1": ("127.0.0.1", 1), "n2": ("127.0.0.1", 2), "n3": ("127.0.0.1", 3)}
    seen = []
    for d in ("a", "b"):
        env = dataclasses.replace(fixed, disk=OSDisk())
        node = Node(NodeConfig(id="n1", peers=peers, data_dir=str(tmp_path / d), client_port=9),
                    log=lambda _m: None, env=env)
        seen.append((node.boot, node.raw.raft.randomized_election_timeout))
    assert seen[0] == seen[1] and seen[0][0] == "00010203"


def test_node_log_stamps_lines_with_the_env_clock(tmp_path):
    class Frozen:
        def monotonic(self) -> float:
            return 5.0

        def wall(self) -> float:
            return 86400.25  # 1970-01-02T00:00:00.250Z

    env = dataclasses.replace(real_env(), clock=Frozen())
    log = NodeLog(str(tmp_path / "sub" / "node.log"), "n7", env)
    log("hello")
    log.close()
    assert (tmp_path / "sub" / "node.log").read_text() == "1970-01-02T00:00:00.250Z n7 hello\n"


def test_real_streams_bound_unacknowledged_data():
    """Every dialled stream carries TCP_USER_TIMEOUT, so a stream outliving a cut breaks and is redialled."""
    opt = getattr(socket, "TCP_USER_TIMEOUT", None)

    async def main() -> int | None:
        net = TCPNetwork()

        async def handler(_r: asyncio.StreamReader, w) -> None:
            w.close()

        listener = await net.start_server(handler, "127.0.0.1", 0)
        try:
            _reader, writer = await net.open_connection("127.0.0.1", listener.port())
            sock = writer.get_extra_info("socket")
            value = sock.getsockopt(socket.IPPROTO_TCP, opt) if opt is not None else None
            writer.close()
            return value
        finally:
            listener.close()

    value = asyncio.run(main())
    if opt is not None:
        assert value == UNACKED_TIMEOUT_MS


def test_real_env_is_a_node_env():
    env = real_env()
    assert isinstance(env, NodeEnv) and env.pid > 0 and len(env.entropy(8)) == 8

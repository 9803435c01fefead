"""The Maelstrom client: a codec's request through `call`, the reply (or its absence) as the completion."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from jepsen_py.workloads.maelstrom.client import MaelstromClient
from jepsen_py.workloads.maelstrom.echo import EchoCodec
from jepsen_py.workloads.maelstrom.linkv import LinKvCodec

from jepsen_py.history import Op

TEST: Any = SimpleNamespace(spec=SimpleNamespace(op_timeout=2.0))


def test_the_request_goes_to_the_bound_node_as_the_process_client() -> None:
    sent = []

    def call(client: str, node: str, body: dict, timeout: float) -> dict:
        sent.append((client, node, body, timeout))
        return {"type": "echo_ok", "echo": body["echo"], "in_reply_to": 1}

    c = MaelstromClient(EchoCodec(), call).open(TEST, "n2")
    done = c.invoke(TEST, Op(5, 10, "invoke", 3, "echo", None, "hi"))
    assert sent == [("c3", "n2", {"type": "echo", "echo": "hi"}, pytest.approx(1.8))]
    assert (done.type, done.value, done.node, done.process, done.f) == ("ok", "hi", "n2", 3, "echo")
    assert c.reusable(TEST)


def test_an_op_naming_a_node_goes_there_and_no_reply_is_info() -> None:
    sent = []

    def call(client: str, node: str, body: dict, timeout: float) -> None:
        sent.append(node)
        return None

    c = MaelstromClient(LinKvCodec(), call, timeout=0.5).open(TEST, "n1")
    done = c.invoke(TEST, Op(0, 0, "invoke", 0, "write", "k", 3, "n3"))
    assert sent == ["n3"] and done.type == "info" and done.error["name"] == "timeout"
    with pytest.raises(ValueError, match="names no node"):
        MaelstromClient(LinKvCodec(), call).invoke(TEST, Op(0, 0, "invoke", 0, "read", "k"))

"""A register client for etcd over its JSON gateway (the v3 API as HTTP POSTs of JSON), using only
the standard library. Keys and values travel base64-encoded, as the gateway wants.

Outcomes follow Jepsen's rules: a request that never reached etcd (connection refused) fails; a
write or cas that may have been sent and got no answer is info; a read that got no answer fails
(it changed nothing). `serializable` reads are served by whichever member is asked, from its own
state, without consulting a quorum (etcd's `--consistency=s`); the default are linearizable.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import urllib.error
import urllib.request
from typing import Any

from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.protocols import Test

CLIENT_PORT = 2379


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def unb64(s: str) -> str:
    return base64.b64decode(s).decode()


class EtcdUnreachable(Exception):
    """The request certainly did not reach etcd."""


def post(host: str, port: int, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One gateway call; raises EtcdUnreachable, TimeoutError or RuntimeError (etcd's error)."""
    req = urllib.request.Request(f"http://{host}:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            detail = json.loads(e.read() or b"{}")
        except ValueError:
            detail = {}
        raise RuntimeError(detail.get("error") or detail.get("message") or f"HTTP {e.code}") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            raise EtcdUnreachable(str(e.reason)) from None
        if isinstance(e.reason, TimeoutError):
            raise TimeoutError(str(e.reason)) from None
        raise RuntimeError(str(e.reason)) from None
    except TimeoutError as e:
        raise TimeoutError(str(e) or "timed out") from None
    except ConnectionError as e:
        raise RuntimeError(f"{type(e).__name__}: {e}") from None


class EtcdRegisterClient:
    """The `register` workload's contract: read, write, cas on integer values."""

    def __init__(self, *, serializable: bool, timeout: float, node: str | None = None,
                 endpoint: tuple[str, int] | None = None) -> None:
        self.serializable = serializable
        self.timeout = timeout
        self.node = node
        self.endpoint = endpoint

    def open(self, test: Test, node: str) -> EtcdRegisterClient:
        assert test.backend is not None
        endpoint = test.backend.client_endpoint(node, CLIENT_PORT)
        return EtcdRegisterClient(serializable=self.serializable, timeout=self.timeout, node=node,
                                  endpoint=endpoint)

    def close(self, test: Test) -> None:
        pass

    def invoke(self, test: Test, op: Op) -> Op:
        assert self.endpoint is not None
        host, port = self.endpoint
        try:
            if op.f == "read":
                r = post(host, port, "/v3/kv/range",
                         {"key": b64(op.key), "serializable": self.serializable}, self.timeout)
                kvs = r.get("kvs") or []
                value = int(unb64(kvs[0]["value"])) if kvs else None
                return dataclasses.replace(op, type=OK, value=value, node=self.node)
            if op.f == "write":
                post(host, port, "/v3/kv/put", {"key": b64(op.key), "value": b64(str(op.value))},
                     self.timeout)
                return dataclasses.replace(op, type=OK, node=self.node)
            if op.f == "cas":
                old, new = op.value
                r = post(host, port, "/v3/kv/txn", {
                    "compare": [{"key": b64(op.key), "target": "VALUE", "result": "EQUAL",
                                 "value": b64(str(old))}],
                    "success": [{"request_put": {"key": b64(op.key), "value": b64(str(new))}}],
                }, self.timeout)
                if r.get("succeeded"):
                    return dataclasses.replace(op, type=OK, node=self.node)
                return dataclasses.replace(op, type=FAIL, error="mismatch", node=self.node)
        except EtcdUnreachable as e:
            return dataclasses.replace(op, type=FAIL, error=f"unreachable: {e}", node=self.node)
        except (TimeoutError, RuntimeError) as e:
            typ = FAIL if op.f == "read" else INFO
            return dataclasses.replace(op, type=typ, error=str(e)[:200], node=self.node)
        return dataclasses.replace(op, type=FAIL, error=f"unknown op {op.f!r}", node=self.node)

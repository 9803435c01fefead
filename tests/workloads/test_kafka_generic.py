"""`--workload kafka` for a plugin DB: the runner drives the generic kafka workload through the DB's
`client("kafka")`. An in-process log store that keeps its contract passes; one that hands out an
offset twice fails with inconsistent-offsets, one that drops every 5th message with lost writes."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from jepsen_py.workloads import WORKLOADS

from jepsen_py.history import FAIL, OK, Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import make_spec


class Logs:
    def __init__(self, reuse_offsets: bool = False, drop_every: int = 0) -> None:
        self.lock = threading.Lock()
        self.logs: dict[str, dict[int, int]] = {}
        self.committed: dict[str, int] = {}
        self.reuse_offsets = reuse_offsets
        self.drop_every = drop_every
        self.sends = 0

    def apply(self, op: Op) -> Op:
        ok = dataclasses.replace(op, type=OK)
        with self.lock:
            if op.f == "send":
                log = self.logs.setdefault(op.key, {})
                self.sends += 1
                offset = len(log) - (1 if self.reuse_offsets and self.sends % 4 == 0 and log else 0)
                if not (self.drop_every and self.sends % self.drop_every == 0):
                    log[offset] = op.value
                return dataclasses.replace(ok, value=offset)
            if op.f == "poll":
                out = {}
                for k, start in op.value.items():
                    log = self.logs.get(k, {})
                    prs = [[o, log[o]] for o in sorted(log) if o >= start][:20]
                    if prs:
                        out[k] = prs
                return dataclasses.replace(ok, value=out)
            if op.f == "commit_offsets":
                for k, o in op.value.items():
                    self.committed[k] = max(o, self.committed.get(k, o))
                return ok
            if op.f == "list_committed_offsets":
                return dataclasses.replace(ok, value={k: self.committed[k] for k in op.value
                                                      if k in self.committed})
        return dataclasses.replace(op, type=FAIL, error=f"unknown f {op.f}")


class LogsClient:
    def __init__(self, logs: Logs) -> None:
        self.logs = logs

    def open(self, test: Test, node: str) -> LogsClient:
        return self

    def invoke(self, test: Test, op: Op) -> Op:
        return self.logs.apply(op)

    def close(self, test: Test) -> None: ...


class LogsDB:
    def __init__(self, spec: TestSpec, logs: Logs) -> None:
        self.logs = logs

    def setup(self, test: Test, node: str) -> None: ...
    def teardown(self, test: Test, node: str) -> None: ...

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> LogsClient:
        assert workload == "kafka"
        return LogsClient(self.logs)


def run(tmp_path: Path, logs: Logs):
    spec = make_spec(tmp_path, name="kafka-mem", workload="kafka", time_limit=1.0, rate=300.0,
                     options={"final_delay": 0, "key_count": 3})
    return run_test(spec, db=LogsDB(spec, logs), workload=WORKLOADS["kafka"](spec))


def test_a_correct_log_store_passes(tmp_path: Path) -> None:
    out = run(tmp_path, Logs())
    r = out.results["checkers"]["kafka"]
    assert out.valid is True, r
    assert r["sends_acknowledged"] > 50 and r["final_polls"] > 0
    assert r["messages_polled"] == r["sends_acknowledged"]


@pytest.mark.parametrize(("bug", "kind"), [
    ({"reuse_offsets": True}, "inconsistent-offsets"),
    ({"drop_every": 5}, "lost-write"),
])
def test_a_buggy_log_store_fails_named(tmp_path: Path, bug: dict, kind: str) -> None:
    out = run(tmp_path, Logs(**bug))
    r = out.results["checkers"]["kafka"]
    assert out.valid is False and kind in r["failing_kinds"], r["anomaly_counts"]

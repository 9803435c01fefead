"""The simulator's interpreter on a virtual-time event loop: histories in virtual time, the op timeout,
fresh processes after info, the nemesis beside the clients, and the same bytes for the same seed."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from jepsen_py import generator as gen
from jepsen_py.history import FAIL, INFO, INVOKE, NEMESIS, OK, HistoryWriter, Op, read_history, validate
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.sim.interpreter import AsyncClient, SimInterpreter
from tests.jepsen_py.sim.vloop import VirtualLoop


class EchoClient:
    """Answers after a latency the op's value names; "boom" raises, "slow" outlasts every timeout."""

    def __init__(self, node: str | None = None) -> None:
        self.node = node
        self.closed = False
        self.opened: list[str] = []

    def open(self, test: Test, node: str) -> EchoClient:
        self.opened.append(node)
        return EchoClient(node)

    async def invoke(self, test: Test, op: Op) -> Op:
        if op.value == "boom":
            raise RuntimeError("client crashed")
        await asyncio.sleep(1000.0 if op.value == "slow" else 0.01 + 0.001 * (op.process % 3))
        if op.value == "refuse":
            return Op(-1, 0, FAIL, op.process, op.f, op.key, op.value, op.node, "not_leader")
        return Op(-1, 0, OK, op.process, op.f, op.key, op.value, self.node)

    def close(self, test: Test) -> None:
        self.closed = True


class CountingNemesis:
    """Says what it did; the interpreter must record it as info whatever type it returns."""

    def __init__(self) -> None:
        self.done: list[str] = []

    async def invoke(self, test: Test, op: Op) -> Op:
        await asyncio.sleep(0.5)
        self.done.append(op.f)
        return Op(-1, 0, OK, op.process, op.f, op.key, {"did": op.f}, None)


def make_test(tmp_path: Path, concurrency: int = 4) -> Test:
    spec = TestSpec(name="t", workload="w", nemesis=[], nodes=["n1", "n2", "n3"], time_limit=5,
                    concurrency=concurrency, rate=0, nemesis_interval=1, seed=3, backend="sim",
                    read_mode="read-index", bugs=[], db="x:Y", results_dir=tmp_path)
    return Test(spec=spec, store_dir=tmp_path, log=logging.getLogger("t"), rng=random.Random(3))


def drive(tmp_path: Path, g: gen.Generator, *, name: str = "history.jsonl", with_nemesis: bool = False,
          op_timeout: float = 2.0, concurrency: int = 4,
          client: AsyncClient | None = None) -> tuple[list[Op], SimInterpreter, bytes]:
    test = make_test(tmp_path, concurrency)
    path = tmp_path / name
    writer = HistoryWriter(path)
    loop = VirtualLoop()
    t0 = loop.time()
    interp = SimInterpreter(test, client=client or EchoClient(), nemesis=CountingNemesis(),
                            record=writer.append, append=writer.append, concurrency=concurrency,
                            op_timeout=op_timeout,
                            rng=random.Random("generator:3"),
                            now_ns=lambda: round((loop.time() - t0) * 1e9))
    try:
        loop.run_until_complete(interp.run(g, with_nemesis=with_nemesis))
    finally:
        loop.close()
        writer.close()
    history = read_history(path)
    validate(history, source=str(path))
    return history, interp, path.read_bytes()


def workload() -> gen.Generator:
    return gen.fn(lambda ctx: {"f": ctx.rng.choice(["read", "write"]), "key": ctx.rng.randrange(3),
                               "value": ctx.rng.randrange(100)})


def main(limit: float = 5.0) -> gen.Generator:
    schedule = gen.cycle([gen.sleep(1.0), {"f": "start-partition"}, gen.sleep(1.0), {"f": "stop-partition"}])
    return gen.time_limit(limit, gen.nemesis(schedule, gen.rate(50, workload())))


def test_a_phase_runs_in_virtual_time_at_the_asked_rate(tmp_path: Path) -> None:
    history, interp, _ = drive(tmp_path, main(5.0), with_nemesis=True)
    client_invokes = [op for op in history if op.type == INVOKE and isinstance(op.process, int)]
    # rate 50 over 5 virtual seconds: about 250 ops (stagger draws random gaps)
    assert 150 <= len(client_invokes) <= 350
    assert interp.counts() == (len(client_invokes), sum(1 for op in history if op.type == OK
                                                        and isinstance(op.process, int)))
    assert max(op.time for op in client_invokes) <= 5.0e9
    assert min(op.time for op in history) >= 0
    # times never go backwards in the file: one thread records in virtual-time order
    assert [op.time for op in history] == sorted(op.time for op in history)
    # every completion comes after its invocation by the client's virtual latency
    pending: dict[Any, Op] = {}
    for op in history:
        if op.type == INVOKE:
            pending[op.process] = op
        elif isinstance(op.process, int):
            assert op.time - pending.pop(op.process).time in (10_000_000, 11_000_000, 12_000_000)


def test_the_nemesis_runs_beside_the_clients_and_its_completions_are_info(tmp_path: Path) -> None:
    history, _, _ = drive(tmp_path, main(5.0), with_nemesis=True)
    nem = [op for op in history if op.process == NEMESIS]
    assert [(op.type, op.f) for op in nem][:4] == [(INVOKE, "start-partition"), (INFO, "start-partition"),
                                                    (INVOKE, "stop-partition"), (INFO, "stop-partition")]
    assert nem[1].value == {"did": "start-partition"}
    # 1 s of calm, the op takes 0.5 s, 1 s of calm: virtual times exactly
    assert [op.time for op in nem[:4]] == [1_000_000_000, 1_500_000_000, 2_500_000_000, 3_000_000_000]


def test_the_same_generator_and_seed_give_the_same_bytes(tmp_path: Path) -> None:
    _, _, a = drive(tmp_path, main(4.0), name="a.jsonl", with_nemesis=True)
    _, _, b = drive(tmp_path, main(4.0), name="b.jsonl", with_nemesis=True)
    assert a == b and len(a) > 1000


def test_an_op_past_the_op_timeout_is_info_by_the_controller_and_the_worker_moves_on(tmp_path: Path) -> None:
    ops = [{"f": "read", "value": "slow"}, {"f": "read", "value": 1}]
    history, interp, _ = drive(tmp_path, gen.clients(gen.each_thread(ops)), op_timeout=2.0, concurrency=2)
    timeouts = [op for op in history if op.error == "timeout"]
    assert len(timeouts) == 2
    assert all(op.type == INFO and op.meta == {"timeout_s": 2.0, "by": "controller"} for op in timeouts)
    assert all(op.time == 2_000_000_000 for op in timeouts)
    # the second op of each worker runs under a fresh process: process + concurrency
    second = [op for op in history if op.type == INVOKE and op.value == 1]
    assert sorted(op.process for op in second) == [2, 3]
    assert interp.counts() == (4, 2)


def test_a_client_that_raises_is_recorded_info_and_reopened(tmp_path: Path) -> None:
    template = EchoClient()
    ops = [{"f": "write", "value": "boom"}, {"f": "write", "value": 2}]
    history, _, _ = drive(tmp_path, gen.clients(gen.each_thread(ops)), concurrency=1, client=template)
    crashed = [op for op in history if op.type == INFO]
    assert len(crashed) == 1 and crashed[0].error == "RuntimeError: client crashed"
    assert template.opened == ["n1", "n1"]  # dropped after the crash, opened again
    assert [op.process for op in history if op.type == INVOKE] == [0, 1]


class StuckStreamClient:
    """One stream to one node; n3 serves stale reads (it never applied the write) and the first
    request sent to it is lost: that stream answers nothing again, each later request timing out
    behind it after 0.1 s (info, by the client, well within the op timeout)."""

    def __init__(self, shared: dict[str, Any], node: str | None = None, *, reuse: bool = False) -> None:
        self.shared = shared
        self.node = node
        self.reuse = reuse
        self.stuck = False

    def open(self, test: Test, node: str) -> StuckStreamClient:
        self.shared["opened"].append(node)
        return StuckStreamClient(self.shared, node, reuse=self.reuse)

    def reusable(self, test: Test) -> bool:
        return self.reuse

    async def invoke(self, test: Test, op: Op) -> Op:
        if self.node == "n3" and self.shared["lost"] > 0:
            self.shared["lost"] -= 1
            self.stuck = True
        await asyncio.sleep(0.1 if self.stuck else 0.01)
        if self.stuck:
            return Op(-1, 0, INFO, op.process, op.f, op.key, op.value, self.node, "timeout")
        if op.f == "write":
            self.shared["value"] = op.value
            return Op(-1, 0, OK, op.process, op.f, op.key, op.value, self.node)
        value = None if self.node == "n3" else self.shared["value"]
        return Op(-1, 0, OK, op.process, op.f, op.key, value, self.node)

    def close(self, test: Test) -> None:
        self.stuck = False


@pytest.mark.parametrize("reuse", [False, True])
def test_a_new_process_gets_a_new_stream_so_a_stuck_one_cannot_hide_stale_reads(
        tmp_path: Path, reuse: bool) -> None:
    shared: dict[str, Any] = {"lost": 1, "value": None, "opened": []}
    ops = [{"f": "write", "key": 0, "value": 1, "node": "n1"},
           *({"f": "read", "key": 0, "node": "n3"} for _ in range(3))]
    history, _, _ = drive(tmp_path, gen.clients(ops), concurrency=1,
                          client=StuckStreamClient(shared, reuse=reuse))
    reads = [(op.type, op.process, op.value) for op in history if op.f == "read" and op.type != INVOKE]
    if reuse:  # the stuck stream kept: every later read waits behind the lost request
        assert reads == [(INFO, 0, None), (INFO, 1, None), (INFO, 2, None)]
        assert shared["opened"] == ["n1", "n3"]
    else:  # a fresh stream for process 1 reaches n3, which answers with its stale value
        assert reads == [(INFO, 0, None), (OK, 1, None), (OK, 1, None)]
        assert shared["opened"] == ["n1", "n3", "n3"]
    write = next(op for op in history if op.f == "write" and op.type == OK)
    assert write.value == 1


def test_a_fail_keeps_the_process(tmp_path: Path) -> None:
    ops = [{"f": "write", "value": "refuse"}, {"f": "write", "value": 2}]
    history, _, _ = drive(tmp_path, gen.clients(gen.each_thread(ops)), concurrency=1)
    assert [(op.type, op.process) for op in history] == [(INVOKE, 0), (FAIL, 0), (INVOKE, 0), (OK, 0)]


def test_workers_waiting_for_an_event_are_woken_and_the_phase_ends(tmp_path: Path) -> None:
    # phases() synchronizes: every worker must be idle before the second stage starts
    stages = (gen.each_thread({"f": "a", "value": 1}), gen.each_thread({"f": "b", "value": 1}))
    g = gen.clients(gen.phases(*stages))
    history, _, _ = drive(tmp_path, g, concurrency=3)
    fs = [op.f for op in history if op.type == INVOKE]
    assert fs == ["a", "a", "a", "b", "b", "b"]


def test_final_ops_naming_a_node_go_to_that_node(tmp_path: Path) -> None:
    g = gen.clients([{"f": "read", "node": n, "value": 0} for n in ("n1", "n2", "n3")])
    history, _, _ = drive(tmp_path, g, concurrency=2)
    assert [op.node for op in history if op.type == OK] == ["n1", "n2", "n3"]


def test_a_generator_that_breaks_fails_the_phase(tmp_path: Path) -> None:
    def broken(ctx: gen.Context) -> Any:
        raise ValueError("generator bug")

    from jepsen_py.errors import FrameworkFailure

    with pytest.raises(FrameworkFailure, match="generator bug"):
        drive(tmp_path, gen.clients(gen.fn(broken)), concurrency=2)

"""The fault vocabulary: the nemeses' ops are all in it, and a history reads back as fault windows
with whom each fault hit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from jepsen_py.nemeses import faults

from jepsen_py import nemeses
from jepsen_py.history import INFO, INVOKE, NEMESIS, Op
from tests.jepsen_py.fakes import make_spec


def nem(ops: list[tuple[str, int, int, object]]) -> list[Op]:
    out: list[Op] = []
    for f, t0, t1, value in ops:
        out.append(Op(len(out), t0 * 1_000_000, INVOKE, NEMESIS, f))
        out.append(Op(len(out), t1 * 1_000_000, INFO, NEMESIS, f, value=value))
    return out


def test_every_op_a_nemesis_performs_is_in_the_vocabulary(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, nodes=["n1", "n2", "n3", "n4", "n5"], nemesis_interval=1.0)
    nemesis, _ = nemeses.build("all,leader-clock", spec)
    for f in nemesis.fs():
        kind = faults.kind_of(f)
        assert kind is not None, f
        assert f in kind.starts or f in kind.stops
    assert {k.name for k in faults.FAULTS} == {"partition", "kill", "pause", "clock", "leader-clock"}


@pytest.mark.parametrize(("f", "stop", "silences"), [
    ("kill", False, True), ("start", True, False), ("pause", False, True), ("resume", True, False),
    ("start-partition", False, False), ("stop-partition", True, False),
    ("bump-clock", False, False), ("reset-clock", True, False),
    ("start-leader-clock", False, True), ("stop-leader-clock", True, False), ("heal", True, False),
    # names only imported histories use
    ("stop-node", False, True), ("crash", False, True), ("unpause", True, False), ("repair-net", True, False),
])
def test_what_an_op_means(f: str, stop: bool, silences: bool) -> None:
    assert faults.is_stop(f) is stop
    assert faults.silences(f) is silences


def test_windows_pair_each_fault_with_its_undo_and_say_whom_it_hit() -> None:
    h = nem([
        ("kill", 1_000, 1_050, {"target": "leader", "nodes": ["n2"], "results": {"n2": "ok"}}),
        ("start-partition", 2_000, 2_010, {"shape": "one", "sides": [["n3"], ["n1", "n2"]]}),
        ("start", 3_000, 3_400, {"nodes": ["n2"]}),  # ends the kill, not the partition
        ("start-partition", 4_000, 4_010, {"shape": "one", "sides": [["n1"], ["n2", "n3"]]}),
        ("heal", 5_000, 5_100, "healed"),
    ])
    ws = faults.fault_windows(h, nodes=["n1", "n2", "n3"])
    assert [(w.f, w.start // 1_000_000, w.started // 1_000_000, w.end and w.end // 1_000_000)
            for w in ws] == [("kill", 1_000, 1_050, 3_400), ("start-partition", 2_000, 2_010, 4_000),
                             ("start-partition", 4_000, 4_010, 5_100)]
    assert ws[0].targets == {"n2"} and ws[0].silences and ws[0].kind is not None
    assert ws[0].kind.effects == {faults.PROCESS}
    assert not ws[1].silences and ws[1].targets == {"n1", "n2", "n3"}


def test_a_leader_clock_window_names_its_node_not_the_bystanders() -> None:
    h = nem([("start-leader-clock", 1_000, 9_000,
              {"node": "n2", "clock-back-ms": 31_000, "grudge": {"n1": ["n2"], "n2": ["n1", "n3"]}})])
    (w,) = faults.fault_windows(h, nodes=["n1", "n2", "n3"])
    assert w.targets == {"n2"} and w.silences and w.end is None


def test_verdict_checkers_do_not_import_the_pictures() -> None:
    code = ("import sys, jepsen_py.checkers.availability, jepsen_py.checkers.crash; "
            "print(sorted(m for m in sys.modules"
            " if m.startswith('jepsen_py.checkers.pictures') or m == 'plotly'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FREEZE = faults.FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset({faults.PAUSE}))


class Freezer:
    """An outside nemesis: its op names follow no rule of thumb ("thaw" is no stop- verb)."""

    def __init__(self, declare: list[object] | None = None) -> None:
        self.declare = [FREEZE] if declare is None else declare

    def fs(self) -> frozenset[str]:
        return frozenset({"freeze", "thaw"})

    def faults(self) -> list[object]:
        return self.declare


def declared_nem(ops: list[tuple[str, int, int, object]], kind: faults.FaultKind | None) -> list[Op]:
    out = nem(ops)
    return [faults.mark(op, kind) if kind is not None else op for op in out]


def test_a_declared_fault_pairs_its_own_undo_and_says_what_it_does() -> None:
    ops = [("freeze", 1_000, 1_010, {"nodes": ["n2"]}), ("thaw", 3_000, 3_020, {"nodes": ["n2"]})]
    (w,) = faults.fault_windows(declared_nem(ops, FREEZE), nodes=["n1", "n2", "n3"])
    assert (w.f, w.kind, w.end) == ("freeze", FREEZE, 3_020 * 1_000_000)
    assert w.silences and w.targets == {"n2"}
    # undeclared, the names say nothing: "thaw" reads as a second fault and neither ever ends
    ws = faults.fault_windows(declared_nem(ops, None), nodes=["n1", "n2", "n3"])
    assert [(w.f, w.kind, w.end) for w in ws] == [("freeze", None, None), ("thaw", None, None)]


def test_a_declaration_is_read_back_from_a_stored_history(tmp_path: Path) -> None:
    from jepsen_py.history import HistoryWriter, read_history

    cut = faults.FaultKind("cut", frozenset({"cut"}), frozenset({"mend"}), frozenset({faults.NETWORK}),
                           replaces=True)
    ops = [("cut", 1_000, 1_010, {"node": "n1"}), ("cut", 2_000, 2_010, {"node": "n3"}),
           ("mend", 3_000, 3_010, None)]
    writer = HistoryWriter(tmp_path / "history.jsonl")
    for op in declared_nem(ops, cut):
        writer.append(op)
    writer.close()
    ws = faults.fault_windows(read_history(tmp_path / "history.jsonl"), nodes=["n1", "n2", "n3"])
    # a new cut replaces the one in force, as a new partition does; mend ends the second
    assert [(w.targets, w.kind, w.start // 1_000_000, w.end and w.end // 1_000_000) for w in ws] == [
        ({"n1"}, cut, 1_000, 2_000), ({"n3"}, cut, 2_000, 3_010)]
    assert not ws[0].silences


def test_a_declaration_overrides_a_built_in_name_and_a_bad_meta_falls_back() -> None:
    # an outside "kill" that only cuts the network: its own declaration says so
    soft = faults.FaultKind("soft-kill", frozenset({"kill"}), frozenset({"start"}),
                            frozenset({faults.NETWORK}))
    (w,) = faults.fault_windows(declared_nem([("kill", 1, 2, {"nodes": ["n1"]})], soft), nodes=["n1"])
    assert w.kind == soft and not w.silences
    broken = nem([("kill", 1, 2, {"nodes": ["n1"]})])
    broken[1].meta = {faults.META: {"kind": "x", "starts": "kill"}}
    (w,) = faults.fault_windows(broken, nodes=["n1"])
    assert w.kind is not None and w.kind.name == "kill" and w.silences


def test_declared_faults_by_op_and_the_composed_nemesis_gathers_them() -> None:
    from jepsen_py.nemeses.compose import ComposedNemesis, NoopNemesis

    assert faults.declared(Freezer()) == {"freeze": FREEZE, "thaw": FREEZE}
    assert faults.declared(NoopNemesis()) == {}
    composed = ComposedNemesis([NoopNemesis(), Freezer()])  # type: ignore[list-item]
    assert composed.faults() == [FREEZE]
    assert faults.declared(composed) == {"freeze": FREEZE, "thaw": FREEZE}


@pytest.mark.parametrize(("declare", "says"), [
    (["freeze"], "must return FaultKinds"),
    ([faults.FaultKind("freeze", frozenset(), frozenset({"thaw"}), frozenset({faults.PAUSE}))],
     "at least one start op"),
    ([faults.FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset({"cpu"}))],
     "choose one or more of clock, network, pause, process"),
    ([faults.FaultKind("freeze", frozenset({"freeze"}), frozenset({"thaw"}), frozenset())],
     "choose one or more of"),
    ([faults.FaultKind("freeze", frozenset({"freeze"}), frozenset({"melt"}), frozenset({faults.PAUSE}))],
     r"names op 'melt', which its fs\(\) does not handle"),
    ([FREEZE, faults.FaultKind("again", frozenset({"thaw"}), frozenset(), frozenset({faults.PAUSE}))],
     "op 'thaw' is declared twice"),
])
def test_a_declaration_the_analysis_cannot_use_is_refused(declare: list[object], says: str) -> None:
    with pytest.raises(ValueError, match=says) as e:
        faults.declared(Freezer(declare))
    assert str(e.value).startswith("Freezer.faults()") and "\n" not in str(e.value)

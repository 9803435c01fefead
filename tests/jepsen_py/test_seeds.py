"""Seeds are derived from a test's seed in jepsen_py/seeds.py alone."""

from __future__ import annotations

import ast
from pathlib import Path

from jepsen_py import seeds

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("jepsen_py", "workloads", "nemeses", "checkers", "spark")


def _is_a_seed(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith("seed")


def derivations(path: Path, root: Path = ROOT) -> list[str]:
    """Each place in `path` that computes a new seed from one: arithmetic on a seed, or a Random
    made from an expression (an f-string, a sum) rather than a seed as given."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        arithmetic = isinstance(node, ast.BinOp) and (_is_a_seed(node.left) or _is_a_seed(node.right))
        fn = getattr(node, "func", None)
        made = (isinstance(node, ast.Call) and getattr(fn, "attr", getattr(fn, "id", None)) == "Random"
                and bool(node.args) and isinstance(node.args[0], ast.JoinedStr | ast.BinOp))
        if arithmetic or made:
            out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_no_module_but_seeds_derives_a_seed():
    found = [d for f in FOLDERS for p in sorted((ROOT / f).rglob("*.py")) if p.name != "seeds.py"
             for d in derivations(p)]
    assert found == []


def test_the_rule_sees_a_derivation(tmp_path):
    (tmp_path / "x.py").write_text("import random\nr = random.Random(f'g:{seed}')\nn = spec.seed * 1000 + 1\n"
                                   "ok = random.Random(spec.seed)\n")
    assert derivations(tmp_path / "x.py", tmp_path) == ["x.py:2", "x.py:3"]


def test_the_streams_are_independent_and_stable():
    assert seeds.generator_rng(7).random() == seeds.generator_rng(7).random()
    assert seeds.generator_rng(7).random() != seeds.test_rng(7).random()
    assert seeds.timing_rng(7).random() != seeds.generator_rng(7).random()
    assert [seeds.node_seed(7, i) for i in range(3)] == [7000, 7001, 7002]
    assert seeds.cluster_seed(7, None) == 7 and seeds.cluster_seed(7, 99) == 99
